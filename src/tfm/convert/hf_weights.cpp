#include "tfm/convert/hf_weights.h"

#include <cmath>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "tfm/core/check.h"
#include "tfm/core/file_util.h"
#include "tfm/model/checkpoint.h"
#include "tfm/model/safetensors.h"
#include "tfm/nn/positional.h"

namespace tfm::convert {

namespace fs = std::filesystem;

std::map<std::string, Tensor> read_hf_tensors(const std::string& dir_s) {
  const fs::path dir(dir_s);
  std::vector<fs::path> files;
  const fs::path single = dir / "model.safetensors", index = dir / "model.safetensors.index.json";
  if (fs::exists(single)) {
    files.push_back(single);
  } else if (fs::exists(index)) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(read_file(index.string()));
    } catch (const nlohmann::json::exception& e) {
      TFM_FAIL() << index.string() << ": not valid JSON: " << e.what();
    }
    TFM_CHECK(j.contains("weight_map") && j["weight_map"].is_object())
        << index.string() << ": no \"weight_map\" object";
    std::set<std::string> shards;
    for (const auto& [name, file] : j["weight_map"].items()) {
      TFM_CHECK(file.is_string()) << index.string() << ": weight_map[\"" << name
                                  << "\"] is not a file name";
      const std::string f = file.get<std::string>();
      TFM_CHECK(f.find('/') == std::string::npos && f != ".." && !f.empty())
          << index.string() << ": shard \"" << f << "\" is not a file of the directory";
      shards.insert(f);
    }
    for (const std::string& f : shards) files.push_back(dir / f);
  } else {
    TFM_CHECK(!fs::exists(dir / "pytorch_model.bin"))
        << "convert: " << dir_s << " holds pytorch_model.bin, a pickle that only PyTorch reads: "
        << "convert it with tfm.convert_transformers (Python, with torch) or "
        << "tools/convert_transformers.py, which write model.safetensors first";
    TFM_FAIL() << "convert: no model.safetensors (or model.safetensors.index.json) in " << dir_s;
  }
  std::map<std::string, Tensor> out;
  for (const fs::path& f : files) {
    SafetensorsFile st = load_safetensors(f.string());
    for (auto& [name, t] : st.tensors) {
      TFM_CHECK(!out.count(name)) << f.string() << ": tensor " << name << " is in two shards";
      out.emplace(name, t);
    }
  }
  return out;
}

namespace {

// The checkpoint's tensors under Transformers' module names, the "model." / "transformer."
// prefix of the head class removed (older checkpoints were saved without it).
class Source {
 public:
  Source(const std::map<std::string, Tensor>& hf, const HfModel& m, std::string what)
      : what_(std::move(what)) {
    const std::string prefix = m.conv1d ? "transformer." : "model.";
    for (const auto& [name, t] : hf) {
      const bool prefixed = name.rfind(prefix, 0) == 0;
      if (prefixed) prefix_ = prefix;
      const std::string key = prefixed ? name.substr(prefix.size()) : name;
      TFM_CHECK(!t_.count(key)) << what_ << ": tensors " << name << " and " << key
                                << " are the same weight twice";
      t_.emplace(key, t);
    }
  }
  bool has(const std::string& key) const { return t_.count(key) > 0; }
  // The tensor, as f32; marks it used.
  Tensor take(const std::string& key) {
    auto it = t_.find(key);
    TFM_CHECK(it != t_.end()) << what_ << ": missing tensor " << stored_name(key);
    used_.insert(key);
    const Tensor& t = it->second;
    TFM_CHECK(t.dtype() == DType::f32 || t.dtype() == DType::f16 || t.dtype() == DType::bf16 ||
              t.dtype() == DType::f64)
        << what_ << ": tensor " << key << " is " << dtype_name(t.dtype())
        << "; weights must be f32, f16, bf16 or f64";
    return t.dtype() == DType::f32 ? t : t.to(DType::f32);
  }
  // The first of `keys` present (tied copies: Transformers keeps the first's values).
  Tensor take_first(std::initializer_list<std::string> keys) {
    for (const std::string& k : keys)
      if (has(k)) return take(k);
    std::string names;
    for (const std::string& k : keys) names += (names.empty() ? "" : ", ") + stored_name(k);
    TFM_FAIL() << what_ << ": missing tensor: none of " << names;
    return {};
  }
  // Tensors neither taken nor skipped.
  std::vector<std::string> unused() const {
    std::vector<std::string> out;
    for (const auto& [k, t] : t_)
      if (!used_.count(k)) out.push_back(k);
    return out;
  }
  const std::string& what() const { return what_; }
  // A module name as the checkpoint spells it: with the head's prefix when its names have one
  // (lm_head and final_logits_bias sit outside it).
  std::string stored_name(const std::string& key) const {
    return key == "lm_head.weight" || key == "final_logits_bias" ? key : prefix_ + key;
  }

 private:
  std::string what_, prefix_;
  std::map<std::string, Tensor> t_;
  std::set<std::string> used_;
};

bool all_zero(const Tensor& t) {
  for (float v : t.contiguous().to_vector<float>())
    if (v != 0.0f) return false;
  return true;
}

// A learned table (rows, C) cut to the model's positions past `offset`.
Tensor position_rows(const Tensor& t, int64_t offset, int64_t length, const std::string& what) {
  TFM_CHECK(t.dim() == 2 && t.size(0) >= offset + length)
      << what << ": position table " << t.describe() << " has fewer than " << offset + length
      << " rows";
  return t.slice(offset, offset + length);
}

// Marian checkpoints of older Transformers versions store the sinusoid table, which Transformers
// then loads instead of computing it: it must be the table tfm computes.
void check_marian_positions(Source& s, const std::string& key, const ModelConfig& c) {
  if (!s.has(key)) return;
  const Tensor stored = s.take(key);
  const Tensor mine = nn::sinusoidal_marian_table(c.max_length, c.d_model);
  TFM_CHECK(stored.shape() == mine.shape())
      << s.what() << ": " << key << " is " << stored.describe() << ", Marian's sinusoids "
      << mine.describe();
  const std::vector<float> a = stored.contiguous().to_vector<float>(), b = mine.to_vector<float>();
  for (size_t i = 0; i < a.size(); ++i)
    TFM_CHECK(std::abs(a[i] - b[i]) <= 1e-5f)
        << s.what() << ": " << key << " differs from Marian's sinusoids (element " << i << ": "
        << a[i] << " vs " << b[i] << "); tfm computes that table and cannot take another";
}

// GPT-2's tensor for tfm parameter `name` (decoder.*, embed.trg, pos.trg, output.weight).
Tensor gpt2_tensor(Source& s, const std::string& name, const ModelConfig& c) {
  const int64_t d = c.d_model;
  if (name == "embed.trg.weight") return s.take("wte.weight");
  if (name == "pos.trg.weight")
    return position_rows(s.take("wpe.weight"), 0, c.max_length, s.what());
  if (name == "output.weight") return s.take("lm_head.weight");
  if (name.rfind("decoder.final_norm.", 0) == 0) return s.take("ln_f." + name.substr(19));
  // decoder.layers.N.<rest>
  const size_t dot = name.find('.', 15);
  const std::string layer = "h." + name.substr(15, dot - 15) + ".", rest = name.substr(dot + 1);
  const bool weight = rest.ends_with(".weight");
  const std::string param = weight ? "weight" : "bias";
  auto conv = [&](const std::string& key) {  // Conv1D: (in, out) -> nn.Linear's (out, in)
    const Tensor t = s.take(layer + key + "." + param);
    return weight ? t.transpose(0, 1).contiguous() : t;
  };
  if (rest.rfind("self_attn_norm.", 0) == 0) return s.take(layer + "ln_1." + param);
  if (rest.rfind("ffn_norm.", 0) == 0) return s.take(layer + "ln_2." + param);
  if (rest.rfind("ffn.fc1.", 0) == 0) return conv("mlp.c_fc");
  if (rest.rfind("ffn.fc2.", 0) == 0) return conv("mlp.c_proj");
  if (rest.rfind("self_attn.out_proj.", 0) == 0) return conv("attn.c_proj");
  for (int64_t part = 0; part < 3; ++part) {
    const char* proj[] = {"self_attn.q_proj.", "self_attn.k_proj.", "self_attn.v_proj."};
    if (rest.rfind(proj[part], 0) != 0) continue;
    const std::string key = layer + "attn.c_attn." + param;
    const Tensor fused = conv("attn.c_attn");  // (3d, d) or (3d)
    TFM_CHECK(fused.size(0) == 3 * d)
        << s.what() << ": " << key << " is " << fused.describe() << ", expected 3 x " << d;
    return fused.slice(part * d, (part + 1) * d).contiguous();
  }
  TFM_FAIL() << s.what() << ": no GPT-2 tensor for tfm parameter " << name;
  return {};
}

// An encoder-decoder family's tensor for tfm parameter `name`.
Tensor seq2seq_tensor(Source& s, const std::string& name, const HfModel& m) {
  const ModelConfig& c = m.config;
  if (name == "embed.trg.weight")
    return c.share_embeddings ? s.take_first({"shared.weight", "decoder.embed_tokens.weight",
                                              "encoder.embed_tokens.weight"})
                              : s.take("decoder.embed_tokens.weight");
  if (name == "embed.src.weight") return s.take("encoder.embed_tokens.weight");
  if (name == "pos.src.weight" || name == "pos.trg.weight") {
    const std::string key = name == "pos.src.weight" ? "encoder.embed_positions.weight"
                                                     : "decoder.embed_positions.weight";
    return position_rows(s.take(key), m.learned_position_offset, c.max_length, s.what());
  }
  if (name == "output.weight") return s.take("lm_head.weight");
  if (name == "output.bias") return s.take("final_logits_bias").reshape({c.trg_vocab_size});
  // {encoder,decoder}.<rest>
  const size_t dot = name.find('.');
  const std::string stack = name.substr(0, dot + 1);
  std::string rest = name.substr(dot + 1);
  auto replace = [&](const std::string& from, const std::string& to) {
    const size_t at = rest.find(from);
    if (at != std::string::npos) rest.replace(at, from.size(), to);
  };
  replace("embed_norm.", "layernorm_embedding.");
  replace("final_norm.", "layer_norm.");
  replace("self_attn_norm.", "self_attn_layer_norm.");
  replace("cross_attn_norm.", "encoder_attn_layer_norm.");
  replace("cross_attn.", "encoder_attn.");
  replace("ffn_norm.", "final_layer_norm.");
  replace("ffn.fc", "fc");
  return s.take(stack + rest);
}

}  // namespace

std::unique_ptr<Transformer> build_from_hf(HfModel& m, const std::map<std::string, Tensor>& hf,
                                           const std::string& what) {
  Source s(hf, m, what);
  ModelConfig& c = m.config;
  // final_logits_bias: zeros when absent (Transformers' init), dropped when all zero (adding
  // zeros changes no logit).
  c.output_bias =
      m.logits_bias && s.has("final_logits_bias") && !all_zero(s.take("final_logits_bias"));
  if (m.family == "marian") {
    check_marian_positions(s, "encoder.embed_positions.weight", c);
    check_marian_positions(s, "decoder.embed_positions.weight", c);
  }
  auto model = Transformer::uninitialised(c);
  for (const auto& [name, p] : model->named_parameters()) {
    const Tensor t = m.conv1d ? gpt2_tensor(s, name, c) : seq2seq_tensor(s, name, m);
    TFM_CHECK(t.shape() == p->shape())
        << what << ": the tensor for " << name << " is " << t.describe() << ", the config ("
        << m.model_type << ") implies " << shape_str(p->shape());
    check_finite(t, name, what);
    p->detach().copy_(t);
  }
  // What Transformers does not load, or loads only to overwrite by tying.
  for (const std::string& key : s.unused()) {
    const bool tied_copy = key == "encoder.embed_tokens.weight" ||
                           key == "decoder.embed_tokens.weight" || key == "lm_head.weight" ||
                           key == "shared.weight";
    const bool buffer = key.ends_with(".attn.bias") || key.ends_with(".attn.masked_bias") ||
                        key.ends_with("embed_positions._float_tensor") ||
                        key == "final_logits_bias";
    TFM_CHECK(tied_copy || buffer)
        << what << ": tensor " << s.stored_name(key) << " has no place in a " << m.model_type
        << " model as Transformers builds it from config.json; refusing to guess";
  }
  return model;
}

}  // namespace tfm::convert
