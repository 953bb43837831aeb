// load_model_for_inference: the model load_model + bind_inference(t, keep_f32 = false) gives (the
// same products, bitwise), without ever holding two copies of a weight: the weights a binding
// replaces are bound from the file and never allocated in f32, the file is not mapped once the
// model is returned, and a bad file fails with the same errors as load_model's.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "support/test_util.h"
#include "tfm/autograd/grad_mode.h"
#include "tfm/core/allocator.h"
#include "tfm/core/file_util.h"
#include "tfm/model/checkpoint.h"
#include "tfm/model/safetensors.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;
using testing::bitwise_equal;

// Widths that are multiples of the fp32 panel (48 columns): packing adds no padding, so one
// copy of the weights is exactly their f32 bytes.
ModelConfig small(bool tied, bool decoder_only = false) {
  ModelConfig c = ModelConfig::preset("tiny");
  c.d_model = 48, c.heads = 4, c.d_ff = 96, c.encoder_layers = 2, c.decoder_layers = 2;
  c.src_vocab_size = 96, c.trg_vocab_size = 96, c.max_length = 40, c.dropout = 0.0;
  c.share_embeddings = tied && !decoder_only;
  c.tie_output = tied;
  c.output_bias = !tied;
  c.decoder_only = decoder_only;
  if (decoder_only) c.encoder_layers = 0;
  return c;
}

class InferenceLoad : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tfm_infer_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string save(const ModelConfig& c, uint64_t seed) {
    const std::string d = (dir_ / std::to_string(seed)).string();
    save_model(Transformer(c, seed), d);
    return d;
  }
  fs::path dir_;
};

Tensor ids(const Shape& shape, const std::vector<int32_t>& v) {
  return Tensor::from_vector<int32_t>(shape, v);
}

// Teacher-forced logits and two decoding steps' logits, concatenated along a new first axis.
std::vector<Tensor> outputs(const Transformer& m) {
  NoGradGuard no_grad;
  const Tensor src = ids({2, 5}, {5, 9, 17, 3, 2, 7, 41, 2, 0, 0});
  const Tensor trg = ids({2, 4}, {1, 8, 30, 12, 1, 60, 5, 2});
  std::vector<Tensor> out = {m.forward(src, trg)};
  DecoderState st = m.config().has_encoder() ? m.start(src) : m.start_decoder_only(2);
  out.push_back(m.step(st, ids({2}, {1, 1})));
  out.push_back(m.step(st, ids({2}, {8, 60})));
  return out;
}

size_t in_use() {
  return cpu_allocator().stats().in_use_bytes;
}

// Bytes the allocator holds for the model's defined parameters, the weights bound in place of
// those that are not (one copy of each weight) and the bf16 output projection of a tied table
// that lookups keep in f32, and for the fixed position table.
size_t one_copy(Transformer& m, ComputeType t) {
  const ModelConfig& c = m.config();
  size_t n = c.positions == Positions::learned
                 ? 0
                 : CpuCachingAllocator::size_class(c.max_length * c.d_model * sizeof(float));
  for (const auto& [name, p] : m.named_parameters())
    if (p->defined()) n += CpuCachingAllocator::size_class(p->nbytes());
  for (const auto& b : m.weight_bindings(t)) {
    const LowpWeight* w =
        b.layer ? b.layer->kernel().bound_weight() : m.output_kernel().bound_weight();
    n += CpuCachingAllocator::size_class(w->bytes());
    if (w->lookup_bytes() > 0) n += CpuCachingAllocator::size_class(w->lookup_bytes());
  }
  return n;
}

TEST_F(InferenceLoad, SameProductsAsLoadThenBindWithOneCopyOfEachWeight) {
  for (const auto& [tied, decoder_only] : {std::pair{true, false}, {false, false}, {true, true}}) {
    const ModelConfig c = small(tied, decoder_only);
    const std::string dir = save(c, tied + 2 * decoder_only + 3);
    for (ComputeType t : {ComputeType::float32, ComputeType::bfloat16, ComputeType::int8}) {
      SCOPED_TRACE(std::string(compute_type_name(t)) + (tied ? " tied" : " untied") +
                   (decoder_only ? " decoder-only" : ""));
      // The plain load: f32 parameters, then the binding releases what it replaces.
      auto& alloc = cpu_allocator();
      size_t base = in_use();
      alloc.reset_peak();
      auto plain = load_model(dir);
      plain->bind_inference(t, std::nullopt, /*keep_f32=*/false);
      const size_t plain_held = in_use() - base,
                   plain_peak = alloc.stats().peak_in_use_bytes - base;
      const std::vector<Tensor> want = outputs(*plain);
      std::vector<Tensor> unbound;
      if (t == ComputeType::float32) unbound = outputs(*load_model(dir));
      const int64_t params = plain->parameter_count();
      plain.reset();

      base = in_use();
      alloc.reset_peak();
      auto m = load_model_for_inference(dir, t);
      const size_t held = in_use() - base, peak = alloc.stats().peak_in_use_bytes - base;
      const std::vector<Tensor> got = outputs(*m);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(bitwise_equal(got[i], want[i])) << i;
      if (t == ComputeType::float32) {  // the panels against the plain f32 path: rounding only
        for (size_t i = 0; i < got.size(); ++i)
          EXPECT_LT(testing::max_abs_diff(got[i], unbound[i]), 1e-5);
      }
      EXPECT_EQ(m->parameter_count(), params);
      EXPECT_EQ(m->inference_compute(), t);

      // Every weight the binding replaces is undefined: never allocated; the tied table where
      // lookups read the binding (fp32 panels, int8's quantised rows), not in bf16.
      int64_t released = 0;
      for (const auto& b : m->weight_bindings(t)) {
        EXPECT_EQ(b.weight->defined(), !b.replaces) << b.name;
        released += b.replaces;
      }
      EXPECT_EQ(released, static_cast<int64_t>(m->linear_layers().size()) +
                              (!tied || t != ComputeType::bfloat16 ? 1 : 0));
      // Held: one copy, the same as the plain path keeps; and the load never held more (the
      // plain path held every f32 weight, then the bindings beside them).
      EXPECT_EQ(held, one_copy(*m, t));
      EXPECT_EQ(held, plain_held);
      EXPECT_EQ(peak, held);
      EXPECT_GT(plain_peak, held);
      if (t == ComputeType::float32) {  // no panel padding at these widths: the f32 bytes
        EXPECT_GE(held, static_cast<size_t>(params) * 4);
        EXPECT_LT(held, static_cast<size_t>(params) * 4 * 9 / 8 + (64 << 10));
      }
    }
  }
}

TEST_F(InferenceLoad, TheFileIsNotMappedOnceTheModelIsReturned) {
  const std::string dir = save(small(true), 7);
  auto m = load_model_for_inference(dir, ComputeType::float32);
  const std::string maps = read_file("/proc/self/maps");
  EXPECT_EQ(maps.find(fs::canonical(dir + "/model.safetensors").string()), std::string::npos);
  // Replaced under a running model: nothing it reads changes.
  const std::vector<Tensor> before = outputs(*m);
  save_model(Transformer(small(true), 8), dir);
  const std::vector<Tensor> after = outputs(*m);
  for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(bitwise_equal(before[i], after[i]));
}

// What a released model can no longer do says so.
TEST_F(InferenceLoad, ReleasedWeightsRefuseWhatNeedsThem) {
  const std::string dir = save(small(false), 9);
  auto m = load_model_for_inference(dir, ComputeType::float32);
  EXPECT_TFM_ERROR(m->to(Device::cpu), "was released by an inference binding");
  EXPECT_TFM_ERROR(save_model(*m, (dir_ / "copy").string()), "is undefined");
  EXPECT_TFM_ERROR(m->bind_inference(ComputeType::int8), "load the model again");
  m->unbind_inference();
  NoGradGuard no_grad;
  EXPECT_TFM_ERROR(m->forward(ids({1, 2}, {5, 2}), ids({1, 1}, {1})), "released for inference");
  auto tied = load_model_for_inference(save(small(true), 10), ComputeType::float32);
  tied->unbind_inference();
  EXPECT_TFM_ERROR(tied->encode(ids({1, 2}, {5, 2})), "embedding table was released");
}

TEST_F(InferenceLoad, BadFilesFailAsLoadModelDoes) {
  const ModelConfig c = small(true);
  const std::string dir = save(c, 11);
  const std::string file = dir + "/model.safetensors";
  Transformer m(c, 11);
  auto rewrite = [&](auto edit) {
    std::vector<std::pair<std::string, Tensor>> ts;
    for (const auto& [n, t] : m.named_parameters()) ts.emplace_back(n, t->detach());
    edit(ts);
    save_safetensors(file, ts, {{"config", c.to_json()}, {"format_version", "1"}});
  };
  const auto both = [&](const std::string& what) {
    EXPECT_TFM_ERROR(load_model(dir), what);
    for (ComputeType t : {ComputeType::float32, ComputeType::int8})
      EXPECT_TFM_ERROR(load_model_for_inference(dir, t), what);
  };
  // A linear layer's weight (bound from the file, never a parameter) and the tied table.
  const std::string linear = "decoder.layers.1.ffn.fc2.weight";
  rewrite([&](auto& ts) {
    for (auto& [n, t] : ts)
      if (n == linear) t = Tensor::zeros({3, 3});
  });
  both(file + ": tensor " + linear + " has shape (3, 3), the config requires (48, 96)");
  rewrite([&](auto& ts) {
    for (auto& [n, t] : ts)
      if (n == linear) {
        t = t.clone();
        t.template data<float>()[7] = std::nanf("");
      }
  });
  both(file + ": tensor " + linear + " holds a non-finite value (nan at element 7)");
  rewrite([](auto& ts) {
    std::erase_if(ts, [](const auto& nt) { return nt.first == "embed.trg.weight"; });
  });
  both(file + ": missing tensor embed.trg.weight (96, 48) that the config requires");
  rewrite([](auto& ts) { ts.emplace_back("extra.weight", Tensor::zeros({2})); });
  both("unexpected tensor extra.weight");
  // Truncated: the header's offsets run past the end of the file.
  save_model(m, dir);
  const std::string bytes = read_file(file);
  std::ofstream(file, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size() - 100);
  both(file + ": tensor");
  both("past the end of the");
  fs::remove(file);
  both("no model.safetensors");
}

}  // namespace
}  // namespace tfm
