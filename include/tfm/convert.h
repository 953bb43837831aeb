// tfm::convert_transformers: a Hugging Face Transformers model directory (MarianMT/OPUS-MT,
// M2M100, NLLB-200, BART, mBART/mBART-50, GPT-2) as a tfm model directory that translates (or, for
// GPT-2, generates) exactly as Transformers runs it; docs/convert.md has what is converted and
// what is refused.
//
//   tfm::convert_transformers("opus-mt-de-en/", "de-en/", {.quantization = "int8"});
//   tfm::Translator t("de-en/");
#pragma once

#include <string>

#include "tfm/error.h"
#include "tfm/model_info.h"

namespace tfm {

struct ConvertOptions {
  // The precision the converted model runs in unless a Translator asks for another: "" (fp32),
  // "int8" or "bf16". The weights are stored f32 either way and packed when loaded.
  std::string quantization;
  bool force = false;  // replace output_dir when it exists and is not empty
};

// Reads hf_dir (config.json, model.safetensors or its shards, generation_config.json, tokenizer
// files) and writes output_dir atomically: config.json + model.safetensors (tfm's),
// generation.json (the family and generate()'s settings) and, when hf_dir has tokenizer files,
// the tokenizer (tfm_tokenizer.json and its data: text in and out as the Transformers tokenizer
// encodes and decodes it). pytorch_model.bin needs PyTorch: the Python package's
// tfm.convert_transformers reads it. Returns the new directory's ModelInfo; every problem, a
// config option tfm lacks included, is a tfm::Error naming it.
ModelInfo convert_transformers(const std::string& hf_dir, const std::string& output_dir,
                               const ConvertOptions& options = {});

}  // namespace tfm
