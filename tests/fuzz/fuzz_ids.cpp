// Fuzz target for `--ids` input (translate and score without SentencePiece): a line either raises
// tfm::Error naming the line, or gives ids inside the vocabulary that print back, space
// separated, to a line that parses to the same ids.
#include <cstdint>
#include <string>

#include "fuzz_common.h"
#include "tfm/core/check.h"
#include "tfm/data/vocab.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte picks the vocabulary size, so the bounds are fuzzed too.
  const int64_t vocab_size = 1 + int64_t{data[0]} * 131;
  const std::string line(reinterpret_cast<const char*>(data) + 1, size - 1);
  tfm::Ids ids;
  try {
    ids = tfm::parse_ids(line, vocab_size, "fuzz:1");
  } catch (const tfm::Error& e) {
    fuzz::check(e.message().rfind("fuzz:1: ", 0) == 0, "fuzz_ids", "an error without the line");
    return 0;
  }
  std::string again;
  for (const int32_t id : ids) {
    fuzz::check(id >= 0 && id < vocab_size, "fuzz_ids", "an id outside the vocabulary");
    again += (again.empty() ? "" : " ") + std::to_string(id);
  }
  fuzz::check(tfm::parse_ids(again, vocab_size, "fuzz:2") == ids, "fuzz_ids",
              "printed ids do not parse back");
  return 0;
}
