#include "tfm/data/batch.h"

#include <gtest/gtest.h>

#include "support/test_util.h"

namespace tfm {
namespace {

std::vector<int32_t> row(const Tensor& t, int64_t r) {
  const int64_t n = t.size(1);
  const int32_t* p = t.data<int32_t>() + r * n;
  return std::vector<int32_t>(p, p + n);
}

SeqFormat format(bool bos, bool eos) {
  SeqFormat f;
  f.pad_id = 0, f.bos_id = 1, f.eos_id = 2;
  f.source_bos = bos, f.source_eos = eos;
  return f;
}

// Each of the four source framings, with padding; the target side never changes.
TEST(Batch, SourceFramingFollowsTheFormat) {
  const Ids a = {7, 8, 9}, b = {5};
  const std::vector<const Ids*> src = {&a, &b}, trg = {&b, &a};
  struct Case {
    bool bos, eos;
    std::vector<int32_t> row0, row1;
    int64_t tokens;
  };
  const Case cases[] = {{false, true, {7, 8, 9, 2}, {5, 2, 0, 0}, 6},
                        {true, true, {1, 7, 8, 9, 2}, {1, 5, 2, 0, 0}, 8},
                        {true, false, {1, 7, 8, 9}, {1, 5, 0, 0}, 6},
                        {false, false, {7, 8, 9}, {5, 0, 0}, 4}};
  for (const Case& c : cases) {
    const Batch batch = make_batch(src, trg, format(c.bos, c.eos));
    EXPECT_EQ(row(batch.src, 0), c.row0) << "bos " << c.bos << " eos " << c.eos;
    EXPECT_EQ(row(batch.src, 1), c.row1) << "bos " << c.bos << " eos " << c.eos;
    EXPECT_EQ(batch.src_tokens, c.tokens);
    EXPECT_EQ(row(batch.trg_in, 0), (std::vector<int32_t>{1, 5, 0, 0}));
    EXPECT_EQ(row(batch.trg_out, 1), (std::vector<int32_t>{7, 8, 9, 2}));
    EXPECT_EQ(batch.trg_tokens, 6);
    EXPECT_EQ(source_batch(src, format(c.bos, c.eos)).to_vector<int32_t>(),
              batch.src.to_vector<int32_t>());
  }
}

// With neither BOS nor EOS an empty source leaves the encoder nothing to attend to: an error that
// says why, instead of a row of padding whose attention has no key.
TEST(Batch, EmptySourceWithoutBosOrEosIsAnError) {
  const Ids a = {7}, empty;
  EXPECT_EQ(row(source_batch({&a, &empty}, format(false, true)), 1), (std::vector<int32_t>{2, 0}));
  EXPECT_EQ(row(source_batch({&empty}, format(true, false)), 0), (std::vector<int32_t>{1}));
  EXPECT_TFM_ERROR(source_batch({&a, &empty}, format(false, false)),
                   "source 1 of the batch is empty and the model adds neither BOS nor EOS");
}

}  // namespace
}  // namespace tfm
