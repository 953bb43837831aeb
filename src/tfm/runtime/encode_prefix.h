// Encoding no more of a text than a model reads. A source is cut to the model's positions after
// tokenising, so tokenising all of a long text is wasted, and SentencePiece needs ~200 bytes per
// input byte on the way (a 1 MB text made a server 220 MB larger, and took a minute as CJK).
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "tfm/data/vocab.h"

namespace tfm::runtime {

// The ids of `text`, or of a beginning of it (then *cut is set): one with more than `enough`
// ids, the first `enough` of which are those of the whole text, or the first kMaxBytesPerId x
// `enough` bytes. A long text is cut at whitespace (pieces never span it) past a byte budget
// that grows until the cut holds enough ids; a text without whitespace there is cut at a
// character and must yield 64 ids past `enough`. A piece covers at most 16 characters, so only a
// run of characters the vocabulary lacks (SentencePiece merges it into one unknown piece) can
// reach the byte cap with fewer ids. The count of a cut text's ids is a lower bound of the
// whole text's.
inline constexpr size_t kMaxBytesPerId = 128;
Ids encode_enough(const std::string& text, size_t enough,
                  const std::function<Ids(const std::string&)>& encode, bool* cut = nullptr);

}  // namespace tfm::runtime
