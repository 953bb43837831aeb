// LibreTranslate's format "html": the text between the tags is translated and the markup kept
// as it was. A document splits into pieces: markup, whitespace and the contents of <script> and
// <style> verbatim, and text runs (entities decoded) to translate; joining puts the
// translations, escaped, back in their places.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tfm::serve {

struct HtmlPieces {
  std::vector<std::string> pieces;  // the document, in order
  std::vector<size_t> texts;        // which pieces are text to translate (decoded)
};

HtmlPieces split_html(std::string_view html);

// The document with texts[i] in place of pieces[texts[i]], HTML-escaped.
std::string join_html(const HtmlPieces& html, const std::vector<std::string>& translations);

}  // namespace tfm::serve
