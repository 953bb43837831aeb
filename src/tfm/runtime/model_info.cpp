#include "tfm/model_info.h"

#include <filesystem>

#include "tfm/data/tokenizer_files.h"
#include "tfm/data/vocab.h"
#include "tfm/model/checkpoint.h"
#include "tfm/model/generation_config.h"
#include "tfm/model/safetensors.h"
#include "tfm/runtime/model_info_impl.h"

namespace tfm {

namespace runtime {

ModelInfo make_model_info(const std::string& dir, const ModelConfig& c, int64_t parameter_count) {
  ModelInfo m;
  m.directory = dir;
  m.config_json = c.to_json();
  m.decoder_only = c.decoder_only;
  m.d_model = c.d_model;
  m.heads = c.heads;
  m.d_ff = c.d_ff;
  m.encoder_layers = c.has_encoder() ? c.encoder_layers : 0;
  m.decoder_layers = c.decoder_layers;
  m.src_vocab_size = c.src_vocab_size;
  m.trg_vocab_size = c.trg_vocab_size;
  m.max_length = c.max_length;
  m.pad_id = c.pad_id;
  m.bos_id = c.bos_id;
  m.eos_id = c.eos_id;
  m.source_bos = c.source_bos;
  m.source_eos = c.source_eos;
  m.parameter_count = parameter_count;
  // A converted directory's tokenizer file stands for both sides.
  const std::filesystem::path converted = std::filesystem::path(dir) / kTokenizerConfigFile;
  const ModelVocabPaths v = std::filesystem::exists(converted)
                                ? ModelVocabPaths{converted.string(), converted.string()}
                                : find_model_vocabs(dir);
  m.src_vocab_path = v.src;
  m.trg_vocab_path = v.trg;
  if (const auto g = read_generation_config(dir)) {
    m.family = g->family;
    m.tokenizer = g->tokenizer;
    m.compute_type = g->compute_type;
    m.search_rule = "transformers";
  }
  return m;
}

}  // namespace runtime

ModelInfo read_model_info(const std::string& model_dir) {
  const ModelConfig c = read_model_config(model_dir);
  // The parameter count from the weights' header (the map reads no tensor data).
  const std::string weights = (std::filesystem::path(model_dir) / "model.safetensors").string();
  int64_t params = 0;
  if (std::filesystem::exists(weights))
    for (const auto& [name, t] : load_safetensors(weights).tensors) params += t.numel();
  return runtime::make_model_info(model_dir, c, params);
}

}  // namespace tfm
