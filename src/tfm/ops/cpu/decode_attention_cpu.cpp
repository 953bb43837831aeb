#include "tfm/ops/cpu/decode_attention_cpu.h"

#include <omp.h>

#include <vector>

#include "tfm/core/parallel.h"
#include "tfm/ops/cpu/attention_tiles_cpu.h"

namespace tfm::cpu {

namespace {

using attn::kNegInf;
using V = attn::Vec<float>;
constexpr int L = attn::Simd<float>::L;

// Positions ahead that the score loop prefetches keys.
constexpr int64_t kAhead = 4;

// acc[0, 16 vectors) = Σ_s p[h(c)][s] · v[s, c0 + c] for one block of 16 vectors of the C
// columns starting at column c0 (v already offset to it); h(c) = (c0 + c) / Dh.
void weighted_sum_block(int64_t S, int64_t C, int64_t Dh, int64_t spad, const float* p,
                        const float* v, int64_t c0, float* acc) {
  V o[16] = {};
  const float* ph[16];
  for (int j = 0; j < 16; ++j) ph[j] = p + ((c0 + j * L) / Dh) * spad;
  for (int64_t s = 0; s < S; ++s) {
    const float* vs = v + s * C;
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) o[j] += ph[j][s] * attn::vload(vs + j * L);
  }
  for (int j = 0; j < 16; ++j) attn::vstore(acc + j * L, o[j]);
}

// All heads of batch row b. Keys and values are walked position by position, each position's
// C values (every head) at once: for a cache that is one sequential stream the prefetchers
// follow, where a head at a time would jump C floats ahead for every Dh it reads.
void one_row(const DecodeAttentionArgs& a, int64_t b, std::vector<float>& scratch) {
  const int64_t S = a.kv_len, H = a.heads, Dh = a.head_dim, C = H * Dh;
  const float* q = a.q + b * C;
  const float* k = a.k + b * a.kv_batch_stride;  // (S, C)
  const float* v = a.v + b * a.kv_batch_stride;
  float* out = a.out + b * C;
  const uint8_t* mask = a.mask ? a.mask + b * S : nullptr;
  const int64_t spad = attn::round_up(S, L);
  scratch.resize(static_cast<size_t>(H * spad + C));
  float* p = scratch.data();  // (H, spad) scores, then probabilities
  float* acc = p + H * spad;  // (C) unnormalised outputs
  const bool vec = Dh % L == 0;

  // Scores; masked keys and the padding past S at -inf, so the vector exp below gives 0 there.
  for (int64_t s = 0; s < S; ++s) {
    const float* ks = k + s * C;
    // The cache is read once a step and usually evicted since (the weights streamed through):
    // fetch the keys a few positions ahead, and this position's values for the sum below.
    for (int64_t c = 0; c < C; c += 64 / sizeof(float)) {
      __builtin_prefetch(ks + kAhead * C + c, 0, 3);  // to L1
      __builtin_prefetch(v + s * C + c, 0, 2);        // to L2
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
        V sum{};
        for (int64_t d = 0; d < Dh; d += L) sum += attn::vload(qh + d) * attn::vload(kh + d);
        dot = attn::hsum(sum);
      } else {
        for (int64_t d = 0; d < Dh; ++d) dot += qh[d] * kh[d];
      }
      p[h * spad + s] = dot * a.scale;
    }
  }
  std::vector<float> inv(static_cast<size_t>(H));
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

  // out_h = Σ_s p_hs · v_s,h / Σ_s p_hs: blocks of 16 vectors summed in registers, the rest
  // (C not a multiple of 256, or Dh of the vector width) in memory.
  int64_t c0 = 0;
  if (vec)
    for (; c0 + 16 * L <= C; c0 += 16 * L)
      weighted_sum_block(S, C, Dh, spad, p, v + c0, c0, acc + c0);
  std::fill(acc + c0, acc + C, 0.f);
  for (int64_t s = 0; s < S && c0 < C; ++s) {
    const float* vs = v + s * C;
    for (int64_t h = c0 / Dh; h < H; ++h) {
      const float w = p[h * spad + s];
      for (int64_t c = std::max(c0, h * Dh); c < (h + 1) * Dh; ++c) acc[c] += w * vs[c];
    }
  }
  for (int64_t h = 0; h < H; ++h)
    for (int64_t d = 0; d < Dh; ++d) out[h * Dh + d] = acc[h * Dh + d] * inv[h];
}

}  // namespace

void decode_attention_forward(const DecodeAttentionArgs& a) {
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
    for (int64_t b = t0; b < t1; ++b) one_row(a, b, scratch);
  });
}

}  // namespace tfm::cpu
