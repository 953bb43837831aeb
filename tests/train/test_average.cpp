// Checkpoint averaging: the element-wise mean, computed in double, of models of one config.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "support/test_util.h"
#include "tfm/model/checkpoint.h"
#include "tfm/train/average.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;

TEST(Average, IsTheElementwiseMean) {
  const fs::path dir = fs::temp_directory_path() / ("tfm_avg_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  ModelConfig c = ModelConfig::preset("tiny");
  c.src_vocab_size = c.trg_vocab_size = 30;
  std::vector<std::unique_ptr<Transformer>> models;
  std::vector<std::string> dirs;
  for (uint64_t seed : {1, 2, 3}) {
    models.push_back(std::make_unique<Transformer>(c, seed));
    std::string name = "m";  // (not "m" + to_string: GCC 12 warns -Wrestrict on that, wrongly)
    name += std::to_string(seed);
    dirs.push_back((dir / name).string());
    save_model(*models.back(), dirs.back());
  }
  average_models(dirs, (dir / "avg").string());
  auto avg = load_model((dir / "avg").string());
  const auto pa = avg->named_parameters();
  for (size_t k = 0; k < pa.size(); ++k) {
    const Tensor& t = *pa[k].second;
    for (int64_t i = 0; i < t.numel(); ++i) {
      double sum = 0;
      for (const auto& m : models) sum += m->named_parameters()[k].second->data<float>()[i];
      ASSERT_EQ(t.data<float>()[i], static_cast<float>(sum / 3)) << pa[k].first << "[" << i << "]";
    }
  }
  ModelConfig other = c;
  other.d_ff = 48;
  save_model(Transformer(other, 1), (dir / "other").string());
  EXPECT_TFM_ERROR(average_models({dirs[0], (dir / "other").string()}, (dir / "x").string()),
                   "has another model configuration");
  EXPECT_TFM_ERROR(average_models({}, (dir / "x").string()), "no model directories");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tfm
