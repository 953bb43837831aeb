#include "tfm/serve/html_text.h"

#include <cctype>
#include <cstdint>
#include <map>
#include <string>

namespace tfm::serve {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// The character reference at s[i] ('&'), decoded into out; its length, or 0 when it is none.
size_t decode_entity(std::string_view s, size_t i, std::string& out) {
  static const std::map<std::string_view, uint32_t> named = {
      {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}, {"nbsp", 0xA0}};
  const size_t semi = s.find(';', i);
  if (semi == std::string_view::npos || semi - i > 12) return 0;
  const std::string_view name = s.substr(i + 1, semi - i - 1);
  uint32_t cp = 0;
  if (name.size() > 1 && name[0] == '#') {
    const bool hex = name[1] == 'x' || name[1] == 'X';
    const std::string_view digits = name.substr(hex ? 2 : 1);
    if (digits.empty() || digits.size() > 7) return 0;
    for (char c : digits) {
      if (!(hex ? std::isxdigit(static_cast<unsigned char>(c)) : std::isdigit(c))) return 0;
      cp = cp * (hex ? 16 : 10) +
           static_cast<uint32_t>(std::isdigit(c) ? c - '0' : std::tolower(c) - 'a' + 10);
    }
  } else {
    const auto it = named.find(name);
    if (it == named.end()) return 0;
    cp = it->second;
  }
  append_utf8(out, cp);
  return semi - i + 1;
}

std::string decode_text(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const size_t n = s[i] == '&' ? decode_entity(s, i, out) : 0;
    if (n == 0)
      out.push_back(s[i]);
    else
      i += n - 1;
  }
  return out;
}

// The end of the markup starting at s[i] ('<'): past '>' (quotes respected), a comment's "-->",
// or the end of the document.
size_t markup_end(std::string_view s, size_t i) {
  if (s.substr(i, 4) == "<!--") {
    const size_t e = s.find("-->", i + 4);
    return e == std::string_view::npos ? s.size() : e + 3;
  }
  char quote = 0;
  for (size_t j = i + 1; j < s.size(); ++j) {
    if (quote) {
      if (s[j] == quote) quote = 0;
    } else if (s[j] == '"' || s[j] == '\'') {
      quote = s[j];
    } else if (s[j] == '>') {
      return j + 1;
    }
  }
  return s.size();
}

// The lowercase name of the start tag s[i, end) ("" for end tags, comments, declarations).
std::string start_tag(std::string_view s, size_t i, size_t end) {
  std::string name;
  for (size_t j = i + 1; j < end && std::isalnum(static_cast<unsigned char>(s[j])); ++j)
    name.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(s[j]))));
  return name;
}

// Where the raw text of <script> or <style> ends: at its end tag, or the document's end.
size_t raw_text_end(std::string_view s, size_t from, const std::string& tag) {
  for (size_t j = s.find("</", from); j != std::string_view::npos; j = s.find("</", j + 2)) {
    bool match = j + 2 + tag.size() <= s.size();
    for (size_t k = 0; match && k < tag.size(); ++k)
      match = std::tolower(static_cast<unsigned char>(s[j + 2 + k])) == tag[k];
    if (match) return j;
  }
  return s.size();
}

void add_text(HtmlPieces& out, std::string_view text) {
  size_t a = 0, b = text.size();
  while (a < b && is_space(text[a])) ++a;
  while (b > a && is_space(text[b - 1])) --b;
  if (a > 0) out.pieces.emplace_back(text.substr(0, a));
  if (b > a) {
    out.texts.push_back(out.pieces.size());
    out.pieces.push_back(decode_text(text.substr(a, b - a)));
  }
  if (b < text.size() && b >= a) out.pieces.emplace_back(text.substr(b));
}

}  // namespace

HtmlPieces split_html(std::string_view s) {
  HtmlPieces out;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] != '<') {
      const size_t next = s.find('<', i);
      const size_t end = next == std::string_view::npos ? s.size() : next;
      add_text(out, s.substr(i, end - i));
      i = end;
      continue;
    }
    size_t end = markup_end(s, i);
    const std::string tag = start_tag(s, i, end);
    if (tag == "script" || tag == "style") end = raw_text_end(s, end, tag);
    out.pieces.emplace_back(s.substr(i, end - i));
    i = end;
  }
  return out;
}

std::string join_html(const HtmlPieces& html, const std::vector<std::string>& translations) {
  std::vector<const std::string*> text(html.pieces.size(), nullptr);
  for (size_t k = 0; k < html.texts.size() && k < translations.size(); ++k)
    text[html.texts[k]] = &translations[k];
  std::string out;
  for (size_t p = 0; p < html.pieces.size(); ++p) {
    if (!text[p]) {
      out += html.pieces[p];
      continue;
    }
    const std::string& t = *text[p];
    size_t a = 0, b = t.size();  // [a, b): the text within its edge whitespace
    while (a < b && is_space(t[a])) ++a;
    while (b > a && is_space(t[b - 1])) --b;
    for (size_t i = 0; i < t.size(); ++i) {
      const char c = t[i];
      // Whitespace at a text's edge is written as a character reference: raw, it would join
      // the markup's whitespace when the document is split again (add_text trims it).
      if (is_space(c) && (i < a || i >= b))
        out += "&#" + std::to_string(static_cast<int>(c)) + ";";
      else if (c == '&')
        out += "&amp;";
      else if (c == '<')
        out += "&lt;";
      else if (c == '>')
        out += "&gt;";
      else
        out.push_back(c);
    }
  }
  return out;
}

}  // namespace tfm::serve
