#include "tfm/model/checkpoint.h"

#include <filesystem>
#include <map>
#include <set>

#include "tfm/core/file_util.h"
#include "tfm/model/safetensors.h"

namespace tfm {

namespace fs = std::filesystem;

namespace {

const char* kWeights = "model.safetensors";
const char* kConfig = "config.json";

ModelConfig config_from_weights(const SafetensorsFile& f, const std::string& path) {
  auto it = f.metadata.find("config");
  TFM_CHECK(it != f.metadata.end()) << path << ": no \"config\" in __metadata__";
  try {
    return ModelConfig::from_json(it->second);
  } catch (const Error& e) {
    TFM_FAIL() << path << ": " << e.what();
  }
  return {};
}

}  // namespace

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
    ModelConfig j = ModelConfig::from_json(read_file(json));
    TFM_CHECK(j.to_json() == c.to_json())
        << json << " disagrees with the config stored in " << weights
        << "; the weights' copy is authoritative: delete or fix config.json";
  }
  return c;
}

}  // namespace

ModelConfig read_model_config(const std::string& dir) {
  const std::string weights = (fs::path(dir) / kWeights).string();
  const std::string json = (fs::path(dir) / kConfig).string();
  TFM_CHECK(fs::is_directory(dir)) << "model directory " << dir << " does not exist";
  if (!fs::exists(weights)) {
    TFM_CHECK(fs::exists(json)) << dir << " holds neither " << kWeights << " nor " << kConfig;
    return ModelConfig::from_json(read_file(json));
  }
  return checked_config(dir, load_safetensors(weights));
}

std::unique_ptr<Transformer> load_model(const std::string& dir) {
  TFM_CHECK(fs::is_directory(dir)) << "model directory " << dir << " does not exist";
  const std::string weights = (fs::path(dir) / kWeights).string();
  TFM_CHECK(fs::exists(weights)) << "no " << kWeights << " in model directory " << dir;
  // One map and one header parse; the parameters are allocated, not initialised: every one of
  // them is overwritten below (a missing one is an error).
  SafetensorsFile f = load_safetensors(weights);
  const ModelConfig config = checked_config(dir, f);
  auto model = Transformer::uninitialised(config);
  std::set<std::string> expected;
  for (const auto& [name, p] : model->named_parameters()) {
    expected.insert(name);
    TFM_CHECK(f.contains(name)) << weights << ": missing tensor " << name << " "
                                << shape_str(p->shape()) << " that the config requires";
    const Tensor& t = f.get(name);
    TFM_CHECK(t.dtype() == DType::f32)
        << weights << ": tensor " << name << " is " << dtype_name(t.dtype()) << ", expected f32";
    TFM_CHECK(t.shape() == p->shape())
        << weights << ": tensor " << name << " has shape " << shape_str(t.shape())
        << ", the config requires " << shape_str(p->shape());
    p->detach().copy_(t);
  }
  for (const auto& [name, t] : f.tensors)
    TFM_CHECK(expected.count(name))
        << weights << ": unexpected tensor " << name << " (not part of this config)";
  return model;
}

}  // namespace tfm
