// ModelConfig: every variant the seeds show, as options (docs/design.md, "Model"), with presets,
// validation, and the JSON form stored in config.json and in model.safetensors' metadata.
#pragma once

#include <cstdint>
#include <string>

#include "tfm/data/seq_format.h"
#include "tfm/types.h"

namespace tfm {

enum class NormPlacement { pre, post };
enum class EmbedScale { emb, prj, none };
// sinusoidal: interleaved sin/cos (the paper's, seeds 001/003/004); sinusoidal_concat: [sin | cos]
// with tensor2tensor's frequencies, 10000^(-j/(d/2 - 1)) (seed 000, fairseq, M2M100/NLLB);
// sinusoidal_marian: [sin | cos] with the paper's frequencies, 10000^(-2j/d) (Marian/OPUS-MT).
enum class Positions { sinusoidal, sinusoidal_concat, learned, sinusoidal_marian };

struct ModelConfig {
  int64_t d_model = 512;
  int64_t heads = 8;
  int64_t d_ff = 2048;
  int64_t encoder_layers = 6;
  int64_t decoder_layers = 6;
  double dropout = 0.1;
  double attention_dropout = 0.0;
  NormPlacement norm = NormPlacement::post;
  bool final_norm = false;  // a LayerNorm at the end of each stack (pre-norm models want it)
  bool embed_norm = false;  // a LayerNorm after embedding + positions + dropout (seed 004)
  EmbedScale embed_scale = EmbedScale::emb;
  bool share_embeddings = false;  // one table for source and target
  bool tie_output = true;         // output projection = target embedding
  bool output_bias = false;
  Positions positions = Positions::sinusoidal;
  // Row p of a fixed position table holds the sinusoid of position p + position_offset: fairseq
  // and M2M100 number positions from pad_id + 1 (2). Learned tables take no offset (a converter
  // drops the rows below it).
  int64_t position_offset = 0;
  bool decoder_only = false;
  bool bias = true;  // biases of the attention projections and the FFN
  Activation activation = Activation::relu;
  double layer_norm_eps = 1e-5;
  int64_t pad_id = 0;
  int64_t bos_id = 1;
  int64_t eos_id = 2;
  // The encoder reads [BOS] x1 … xm [EOS]: BOS when source_bos, EOS when source_eos (see
  // data/seq_format.h). Config files written before these keys existed mean the defaults.
  bool source_bos = false;
  bool source_eos = true;
  int64_t max_length = 1024;  // positions available (table size)
  int64_t src_vocab_size = 0;
  int64_t trg_vocab_size = 0;

  bool has_encoder() const { return !decoder_only; }
  // The special ids and source framing, for data/ (batches) and decode/.
  SeqFormat seq_format() const { return {pad_id, bos_id, eos_id, source_bos, source_eos}; }
  int64_t head_dim() const { return d_model / heads; }

  // Throws tfm::Error naming the first inconsistent field.
  void validate() const;
  std::string to_json() const;  // pretty-printed, with format_version
  static ModelConfig from_json(const std::string& text);
  // tiny (tests), small, base (the paper), big. Vocab sizes stay 0: the caller sets them.
  static ModelConfig preset(const std::string& name);
};

const char* to_string(NormPlacement v);
const char* to_string(EmbedScale v);
const char* to_string(Positions v);

}  // namespace tfm
