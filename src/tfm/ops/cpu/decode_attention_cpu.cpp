#include "tfm/ops/cpu/decode_attention_cpu.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "tfm/core/cpu_isa.h"
#include "tfm/core/parallel.h"
#include "tfm/ops/cpu/attention_tiles_cpu.h"

namespace tfm::cpu {

namespace {

using attn::kNegInf;
using V = attn::Vec<float>;
constexpr int L = attn::Simd<float>::L;

// Positions ahead that the score loop prefetches keys.
constexpr int64_t kAhead = 4;

// The row kernel below is compiled twice from one source (rows_avx2, rows_avx512: the same
// operations in the same order, so both levels give the same bits; tests/ops/test_cpu_levels.cpp
// checks). Everything it calls is inlined into each copy (TFM_TILE_INLINE,
// attention_tiles_cpu.h), so no function taking or returning a 64-byte vector is ever called
// across the two levels' calling conventions.

// The weighted sum's vectors: 16 floats (one zmm) summed 16 at a time with AVX-512; 8 floats (one
// ymm) summed 8 at a time with AVX2, whose 16 registers hold no more, and where the 64-byte Vec
// went through the stack. Each column is its own sum over the positions, so neither the width
// nor the blocking changes a result.
typedef float V8 __attribute__((vector_size(32)));
struct Avx512Sum {
  using W = V;
  static constexpr int kBlock = 16;
};
struct Avx2Sum {
  using W = V8;
  static constexpr int kBlock = 8;
};

// acc[0, NB vectors) = Σ_s p[h(c)][s] · v[s, c0 + c] for one block of NB vectors of W of the C
// columns starting at column c0; h(c) = (c0 + c) / Dh.
template <typename W, int NB>
TFM_TILE_INLINE void weighted_sum_block(int64_t S, int64_t Dh, int64_t spad, const float* p,
                                        const float* const* vp, int64_t c0, float* acc) {
  constexpr int WL = static_cast<int>(sizeof(W) / sizeof(float));
  W o[NB] = {};
  const int64_t h0 = c0 / Dh;
  if ((c0 + NB * WL - 1) / Dh == h0) {  // the block lies in one head: one weight a position
    const float* ph = p + h0 * spad;
    for (int64_t s = 0; s < S; ++s) {
      const float* vs = vp[s] + c0;
      const float w = ph[s];
#pragma GCC unroll 16
      for (int j = 0; j < NB; ++j) o[j] += w * attn::vload<float, W>(vs + j * WL);
    }
  } else {
    const float* ph[NB];
    for (int j = 0; j < NB; ++j) ph[j] = p + ((c0 + j * WL) / Dh) * spad;
    for (int64_t s = 0; s < S; ++s) {
      const float* vs = vp[s] + c0;
#pragma GCC unroll 16
      for (int j = 0; j < NB; ++j) o[j] += ph[j][s] * attn::vload<float, W>(vs + j * WL);
    }
  }
  std::memcpy(acc, o, sizeof o);
}

// q_h · k_s for 4 positions of one head (kp[i] + off: position i's Dh values), Dh a multiple of
// 16, summed exactly as the one-position path below sums one (two 8-lane chains of products
// over d, lo + hi, then attn::hsum's halving tree), so a position's score is the same bits
// whether it falls in a block or not, and the same as before blocks were used. The four
// positions' trees run side by side in two ymm registers (hadd pairs adjacent lanes, so the
// halves are first put in the tree's order); one horizontal reduction a position was most of
// the kernel's time on AVX2. AVX2 + FMA is the library's floor (x86-64-v3): both copies of the
// row kernel use it.
TFM_TILE_INLINE __m128 dots4(const float* qh, const float* const* kp, int64_t off, int64_t Dh) {
  V8 lo[4] = {}, hi[4] = {};
  for (int64_t d = 0; d < Dh; d += 16) {
    const V8 q0 = attn::vload<float, V8>(qh + d), q1 = attn::vload<float, V8>(qh + d + 8);
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {  // the same expressions as below: the same contraction
      lo[i] += q0 * attn::vload<float, V8>(kp[i] + off + d);
      hi[i] += q1 * attn::vload<float, V8>(kp[i] + off + d + 8);
    }
  }
  __m256 w[4];
  for (int i = 0; i < 4; ++i) w[i] = static_cast<__m256>(lo[i] + hi[i]);
  // Halving 8 lanes to 4: u_j = w_j + w_{j+4}, two positions a register.
  const __m256 s01 = _mm256_add_ps(_mm256_permute2f128_ps(w[0], w[1], 0x20),
                                   _mm256_permute2f128_ps(w[0], w[1], 0x31));
  const __m256 s23 = _mm256_add_ps(_mm256_permute2f128_ps(w[2], w[3], 0x20),
                                   _mm256_permute2f128_ps(w[2], w[3], 0x31));
  // 4 to 2 to 1: (u0 + u2) + (u1 + u3). hadd adds neighbours, so lanes go to (u0, u2, u1, u3).
  const __m256 r01 = _mm256_permute_ps(s01, _MM_SHUFFLE(3, 1, 2, 0));
  const __m256 r23 = _mm256_permute_ps(s23, _MM_SHUFFLE(3, 1, 2, 0));
  const __m256 t = _mm256_hadd_ps(r01, r23);  // [p0: u0+u2, u1+u3, p2: .., .. | p1: .., p3: ..]
  const __m256 v = _mm256_hadd_ps(t, t);      // [p0, p2, p0, p2 | p1, p3, p1, p3]
  return _mm_unpacklo_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
}

// All heads of batch row b. Keys and values are walked position by position, each position's
// C values (every head) at once: for a cache that is one sequential stream the prefetchers
// follow, where a head at a time would jump C floats ahead for every Dh it reads.
template <class Sum>
TFM_TILE_INLINE void one_row(const DecodeAttentionArgs& a, int64_t b, std::vector<float>& scratch,
                             std::vector<const float*>& pos) {
  const int64_t S = a.kv_len, H = a.heads, Dh = a.head_dim, C = H * Dh;
  const float* q = a.q + b * C;
  const int64_t kb = a.kv_rows ? a.kv_rows[b] : b;
  float* out = a.out + b * C;
  const uint8_t* mask = a.mask ? a.mask + kb * S : nullptr;
  // Where each position's keys and values are: one row's (S, C) block, or, with kv_slots, each
  // position in the row its slot names (a beam's ancestors' rows). Padded with the last position
  // so the prefetches below stay in bounds.
  const int32_t* slots = a.kv_slots ? a.kv_slots + b * a.kv_slots_ld : nullptr;
  pos.resize(static_cast<size_t>(2 * S + 16));
  const float** kp = pos.data();
  const float** vp = kp + S + 8;
  for (int64_t s = 0; s < S; ++s) {
    const int64_t off = (slots ? slots[s] : kb) * a.kv_batch_stride + s * C;
    kp[s] = a.k + off;
    vp[s] = a.v + off;
  }
  for (int64_t s = S; s < S + 8; ++s) kp[s] = vp[s] = kp[S - 1];
  const int64_t spad = attn::round_up(S, L);
  scratch.resize(static_cast<size_t>(H * spad + C + H));
  float* p = scratch.data();  // (H, spad) scores, then probabilities
  float* acc = p + H * spad;  // (C) unnormalised outputs
  float* inv = acc + C;       // (H) 1 / each head's softmax denominator
  const bool vec = Dh % L == 0;

  // Scores; masked keys and the padding past S at -inf, so the vector exp below gives 0 there.
  int64_t s = 0;
  if (vec) {
    const __m128 scale = _mm_set1_ps(a.scale);
    for (; s + 4 <= S; s += 4) {
      // As below: the next block's keys to L1, this block's values to L2.
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t c = 0; c < C; c += 64 / sizeof(float)) {
          __builtin_prefetch(kp[s + 4 + i] + c, 0, 3);
          __builtin_prefetch(vp[s + i] + c, 0, 2);
        }
      for (int64_t h = 0; h < H; ++h)
        _mm_storeu_ps(p + h * spad + s, _mm_mul_ps(dots4(q + h * Dh, kp + s, h * Dh, Dh), scale));
      if (mask)
        for (int64_t i = s; i < s + 4; ++i)
          if (mask[i])
            for (int64_t h = 0; h < H; ++h) p[h * spad + i] = kNegInf<float>;
    }
  }
  for (; s < S; ++s) {
    const float* ks = kp[s];
    // The cache is read once a step and usually evicted since (the weights streamed through):
    // fetch the keys a few positions ahead, and this position's values for the sum below.
    for (int64_t c = 0; c < C; c += 64 / sizeof(float)) {
      __builtin_prefetch(kp[std::min(s + kAhead, S + 7)] + c, 0, 3);  // to L1
      __builtin_prefetch(vp[s] + c, 0, 2);                            // to L2
    }
    for (int64_t h = 0; h < H; ++h) {
      if (mask && mask[s]) {
        p[h * spad + s] = kNegInf<float>;
        continue;
      }
      const float* qh = q + h * Dh;
      const float* kh = ks + h * Dh;
      float dot = 0.f;
      if (vec) {
        // A 16-lane sum kept as its two 8-lane halves (a ymm each: the 64-byte vector went
        // through the stack with AVX2), then halved as attn::hsum halves: lo + hi first.
        V8 lo{}, hi{};
        for (int64_t d = 0; d < Dh; d += L) {
          lo += attn::vload<float, V8>(qh + d) * attn::vload<float, V8>(kh + d);
          hi += attn::vload<float, V8>(qh + d + 8) * attn::vload<float, V8>(kh + d + 8);
        }
        dot = attn::hsum(lo + hi);
      } else {
        dot = attn::sum_products_in_order(qh, kh, Dh, 0.f);
      }
      p[h * spad + s] = dot * a.scale;
    }
  }
  for (int64_t h = 0; h < H; ++h) {
    float* ph = p + h * spad;
    std::fill(ph + S, ph + spad, kNegInf<float>);
    float mx = kNegInf<float>;
    for (int64_t s = 0; s < S; ++s) mx = std::max(mx, ph[s]);
    if (mx == kNegInf<float>) {  // every key masked: output 0, as the general kernel
      std::fill(ph, ph + spad, 0.f);
      inv[h] = 0.f;
      continue;
    }
    inv[h] = 1.f / attn::exp_shifted_sum(ph, spad, mx);
  }
  if (a.probs)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t s = 0; s < S; ++s) a.probs[(b * H + h) * S + s] = p[h * spad + s] * inv[h];

  // out_h = Σ_s p_hs · v_s,h / Σ_s p_hs: blocks of kBlock vectors summed in registers, then
  // single vectors, the rest (Dh not a multiple of the vector width) in memory.
  int64_t c0 = 0;
  if (vec) {
    using W = typename Sum::W;
    constexpr int64_t WL = sizeof(W) / sizeof(float), Block = Sum::kBlock;
    for (; c0 + Block * WL <= C; c0 += Block * WL)
      weighted_sum_block<W, Block>(S, Dh, spad, p, vp, c0, acc + c0);
    for (; c0 + WL <= C; c0 += WL) weighted_sum_block<W, 1>(S, Dh, spad, p, vp, c0, acc + c0);
  }
  std::fill(acc + c0, acc + C, 0.f);
  for (int64_t s = 0; s < S && c0 < C; ++s) {
    const float* vs = vp[s];
    for (int64_t h = c0 / Dh; h < H; ++h) {
      const float w = p[h * spad + s];
      for (int64_t c = std::max(c0, h * Dh); c < (h + 1) * Dh; ++c)
        acc[c] = std::fma(w, vs[c], acc[c]);
    }
  }
  for (int64_t h = 0; h < H; ++h)
    for (int64_t d = 0; d < Dh; ++d) out[h * Dh + d] = acc[h * Dh + d] * inv[h];
}

// Rows [b0, b1), each start to finish.
void rows_avx2(const DecodeAttentionArgs& a, int64_t b0, int64_t b1, std::vector<float>& scratch,
               std::vector<const float*>& pos) {
  for (int64_t b = b0; b < b1; ++b) one_row<Avx2Sum>(a, b, scratch, pos);
}

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,fma,bmi2")
void rows_avx512(const DecodeAttentionArgs& a, int64_t b0, int64_t b1, std::vector<float>& scratch,
                 std::vector<const float*>& pos) {
  for (int64_t b = b0; b < b1; ++b) one_row<Avx512Sum>(a, b, scratch, pos);
}
#pragma GCC pop_options

}  // namespace

void decode_attention_forward(const DecodeAttentionArgs& a) {
  decode_attention_forward(a, cpu_isa());
}

void decode_attention_forward(const DecodeAttentionArgs& a, CpuIsa isa) {
  TFM_CHECK(isa <= cpu_isa()) << "decode_attention_forward: level " << cpu_isa_name(isa)
                              << " is above this process's " << cpu_isa_name(cpu_isa());
  const int64_t tasks = a.batch;
  if (tasks == 0 || a.heads == 0) return;
  if (a.kv_len == 0) {
    std::fill(a.out, a.out + a.batch * a.heads * a.head_dim, 0.f);
    return;
  }
  const double task_flops = 4.0 * static_cast<double>(a.kv_len * a.heads * a.head_dim);
  const int64_t grain =
      omp_in_parallel()
          ? tasks
          : std::max<int64_t>(1, static_cast<int64_t>(attn::kMinChunkFlops / (task_flops + 1)));
  parallel_for(tasks, grain, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> scratch;
    thread_local std::vector<const float*> pos;
    (isa >= CpuIsa::avx512 ? rows_avx512 : rows_avx2)(a, t0, t1, scratch, pos);
  });
}

}  // namespace tfm::cpu
