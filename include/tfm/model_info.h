// What a model directory holds, without loading its weights: read_model_info reads only the
// config (and the vocabulary file names), so it is cheap enough for a listing or a server's
// /health answer.
#pragma once

#include <cstdint>
#include <string>

namespace tfm {

struct ModelInfo {
  std::string directory;
  std::string config_json;  // the whole config, as `tfm info` prints it
  bool decoder_only = false;
  int64_t d_model = 0, heads = 0, d_ff = 0;
  int64_t encoder_layers = 0, decoder_layers = 0;
  int64_t src_vocab_size = 0, trg_vocab_size = 0;
  int64_t max_length = 0;  // positions, counting BOS/EOS
  int64_t pad_id = 0, bos_id = 0, eos_id = 0;
  bool source_bos = false, source_eos = true;
  int64_t parameter_count = 0;  // learned scalars (a shared embedding counted once)
  // Vocabulary files of the directory, empty when it has none (then only the id methods work).
  std::string src_vocab_path, trg_vocab_path;
  // A model converted from Hugging Face Transformers (tfm convert --from transformers): its
  // family ("marian", "nllb", "m2m_100", "bart", "mbart", "gpt2"), its tokenizer's kind, and the
  // precision chosen at conversion ("int8", "bf16"; "" for none). All empty for tfm's own models.
  std::string family, tokenizer, compute_type;
  // How the search ranks and stops by default: "tfm" (its own rules), or "transformers" for a
  // converted model (generate()'s: see docs/convert.md).
  std::string search_rule = "tfm";
};

// The info of model_dir (config.json and model.safetensors' metadata; vocabulary files found
// as the loader would). tfm::Error when the directory is not a model.
ModelInfo read_model_info(const std::string& model_dir);

}  // namespace tfm
