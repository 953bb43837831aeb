// tfm convert --from transformers: a Hugging Face Transformers model directory (config.json,
// model.safetensors, generation_config.json, tokenizer files) into a tfm model directory
// (config.json + model.safetensors, generation.json, the tokenizer), written atomically.
#pragma once

#include <string>

#include "tfm/types.h"

namespace tfm::convert {

struct Options {
  // The precision the converted model runs in unless its user asks for another: recorded in
  // generation.json (the weights stay f32, as every tfm model's; bf16 and int8 are packed at
  // load). float32: nothing recorded.
  ComputeType quantization = ComputeType::float32;
  bool force = false;  // replace out_dir when it exists and is not empty
};

void convert_transformers(const std::string& hf_dir, const std::string& out_dir,
                          const Options& options = {});

}  // namespace tfm::convert
