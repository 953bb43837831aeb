// Fuzz target for config.json: ModelConfig::from_json either raises tfm::Error or gives a config
// whose JSON form reads back to itself; validate() either raises tfm::Error or accepts. Anything
// else (a crash, a sanitizer report, another exception type) is a bug.
#include <cstdint>
#include <string>

#include "fuzz_common.h"
#include "tfm/core/check.h"
#include "tfm/model/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  tfm::ModelConfig c;
  try {
    c = tfm::ModelConfig::from_json(text);
  } catch (const tfm::Error&) {
    return 0;
  }
  const std::string json = c.to_json();
  fuzz::check(tfm::ModelConfig::from_json(json).to_json() == json, "fuzz_model_config",
              "a config's JSON does not read back to itself");
  try {
    c.validate();
  } catch (const tfm::Error&) {
  }
  return 0;
}
