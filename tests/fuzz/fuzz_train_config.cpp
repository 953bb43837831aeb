// Fuzz target for tfm train's --config files: the input (its first byte picks YAML or JSON, the
// rest is the file) is either rejected with tfm::Error or gives option names of letters, digits
// and '-' with their values. Anything else (a crash, a sanitizer report, another exception, a
// hang in libyaml's loop) is a bug.
#include <cstdint>
#include <string>

#include "fuzz_common.h"
#include "tfm/core/check.h"
#include "tfm/train/config_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string name = (data[0] & 1) ? "config.json" : "config.yaml";
  const std::string path =
      fuzz::scratch_file(name, std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  try {
    for (const auto& [key, values] : tfm::read_config_file(path)) {
      fuzz::check(!key.empty(), "fuzz_train_config", "an empty option name");
      fuzz::check(key.find('_') == std::string::npos, "fuzz_train_config",
                  "'_' left in an option name");
      (void)values;
    }
  } catch (const tfm::Error&) {
  }
  return 0;
}
