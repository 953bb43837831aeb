// A Hugging Face Transformers model directory's config.json (and generation config) read as tfm
// runs it: the ModelConfig with every architectural detail of the family's modeling file, the
// weight layout the checkpoint has, and generate()'s settings. A value tfm cannot run exactly is
// refused by name (tfm::Error), never approximated.
#pragma once

#include <string>

#include "tfm/model/config.h"
#include "tfm/model/generation_config.h"

namespace tfm::convert {

// Families: "marian", "m2m_100" (M2M100 and NLLB-200), "bart", "mbart" (mBART and mBART-50),
// "gpt2".
struct HfModel {
  std::string family;      // as above; "nllb" when an M2M100 model carries NLLB's tokenizer
  std::string model_type;  // config.json's model_type
  ModelConfig config;
  // Rows of each learned position table below the first position (BART's offset 2).
  int64_t learned_position_offset = 0;
  bool conv1d = false;       // GPT-2: weights (in, out), attention's q/k/v fused in c_attn
  bool logits_bias = false;  // the family has final_logits_bias (Marian, BART, mBART)
  GenerationConfig generation;
};

// Reads dir/config.json, and dir/generation_config.json when present (else the generation keys
// of config.json, as Transformers does for older models), and dir/tokenizer_config.json's
// tokenizer_class when present (NLLB vs M2M100, mBART-50 vs mBART).
HfModel read_hf_model(const std::string& dir);

}  // namespace tfm::convert
