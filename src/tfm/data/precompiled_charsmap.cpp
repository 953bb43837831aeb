#include "tfm/data/precompiled_charsmap.h"

#include <cstring>  // strnlen

#include "tfm/core/check.h"
#include "tfm/data/unicode.h"

namespace tfm {

namespace {

// A Darts-clone unit: label in the low byte (bit 31 set on non-label units), a leaf flag at bit
// 8, and the offset to the children (shifted by 8 more when bit 9 is set).
uint32_t unit_label(uint32_t u) {
  return u & ((1u << 31) | 0xFF);
}
bool unit_has_leaf(uint32_t u) {
  return ((u >> 8) & 1) != 0;
}
uint32_t unit_value(uint32_t u) {
  return u & ((1u << 31) - 1);
}
uint32_t unit_offset(uint32_t u) {
  return (u >> 10) << ((u & (1u << 9)) >> 6);
}

uint32_t little_endian_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

}  // namespace

PrecompiledCharsmap::PrecompiledCharsmap(std::string blob) : blob_(std::move(blob)) {
  TFM_CHECK(blob_.size() >= 4) << "precompiled charsmap: " << blob_.size()
                               << " bytes, too short for its header";
  const uint32_t trie_bytes = little_endian_u32(blob_.data());
  TFM_CHECK(trie_bytes % 4 == 0 && trie_bytes <= blob_.size() - 4 && trie_bytes > 0)
      << "precompiled charsmap: a trie of " << trie_bytes << " bytes does not fit " << blob_.size()
      << " bytes";
  units_.resize(trie_bytes / 4);
  for (size_t i = 0; i < units_.size(); ++i)
    units_[i] = little_endian_u32(blob_.data() + 4 + 4 * i);
  replacements_ = std::string_view(blob_).substr(4 + trie_bytes);
}

const char* PrecompiledCharsmap::shortest_match(std::string_view key, size_t* len) const {
  size_t pos = unit_offset(units_[0]);
  for (size_t i = 0; i < key.size(); ++i) {
    const auto c = static_cast<unsigned char>(key[i]);
    if (c == 0) break;
    pos ^= c;
    if (pos >= units_.size()) return nullptr;
    const uint32_t u = units_[pos];
    if (unit_label(u) != c) return nullptr;
    pos ^= unit_offset(u);
    if (unit_has_leaf(u)) {
      TFM_CHECK(pos < units_.size()) << "precompiled charsmap: corrupt trie";
      const uint32_t at = unit_value(units_[pos]);
      TFM_CHECK(at <= replacements_.size())
          << "precompiled charsmap: a replacement at " << at << " past the end";
      const char* r = replacements_.data() + at;
      *len = strnlen(r, replacements_.size() - at);
      return r;
    }
  }
  return nullptr;
}

std::string PrecompiledCharsmap::normalize(std::string_view text) const {
  std::string out;
  out.reserve(text.size());
  const std::vector<size_t> bounds = unicode::grapheme_bounds(text);
  size_t len = 0;
  for (size_t g = 0; g + 1 < bounds.size(); ++g) {
    const std::string_view cluster = text.substr(bounds[g], bounds[g + 1] - bounds[g]);
    if (cluster.size() < 6) {
      if (const char* r = shortest_match(cluster, &len)) {
        out.append(r, len);
        continue;
      }
    }
    for (size_t i = 0; i < cluster.size();) {
      const size_t n = unicode::sequence_length(static_cast<unsigned char>(cluster[i]));
      const std::string_view ch = cluster.substr(i, n);
      if (const char* r = shortest_match(ch, &len))
        out.append(r, len);
      else
        out.append(ch);
      i += n;
    }
  }
  return out;
}

}  // namespace tfm
