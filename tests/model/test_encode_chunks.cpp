// A search's batch encoded in chunks of similar lengths (model/encode_chunks.h): the plan, and
// that the chunked keys and values are each sentence's own, bit for bit.
#include <algorithm>

#include "support/test_util.h"
#include "tfm/autograd/grad_mode.h"
#include "tfm/model/encode_chunks.h"
#include "tfm/model/transformer.h"
#include "tfm/ops/shape.h"
#include "tfm/types.h"

namespace tfm {
namespace {

TEST(EncodeChunks, SourceLengthsEndAtTheLastRealToken) {
  const Tensor ids =
      Tensor::from_vector<int32_t>({4, 4}, {5, 6, 0, 0, 0, 0, 0, 0, 5, 0, 6, 0, 7, 7, 7, 7});
  EXPECT_EQ(source_lengths(ids, 0), (std::vector<int64_t>{2, 1, 3, 4}));
  EXPECT_THROW(source_lengths(Tensor::zeros({4}, DType::i32), 0), Error);
}

TEST(EncodeChunks, RowsSortedByLengthAndCutWithinTheBudget) {
  // Sorted: rows 1 (1), 5 (2), 2 (3), 3 (3), 0 (5), 4 (8), 6 (12: alone, over the budget).
  const auto chunks = encode_chunks({5, 1, 3, 3, 8, 2, 12}, 8);
  ASSERT_EQ(chunks.size(), 5u);
  const std::vector<std::vector<int64_t>> rows = {{1, 5}, {2, 3}, {0}, {4}, {6}};
  const std::vector<std::vector<int64_t>> lengths = {{1, 2}, {3, 3}, {5}, {8}, {12}};
  for (size_t i = 0; i < chunks.size(); ++i) {
    EXPECT_EQ(chunks[i].rows, rows[i]) << "chunk " << i;
    EXPECT_EQ(chunks[i].lengths, lengths[i]) << "chunk " << i;
    EXPECT_EQ(chunks[i].length, lengths[i].back()) << "chunk " << i;
  }
  EXPECT_EQ(encode_chunks({4, 4, 4}, 1000).size(), 1u);
  EXPECT_TRUE(encode_chunks({}, 8).empty());
  EXPECT_THROW(encode_chunks({3}, 0), Error);
}

// A batch of 24 sentences of 1 to 30 tokens pads to 720 rows: start() encodes it in chunks. Each
// row's cross-attention keys and values, and a step's logits, are then bit for bit those of its
// chunk's sentences started as a batch of their own (cut here by hand), zero past the row's
// length; and those of the sentence started alone, to float precision (alone, the encoder's
// attention may take another kernel for so few keys). The model is bound for inference, in fp32
// and int8, whose products are row by row (bf16 on AVX512-BF16 takes oneDNN for many rows,
// which sums a row differently at other row counts).
void check_chunked_start(ComputeType t) {
  SCOPED_TRACE(compute_type_name(t));
  ModelConfig c = ModelConfig::preset("tiny");
  c.d_model = 32, c.heads = 4, c.d_ff = 48, c.encoder_layers = 2, c.decoder_layers = 2;
  c.dropout = 0.0, c.src_vocab_size = 17, c.trg_vocab_size = 17, c.max_length = 40;
  Transformer m(c, 11);
  m.bind_inference(t);
  NoGradGuard ng;
  const int64_t B = 24, S = 30;
  std::vector<int64_t> len(B);
  std::vector<int32_t> v(B * S, static_cast<int32_t>(c.pad_id));
  for (int64_t b = 0; b < B; ++b) {
    len[b] = 1 + (b * 7) % S;  // unsorted, every length from 1 to 30 at most once
    for (int64_t t = 0; t < len[b]; ++t) v[b * S + t] = static_cast<int32_t>(3 + (b + 5 * t) % 14);
  }
  ASSERT_EQ(*std::max_element(len.begin(), len.end()), S);
  const std::vector<EncodeChunk> chunks = encode_chunks(len, kEncodeChunkRows);
  ASSERT_GT(chunks.size(), 2u);
  const auto bos = [&](int64_t n) { return Tensor::full({n}, c.bos_id, DType::i32); };
  DecoderState st = m.start(Tensor::from_vector<int32_t>({B, S}, v));
  const Tensor logits = m.step(st, bos(B));  // (B, V)
  // The keys or values of row r, positions [0, l), of layer i's cross-attention.
  const auto own = [&](const DecoderState& d, size_t i, bool keys, int64_t r, int64_t l) {
    const Tensor& kv = keys ? d.layers[i].cross.k : d.layers[i].cross.v;
    return narrow(kv.slice(r, r + 1), 1, 0, l).contiguous();
  };
  for (const EncodeChunk& chunk : chunks) {
    const auto n = static_cast<int64_t>(chunk.rows.size());
    std::vector<int32_t> sub(n * chunk.length);
    for (int64_t j = 0; j < n; ++j)
      std::copy_n(v.begin() + chunk.rows[j] * S, chunk.length, sub.begin() + j * chunk.length);
    DecoderState part = m.start(Tensor::from_vector<int32_t>({n, chunk.length}, sub));
    const Tensor part_logits = m.step(part, bos(n));
    for (int64_t j = 0; j < n; ++j) {
      const int64_t b = chunk.rows[j];
      for (size_t i = 0; i < st.layers.size(); ++i)
        for (bool keys : {true, false}) {
          EXPECT_TRUE(
              testing::bitwise_equal(own(st, i, keys, b, len[b]), own(part, i, keys, j, len[b])))
              << "row " << b << ", layer " << i;
          const Tensor row = (keys ? st.layers[i].cross.k : st.layers[i].cross.v).slice(b, b + 1);
          if (len[b] < S) {
            const Tensor rest = narrow(row, 1, len[b], S - len[b]).contiguous();
            EXPECT_TRUE(testing::bitwise_equal(rest, Tensor::zeros(rest.shape())))
                << "row " << b << ", layer " << i;
          }
        }
      EXPECT_TRUE(testing::bitwise_equal(logits.slice(b, b + 1), part_logits.slice(j, j + 1)))
          << "row " << b;
    }
  }
  for (int64_t b = 0; b < B; ++b) {
    const Tensor one = Tensor::from_vector<int32_t>(
        {1, len[b]}, std::vector<int32_t>(v.begin() + b * S, v.begin() + b * S + len[b]));
    DecoderState alone = m.start(one);
    for (size_t i = 0; i < st.layers.size(); ++i)
      for (bool keys : {true, false})
        EXPECT_LE(
            testing::scaled_error(own(st, i, keys, b, len[b]), own(alone, i, keys, 0, len[b])),
            1e-5)
            << "row " << b << ", layer " << i;
    EXPECT_LE(testing::scaled_error(logits.slice(b, b + 1).contiguous(), m.step(alone, bos(1))),
              1e-5)
        << "row " << b;
  }
}

TEST(EncodeChunks, ChunkedStartGivesEachSentenceItsOwnBits) {
  check_chunked_start(ComputeType::float32);
  check_chunked_start(ComputeType::int8);
}

}  // namespace
}  // namespace tfm
