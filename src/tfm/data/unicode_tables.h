// The generated table behind data/unicode.h (tools/make_unicode_tables.py writes
// unicode_tables.cpp): code point ranges with their properties, sorted, without gaps' entries
// (a code point in no range has none).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tfm::unicode {

struct CodeRange {
  uint32_t lo, hi;  // inclusive
  uint32_t props;   // the bits of unicode.h's Prop, the grapheme break at 8, InCB at 12
};

extern const CodeRange kCodeRanges[];
extern const size_t kCodeRangeCount;

}  // namespace tfm::unicode
