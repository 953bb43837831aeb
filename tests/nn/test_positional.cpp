// The fixed position tables against their papers' formulas in double: interleaved (the paper),
// [sin | cos] with tensor2tensor's frequencies and an offset (fairseq, M2M100: positions from
// pad + 1), and [sin | cos] with the paper's frequencies (Marian), odd widths included.
#include <cmath>
#include <functional>

#include "support/test_util.h"
#include "tfm/nn/positional.h"

namespace tfm {
namespace {

void expect_table(const Tensor& t, int64_t length, int64_t d,
                  const std::function<double(int64_t, int64_t)>& want) {
  ASSERT_EQ(t.shape(), (Shape{length, d}));
  const std::vector<float> v = t.to_vector<float>();
  for (int64_t p = 0; p < length; ++p)
    for (int64_t c = 0; c < d; ++c)
      ASSERT_EQ(v[p * d + c], static_cast<float>(want(p, c)))
          << "position " << p << " column " << c;
}

TEST(Positional, InterleavedIsThePapersWithItsOffset) {
  for (int64_t offset : {0, 5})
    expect_table(nn::sinusoidal_table(20, 8, offset), 20, 8, [&](int64_t p, int64_t c) {
      const double a = static_cast<double>(p + offset) / std::pow(10000.0, 2.0 * (c / 2) / 8.0);
      return c % 2 == 0 ? std::sin(a) : std::cos(a);
    });
}

TEST(Positional, ConcatHasTensor2TensorsFrequenciesFromTheOffset) {
  for (int64_t d : {8, 9})
    for (int64_t offset : {0, 2})
      expect_table(nn::sinusoidal_concat_table(30, d, offset), 30, d, [&](int64_t p, int64_t c) {
        const int64_t half = d / 2;
        if (c >= 2 * half) return 0.0;  // odd width: a zero column
        const int64_t j = c % half;
        const double a = static_cast<double>(p + offset) *
                         std::exp(-static_cast<double>(j) * std::log(10000.0) / (half - 1));
        return c < half ? std::sin(a) : std::cos(a);
      });
}

TEST(Positional, MarianHasThePapersFrequenciesInTwoHalves) {
  // Transformers' MarianSinusoidalPositionalEmbedding: sin of the even columns' angles
  // p / 10000^(2(j//2)/d) in the first ceil(d/2) columns, cos of the odd columns' after them.
  for (int64_t d : {8, 7})
    expect_table(nn::sinusoidal_marian_table(25, d), 25, d, [&](int64_t p, int64_t c) {
      const int64_t sines = (d + 1) / 2;
      const int64_t col = c < sines ? 2 * c : 2 * (c - sines) + 1;  // the interleaved column
      const double a = static_cast<double>(p) / std::pow(10000.0, 2.0 * (col / 2) / double(d));
      return c < sines ? std::sin(a) : std::cos(a);
    });
}

}  // namespace
}  // namespace tfm
