// Philox4x32-10 eight counters at a time (the maths of tfm::philox4x32, core/rng.h), for the
// dropout masks of the residual dropout (dropout_cpu.cpp) and of attention probabilities
// (attention_tiles_cpu.h): the scalar generator was 10 % of a training step's profile. Internal
// to ops/cpu.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

// Vector types returned by value change ABI without AVX-512; everything here is inline.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace tfm::cpu {

// (w >> 8) >= threshold  ⇔  RandomStream::uniform(i) = (w >> 8)·2⁻²⁴ >= p, exactly.
inline uint32_t dropout_threshold(double p) {
  return static_cast<uint32_t>(std::ceil(p * 16777216.0));
}

typedef uint64_t U64x8 __attribute__((vector_size(64)));
typedef uint32_t U32x8 __attribute__((vector_size(32)));
typedef uint32_t U32x16 __attribute__((vector_size(64)));

// Philox4x32-10 (the maths of tfm::philox4x32) on the 8 counters {blk + i, stream} at once:
// out[0, 32) gets the 32 stream words of elements 4·blk .. 4·blk + 31, in element order.
// Products of 32-bit values in 64-bit lanes are exact.
// Always inlined: the AVX-512 copies of dropout and attention compile their own rounds.
[[gnu::always_inline]] inline void philox_words_x8(uint64_t blk, uint64_t seed, uint64_t stream,
                                                   uint32_t* out) {
  const U64x8 lo32 = U64x8{} + 0xFFFFFFFFull;
  U64x8 c0, c1;
  for (int i = 0; i < 8; ++i) {
    c0[i] = (blk + i) & 0xFFFFFFFFull;
    c1[i] = (blk + i) >> 32;
  }
  U64x8 c2 = U64x8{} + (stream & 0xFFFFFFFFull), c3 = U64x8{} + (stream >> 32);
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    const U64x8 p0 = c0 * 0xD2511F53ull, p1 = c2 * 0xCD9E8D57ull;
    const U64x8 n0 = ((p1 >> 32) ^ c1 ^ k0) & lo32;
    const U64x8 n2 = ((p0 >> 32) ^ c3 ^ k1) & lo32;
    c0 = n0;
    c1 = p1 & lo32;
    c2 = n2;
    c3 = p0 & lo32;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  // Word w of counter i is element 4i + w: interleave the four word vectors.
  const U32x8 w0 = __builtin_convertvector(c0, U32x8), w1 = __builtin_convertvector(c1, U32x8);
  const U32x8 w2 = __builtin_convertvector(c2, U32x8), w3 = __builtin_convertvector(c3, U32x8);
  const U32x16 ab =
      __builtin_shufflevector(w0, w1, 0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
  const U32x16 cd =
      __builtin_shufflevector(w2, w3, 0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
  const U32x16 first =
      __builtin_shufflevector(ab, cd, 0, 1, 16, 17, 2, 3, 18, 19, 4, 5, 20, 21, 6, 7, 22, 23);
  const U32x16 second =
      __builtin_shufflevector(ab, cd, 8, 9, 24, 25, 10, 11, 26, 27, 12, 13, 28, 29, 14, 15, 30, 31);
  std::memcpy(out, &first, sizeof first);
  std::memcpy(out + 16, &second, sizeof second);
}

}  // namespace tfm::cpu
