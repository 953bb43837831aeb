#include "tfm/train/average.h"

#include <filesystem>

#include "tfm/core/file_util.h"
#include "tfm/data/tokenizer_files.h"
#include "tfm/model/checkpoint.h"
#include "tfm/ops/elementwise.h"

namespace tfm {

namespace fs = std::filesystem;

void average_models(const std::vector<std::string>& dirs, const std::string& out) {
  TFM_CHECK(!dirs.empty()) << "average: no model directories given";
  auto result = load_model(dirs[0]);
  const std::string config = result->config().to_json();
  const auto params = result->named_parameters();
  std::vector<Tensor> sums(params.size());  // f64, per parameter
  auto add = [&](const Transformer& m) {
    const auto ps = m.named_parameters();
    for (size_t k = 0; k < ps.size(); ++k) {
      const Tensor x = ps[k].second->to(DType::f64);
      if (sums[k].defined())
        sums[k].add_(x);
      else
        sums[k] = x.contiguous();
    }
  };
  add(*result);
  for (size_t d = 1; d < dirs.size(); ++d) {
    auto m = load_model(dirs[d]);
    TFM_CHECK(m->config().to_json() == config)
        << "average: " << dirs[d] << " has another model configuration than " << dirs[0];
    add(*m);
  }
  for (size_t k = 0; k < params.size(); ++k) {
    div_(sums[k], static_cast<double>(dirs.size()));
    params[k].second->copy_(sums[k].to(DType::f32));
  }
  // The output is a whole directory, seen only complete (write_dir_atomic): model, config and
  // vocabularies of one average, never a new model next to an old or half-copied vocabulary. It
  // replaces what was there: the front door has checked that only a model was
  // (check_output_path, OutputKind::model_directory).
  load_checked_tokenizers(dirs[0], result->config());
  write_dir_atomic(out, [&](const std::string& tmp) {
    save_model(*result, tmp);
    for (const std::string& name : tokenizer_file_names(dirs[0]))
      copy_file_atomic((fs::path(dirs[0]) / name).string(), (fs::path(tmp) / name).string());
  });
}

}  // namespace tfm
