#include "tfm/convert/hf_config.h"

#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "tfm/core/check.h"
#include "tfm/core/file_util.h"

namespace tfm::convert {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// One config.json being read: typed access that names the file and the key in every error.
// Keys the modeling code does not read are ignored, as Transformers ignores them; a key it reads
// is either converted or refused by name.
class Keys {
 public:
  Keys(json j, std::string what) : j_(std::move(j)), what_(std::move(what)) {}

  bool has(const std::string& key) const { return j_.contains(key) && !j_[key].is_null(); }
  const json& raw(const std::string& key) const { return j_.at(key); }
  int64_t integer(const std::string& key) {
    TFM_CHECK(has(key)) << what_ << ": \"" << key << "\" is missing";
    return integer_or(key, 0);
  }
  int64_t integer_or(const std::string& key, int64_t fallback) {
    if (!has(key)) return fallback;
    TFM_CHECK(j_[key].is_number_integer()) << what_ << ": \"" << key << "\" must be an integer";
    return j_[key].get<int64_t>();
  }
  double number_or(const std::string& key, double fallback) {
    if (!has(key)) return fallback;
    TFM_CHECK(j_[key].is_number()) << what_ << ": \"" << key << "\" must be a number";
    return j_[key].get<double>();
  }
  bool boolean_or(const std::string& key, bool fallback) {
    if (!has(key)) return fallback;
    TFM_CHECK(j_[key].is_boolean()) << what_ << ": \"" << key << "\" must be true or false";
    return j_[key].get<bool>();
  }
  std::string text_or(const std::string& key, const std::string& fallback) {
    if (!has(key)) return fallback;
    TFM_CHECK(j_[key].is_string()) << what_ << ": \"" << key << "\" must be a string";
    return j_[key].get<std::string>();
  }
  // A token id that may be given as a list of one (eos_token_id: [2]).
  std::optional<int64_t> token(const std::string& key) {
    if (!has(key)) return std::nullopt;
    const json& v = j_[key];
    if (v.is_array()) {
      std::set<int64_t> ids;
      for (const json& e : v) {
        TFM_CHECK(e.is_number_integer()) << what_ << ": \"" << key << "\" must hold token ids";
        ids.insert(e.get<int64_t>());
      }
      TFM_CHECK(ids.size() == 1) << what_ << ": \"" << key << "\" lists " << ids.size()
                                 << " token ids; tfm decodes with exactly one";
      return *ids.begin();
    }
    TFM_CHECK(v.is_number_integer()) << what_ << ": \"" << key << "\" must be a token id";
    return v.get<int64_t>();
  }
  // Refuses `key` unless absent or equal to `expected` (a setting tfm has only one way of).
  void require(const std::string& key, const json& expected, const std::string& why) {
    if (!has(key)) return;
    TFM_CHECK(j_[key] == expected)
        << what_ << ": \"" << key << "\": " << j_[key].dump() << " is not supported (" << why
        << "; tfm converts " << expected.dump() << " only)";
  }
  const std::string& what() const { return what_; }

 private:
  json j_;
  std::string what_;
};

json read_json(const fs::path& path) {
  try {
    return json::parse(read_file(path.string()));
  } catch (const json::exception& e) {
    TFM_FAIL() << path.string() << ": not valid JSON: " << e.what();
  }
  return {};
}

Activation activation(Keys& k, const std::string& key, const std::string& fallback) {
  const std::string a = k.text_or(key, fallback);
  if (a == "relu") return Activation::relu;
  if (a == "gelu" || a == "gelu_python") return Activation::gelu;
  if (a == "silu" || a == "swish") return Activation::silu;
  if (a == "gelu_new" || a == "gelu_fast" || a == "gelu_pytorch_tanh") return Activation::gelu_tanh;
  TFM_FAIL() << k.what() << ": \"" << key << "\": \"" << a << "\" is not supported (tfm has relu, "
             << "gelu, gelu_python, silu/swish, gelu_new/gelu_fast/gelu_pytorch_tanh)";
  return Activation::none;
}

// The encoder-decoder families (Marian, M2M100, BART, mBART): one modeling file shape, with the
// per-family differences of that file's code.
void read_seq2seq(Keys& k, HfModel& m) {
  ModelConfig& c = m.config;
  c.d_model = k.integer("d_model");
  c.encoder_layers = k.integer("encoder_layers");
  c.decoder_layers = k.integer("decoder_layers");
  c.heads = k.integer("encoder_attention_heads");
  const int64_t dh = k.integer_or("decoder_attention_heads", c.heads);
  TFM_CHECK(dh == c.heads) << k.what() << ": encoder_attention_heads " << c.heads
                           << " and decoder_attention_heads " << dh
                           << " differ; tfm's layers share one head count";
  c.d_ff = k.integer("encoder_ffn_dim");
  const int64_t df = k.integer_or("decoder_ffn_dim", c.d_ff);
  TFM_CHECK(df == c.d_ff) << k.what() << ": encoder_ffn_dim " << c.d_ff << " and decoder_ffn_dim "
                          << df << " differ; tfm's layers share one FFN width";
  c.activation = activation(k, "activation_function", "gelu");
  c.dropout = k.number_or("dropout", 0.1);
  c.attention_dropout = k.number_or("attention_dropout", 0.0);
  c.embed_scale = k.boolean_or("scale_embedding", false) ? EmbedScale::emb : EmbedScale::none;
  c.max_length = k.integer("max_position_embeddings");
  c.layer_norm_eps = 1e-5;  // nn.LayerNorm's default, which these modeling files use
  c.bias = true;
  c.decoder_only = false;
  k.require("is_encoder_decoder", true, "an encoder-decoder family");
  // Transformers 5 ties every pair its _tied_weights_keys name (the encoder's and the decoder's
  // tables to `shared`, lm_head to the decoder's) only under tie_word_embeddings: without it the
  // encoder's table, the decoder's and lm_head are three parameters (`shared` unused).
  const bool tie = k.boolean_or("tie_word_embeddings", true);
  c.tie_output = tie;
  const std::string& f = m.model_type;
  const int64_t vocab = k.integer("vocab_size");
  c.src_vocab_size = c.trg_vocab_size = vocab;
  c.share_embeddings = tie;
  // What each family's modeling code does; older configs carry these as keys that Transformers
  // no longer reads, accepted only when they say what the code does.
  const bool pre = f == "m2m_100" || f == "mbart";
  c.norm = pre ? NormPlacement::pre : NormPlacement::post;
  c.final_norm = pre;
  c.embed_norm = f == "bart" || f == "mbart";
  k.require(
      "normalize_before", pre,
      "Transformers' " + f + " code is " + (pre ? "pre" : "post") + "-norm whatever this key says");
  k.require("add_final_layer_norm", pre, "the " + f + " modeling code fixes it");
  k.require("normalize_embedding", c.embed_norm, "the " + f + " modeling code fixes it");
  k.require("add_bias_logits", false, "no modeling file reads it");
  if (f == "marian") {
    c.positions = Positions::sinusoidal_marian;
    k.require("static_position_embeddings", true, "Marian's positions are sinusoids");
    const bool shared = k.boolean_or("share_encoder_decoder_embeddings", true);
    c.share_embeddings = tie && shared;
    if (!shared) c.trg_vocab_size = k.integer_or("decoder_vocab_size", vocab);
    m.logits_bias = true;
  } else if (f == "m2m_100") {
    c.positions = Positions::sinusoidal_concat;
    m.logits_bias = false;
  } else {  // bart, mbart
    c.positions = Positions::learned;
    k.require("static_position_embeddings", false, "BART's positions are learned");
    m.learned_position_offset = 2;
    m.logits_bias = true;
  }
}

void read_gpt2(Keys& k, HfModel& m) {
  ModelConfig& c = m.config;
  c.decoder_only = true;
  c.encoder_layers = 0;
  c.d_model = k.integer("n_embd");
  c.decoder_layers = k.integer("n_layer");
  c.heads = k.integer("n_head");
  c.d_ff = k.integer_or("n_inner", 4 * c.d_model);
  c.activation = activation(k, "activation_function", "gelu_new");
  c.dropout = k.number_or("resid_pdrop", 0.1);
  c.attention_dropout = k.number_or("attn_pdrop", 0.1);
  c.max_length = k.integer("n_positions");
  c.layer_norm_eps = k.number_or("layer_norm_epsilon", 1e-5);
  c.norm = NormPlacement::pre;
  c.final_norm = true;
  c.embed_norm = false;
  c.embed_scale = EmbedScale::none;
  c.positions = Positions::learned;
  c.tie_output = k.boolean_or("tie_word_embeddings", true);
  c.trg_vocab_size = k.integer("vocab_size");
  c.src_vocab_size = 0;
  c.bias = true;
  k.require("scale_attn_weights", true, "tfm's attention always scales by 1/sqrt(head width)");
  k.require("scale_attn_by_inverse_layer_idx", false, "tfm's attention has no per-layer scale");
  k.require("add_cross_attention", false, "a GPT-2 with cross-attention is not a language model");
  k.require("is_encoder_decoder", false, "GPT-2 is decoder-only");
  // reorder_and_upcast_attn computes attention in fp32, as tfm does anyway.
  m.conv1d = true;
}

// generate()'s settings from generation_config.json, else (older models) from config.json, with
// Transformers' defaults where unset. What tfm's search does not do is refused by name.
void read_generation(const fs::path& dir, Keys& config_keys, HfModel& m) {
  const fs::path path = dir / "generation_config.json";
  std::optional<Keys> own;
  if (fs::exists(path)) own.emplace(read_json(path), path.string());
  Keys& k = own ? *own : config_keys;
  GenerationConfig& g = m.generation;
  ModelConfig& c = m.config;
  k.require("do_sample", false, "tfm decodes a converted model greedily or by beam search");
  k.require("num_beam_groups", 1, "diverse beam search");
  k.require("repetition_penalty", 1.0, "a repetition penalty");
  k.require("encoder_repetition_penalty", 1.0, "an encoder repetition penalty");
  k.require("encoder_no_repeat_ngram_size", 0, "n-gram bans from the source");
  k.require("renormalize_logits", false, "renormalised logits");
  k.require("guidance_scale", 1.0, "classifier-free guidance");
  for (const char* key :
       {"suppress_tokens", "begin_suppress_tokens", "sequence_bias", "forced_decoder_ids",
        "exponential_decay_length_penalty", "constraints", "force_words_ids", "penalty_alpha",
        "watermarking_config", "max_time", "stop_strings"})
    k.require(key, nullptr, "a generate() feature tfm does not have");
  g.num_beams = k.integer_or("num_beams", 1);
  g.num_return_sequences = k.integer_or("num_return_sequences", 1);
  g.length_penalty = k.number_or("length_penalty", 1.0);
  if (k.has("early_stopping")) {
    const json& e = k.raw("early_stopping");
    TFM_CHECK(e.is_boolean() || e == "never")
        << k.what() << ": \"early_stopping\" must be true, false or \"never\"";
    g.early_stopping = e == "never"    ? EarlyStopping::never
                       : e.get<bool>() ? EarlyStopping::finished
                                       : EarlyStopping::heuristic;
  }
  if (k.has("max_length")) g.max_length = k.integer("max_length");
  if (k.has("max_new_tokens")) g.max_new_tokens = k.integer("max_new_tokens");
  // Neither: generate()'s default, 20 new tokens.
  if (!g.max_length && !g.max_new_tokens) g.max_new_tokens = 20;
  g.min_length = k.integer_or("min_length", 0);
  g.min_new_tokens = k.integer_or("min_new_tokens", 0);
  TFM_CHECK(!c.decoder_only || g.min_new_tokens == 0)
      << k.what() << ": \"min_new_tokens\" for a decoder-only model is not supported (tfm's "
      << "minimum counts the prompt, as min_length does)";
  g.no_repeat_ngram_size = k.integer_or("no_repeat_ngram_size", 0);
  if (const auto start = k.token("decoder_start_token_id"); start && !c.decoder_only)
    c.bos_id = *start;
  if (const auto eos = k.token("eos_token_id")) c.eos_id = *eos;
  g.forced_bos_token_id = k.token("forced_bos_token_id");
  g.forced_eos_token_id = k.token("forced_eos_token_id");
  if (k.has("bad_words_ids")) {
    const json& b = k.raw("bad_words_ids");
    TFM_CHECK(b.is_array()) << k.what() << ": \"bad_words_ids\" must be a list of lists of ids";
    for (const json& seq : b) {
      TFM_CHECK(seq.is_array() && !seq.empty())
          << k.what() << ": \"bad_words_ids\" must be a list of non-empty lists of ids";
      Ids ids;
      for (const json& id : seq) {
        TFM_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0)
            << k.what() << ": \"bad_words_ids\" holds " << id.dump() << ", not a token id";
        ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
      }
      // generate() drops a ban of EOS alone (NoBadWordsLogitsProcessor).
      if (!(ids.size() == 1 && ids[0] == c.eos_id)) g.bad_words_ids.push_back(std::move(ids));
    }
  }
}

}  // namespace

HfModel read_hf_model(const std::string& dir_s) {
  const fs::path dir(dir_s);
  TFM_CHECK(fs::is_directory(dir)) << "convert: " << dir_s << " is not a directory";
  const fs::path cfg = dir / "config.json";
  TFM_CHECK(fs::exists(cfg)) << "convert: no config.json in " << dir_s
                             << " (a Transformers model directory, as save_pretrained writes it)";
  Keys k(read_json(cfg), cfg.string());
  HfModel m;
  m.model_type = k.text_or("model_type", "");
  static const std::set<std::string> kFamilies = {"marian", "m2m_100", "bart", "mbart", "gpt2"};
  TFM_CHECK(kFamilies.count(m.model_type))
      << cfg.string() << ": model_type \"" << m.model_type << "\" is not one tfm converts "
      << "(marian, m2m_100 for M2M100 and NLLB, bart, mbart, gpt2)";
  m.family = m.model_type;
  if (m.model_type == "gpt2")
    read_gpt2(k, m);
  else
    read_seq2seq(k, m);
  // The tokenizer's class tells NLLB from M2M100 and mBART-50 from mBART (cc25), whose target
  // languages reach the decoder differently.
  std::string tokenizer_class = k.text_or("tokenizer_class", "");
  const fs::path tok = dir / "tokenizer_config.json";
  if (fs::exists(tok)) {
    const json t = read_json(tok);
    if (t.contains("tokenizer_class") && t["tokenizer_class"].is_string())
      tokenizer_class = t["tokenizer_class"].get<std::string>();
  }
  if (m.model_type == "m2m_100" && tokenizer_class.rfind("Nllb", 0) == 0) m.family = "nllb";
  GenerationConfig& g = m.generation;
  g.family = m.family;
  if (m.model_type == "m2m_100") {
    g.target_language = TargetLanguage::forced_bos;
    g.source_language = true;
  } else if (m.model_type == "mbart") {
    const bool fifty = tokenizer_class.rfind("MBart50", 0) == 0;
    g.target_language = fifty ? TargetLanguage::forced_bos : TargetLanguage::decoder_start;
    g.source_language = !tokenizer_class.empty();
  }
  // Special ids: tfm's BOS is the token the decoder starts from (Transformers'
  // decoder_start_token_id, else bos_token_id); a missing pad (GPT-2) is EOS, as generate pads.
  ModelConfig& c = m.config;
  const auto eos = k.token("eos_token_id");
  TFM_CHECK(eos) << cfg.string() << ": eos_token_id is missing";
  const auto bos = k.token("bos_token_id");
  const auto pad = k.token("pad_token_id");
  const auto start = k.token("decoder_start_token_id");
  k.token("forced_eos_token_id");  // a generation setting; read_generation takes it
  c.eos_id = *eos;
  c.pad_id = pad ? *pad : *eos;
  if (c.decoder_only) {
    c.bos_id = bos ? *bos : *eos;
  } else {
    TFM_CHECK(start || bos) << cfg.string()
                            << ": neither decoder_start_token_id nor bos_token_id is set";
    c.bos_id = start ? *start : *bos;
  }
  // Transformers' tokenizers frame the source (language codes included); the config frames
  // nothing, so the ids a converted model reads are the tokenizer's input_ids.
  c.source_bos = false;
  c.source_eos = false;
  if (c.positions == Positions::sinusoidal_concat) c.position_offset = c.pad_id + 1;
  read_generation(dir, k, m);
  c.validate();
  g.validate(c.trg_vocab_size);
  return m;
}

}  // namespace tfm::convert
