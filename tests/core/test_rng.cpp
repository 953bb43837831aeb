#include <cmath>
#include <set>
#include <vector>

#include "support/test_util.h"
#include "tfm/core/rng.h"

namespace tfm {
namespace {

using Words = std::array<uint32_t, 4>;

// Known-answer vectors for Philox4x32-10 from Random123's kat_vectors file.
TEST(Philox, KnownAnswerZeros) {
  EXPECT_EQ(philox4x32({0, 0, 0, 0}, {0, 0}),
            (Words{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
}

TEST(Philox, KnownAnswerAllOnes) {
  EXPECT_EQ(
      philox4x32({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu}),
      (Words{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
}

TEST(Philox, KnownAnswerPi) {
  EXPECT_EQ(
      philox4x32({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u}),
      (Words{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(RandomStream, BlockIsPhiloxOfIndexStreamAndSeed) {
  const uint64_t seed = 0x0123456789abcdefull, id = 0xfedcba9876543210ull,
                 i = 0x1122334455667788ull;
  RandomStream rs(seed, id);
  EXPECT_EQ(rs.block(i), philox4x32({0x55667788u, 0x11223344u, 0x76543210u, 0xfedcba98u},
                                    {0x89abcdefu, 0x01234567u}));
  EXPECT_EQ(rs.seed(), seed);
  EXPECT_EQ(rs.id(), id);
}

TEST(RandomStream, UniformUsesTheTop24BitsOfEachWord) {
  RandomStream rs(7, 3);
  for (uint64_t i = 0; i < 64; ++i) {
    const uint32_t w = rs.block(i / 4)[i % 4];
    EXPECT_EQ(rs.uniform(i), static_cast<float>(w >> 8) / 16777216.0f) << "element " << i;
  }
}

TEST(RandomStream, ValuesArePureFunctionsOfTheIndex) {
  RandomStream a(11, 5), b(11, 5);
  // Drawing in a different order (as threads would) changes nothing.
  std::vector<double> fwd(1000), rev(1000);
  for (int i = 0; i < 1000; ++i) fwd[i] = a.uniform_f64(i);
  for (int i = 999; i >= 0; --i) rev[i] = b.uniform_f64(i);
  EXPECT_EQ(fwd, rev);
  EXPECT_EQ(a.normal(123456789), b.normal(123456789));
  EXPECT_EQ(a.uniform(1ull << 40), b.uniform(1ull << 40));
}

// Moments of n draws; bounds are ~5 standard errors so a correct generator essentially never
// fails, while a broken one (wrong range, stuck bits, reused words) does.
struct Moments {
  double mean = 0, var = 0, min = INFINITY, max = -INFINITY;
};
template <typename F>
Moments moments(int64_t n, F&& draw) {
  Moments m;
  double s = 0, s2 = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = draw(i);
    s += v;
    s2 += v * v;
    m.min = std::min(m.min, v);
    m.max = std::max(m.max, v);
  }
  m.mean = s / n;
  m.var = s2 / n - m.mean * m.mean;
  return m;
}

TEST(RandomStream, UniformMoments) {
  constexpr int64_t n = 200000;
  RandomStream rs(42, 0);
  const double se_mean = std::sqrt(1.0 / 12 / n);
  for (bool f64 : {false, true}) {
    Moments m = moments(
        n, [&](int64_t i) { return f64 ? rs.uniform_f64(i) : static_cast<double>(rs.uniform(i)); });
    EXPECT_NEAR(m.mean, 0.5, 5 * se_mean) << (f64 ? "f64" : "f32");
    EXPECT_NEAR(m.var, 1.0 / 12, 5 * std::sqrt(1.0 / 180 / n)) << (f64 ? "f64" : "f32");
    EXPECT_GE(m.min, 0.0);
    EXPECT_LT(m.max, 1.0);
    EXPECT_LT(m.min, 1e-3);
    EXPECT_GT(m.max, 1 - 1e-3);
  }
}

TEST(RandomStream, NormalMoments) {
  constexpr int64_t n = 200000;
  RandomStream rs(42, 1);
  Moments m = moments(n, [&](int64_t i) { return rs.normal(i); });
  EXPECT_NEAR(m.mean, 0.0, 5 / std::sqrt(double(n)));
  EXPECT_NEAR(m.var, 1.0, 5 * std::sqrt(2.0 / n));
  // Shape, not just two moments: fraction within one sigma and the fourth moment.
  int64_t within = 0;
  double m4 = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = rs.normal(i);
    within += std::abs(v) < 1.0;
    m4 += v * v * v * v;
  }
  EXPECT_NEAR(double(within) / n, 0.682689, 5 * std::sqrt(0.2167 / n));
  EXPECT_NEAR(m4 / n, 3.0, 5 * std::sqrt(96.0 / n));
  EXPECT_TRUE(std::isfinite(m.min) && std::isfinite(m.max));
}

// Pearson correlation between two sequences of uniforms.
double correlation(const std::vector<double>& a, const std::vector<double>& b) {
  const double n = static_cast<double>(a.size());
  double sa = 0, sb = 0, sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sa += a[i];
    sb += b[i];
    sab += a[i] * b[i];
    saa += a[i] * a[i];
    sbb += b[i] * b[i];
  }
  const double cov = sab / n - sa / n * sb / n;
  return cov / std::sqrt((saa / n - sa * sa / n / n) * (sbb / n - sb * sb / n / n));
}

TEST(RandomStream, StreamsAndSeedsAreIndependent) {
  constexpr int n = 100000;
  auto draw = [](uint64_t seed, uint64_t id, int shift) {
    RandomStream rs(seed, id);
    std::vector<double> v(n);
    for (int i = 0; i < n; ++i) v[i] = rs.uniform_f64(i + shift);
    return v;
  };
  const auto base = draw(1, 0, 0);
  const double bound = 5 / std::sqrt(double(n));
  EXPECT_LT(std::abs(correlation(base, draw(1, 1, 0))), bound) << "neighbouring stream";
  EXPECT_LT(std::abs(correlation(base, draw(2, 0, 0))), bound) << "neighbouring seed";
  EXPECT_LT(std::abs(correlation(base, draw(1, 0, 1))), bound) << "lag-1 within a stream";
  EXPECT_LT(std::abs(correlation(base, draw(1ull << 32, 0, 0))), bound) << "seed high word";
  EXPECT_LT(std::abs(correlation(base, draw(1, 1ull << 32, 0))), bound) << "stream high word";
  // No repeats among 32-bit words of neighbouring streams (a stuck counter word would repeat).
  std::set<uint32_t> words;
  for (uint64_t id = 0; id < 4; ++id)
    for (uint64_t b = 0; b < 1000; ++b)
      for (uint32_t w : RandomStream(9, id).block(b)) words.insert(w);
  EXPECT_GT(words.size(), 15990u);
}

TEST(Generator, HandsOutStreamsInSequence) {
  Generator g(77);
  EXPECT_EQ(g.seed(), 77u);
  EXPECT_EQ(g.position(), 0u);
  RandomStream s0 = g.next_stream(), s1 = g.next_stream();
  EXPECT_EQ(s0.id(), 0u);
  EXPECT_EQ(s1.id(), 1u);
  EXPECT_EQ(s0.seed(), 77u);
  EXPECT_EQ(g.position(), 2u);
  EXPECT_NE(s0.uniform_f64(0), s1.uniform_f64(0));
}

TEST(Generator, StateSaveAndRestoreReproducesTheSequence) {
  Generator g(123);
  for (int i = 0; i < 5; ++i) g.next_stream();
  const uint64_t seed = g.seed(), pos = g.position();
  std::vector<double> first;
  for (int i = 0; i < 3; ++i) first.push_back(g.next_stream().normal(17));

  Generator h(999);  // a different generator resumed from the saved state
  h.set_state(seed, pos);
  std::vector<double> again;
  for (int i = 0; i < 3; ++i) again.push_back(h.next_stream().normal(17));
  EXPECT_EQ(first, again);
  EXPECT_EQ(h.position(), pos + 3);
}

TEST(Generator, ManualSeedResetsTheDefaultGenerator) {
  manual_seed(5);
  const double a = default_generator().next_stream().uniform_f64(0);
  EXPECT_EQ(default_generator().position(), 1u);
  manual_seed(5);
  EXPECT_EQ(default_generator().next_stream().uniform_f64(0), a);
  manual_seed(6);
  EXPECT_NE(default_generator().next_stream().uniform_f64(0), a);
  EXPECT_EQ(default_generator().seed(), 6u);
}

}  // namespace
}  // namespace tfm
