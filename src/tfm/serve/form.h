// HTML form bodies, as LibreTranslate's clients send them: application/x-www-form-urlencoded
// and multipart/form-data. Every field is kept, in order, duplicates included (three `q` are
// three texts); a malformed body is an HttpError 400 that says where.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tfm::serve {

using FormFields = std::vector<std::pair<std::string, std::string>>;

// Which form a request's Content-Type names (its media type, without case), if any.
enum class FormKind { none, urlencoded, multipart };
FormKind form_kind(std::string_view content_type);

// name=value pairs joined by '&' ('+' a space, %XX a byte). Also a URL's query string.
FormFields parse_urlencoded(std::string_view body);

// The parts of a multipart/form-data body: each part's name (its Content-Disposition) and
// content. `content_type` is the request's Content-Type, whose boundary parameter splits it.
FormFields parse_multipart(std::string_view body, std::string_view content_type);

}  // namespace tfm::serve
