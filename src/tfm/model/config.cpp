#include "tfm/model/config.h"

#include <cmath>
#include <tuple>

#include <nlohmann/json.hpp>

#include "tfm/core/check.h"

namespace tfm {

namespace {

constexpr int kFormatVersion = 1;

template <typename E, size_t N>
E parse_enum(const std::string& key, const std::string& value,
             const std::pair<const char*, E> (&options)[N]) {
  std::string names;
  for (const auto& [name, v] : options) {
    if (value == name) return v;
    if (!names.empty()) names += "|";
    names += name;
  }
  TFM_FAIL() << "config: " << key << " must be one of " << names << ", got \"" << value << "\"";
  return options[0].second;
}

constexpr std::pair<const char*, NormPlacement> kNorms[] = {{"pre", NormPlacement::pre},
                                                            {"post", NormPlacement::post}};
constexpr std::pair<const char*, EmbedScale> kScales[] = {
    {"emb", EmbedScale::emb}, {"prj", EmbedScale::prj}, {"none", EmbedScale::none}};
constexpr std::pair<const char*, Positions> kPositions[] = {
    {"sinusoidal", Positions::sinusoidal},
    {"sinusoidal_concat", Positions::sinusoidal_concat},
    {"learned", Positions::learned},
    {"sinusoidal_marian", Positions::sinusoidal_marian}};
// A model's activation: none is a linear layer's option, not a model's.
constexpr std::pair<const char*, Activation> kActivations[] = {
    {"relu", Activation::relu},
    {"gelu", Activation::gelu},
    {"silu", Activation::silu},
    {"gelu_tanh", Activation::gelu_tanh}};

template <typename E, size_t N>
const char* enum_name(E v, const std::pair<const char*, E> (&options)[N]) {
  for (const auto& [name, e] : options)
    if (e == v) return name;
  return "?";
}

}  // namespace

const char* to_string(NormPlacement v) {
  return enum_name(v, kNorms);
}
const char* to_string(EmbedScale v) {
  return enum_name(v, kScales);
}
const char* to_string(Positions v) {
  return enum_name(v, kPositions);
}

void ModelConfig::validate() const {
  TFM_CHECK(d_model > 0) << "config: d_model must be positive, got " << d_model;
  TFM_CHECK(heads > 0 && d_model % heads == 0)
      << "config: heads (" << heads << ") must divide d_model (" << d_model << ")";
  TFM_CHECK(d_ff > 0) << "config: d_ff must be positive, got " << d_ff;
  TFM_CHECK(encoder_layers >= 0 && decoder_layers >= 1)
      << "config: need decoder_layers >= 1 and encoder_layers >= 0, got " << encoder_layers << "+"
      << decoder_layers;
  TFM_CHECK(!decoder_only || encoder_layers == 0)
      << "config: decoder_only models have no encoder layers, got encoder_layers = "
      << encoder_layers;
  TFM_CHECK(dropout >= 0 && dropout < 1) << "config: dropout must be in [0, 1), got " << dropout;
  TFM_CHECK(attention_dropout >= 0 && attention_dropout < 1)
      << "config: attention_dropout must be in [0, 1), got " << attention_dropout;
  TFM_CHECK(layer_norm_eps > 0) << "config: layer_norm_eps must be positive";
  TFM_CHECK(max_length > 0) << "config: max_length must be positive";
  TFM_CHECK(position_offset >= 0 && position_offset <= (int64_t{1} << 20))
      << "config: position_offset must be in [0, 2^20], got " << position_offset;
  TFM_CHECK(position_offset == 0 || positions != Positions::learned)
      << "config: position_offset applies to fixed (sinusoidal) tables, not learned ones";
  TFM_CHECK(trg_vocab_size > 0) << "config: trg_vocab_size must be positive";
  if (has_encoder()) {
    TFM_CHECK(src_vocab_size > 0) << "config: src_vocab_size must be positive";
    TFM_CHECK(!share_embeddings || src_vocab_size == trg_vocab_size)
        << "config: share_embeddings needs equal vocabularies, got " << src_vocab_size << " and "
        << trg_vocab_size;
  }
  // Bounds far past any real model, so that an absurd value (a typo, a corrupt file) is refused
  // here with its name instead of as an out-of-memory error or a run that never ends.
  for (auto [name, v, most] : {std::tuple{"d_model", d_model, int64_t{1} << 16},
                               {"heads", heads, int64_t{1} << 10},
                               {"d_ff", d_ff, int64_t{1} << 18},
                               {"encoder_layers", encoder_layers, int64_t{1} << 10},
                               {"decoder_layers", decoder_layers, int64_t{1} << 10},
                               {"max_length", max_length, int64_t{1} << 20},
                               {"src_vocab_size", src_vocab_size, int64_t{1} << 24},
                               {"trg_vocab_size", trg_vocab_size, int64_t{1} << 24}})
    TFM_CHECK(v <= most) << "config: " << name << " " << v << " is too large (at most " << most
                         << ")";
  TFM_CHECK(std::isfinite(layer_norm_eps) && layer_norm_eps < 1)
      << "config: layer_norm_eps must be in (0, 1), got " << layer_norm_eps;
  // Parameters, roughly: each bound above can hold while their product does not fit in memory.
  const double layer = 4.0 * d_model * d_model + 2.0 * d_model * d_ff;
  const double params = layer * static_cast<double>(encoder_layers + 2 * decoder_layers) +
                        static_cast<double>(d_model) * (src_vocab_size + 2 * trg_vocab_size);
  TFM_CHECK(params <= 1e10) << "config: about " << params / 1e9
                            << "G parameters is too large (at most 10G)";
  for (auto [name, id] : {std::pair{"pad_id", pad_id}, {"bos_id", bos_id}, {"eos_id", eos_id}})
    TFM_CHECK(id >= 0 && id < trg_vocab_size && (decoder_only || id < src_vocab_size))
        << "config: " << name << " " << id << " is outside the vocabulary";
}

std::string ModelConfig::to_json() const {
  nlohmann::ordered_json j;
  j["format_version"] = kFormatVersion;
  j["d_model"] = d_model;
  j["heads"] = heads;
  j["d_ff"] = d_ff;
  j["encoder_layers"] = encoder_layers;
  j["decoder_layers"] = decoder_layers;
  j["dropout"] = dropout;
  j["attention_dropout"] = attention_dropout;
  j["norm"] = to_string(norm);
  j["final_norm"] = final_norm;
  j["embed_norm"] = embed_norm;
  j["embed_scale"] = to_string(embed_scale);
  j["share_embeddings"] = share_embeddings;
  j["tie_output"] = tie_output;
  j["output_bias"] = output_bias;
  j["positions"] = to_string(positions);
  // Written only when set, so the configs (and checkpoint metadata) of models without it keep
  // their bytes.
  if (position_offset != 0) j["position_offset"] = position_offset;
  j["decoder_only"] = decoder_only;
  j["bias"] = bias;
  j["activation"] = activation_name(activation);
  j["layer_norm_eps"] = layer_norm_eps;
  j["pad_id"] = pad_id;
  j["bos_id"] = bos_id;
  j["eos_id"] = eos_id;
  j["source_bos"] = source_bos;
  j["source_eos"] = source_eos;
  j["max_length"] = max_length;
  j["src_vocab_size"] = src_vocab_size;
  j["trg_vocab_size"] = trg_vocab_size;
  return j.dump(2);
}

ModelConfig ModelConfig::from_json(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    TFM_FAIL() << "config: not valid JSON: " << e.what();
  }
  TFM_CHECK(j.is_object()) << "config: expected a JSON object";
  ModelConfig c;
  auto integer = [&](const char* key, int64_t& out) {
    if (!j.contains(key)) return;
    TFM_CHECK(j[key].is_number_integer()) << "config: " << key << " must be an integer";
    out = j[key].get<int64_t>();
  };
  auto number = [&](const char* key, double& out) {
    if (!j.contains(key)) return;
    TFM_CHECK(j[key].is_number()) << "config: " << key << " must be a number";
    out = j[key].get<double>();
  };
  auto boolean = [&](const char* key, bool& out) {
    if (!j.contains(key)) return;
    TFM_CHECK(j[key].is_boolean()) << "config: " << key << " must be true or false";
    out = j[key].get<bool>();
  };
  auto text_of = [&](const char* key) -> std::string {
    TFM_CHECK(j[key].is_string()) << "config: " << key << " must be a string";
    return j[key].get<std::string>();
  };
  static const char* kKnown[] = {"format_version",
                                 "d_model",
                                 "heads",
                                 "d_ff",
                                 "encoder_layers",
                                 "decoder_layers",
                                 "dropout",
                                 "attention_dropout",
                                 "norm",
                                 "final_norm",
                                 "embed_norm",
                                 "embed_scale",
                                 "share_embeddings",
                                 "tie_output",
                                 "output_bias",
                                 "positions",
                                 "position_offset",
                                 "decoder_only",
                                 "bias",
                                 "activation",
                                 "layer_norm_eps",
                                 "pad_id",
                                 "bos_id",
                                 "eos_id",
                                 "source_bos",
                                 "source_eos",
                                 "max_length",
                                 "src_vocab_size",
                                 "trg_vocab_size"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    for (const char* k : kKnown) known = known || it.key() == k;
    TFM_CHECK(known) << "config: unknown key \"" << it.key() << "\"";
  }
  if (j.contains("format_version")) {
    int64_t v = 0;
    integer("format_version", v);
    TFM_CHECK(v == kFormatVersion) << "config: format_version " << v << " is not supported (this "
                                   << "build reads " << kFormatVersion << ")";
  }
  integer("d_model", c.d_model);
  integer("heads", c.heads);
  integer("d_ff", c.d_ff);
  integer("encoder_layers", c.encoder_layers);
  integer("decoder_layers", c.decoder_layers);
  number("dropout", c.dropout);
  number("attention_dropout", c.attention_dropout);
  if (j.contains("norm")) c.norm = parse_enum("norm", text_of("norm"), kNorms);
  boolean("final_norm", c.final_norm);
  boolean("embed_norm", c.embed_norm);
  if (j.contains("embed_scale"))
    c.embed_scale = parse_enum("embed_scale", text_of("embed_scale"), kScales);
  boolean("share_embeddings", c.share_embeddings);
  boolean("tie_output", c.tie_output);
  boolean("output_bias", c.output_bias);
  if (j.contains("positions"))
    c.positions = parse_enum("positions", text_of("positions"), kPositions);
  integer("position_offset", c.position_offset);
  boolean("decoder_only", c.decoder_only);
  boolean("bias", c.bias);
  if (j.contains("activation"))
    c.activation = parse_enum("activation", text_of("activation"), kActivations);
  number("layer_norm_eps", c.layer_norm_eps);
  integer("pad_id", c.pad_id);
  integer("bos_id", c.bos_id);
  integer("eos_id", c.eos_id);
  boolean("source_bos", c.source_bos);
  boolean("source_eos", c.source_eos);
  integer("max_length", c.max_length);
  integer("src_vocab_size", c.src_vocab_size);
  integer("trg_vocab_size", c.trg_vocab_size);
  if (c.decoder_only) c.encoder_layers = 0;
  return c;
}

ModelConfig ModelConfig::preset(const std::string& name) {
  ModelConfig c;
  if (name == "tiny") {
    c.d_model = 32, c.heads = 4, c.d_ff = 64, c.encoder_layers = 2, c.decoder_layers = 2;
    c.max_length = 256;
  } else if (name == "small") {
    c.d_model = 256, c.heads = 4, c.d_ff = 1024, c.encoder_layers = 3, c.decoder_layers = 3;
  } else if (name == "quick") {
    // small's width for training budgets of minutes: two layers a stack learn faster per update
    // early on and run 1.3-1.45x the tokens/s, and pre-norm tolerates a learning rate of 2e-3
    // from the first updates (docs/history/performance.md, "Quick start", has the runs).
    c.d_model = 256, c.heads = 4, c.d_ff = 1024, c.encoder_layers = 2, c.decoder_layers = 2;
    c.norm = NormPlacement::pre, c.final_norm = true;
  } else if (name == "base") {
    c.d_model = 512, c.heads = 8, c.d_ff = 2048, c.encoder_layers = 6, c.decoder_layers = 6;
  } else if (name == "big") {
    c.d_model = 1024, c.heads = 16, c.d_ff = 4096, c.encoder_layers = 6, c.decoder_layers = 6;
    c.dropout = 0.3;
  } else {
    TFM_FAIL() << "unknown preset \"" << name << "\" (tiny, small, quick, base, big)";
  }
  return c;
}

}  // namespace tfm
