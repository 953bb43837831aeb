#include "tfm/train/average.h"

#include <filesystem>

#include "tfm/data/vocab.h"
#include "tfm/model/checkpoint.h"

namespace tfm {

namespace fs = std::filesystem;

void average_models(const std::vector<std::string>& dirs, const std::string& out) {
  TFM_CHECK(!dirs.empty()) << "average: no model directories given";
  auto result = load_model(dirs[0]);
  const std::string config = result->config().to_json();
  const auto params = result->named_parameters();
  std::vector<std::vector<double>> sums(params.size());
  auto add = [&](const Transformer& m) {
    const auto ps = m.named_parameters();
    for (size_t k = 0; k < ps.size(); ++k) {
      Tensor t = ps[k].second->contiguous();
      const float* x = t.data<float>();
      auto& s = sums[k];
      s.resize(static_cast<size_t>(t.numel()), 0.0);
      for (size_t i = 0; i < s.size(); ++i) s[i] += x[i];
    }
  };
  add(*result);
  for (size_t d = 1; d < dirs.size(); ++d) {
    auto m = load_model(dirs[d]);
    TFM_CHECK(m->config().to_json() == config)
        << "average: " << dirs[d] << " has another model configuration than " << dirs[0];
    add(*m);
  }
  const double n = static_cast<double>(dirs.size());
  for (size_t k = 0; k < params.size(); ++k) {
    Tensor& p = *params[k].second;
    float* x = p.data<float>();
    for (size_t i = 0; i < sums[k].size(); ++i) x[i] = static_cast<float>(sums[k][i] / n);
  }
  save_model(*result, out);
  for (const std::string& name :
       {std::string(kSharedVocabFile), std::string(kSrcVocabFile), std::string(kTrgVocabFile),
        legacy_vocab_file(kSharedVocabFile), legacy_vocab_file(kSrcVocabFile),
        legacy_vocab_file(kTrgVocabFile)}) {
    const fs::path src = fs::path(dirs[0]) / name;
    if (!fs::exists(src)) continue;
    std::error_code ec;
    fs::copy_file(src, fs::path(out) / name, fs::copy_options::overwrite_existing, ec);
    TFM_CHECK(!ec) << "average: cannot copy " << src.string() << " to " << out << ": "
                   << ec.message();
  }
}

}  // namespace tfm
