#include "tfm/train/train_state.h"

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "tfm/core/file_util.h"
#include "tfm/model/checkpoint.h"
#include "tfm/model/safetensors.h"

namespace tfm {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const char* kDir = "train_state";
const char* kStateFile = "state.safetensors";
const char* kStateJson = "state.json";
constexpr int kFormatVersion = 1;

std::string state_path(const std::string& model_dir) {
  return (fs::path(model_dir) / kDir / kStateFile).string();
}

template <typename T>
T field(const json& j, const char* key) {
  TFM_CHECK(j.contains(key)) << "missing field \"" << key << "\"";
  try {
    return j.at(key).get<T>();
  } catch (const json::exception& e) {
    TFM_FAIL() << "field \"" << key << "\": " << e.what();
  }
  return T{};
}

}  // namespace

std::string TrainProgress::to_json() const {
  json w = {{"updates", window.updates},       {"sentences", window.sentences},
            {"src_tokens", window.src_tokens}, {"trg_tokens", window.trg_tokens},
            {"correct", window.correct},       {"loss_sum", window.loss_sum},
            {"nll_sum", window.nll_sum},       {"gnorm_sum", window.gnorm_sum}};
  json j = {{"format_version", kFormatVersion},
            {"updates", updates},
            {"epoch", position.epoch},
            {"batch", position.index},
            {"data_fingerprint", data_fingerprint},
            {"dropout_seed", dropout_seed},
            {"dropout_stream", dropout_stream},
            {"sentences", sentences},
            {"src_tokens", src_tokens},
            {"trg_tokens", trg_tokens},
            {"nonfinite_skipped", nonfinite_skipped},
            {"nonfinite_in_a_row", nonfinite_in_a_row},
            {"best_metric", best_metric},
            {"best_update", best_update},
            {"bad_validations", bad_validations},
            {"last_valid_update", last_valid_update},
            {"elapsed_seconds", elapsed_seconds},
            {"world_size", world_size},
            {"log_window", w}};
  return j.dump(2);
}

TrainProgress TrainProgress::from_json(const std::string& text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    TFM_FAIL() << "training progress is not valid JSON: " << e.what();
  }
  TFM_CHECK(j.is_object()) << "training progress is not a JSON object";
  const int version = field<int>(j, "format_version");
  TFM_CHECK(version == kFormatVersion)
      << "training state format " << version << " is not supported (this tfm reads "
      << kFormatVersion << ")";
  TrainProgress p;
  p.updates = field<int64_t>(j, "updates");
  p.position.epoch = field<int64_t>(j, "epoch");
  p.position.index = field<int64_t>(j, "batch");
  p.data_fingerprint = field<uint64_t>(j, "data_fingerprint");
  p.dropout_seed = field<uint64_t>(j, "dropout_seed");
  p.dropout_stream = field<uint64_t>(j, "dropout_stream");
  p.sentences = field<int64_t>(j, "sentences");
  p.src_tokens = field<int64_t>(j, "src_tokens");
  p.trg_tokens = field<int64_t>(j, "trg_tokens");
  p.nonfinite_skipped = field<int64_t>(j, "nonfinite_skipped");
  p.nonfinite_in_a_row = field<int64_t>(j, "nonfinite_in_a_row");
  p.best_metric = field<double>(j, "best_metric");
  p.best_update = field<int64_t>(j, "best_update");
  p.bad_validations = field<int64_t>(j, "bad_validations");
  p.last_valid_update = field<int64_t>(j, "last_valid_update");
  p.elapsed_seconds = field<double>(j, "elapsed_seconds");
  // Absent in states saved before data-parallel training: those ran in one process.
  p.world_size = j.contains("world_size") ? field<int64_t>(j, "world_size") : 1;
  const json& w = j.at("log_window");
  TFM_CHECK(w.is_object()) << "field \"log_window\" is not an object";
  p.window.updates = field<int64_t>(w, "updates");
  p.window.sentences = field<int64_t>(w, "sentences");
  p.window.src_tokens = field<int64_t>(w, "src_tokens");
  p.window.trg_tokens = field<int64_t>(w, "trg_tokens");
  p.window.correct = field<int64_t>(w, "correct");
  p.window.loss_sum = field<double>(w, "loss_sum");
  p.window.nll_sum = field<double>(w, "nll_sum");
  p.window.gnorm_sum = field<double>(w, "gnorm_sum");
  TFM_CHECK(p.updates >= 0 && p.position.epoch >= 0 && p.position.index >= 0)
      << "negative counters in the training progress";
  return p;
}

bool has_train_state(const std::string& model_dir) {
  return fs::exists(state_path(model_dir));
}

std::string existing_run_output(const std::string& model_dir) {
  const fs::path dir(model_dir);
  if (fs::exists(dir / "model.safetensors")) return (dir / "model.safetensors").string();
  if (fs::exists(dir / "best")) return (dir / "best").string();
  std::error_code ec;
  for (fs::directory_iterator it(dir / "checkpoints", ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->path().filename().string().rfind("update-", 0) == 0) return it->path().string();
  }
  // An empty train_state/ is what a run killed while writing its first state leaves (once its
  // temporary is removed): nothing to lose.
  if (fs::is_directory(dir / kDir) && !fs::is_empty(dir / kDir, ec) && !ec)
    return (dir / kDir).string();
  return "";
}

const std::vector<std::string>& run_file_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = model_file_names();
    for (const char* r : {"best", "checkpoints", kDir, "train.log", "train_config.json"})
      n.emplace_back(r);
    return n;
  }();
  return names;
}

void remove_run_output(const std::string& model_dir) {
  const fs::path dir(model_dir);
  for (const std::string& name : run_file_names()) {
    std::error_code ec;
    fs::remove_all(dir / name, ec);
    TFM_CHECK(!ec) << "cannot remove " << (dir / name).string() << ": " << ec.message();
  }
}

std::vector<std::string> remove_stale_run_temp_files(const std::string& model_dir) {
  const fs::path dir(model_dir);
  std::vector<std::string> removed = remove_stale_temp_files(dir.string());
  std::vector<fs::path> more = {dir / kDir, dir / "best", dir / "checkpoints"};
  std::error_code ec;
  for (fs::directory_iterator it(dir / "checkpoints", ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->is_directory()) more.push_back(it->path());
  }
  for (const fs::path& d : more) {
    if (!fs::is_directory(d)) continue;
    for (std::string& p : remove_stale_temp_files(d.string())) removed.push_back(std::move(p));
  }
  return removed;
}

void save_train_state(const std::string& model_dir, const Transformer& model, const Adam& adam,
                      const TrainProgress& progress) {
  const fs::path dir = fs::path(model_dir) / kDir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  TFM_CHECK(!ec) << "cannot create " << dir.string() << ": " << ec.message();
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [name, p] : model.named_parameters()) {
    tensors.emplace_back("model." + name, p->detach());
  }
  for (auto& [name, t] : adam.state()) tensors.emplace_back("adam." + name, t);
  const std::string json_text = progress.to_json();
  save_safetensors((dir / kStateFile).string(), tensors,
                   {{"progress", json_text},
                    {"config", model.config().to_json()},
                    {"format_version", std::to_string(kFormatVersion)}});
  write_file_atomic((dir / kStateJson).string(), json_text + "\n");
}

ModelConfig read_train_state_config(const std::string& model_dir) {
  const std::string path = state_path(model_dir);
  try {
    SafetensorsFile f = load_safetensors(path);
    auto it = f.metadata.find("config");
    TFM_CHECK(it != f.metadata.end()) << "no \"config\" in __metadata__";
    return ModelConfig::from_json(it->second);
  } catch (const Error& e) {
    TFM_FAIL() << "cannot resume from " << path << ": " << e.message()
               << "; to start training from scratch over it, run again with --overwrite (or use "
                  "another --model directory)";
  }
  return {};
}

TrainProgress load_train_state(const std::string& model_dir, Transformer& model, Adam& adam) {
  const std::string path = state_path(model_dir);
  const std::string fix =
      "; to start training from scratch over it, run again with --overwrite (or use another "
      "--model directory)";
  try {
    SafetensorsFile f = load_safetensors(path);
    auto meta = [&](const char* key) -> const std::string& {
      auto it = f.metadata.find(key);
      TFM_CHECK(it != f.metadata.end()) << "no \"" << key << "\" in __metadata__";
      return it->second;
    };
    const ModelConfig saved = ModelConfig::from_json(meta("config"));
    TFM_CHECK(saved.to_json() == model.config().to_json())
        << "it was saved for another model configuration (saved:\n"
        << saved.to_json() << "\nnow:\n"
        << model.config().to_json() << ")";
    TrainProgress progress = TrainProgress::from_json(meta("progress"));
    std::map<std::string, const Tensor*> by_name;
    for (const auto& [name, t] : f.tensors) by_name[name] = &t;
    size_t used = 0;
    for (const auto& [name, p] : model.named_parameters()) {
      auto it = by_name.find("model." + name);
      TFM_CHECK(it != by_name.end()) << "missing tensor model." << name;
      TFM_CHECK(it->second->dtype() == DType::f32 && it->second->shape() == p->shape())
          << "tensor model." << name << " is " << it->second->describe() << ", expected f32 "
          << shape_str(p->shape());
      check_finite(*it->second, "model." + name, path);
      p->detach().copy_(*it->second);
      ++used;
    }
    std::vector<std::pair<std::string, Tensor>> moments;
    for (const auto& [name, t] : f.tensors) {
      if (name.rfind("adam.", 0) != 0) continue;
      check_finite(t, name, path);
      moments.emplace_back(name.substr(5), t);
    }
    adam.load_state(moments, progress.updates);
    TFM_CHECK(used + moments.size() == f.tensors.size())
        << "unexpected tensors besides the model's and Adam's";
    return progress;
  } catch (const Error& e) {
    TFM_FAIL() << "cannot resume from " << path << ": " << e.message() << fix;
  }
  return {};
}

}  // namespace tfm
