// The vocabulary-wide search steps (ops/decode_steps.h) against references written plainly:
// a full sort for top-k, the conventions' rules element by element.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "support/test_util.h"
#include "tfm/ops/decode_steps.h"
#include "tfm/ops/softmax.h"

namespace tfm {
namespace {

using testing::random_tensor;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

TEST(TopKRows, MatchesAStableSortWithTiesToTheLowerId) {
  // Values on a coarse grid so that ties are common; V not a multiple of the 16-value blocks.
  const int64_t R = 5, V = 203;
  Tensor x = random_tensor({R, V}, DType::f32, 7);
  std::vector<float> vals = x.to_vector<float>();
  for (float& v : vals) v = std::round(v * 8.f) / 8.f;
  x = Tensor::from_vector<float>({R, V}, vals);
  for (int64_t k : {int64_t{1}, int64_t{5}, int64_t{40}, V}) {
    const TopK top = top_k_rows(x, k);
    const std::vector<float> got_v = top.values.to_vector<float>();
    const std::vector<int32_t> got_i = top.ids.to_vector<int32_t>();
    for (int64_t r = 0; r < R; ++r) {
      std::vector<int32_t> order(static_cast<size_t>(V));
      std::iota(order.begin(), order.end(), 0);
      const float* row = vals.data() + r * V;
      std::stable_sort(order.begin(), order.end(),
                       [&](int32_t a, int32_t b) { return row[a] > row[b]; });
      for (int64_t j = 0; j < k; ++j) {
        ASSERT_EQ(got_i[static_cast<size_t>(r * k + j)], order[static_cast<size_t>(j)])
            << "k " << k << " row " << r << " rank " << j;
        ASSERT_EQ(got_v[static_cast<size_t>(r * k + j)], row[order[static_cast<size_t>(j)]]);
      }
    }
  }
  EXPECT_TFM_ERROR(top_k_rows(x, V + 1), "outside [1, 203]");
  EXPECT_TFM_ERROR(top_k_rows(x, 0), "outside");
}

TEST(MaskStepRows, EachRuleForbidsWhatItSays) {
  const int64_t V = 9;
  const SpecialIds ids{0, 1, 2};
  const Tensor x = random_tensor({4, V}, DType::f32, 8);
  Tensor lp = x.clone();
  mask_step_rows(lp, {StepRule::keep, StepRule::normal, StepRule::no_eos, StepRule::eos_only}, ids);
  for (int64_t v = 0; v < V; ++v) {
    const double orig1 = x.at({1, v}), orig2 = x.at({2, v}), orig3 = x.at({3, v});
    EXPECT_EQ(lp.at({0, v}), x.at({0, v}));
    EXPECT_EQ(lp.at({1, v}), v == 0 || v == 1 ? kNegInf : orig1) << v;
    EXPECT_EQ(lp.at({2, v}), v <= 2 ? kNegInf : orig2) << v;
    EXPECT_EQ(lp.at({3, v}), v == 2 ? orig3 : kNegInf) << v;
  }
  EXPECT_TFM_ERROR(mask_step_rows(lp, {StepRule::keep}, ids), "1 rules for 4 rows");
  EXPECT_TFM_ERROR(
      mask_step_rows(lp, {StepRule::keep, StepRule::keep, StepRule::keep, StepRule::keep},
                     SpecialIds{0, 1, 9}),
      "special id 9");
}

// R × V logits in [-6, 6] on a grid of 1/4 (ties common, and kept apart by a log-softmax's
// rounding), row-major.
std::vector<float> coarse_logits(int64_t R, int64_t V, uint64_t seed) {
  std::vector<float> vals = random_tensor({R, V}, DType::f32, seed, -6.0, 6.0).to_vector<float>();
  for (float& v : vals) v = std::round(v * 4.f) / 4.f;
  return vals;
}

// Row r's rule: each of the four in turn.
std::vector<StepRule> every_rule(int64_t R) {
  std::vector<StepRule> rules;
  for (int64_t r = 0; r < R; ++r) rules.push_back(static_cast<StepRule>(r % 4));
  return rules;
}

TEST(TopKLogProbs, IsLogSoftmaxMaskThenTopKBitwise) {
  // Coarse logits (ties after the log-softmax's rounding) and every rule; V not a multiple of
  // the 16-value blocks; rows enough to be split over threads.
  const int64_t R = 37, V = 203;
  const SpecialIds ids{0, 1, 2};
  const std::vector<float> vals = coarse_logits(R, V, 11);
  const Tensor x = Tensor::from_vector<float>({R, V}, vals);
  const std::vector<StepRule> rules = every_rule(R);
  for (int64_t k : {int64_t{1}, int64_t{5}, V}) {
    Tensor lp = log_softmax(x).contiguous();
    mask_step_rows(lp, rules, ids);
    const TopK want = top_k_rows(lp, k);
    const TopK got = top_k_log_probs(x, rules, ids, k);
    ASSERT_EQ(got.ids.to_vector<int32_t>(), want.ids.to_vector<int32_t>()) << "k " << k;
    const std::vector<float> gv = got.values.to_vector<float>(),
                             wv = want.values.to_vector<float>();
    for (size_t i = 0; i < gv.size(); ++i)  // bitwise, -inf included
      ASSERT_EQ(std::memcmp(&gv[i], &wv[i], sizeof(float)), 0) << "k " << k << " entry " << i;
  }
  // The input is left as it was (the log-probs live in a scratch row).
  EXPECT_EQ(x.to_vector<float>(), vals);
  EXPECT_TFM_ERROR(top_k_log_probs(x, {StepRule::keep}, ids, 1), "1 rules for 37 rows");
  EXPECT_TFM_ERROR(top_k_log_probs(x, rules, ids, V + 1), "outside [1, 203]");
}

TEST(TopKLogits, IsTheMaskedLogitsStableSortAndLeavesTheLogits) {
  // Coarse logits (ties), -inf bans as a logits processor leaves them, every rule, rows enough to
  // be split over threads; the reference is a stable sort of a masked copy, element by element.
  const int64_t R = 37, V = 203;
  const SpecialIds ids{0, 1, 2};
  std::vector<float> vals = coarse_logits(R, V, 12);
  for (size_t i = 5; i < vals.size(); i += 17)  // EOS stays: an eos_only row keeps a value
    if (static_cast<int64_t>(i) % V != 2) vals[i] = kNegInf;
  const Tensor x = Tensor::from_vector<float>({R, V}, vals);
  const std::vector<StepRule> rules = every_rule(R);
  for (int64_t k : {int64_t{1}, int64_t{4}, int64_t{40}}) {
    const TopK top = top_k_logits(x, rules, ids, k);
    const std::vector<float> got_v = top.values.to_vector<float>();
    const std::vector<int32_t> got_i = top.ids.to_vector<int32_t>();
    for (int64_t r = 0; r < R; ++r) {
      std::vector<float> row(vals.begin() + r * V, vals.begin() + (r + 1) * V);
      const StepRule rule = rules[static_cast<size_t>(r)];
      for (int64_t v = 0; v < V; ++v) {
        const bool banned = (rule == StepRule::eos_only && v != ids.eos) ||
                            ((rule == StepRule::normal || rule == StepRule::no_eos) &&
                             (v == ids.pad || v == ids.bos)) ||
                            (rule == StepRule::no_eos && v == ids.eos);
        if (banned) row[static_cast<size_t>(v)] = kNegInf;
      }
      std::vector<int32_t> order(static_cast<size_t>(V));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](int32_t a, int32_t b) { return row[a] > row[b]; });
      for (int64_t j = 0; j < k; ++j) {
        const auto at = static_cast<size_t>(r * k + j);
        ASSERT_EQ(got_i[at], order[static_cast<size_t>(j)]) << "k " << k << " row " << r;
        ASSERT_EQ(got_v[at], row[static_cast<size_t>(order[static_cast<size_t>(j)])]);
      }
    }
  }
  EXPECT_EQ(x.to_vector<float>(), vals);  // the caller's logits are not masked
  // The log-probs' top-1 is the same token on every row: equal logits give equal log-probs, and
  // these differ by 1/4 at least, which the log-softmax's rounding keeps apart.
  const TopK lp = top_k_log_probs(x, rules, ids, 1), lg = top_k_logits(x, rules, ids, 1);
  EXPECT_EQ(lp.ids.to_vector<int32_t>(), lg.ids.to_vector<int32_t>());
}

TEST(TopKLogits, AnOverflowedRowIsRankedAsItsLogProbs) {
  std::vector<float> vals = random_tensor({3, 40}, DType::f32, 13).to_vector<float>();
  vals[40 + 7] = std::numeric_limits<float>::quiet_NaN();
  vals[80 + 9] = std::numeric_limits<float>::infinity();
  const Tensor x = Tensor::from_vector<float>({3, 40}, vals);
  const std::vector<StepRule> rules(3, StepRule::normal);
  const TopK got = top_k_logits(x, rules, SpecialIds{0, 1, 2}, 2);
  const TopK lp = top_k_log_probs(x, rules, SpecialIds{0, 1, 2}, 2);
  const std::vector<float> gv = got.values.to_vector<float>(), lv = lp.values.to_vector<float>();
  EXPECT_EQ(gv[0], vals[static_cast<size_t>(got.ids.to_vector<int32_t>()[0])]);  // a logit
  for (size_t i = 2; i < gv.size(); ++i)  // rows 1 and 2: the log-probs' entries, bitwise
    EXPECT_EQ(std::memcmp(&gv[i], &lv[i], sizeof(float)), 0) << "entry " << i;
  const std::vector<int32_t> gi = got.ids.to_vector<int32_t>(), li = lp.ids.to_vector<int32_t>();
  EXPECT_EQ(std::vector<int32_t>(gi.begin() + 2, gi.end()),
            std::vector<int32_t>(li.begin() + 2, li.end()));
}

TEST(MeanOverHeads, SumsInHeadOrderThenDivides) {
  const int64_t R = 3, H = 4, S = 6;
  const Tensor w = random_tensor({R, H, 1, S}, DType::f32, 9, 0.0, 1.0);
  const std::vector<float> got = mean_over_heads(w).to_vector<float>();
  for (int64_t r = 0; r < R; ++r)
    for (int64_t s = 0; s < S; ++s) {
      float sum = 0.f;
      for (int64_t h = 0; h < H; ++h) sum += static_cast<float>(w.at({r, h, 0, s}));
      EXPECT_EQ(got[static_cast<size_t>(r * S + s)], sum / static_cast<float>(H));
    }
}

}  // namespace
}  // namespace tfm
