#include <cmath>
#include <filesystem>
#include <set>
#include <tuple>

#include "support/test_util.h"
#include "tfm/autograd/grad_mode.h"
#include "tfm/autograd/tape.h"
#include "tfm/model/checkpoint.h"
#include "tfm/model/safetensors.h"
#include "tfm/model/transformer.h"
#include "tfm/ops/shape.h"

namespace tfm {
namespace {

ModelConfig tiny(bool pre, bool decoder_only = false) {
  ModelConfig c = ModelConfig::preset("tiny");
  c.d_model = 16, c.heads = 4, c.d_ff = 24, c.encoder_layers = 2, c.decoder_layers = 2;
  c.norm = pre ? NormPlacement::pre : NormPlacement::post;
  c.final_norm = pre;
  c.dropout = 0.0;
  c.src_vocab_size = 13, c.trg_vocab_size = 11;
  c.max_length = 40;
  c.decoder_only = decoder_only;
  if (decoder_only) c.encoder_layers = 0;
  return c;
}

Tensor ids(const Shape& shape, const std::vector<int32_t>& v) {
  return Tensor::from_vector<int32_t>(shape, v);
}

TEST(Transformer, ParameterNamesFollowTheContract) {
  ModelConfig c = tiny(false);
  c.tie_output = false;
  c.output_bias = true;
  c.positions = Positions::learned;
  c.embed_norm = true;
  Transformer m(c);
  std::set<std::string> names;
  for (const auto& [n, t] : m.named_parameters()) names.insert(n);
  for (const char* n :
       {"embed.trg.weight", "embed.src.weight", "pos.src.weight", "pos.trg.weight",
        "encoder.embed_norm.weight", "decoder.embed_norm.bias",
        "encoder.layers.0.self_attn.q_proj.weight", "encoder.layers.1.self_attn.out_proj.bias",
        "encoder.layers.0.self_attn_norm.weight", "encoder.layers.0.ffn.fc1.weight",
        "encoder.layers.0.ffn.fc2.bias", "encoder.layers.0.ffn_norm.bias",
        "decoder.layers.1.cross_attn.v_proj.weight", "decoder.layers.1.cross_attn_norm.weight",
        "output.weight", "output.bias"})
    EXPECT_TRUE(names.count(n)) << n;
  EXPECT_FALSE(names.count("encoder.final_norm.weight"));

  ModelConfig d = tiny(true, /*decoder_only=*/true);
  d.bias = false;
  Transformer dm(d);
  names.clear();
  for (const auto& [n, t] : dm.named_parameters()) names.insert(n);
  EXPECT_TRUE(names.count("decoder.final_norm.weight"));
  EXPECT_FALSE(names.count("embed.src.weight"));
  EXPECT_FALSE(names.count("output.weight"));  // tied
  EXPECT_FALSE(names.count("decoder.layers.0.cross_attn.q_proj.weight"));
  EXPECT_FALSE(names.count("decoder.layers.0.self_attn.q_proj.bias"));
  EXPECT_EQ(m.parameter_count() > 0, true);
}

TEST(Transformer, InitialisationIsSeededLikeTheSeeds) {
  ModelConfig c = tiny(false);
  c.tie_output = false;
  c.src_vocab_size = c.trg_vocab_size = 500;  // 8000 samples: the std estimate is within ±0.002
  Transformer a(c, 42), b(c, 42), other(c, 43);
  auto pa = a.named_parameters(), pb = b.named_parameters(), po = other.named_parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(testing::bitwise_equal(*pa[i].second, *pb[i].second)) << pa[i].first;
    const std::string& n = pa[i].first;
    const Tensor& t = *pa[i].second;
    std::vector<float> v = t.to_vector<float>();
    const bool is_bias = n.ends_with(".bias");
    const bool is_norm = n.find("norm") != std::string::npos;
    if (is_norm && !is_bias) {
      for (float x : v) EXPECT_EQ(x, 1.0f) << n;  // LayerNorm gain
    } else if (is_bias) {
      for (float x : v) EXPECT_EQ(x, 0.0f) << n;
    } else if (n.starts_with("embed.")) {
      // N(0, d^-0.5): the sample standard deviation is 0.25 for d = 16.
      double ss = 0;
      for (float x : v) ss += static_cast<double>(x) * x;
      EXPECT_NEAR(std::sqrt(ss / v.size()), 0.25, 0.01) << n;
      EXPECT_FALSE(testing::bitwise_equal(t, *po[i].second)) << n;
    } else {
      // Xavier uniform: |w| <= sqrt(6 / (fan_in + fan_out)).
      const double bound = std::sqrt(6.0 / static_cast<double>(t.size(0) + t.size(1)));
      for (float x : v) EXPECT_LE(std::abs(x), bound + 1e-6) << n;
      EXPECT_FALSE(testing::bitwise_equal(t, *po[i].second)) << n;
    }
  }
}

// Incremental decoding must give the logits of a full recompute over the same prefix.
void check_incremental(const ModelConfig& c) {
  Transformer m(c, 7);
  NoGradGuard ng;
  const int64_t B = 3, T = 6;
  Tensor src = ids({B, 5}, {5, 6, 7, 8, 9, 4, 3, 12, 0, 0, 10, 0, 0, 0, 0});
  Tensor trg = testing::random_ids({B, T}, c.trg_vocab_size - 3, 3);
  {
    int32_t* p = trg.data<int32_t>();
    for (int64_t i = 0; i < B * T; ++i) p[i] += 3;  // no pad/bos/eos inside
    for (int64_t b = 0; b < B; ++b) p[b * T] = static_cast<int32_t>(c.bos_id);
  }
  Tensor full = m.forward(c.has_encoder() ? src : Tensor(), trg);  // (B, T, V)
  DecoderState st = c.has_encoder() ? m.start(src) : m.start_decoder_only(B);
  for (int64_t t = 0; t < T; ++t) {
    Tensor tok = narrow(trg, 1, t, 1).contiguous().reshape({B});
    Tensor logits = m.step(st, tok);
    Tensor ref = narrow(full, 1, t, 1).contiguous().reshape({B, c.trg_vocab_size});
    EXPECT_LE(testing::scaled_error(logits, ref), 1e-5) << "step " << t;
  }
  // Beam reorder: rows 2, 0, 0 continue; their logits must match the full pass of those rows.
  const std::vector<int64_t> rows = {2, 0, 0};
  st.reorder(rows);
  Tensor next = testing::random_ids({B, 1}, c.trg_vocab_size - 3, 9);
  Tensor trg_r = Tensor::empty({B, T + 1}, DType::i32);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < T; ++t)
      trg_r.data<int32_t>()[b * (T + 1) + t] = trg.data<int32_t>()[rows[b] * T + t];
    trg_r.data<int32_t>()[b * (T + 1) + T] = next.data<int32_t>()[b] + 3;
  }
  Tensor src_r = Tensor::empty({B, 5}, DType::i32);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < 5; ++s)
      src_r.data<int32_t>()[b * 5 + s] = src.data<int32_t>()[rows[b] * 5 + s];
  Tensor full_r = m.forward(c.has_encoder() ? src_r : Tensor(), trg_r);
  Tensor tok = narrow(trg_r, 1, T, 1).contiguous().reshape({B});
  Tensor logits = m.step(st, tok);
  Tensor ref = narrow(full_r, 1, T, 1).contiguous().reshape({B, c.trg_vocab_size});
  EXPECT_LE(testing::scaled_error(logits, ref), 1e-5) << "after reorder";
  // A reorder that drops a row (a finished sentence) and swaps the rest: rows 2, 1 of the
  // reordered state, whose sources are rows[2], rows[1] of the original batch.
  const std::vector<int64_t> rows2 = {2, 1};
  const int64_t B2 = 2;
  st.reorder(rows2);
  Tensor trg_2 = Tensor::empty({B2, T + 2}, DType::i32);
  Tensor src_2 = Tensor::empty({B2, 5}, DType::i32);
  for (int64_t b = 0; b < B2; ++b) {
    for (int64_t t = 0; t <= T; ++t)
      trg_2.data<int32_t>()[b * (T + 2) + t] = trg_r.data<int32_t>()[rows2[b] * (T + 1) + t];
    trg_2.data<int32_t>()[b * (T + 2) + T + 1] = static_cast<int32_t>(4 + b);
    for (int64_t s = 0; s < 5; ++s)
      src_2.data<int32_t>()[b * 5 + s] = src_r.data<int32_t>()[rows2[b] * 5 + s];
  }
  Tensor full_2 = m.forward(c.has_encoder() ? src_2 : Tensor(), trg_2);
  Tensor logits_2 = m.step(st, narrow(trg_2, 1, T + 1, 1).contiguous().reshape({B2}));
  Tensor ref_2 = narrow(full_2, 1, T + 1, 1).contiguous().reshape({B2, c.trg_vocab_size});
  EXPECT_LE(testing::scaled_error(logits_2, ref_2), 1e-5) << "after a reorder that drops a row";
}

TEST(Transformer, IncrementalEqualsFullRecompute) {
  check_incremental(tiny(false));
  check_incremental(tiny(true));
  check_incremental(tiny(true, true));
  ModelConfig c = tiny(false);
  c.positions = Positions::learned;
  c.embed_norm = true;
  c.embed_scale = EmbedScale::prj;
  check_incremental(c);
}

TEST(Transformer, PaddingDoesNotLeakIntoOtherPositions) {
  // The same sentence with and without extra padding gives the same logits at real positions.
  Transformer m(tiny(false), 3);
  NoGradGuard ng;
  Tensor src1 = ids({1, 3}, {5, 6, 7}), src2 = ids({1, 5}, {5, 6, 7, 0, 0});
  Tensor trg1 = ids({1, 3}, {1, 4, 5}), trg2 = ids({1, 4}, {1, 4, 5, 0});
  Tensor a = m.forward(src1, trg1), b = narrow(m.forward(src2, trg2), 1, 0, 3);
  EXPECT_LE(testing::scaled_error(a, b.contiguous()), 1e-5);
}

TEST(Transformer, ReturnsTheAttentionWeightsOfEveryLayer) {
  Transformer m(tiny(false), 5);
  NoGradGuard ng;
  Tensor src = ids({2, 4}, {5, 6, 7, 2, 8, 2, 0, 0}), trg = ids({2, 3}, {1, 4, 5, 1, 6, 0});
  AttentionWeights w;
  Tensor with = m.forward(src, trg, &w);
  EXPECT_TRUE(testing::bitwise_equal(with, m.forward(src, trg)));  // asking changes nothing
  ASSERT_EQ(w.encoder_self.size(), 2u);
  ASSERT_EQ(w.decoder_self.size(), 2u);
  ASSERT_EQ(w.decoder_cross.size(), 2u);
  EXPECT_EQ(w.encoder_self[0].shape(), (Shape{2, 4, 4, 4}));
  EXPECT_EQ(w.decoder_self[1].shape(), (Shape{2, 4, 3, 3}));
  EXPECT_EQ(w.decoder_cross[1].shape(), (Shape{2, 4, 3, 4}));
  for (int64_t h = 0; h < 4; ++h)
    for (int64_t t = 0; t < 3; ++t) {
      double row = 0;
      for (int64_t s = 0; s < 4; ++s) row += w.decoder_cross[0].at({1, h, t, s});
      EXPECT_NEAR(row, 1.0, 1e-5);
      // Padded source keys and future target keys get no weight.
      EXPECT_EQ(w.decoder_cross[0].at({1, h, t, 2}), 0.0);
      EXPECT_EQ(w.decoder_cross[0].at({1, h, t, 3}), 0.0);
      for (int64_t s = t + 1; s < 3; ++s) EXPECT_EQ(w.decoder_self[0].at({0, h, t, s}), 0.0);
    }
}

TEST(Transformer, DropoutOnlyInTraining) {
  ModelConfig c = tiny(false);
  c.dropout = 0.3;
  c.attention_dropout = 0.2;
  Transformer m(c, 3);
  Tensor src = ids({1, 3}, {5, 6, 7}), trg = ids({1, 3}, {1, 4, 5});
  NoGradGuard ng;
  Tensor e1 = m.forward(src, trg), e2 = m.forward(src, trg);
  EXPECT_TRUE(testing::bitwise_equal(e1, e2));
  m.set_training(true);
  Generator g1(5), g2(5);
  m.set_generator(&g1);
  Tensor t1 = m.forward(src, trg);
  m.set_generator(&g2);
  Tensor t2 = m.forward(src, trg);
  EXPECT_TRUE(testing::bitwise_equal(t1, t2));  // same seed, same masks
  EXPECT_GT(testing::max_abs_diff(t1, e1), 1e-3);
}

// Data-parallel training spaces batches' streams by this count (train_loop.cpp) and checks it per
// batch; here every combination of sites, stacks and shapes against what a forward really draws.
TEST(Transformer, DropoutStreamsPerForwardIsWhatAForwardDraws) {
  for (const bool decoder_only : {false, true})
    for (const double p : {0.0, 0.3})
      for (const double pa : {0.0, 0.2})
        for (const bool pre : {false, true}) {
          ModelConfig c = tiny(pre, decoder_only);
          c.dropout = p, c.attention_dropout = pa;
          c.decoder_layers = 3;
          Transformer m(c, 3);
          m.set_training(true);
          Generator g(7);
          m.set_generator(&g);
          for (const auto& [b, s, t] : {std::tuple{1, 3, 2}, std::tuple{3, 5, 7}}) {
            const uint64_t before = g.position();
            m.forward(Tensor::full({b, s}, 5, DType::i32), Tensor::full({b, t}, 4, DType::i32));
            autograd::clear_tape();
            EXPECT_EQ(static_cast<int64_t>(g.position() - before), m.dropout_streams_per_forward())
                << "decoder_only " << decoder_only << " dropout " << p << " attention " << pa
                << " pre " << pre << " batch " << b << "x" << s << "x" << t;
          }
        }
  ModelConfig c = tiny(false);
  c.dropout = 0.1, c.attention_dropout = 0.1;
  // Embeddings 2, encoder 2 × (2 sublayers + 1 attention), decoder 2 × (3 + 2).
  EXPECT_EQ(Transformer(c).dropout_streams_per_forward(), 2 + 2 * 3 + 2 * 5);
}

TEST(Transformer, ErrorsAreClear) {
  ModelConfig c = tiny(false);
  c.heads = 5;
  EXPECT_TFM_ERROR(Transformer{c}, "heads (5) must divide d_model (16)");
  Transformer m(tiny(false));
  EXPECT_TFM_ERROR(m.forward(ids({1, 2}, {5, 13}), ids({1, 2}, {1, 4})), "outside [0, V)");
  Tensor long_src = Tensor::full({1, 41}, 5, DType::i32);
  EXPECT_TFM_ERROR(m.encode(long_src), "exceeds max_length 40");
}

TEST(Checkpoint, RoundTripAndValidation) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("tfm_ckpt_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  ModelConfig c = tiny(true);
  c.tie_output = false;
  Transformer m(c, 11);
  save_model(m, dir.string());
  auto loaded = load_model(dir.string());
  EXPECT_EQ(loaded->config().to_json(), c.to_json());
  auto a = m.named_parameters(), b = loaded->named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_TRUE(testing::bitwise_equal(*a[i].second, *b[i].second)) << a[i].first;
  }

  // A tensor missing, one too many, one of the wrong shape: each a one-line error.
  auto rewrite = [&](auto edit) {
    std::vector<std::pair<std::string, Tensor>> ts;
    for (const auto& [n, t] : m.named_parameters()) ts.emplace_back(n, t->detach());
    edit(ts);
    save_safetensors((dir / "model.safetensors").string(), ts,
                     {{"config", c.to_json()}, {"format_version", "1"}});
  };
  rewrite([](auto& ts) {
    std::erase_if(ts, [](const auto& nt) { return nt.first == "output.weight"; });
  });
  EXPECT_TFM_ERROR(load_model(dir.string()), "missing tensor output.weight");
  rewrite([](auto& ts) { ts.emplace_back("extra.weight", Tensor::zeros({2})); });
  EXPECT_TFM_ERROR(load_model(dir.string()), "unexpected tensor extra.weight");
  rewrite([](auto& ts) { ts[0].second = Tensor::zeros({3, 3}); });
  EXPECT_TFM_ERROR(load_model(dir.string()), "embed.trg.weight has shape (3, 3)");
  rewrite([](auto& ts) { ts[0].second = ts[0].second.to(DType::f64); });
  EXPECT_TFM_ERROR(load_model(dir.string()), "embed.trg.weight is f64, expected f32");
  // Non-finite weights (issue 15): a NaN anywhere in a tensor, or Inf in all of one, named.
  for (const float bad : {std::nanf(""), INFINITY, -INFINITY}) {
    rewrite([&](auto& ts) {
      Tensor t = ts[3].second.clone();
      t.template data<float>()[t.numel() - 1] = bad;
      ts[3].second = t;
    });
    EXPECT_TFM_ERROR(load_model(dir.string()),
                     "tensor " + m.named_parameters()[3].first + " holds a non-finite value");
  }
  rewrite([](auto& ts) { ts.back().second = Tensor::full(ts.back().second.shape(), INFINITY); });
  EXPECT_TFM_ERROR(load_model(dir.string()), "holds a non-finite value (inf at element 0)");
  // A format this build does not know, without the source location in the message.
  {
    std::vector<std::pair<std::string, Tensor>> ts;
    for (const auto& [n, t] : m.named_parameters()) ts.emplace_back(n, t->detach());
    save_safetensors((dir / "model.safetensors").string(), ts,
                     {{"config", c.to_json()}, {"format_version", "2"}});
    EXPECT_TFM_ERROR(load_model(dir.string()), "format_version \"2\" is not supported");
  }
  fs::remove_all(dir);
  EXPECT_TFM_ERROR(load_model(dir.string()), "does not exist");
  fs::create_directories(dir);
  EXPECT_TFM_ERROR(load_model(dir.string()), "no model.safetensors");
  fs::remove_all(dir);
}

TEST(Config, AbsurdSizesAreRefused) {
  ModelConfig c = tiny(true);
  c.d_model = int64_t{1} << 30;
  EXPECT_TFM_ERROR(c.validate(), "d_model 1073741824 is too large");
  c = tiny(true);
  c.max_length = int64_t{1} << 40;
  EXPECT_TFM_ERROR(c.validate(), "max_length 1099511627776 is too large");
  c = tiny(true);
  c.d_model = 16384, c.heads = 16, c.d_ff = 65536, c.encoder_layers = c.decoder_layers = 64;
  EXPECT_TFM_ERROR(c.validate(), "parameters is too large");
  c = tiny(true);
  c.layer_norm_eps = INFINITY;
  EXPECT_TFM_ERROR(c.validate(), "layer_norm_eps must be in (0, 1)");
  c = tiny(true);
  c.dropout = std::nan("");
  EXPECT_TFM_ERROR(c.validate(), "dropout must be in [0, 1)");
}

TEST(Config, JsonRoundTripAndErrors) {
  ModelConfig c = tiny(true);
  c.positions = Positions::sinusoidal_concat;
  c.activation = Activation::gelu;
  EXPECT_EQ(ModelConfig::from_json(c.to_json()).to_json(), c.to_json());
  EXPECT_TFM_ERROR(ModelConfig::from_json("{\"norm\": \"middle\"}"),
                   "norm must be one of pre|post");
  EXPECT_TFM_ERROR(ModelConfig::from_json("{\"d_model\": 1.5}"), "d_model must be an integer");
  EXPECT_TFM_ERROR(ModelConfig::from_json("{\"colour\": 1}"), "unknown key \"colour\"");
  EXPECT_TFM_ERROR(ModelConfig::from_json("[1"), "not valid JSON");
  EXPECT_TFM_ERROR(ModelConfig::preset("huge"), "unknown preset");
}

// source_bos / source_eos: written to config.json, read back, and absent in a config written
// before they existed, which then means what tfm did then (EOS only).
TEST(Config, SourceFramingKeysRoundTripAndDefault) {
  ModelConfig c = tiny(false);
  EXPECT_FALSE(c.source_bos);
  EXPECT_TRUE(c.source_eos);
  c.source_bos = true, c.source_eos = false;
  const std::string json = c.to_json();
  EXPECT_NE(json.find("\"source_bos\": true"), std::string::npos) << json;
  EXPECT_NE(json.find("\"source_eos\": false"), std::string::npos) << json;
  const ModelConfig back = ModelConfig::from_json(json);
  EXPECT_TRUE(back.source_bos);
  EXPECT_FALSE(back.source_eos);
  const SeqFormat f = back.seq_format();
  EXPECT_TRUE(f.source_bos);
  EXPECT_FALSE(f.source_eos);
  EXPECT_EQ(f.source_specials(), 1);
  const ModelConfig old = ModelConfig::from_json("{\"d_model\": 32, \"heads\": 4}");
  EXPECT_FALSE(old.source_bos);
  EXPECT_TRUE(old.source_eos);
  EXPECT_TFM_ERROR(ModelConfig::from_json("{\"source_eos\": 1}"),
                   "source_eos must be true or false");
}

// The vocabularies' fingerprints: written only when recorded (configs from before are unchanged),
// read back, and a string.
TEST(Config, VocabFingerprintKeys) {
  ModelConfig c = tiny(false);
  EXPECT_EQ(c.to_json().find("fingerprint"), std::string::npos);
  c.src_vocab_fingerprint = "fnv1a64:0123456789abcdef";
  c.trg_vocab_fingerprint = "fnv1a64:fedcba9876543210";
  const ModelConfig back = ModelConfig::from_json(c.to_json());
  EXPECT_EQ(back.src_vocab_fingerprint, c.src_vocab_fingerprint);
  EXPECT_EQ(back.trg_vocab_fingerprint, c.trg_vocab_fingerprint);
  EXPECT_EQ(back.to_json(), c.to_json());
  EXPECT_TFM_ERROR(ModelConfig::from_json("{\"trg_vocab_fingerprint\": 5}"),
                   "trg_vocab_fingerprint must be a string");
}

// quick is small's width with the training-speed choices the quick start relies on: a model built
// from it has exactly the parameters of small cut to two layers a stack, plus the final norms.
TEST(Config, QuickPresetIsTwoLayerSmallWithPreNorm) {
  ModelConfig quick = ModelConfig::preset("quick"), small = ModelConfig::preset("small");
  EXPECT_EQ(quick.norm, NormPlacement::pre);
  EXPECT_TRUE(quick.final_norm);
  EXPECT_EQ(quick.dropout, small.dropout);
  EXPECT_EQ(quick.d_model, small.d_model);
  EXPECT_EQ(quick.encoder_layers, 2);
  EXPECT_EQ(quick.decoder_layers, 2);
  small.encoder_layers = small.decoder_layers = 2;
  quick.src_vocab_size = quick.trg_vocab_size = small.src_vocab_size = small.trg_vocab_size = 100;
  quick.validate();
  Transformer a(quick), b(small);
  int64_t na = 0, nb = 0;
  for (const auto& [name, p] : a.named_parameters()) na += p->numel();
  for (const auto& [name, p] : b.named_parameters()) nb += p->numel();
  EXPECT_EQ(na - nb, 2 * 2 * quick.d_model);  // encoder + decoder final norm: weight and bias
}

}  // namespace
}  // namespace tfm
