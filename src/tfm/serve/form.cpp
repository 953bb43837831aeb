#include "tfm/serve/form.h"

#include <cctype>

#include "tfm/serve/http_message.h"

namespace tfm::serve {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out.push_back(' ');
    } else if (s[i] == '%') {
      const int hi = i + 2 < s.size() ? hex_value(s[i + 1]) : -1;
      const int lo = hi >= 0 ? hex_value(s[i + 2]) : -1;
      if (lo < 0)
        throw HttpError(400, "malformed form body: '%' not followed by two hex digits at byte " +
                                 std::to_string(i));
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// The value of parameter `name` in a header value such as `form-data; name="q"` or
// `multipart/form-data; boundary=XyZ` (quoted or not), or "" when absent.
std::string header_parameter(std::string_view value, std::string_view name) {
  size_t pos = value.find(';');
  while (pos != std::string_view::npos) {
    ++pos;
    while (pos < value.size() && (value[pos] == ' ' || value[pos] == '\t')) ++pos;
    const size_t eq = value.find('=', pos);
    if (eq == std::string_view::npos) return "";
    const bool match = iequals(value.substr(pos, eq - pos), name);
    std::string out;
    size_t i = eq + 1;
    if (i < value.size() && value[i] == '"') {
      for (++i; i < value.size() && value[i] != '"'; ++i) {
        if (value[i] == '\\' && i + 1 < value.size()) ++i;
        out.push_back(value[i]);
      }
    } else {
      for (; i < value.size() && value[i] != ';'; ++i)
        if (value[i] != ' ' && value[i] != '\t') out.push_back(value[i]);
    }
    if (match) return out;
    pos = value.find(';', i);
  }
  return "";
}

}  // namespace

FormFields parse_urlencoded(std::string_view body) {
  FormFields out;
  while (!body.empty()) {
    const size_t amp = body.find('&');
    const std::string_view pair = body.substr(0, amp);
    if (!pair.empty()) {
      const size_t eq = pair.find('=');
      out.emplace_back(percent_decode(pair.substr(0, eq)),
                       eq == std::string_view::npos ? "" : percent_decode(pair.substr(eq + 1)));
    }
    if (amp == std::string_view::npos) break;
    body.remove_prefix(amp + 1);
  }
  return out;
}

FormFields parse_multipart(std::string_view body, std::string_view content_type) {
  const std::string boundary = header_parameter(content_type, "boundary");
  if (boundary.empty() || boundary.size() > 200)
    throw HttpError(400, "a multipart/form-data body needs a boundary parameter (1-200 bytes)");
  const std::string delimiter = "--" + boundary;
  const auto bad = [](const std::string& why) {
    return HttpError(400, "malformed multipart/form-data body: " + why);
  };
  // The first delimiter opens the first part (a preamble before it is ignored).
  size_t pos = body.substr(0, delimiter.size()) == delimiter ? 0 : body.find("\r\n" + delimiter);
  if (pos == std::string_view::npos) throw bad("no boundary line");
  pos = body.find(delimiter, pos) + delimiter.size();
  FormFields out;
  for (;;) {
    if (body.substr(pos, 2) == "--") return out;  // the closing delimiter
    const size_t line_end = body.find("\r\n", pos);
    if (line_end == std::string_view::npos) throw bad("a part does not start after its boundary");
    const size_t head_end = body.find("\r\n\r\n", line_end);
    if (head_end == std::string_view::npos)
      throw bad("a part without a blank line after its headers");
    std::string name;
    bool named = false;
    std::string_view headers = body.substr(line_end + 2, head_end + 2 - (line_end + 2));
    while (!headers.empty()) {
      const size_t nl = headers.find("\r\n");
      const std::string_view line = headers.substr(0, nl);
      const size_t colon = line.find(':');
      if (colon != std::string_view::npos &&
          iequals(line.substr(0, colon), "Content-Disposition")) {
        name = header_parameter(line.substr(colon + 1), "name");
        named = true;
      }
      headers.remove_prefix(nl == std::string_view::npos ? headers.size() : nl + 2);
    }
    if (!named) throw bad("a part without Content-Disposition");
    const size_t content = head_end + 4;
    const size_t next = body.find("\r\n" + delimiter, content);
    if (next == std::string_view::npos) throw bad("the last part is not closed by its boundary");
    out.emplace_back(std::move(name), std::string(body.substr(content, next - content)));
    pos = next + 2 + delimiter.size();
  }
}

FormKind form_kind(std::string_view content_type) {
  const auto is = [&](std::string_view type) {
    return content_type.size() >= type.size() && iequals(content_type.substr(0, type.size()), type);
  };
  if (is("application/x-www-form-urlencoded")) return FormKind::urlencoded;
  if (is("multipart/form-data")) return FormKind::multipart;
  return FormKind::none;
}

}  // namespace tfm::serve
