#include "tfm/model/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "tfm/core/file_util.h"
#include "tfm/data/tokenizer_files.h"
#include "tfm/data/vocab.h"
#include "tfm/model/safetensors.h"

namespace tfm {

namespace fs = std::filesystem;

namespace {

const char* kWeights = "model.safetensors";
const char* kConfig = "config.json";

}  // namespace

ModelConfig config_from_weights(const SafetensorsFile& f, const std::string& path) {
  auto it = f.metadata.find("config");
  TFM_CHECK(it != f.metadata.end()) << path << ": no \"config\" in __metadata__";
  auto version = f.metadata.find("format_version");
  TFM_CHECK(version == f.metadata.end() || version->second == "1")
      << path << ": format_version \"" << version->second
      << "\" is not supported (this build reads 1)";
  try {
    return ModelConfig::from_json(it->second);
  } catch (const Error& e) {
    // message(), not what(): the source location stays out of what a user reads.
    TFM_FAIL() << path << ": " << e.message();
  }
  return {};
}

namespace {

// Index of the first NaN/Inf among n floats, or -1. An exponent-bits test over a block the
// compiler vectorises (std::isfinite per element does not vectorise without -ffast-math), so the
// check costs far less than reading the file; the exact index is looked for only on a hit.
int64_t first_nonfinite(const float* x, int64_t n) {
  constexpr int64_t kBlock = 4096;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = std::min(n, b + kBlock);
    uint32_t bad = 0;
    for (int64_t i = b; i < e; ++i) {
      uint32_t u;
      std::memcpy(&u, x + i, sizeof u);
      bad |= static_cast<uint32_t>((u & 0x7f800000u) == 0x7f800000u);
    }
    if (bad) {
      for (int64_t i = b; i < e; ++i)
        if (!std::isfinite(x[i])) return i;
    }
  }
  return -1;
}

}  // namespace

void check_finite(const Tensor& t, const std::string& what, const std::string& file) {
  if (t.dtype() != DType::f32) return;
  const Tensor c = t.contiguous();
  const int64_t i = first_nonfinite(c.data<float>(), c.numel());
  TFM_CHECK(i < 0) << file << ": tensor " << what << " holds a non-finite value ("
                   << c.data<float>()[i < 0 ? 0 : i] << " at element " << i
                   << "); the weights are corrupt or training diverged: use an earlier checkpoint";
}

namespace {

// The vocabulary the model recorded at training (its fingerprint), where it recorded one: another
// of the same size and special ids translates into garbage without any other sign.
void check_fingerprint(const Tokenizer& v, const std::string& recorded, const char* side,
                       const std::string& dir) {
  if (recorded.empty()) return;
  const std::string got = v.fingerprint();
  TFM_CHECK(got == recorded) << v.path() << " is not the " << side << " vocabulary the model in "
                             << dir << " was trained with (its pieces differ: fingerprint " << got
                             << ", the model records " << recorded
                             << "); put the model's own vocabulary back";
}

void check_vocab(const Tokenizer* v, int64_t size, const char* side, const ModelConfig& config,
                 const std::string& dir) {
  if (v == nullptr) return;
  // Last: where the size or the ids differ they say more plainly what is wrong.
  const std::string& recorded =
      std::string(side) == "source" ? config.src_vocab_fingerprint : config.trg_vocab_fingerprint;
  if (v->converted()) {
    TFM_CHECK(v->size() <= size) << v->path() << ": the " << v->family()
                                 << " tokenizer gives ids up to " << v->size() - 1
                                 << " but the model in " << dir << " has a " << side
                                 << " vocabulary of " << size
                                 << ": the tokenizer is not the one the model was converted with";
    const int64_t eos = v->special_ids().eos;
    TFM_CHECK(eos < 0 || eos == config.eos_id)
        << v->path() << ": the tokenizer's EOS is " << eos << " but the model in " << dir
        << " ends sequences with " << config.eos_id;
    check_fingerprint(*v, recorded, side, dir);
    return;
  }
  const TokenizerSpecials ids = v->special_ids();
  TFM_CHECK(v->size() == size) << v->path() << " has " << v->size() << " pieces but the model in "
                               << dir << " has a " << side << " vocabulary of " << size
                               << ": the vocabulary file is not the one the model was trained with";
  // A vocabulary without one of the pieces (a converted model's) is not held to that id.
  auto same = [](int64_t vocab_id, int64_t config_id) {
    return vocab_id < 0 || vocab_id == config_id;
  };
  TFM_CHECK(same(ids.pad, config.pad_id) && same(ids.bos, config.bos_id) &&
            same(ids.eos, config.eos_id))
      << v->path() << " has pad/bos/eos ids " << ids.pad << "/" << ids.bos << "/" << ids.eos
      << " but the model in " << dir << " uses " << config.pad_id << "/" << config.bos_id << "/"
      << config.eos_id << ": the vocabulary file is not the one the model was trained with";
  check_fingerprint(*v, recorded, side, dir);
}

}  // namespace

void check_vocabs(const ModelConfig& config, const ModelTokenizers& vocabs,
                  const std::string& dir) {
  if (config.has_encoder())
    check_vocab(vocabs.src.get(), config.src_vocab_size, "source", config, dir);
  check_vocab(vocabs.trg.get(), config.trg_vocab_size, "target", config, dir);
}

ModelTokenizers load_checked_tokenizers(const std::string& dir, const ModelConfig& config) {
  ModelTokenizers v = load_model_tokenizers(dir);
  check_vocabs(config, v, dir);
  return v;
}

const std::vector<std::string>& model_file_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = {kConfig, kWeights, kTokenizerConfigFile};
    for (const char* v : {kSharedVocabFile, kSrcVocabFile, kTrgVocabFile}) {
      n.emplace_back(v);
      n.push_back(legacy_vocab_file(v));
    }
    return n;
  }();
  return names;
}

void save_model(const Transformer& model, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  TFM_CHECK(!ec) << "cannot create model directory " << dir << ": " << ec.message();
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [name, t] : model.named_parameters()) tensors.emplace_back(name, t->detach());
  const std::string config = model.config().to_json();
  save_safetensors((fs::path(dir) / kWeights).string(), tensors,
                   {{"config", config}, {"format_version", "1"}});
  write_file_atomic((fs::path(dir) / kConfig).string(), config + "\n");
}

namespace {

// The config stored in the weights `f` (read from dir), checked against dir/config.json.
ModelConfig checked_config(const std::string& dir, const SafetensorsFile& f) {
  const std::string weights = (fs::path(dir) / kWeights).string();
  const std::string json = (fs::path(dir) / kConfig).string();
  ModelConfig c = config_from_weights(f, weights);
  if (fs::exists(json)) {
    require_regular_file(json);
    ModelConfig j = ModelConfig::from_json(read_file(json));
    TFM_CHECK(j.to_json() == c.to_json())
        << json << " disagrees with the config stored in " << weights
        << "; the weights' copy is authoritative: delete or fix config.json";
  }
  return c;
}

}  // namespace

void check_model_dir(const std::string& dir, bool must_exist) {
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (fs::exists(st) && !fs::is_directory(st)) {
    const fs::path parent = fs::path(dir).parent_path();
    TFM_FAIL_ARG() << dir << " is a file, not a model directory: give the directory that holds "
                   << kWeights << " and " << kConfig
                   << (parent.empty() ? std::string() : " (" + parent.string() + ")");
  }
  TFM_CHECK(!must_exist || fs::exists(st)) << "model directory " << dir << " does not exist";
}

ModelConfig read_model_config(const std::string& dir) {
  const std::string weights = (fs::path(dir) / kWeights).string();
  const std::string json = (fs::path(dir) / kConfig).string();
  check_model_dir(dir);
  if (!fs::exists(weights)) {
    TFM_CHECK(fs::exists(json)) << dir << " holds neither " << kWeights << " nor " << kConfig;
    require_regular_file(json);
    return ModelConfig::from_json(read_file(json));
  }
  return checked_config(dir, load_safetensors(weights));
}

std::unique_ptr<Transformer> load_model(const std::string& dir) {
  check_model_dir(dir);
  const std::string weights = (fs::path(dir) / kWeights).string();
  TFM_CHECK(fs::exists(weights)) << "no " << kWeights << " in model directory " << dir;
  // One map and one header parse.
  SafetensorsFile f = load_safetensors(weights);
  return model_from_weights(checked_config(dir, f), f, weights);
}

namespace {

// A header-level check of the tensor a parameter `name` of shape `shape` is loaded from.
void check_tensor(const SafetensorsFile& f, const std::string& name, const Shape& shape,
                  const std::string& weights) {
  TFM_CHECK(f.contains(name)) << weights << ": missing tensor " << name << " " << shape_str(shape)
                              << " that the config requires";
  const Tensor& t = f.get(name);
  TFM_CHECK(t.dtype() == DType::f32)
      << weights << ": tensor " << name << " is " << dtype_name(t.dtype()) << ", expected f32";
  TFM_CHECK(t.shape() == shape) << weights << ": tensor " << name << " has shape "
                                << shape_str(t.shape()) << ", the config requires "
                                << shape_str(shape);
}

void check_no_other_tensors(const SafetensorsFile& f, const nn::NamedTensors& params,
                            const std::string& weights) {
  std::set<std::string> expected;
  for (const auto& [name, p] : params) expected.insert(name);
  for (const auto& [name, t] : f.tensors)
    TFM_CHECK(expected.count(name))
        << weights << ": unexpected tensor " << name << " (not part of this config)";
}

}  // namespace

std::unique_ptr<Transformer> model_from_weights(const ModelConfig& config, const SafetensorsFile& f,
                                                const std::string& weights) {
  config.validate();
  // The parameters are allocated, not initialised: every one of them is overwritten below (a
  // missing one is an error).
  auto model = Transformer::uninitialised(config);
  const nn::NamedTensors params = model->named_parameters();
  for (const auto& [name, p] : params) {
    check_tensor(f, name, p->shape(), weights);
    const Tensor& t = f.get(name);
    check_finite(t, name, weights);
    p->detach().copy_(t);
  }
  check_no_other_tensors(f, params, weights);
  return model;
}

std::unique_ptr<Transformer> inference_model_from_weights(const ModelConfig& config,
                                                          const SafetensorsFile& f,
                                                          const std::string& weights, ComputeType t,
                                                          std::optional<ComputeType> output) {
  config.validate();
  TFM_CHECK(t != ComputeType::automatic && output != ComputeType::automatic)
      << "load for inference: resolve the compute type first";
  // The weights a binding replaces are never allocated: they are bound from the file's tensors.
  auto model = Transformer::unallocated(config);
  std::map<std::string, Transformer::WeightBinding> bindings;
  for (const auto& b : model->weight_bindings(t, output)) bindings.emplace(b.name, b);
  // Every name, dtype and shape first: a file that does not fit fails before a byte is read.
  const nn::NamedTensors params = model->named_parameters();
  std::map<std::string, Tensor*> by_name;
  for (const auto& [name, p] : params) {
    const auto b = bindings.find(name);
    check_tensor(f, name, b != bindings.end() ? b->second.shape : p->shape(), weights);
    by_name.emplace(name, p);
  }
  check_no_other_tensors(f, params, weights);
  // In file order, each tensor read once and its pages dropped at once: the file's copy and the
  // model's never both exist, beyond the tensor at hand.
  for (const auto& [name, w] : f.tensors) {
    check_finite(w, name, weights);
    const auto b = bindings.find(name);
    if (b != bindings.end() && b->second.replaces) {
      model->bind_weight(b->second, w);
    } else {
      Tensor* p = by_name.at(name);
      if (!p->defined()) {  // a weight the binding keeps (the tied table in bf16)
        *p = Tensor::empty(w.shape());
        p->set_requires_grad(true);
      }
      p->detach().copy_(w);
    }
    f.drop_pages(name);
  }
  for (const auto& [name, b] : bindings)
    if (!b.replaces) model->bind_weight(b, *b.weight);
  return model;
}

std::unique_ptr<Transformer> load_model_for_inference(const std::string& dir, ComputeType t,
                                                      std::optional<ComputeType> output) {
  check_model_dir(dir);
  const std::string weights = (fs::path(dir) / kWeights).string();
  TFM_CHECK(fs::exists(weights)) << "no " << kWeights << " in model directory " << dir;
  // The mapping goes when f does, before the model is handed out.
  const SafetensorsFile f = load_safetensors(weights);
  return inference_model_from_weights(checked_config(dir, f), f, weights, t, output);
}

}  // namespace tfm
