#include "tfm/data/tokenizer.h"

#include <cstdio>

#include "tfm/core/check.h"

namespace tfm {

std::string Tokenizer::fingerprint() const {
  // FNV-1a, 64 bits, over each piece and a 0 byte after it: a fingerprint, not a defence against
  // someone crafting a collision.
  uint64_t h = 0xcbf29ce484222325ULL;
  const auto mix = [&h](unsigned char c) { h = (h ^ c) * 0x100000001b3ULL; };
  Ids ids(static_cast<size_t>(size()));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i);
  for (const std::string& piece : ids_to_pieces(ids)) {
    for (const char c : piece) mix(static_cast<unsigned char>(c));
    mix(0);
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return std::string("fnv1a64:") + hex;
}

int64_t Tokenizer::language_id(const std::string& code) const {
  const auto it = languages_.find(code);
  if (it != languages_.end()) return it->second;
  std::string known;
  int shown = 0;
  for (const auto& [name, id] : languages_) {
    if (shown++ == 12) {
      known += ", …";
      break;
    }
    known += (known.empty() ? "" : ", ") + name;
  }
  TFM_CHECK(!languages_.empty()) << path() << ": the " << family()
                                 << " tokenizer has no language tokens (asked for \"" << code
                                 << "\")";
  TFM_FAIL() << path() << ": unknown language code \"" << code << "\"; the " << family()
             << " tokenizer knows " << languages_.size() << " (" << known << ")";
  return -1;
}

void Tokenizer::set_languages(std::map<std::string, int64_t> languages,
                              std::string default_source_lang) {
  languages_ = std::move(languages);
  default_source_lang_ = std::move(default_source_lang);
}

Ids Tokenizer::frame_source(const Ids& pieces, const std::string& src_lang) const {
  if (framing_.prefix.empty() && framing_.suffix.empty()) return pieces;
  int64_t lang = -1;
  auto id_of = [&](const FrameToken& t) -> int32_t {
    if (!t.language) return static_cast<int32_t>(t.id);
    if (lang < 0) {
      const std::string& code = src_lang.empty() ? default_source_lang_ : src_lang;
      TFM_CHECK(!code.empty()) << path() << ": the " << family()
                               << " tokenizer puts the source language's token around each "
                                  "source; give a source language";
      lang = language_id(code);
    }
    return static_cast<int32_t>(lang);
  };
  Ids out;
  out.reserve(pieces.size() + static_cast<size_t>(framing_.size()));
  for (const FrameToken& t : framing_.prefix) out.push_back(id_of(t));
  out.insert(out.end(), pieces.begin(), pieces.end());
  for (const FrameToken& t : framing_.suffix) out.push_back(id_of(t));
  return out;
}

}  // namespace tfm
