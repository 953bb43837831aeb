// Fuzz target for model validation, config + tensors: a model.safetensors byte string goes
// through what load_model does after reading the file (the config from the metadata, format and
// limits checked, then every tensor against the config: names, shapes, dtype, finite values).
// Either that raises tfm::Error or the model is built with exactly the file's tensors; and the
// inference load (inference_model_from_weights, int8: every linear layer bound from the file's
// tensor) then raises nothing either.
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "fuzz_common.h"
#include "tfm/core/check.h"
#include "tfm/model/checkpoint.h"
#include "tfm/model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto bytes = std::make_shared<tfm::Storage>();
  bytes->data = std::shared_ptr<void>(new uint8_t[size ? size : 1],
                                      [](void* p) { delete[] static_cast<uint8_t*>(p); });
  if (size) std::memcpy(bytes->data.get(), data, size);
  bytes->nbytes = size;
  try {
    const tfm::SafetensorsFile f = tfm::parse_safetensors(bytes, "fuzz input");
    const tfm::ModelConfig c = tfm::config_from_weights(f, "fuzz input");
    c.validate();
    // Building a model initialises every parameter: bounded, so each input stays fast. A valid
    // file holds the parameters themselves, so a larger model needs an input this size anyway.
    const double layer = 4.0 * c.d_model * c.d_model + 2.0 * c.d_model * c.d_ff;
    const double params =
        layer * static_cast<double>(c.encoder_layers + 2 * c.decoder_layers) +
        static_cast<double>(c.d_model) * (c.src_vocab_size + 2 * c.trg_vocab_size) +
        static_cast<double>(c.max_length) * c.d_model * 2;
    if (params > 4.0 * static_cast<double>(size) + 1e5) return 0;
    const auto model = tfm::model_from_weights(c, f, "fuzz input");
    fuzz::check(model->named_parameters().size() == f.tensors.size(), "fuzz_model_weights",
                "the model was built from a file with other tensors");
    try {
      tfm::inference_model_from_weights(c, f, "fuzz input", tfm::ComputeType::int8, std::nullopt);
    } catch (const tfm::Error& e) {
      const std::string what = "load_model accepts what the inference load refuses: " + e.message();
      fuzz::check(false, "fuzz_model_weights", what.c_str());
    }
  } catch (const tfm::Error&) {
  }
  return 0;
}
