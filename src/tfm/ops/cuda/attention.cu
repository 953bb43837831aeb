#include <cmath>

#include "tfm/core/check.h"
#include "tfm/ops/cuda/attention.h"
#include "tfm/ops/cuda/common.cuh"

namespace tfm::cuda {

namespace {

constexpr int kRowsPerBlock = 32;  // query rows per block
constexpr int kLanesPerRow = 4;    // threads sharing one query row, each with Dh/4 of its dims
constexpr int kKeysPerTile = 32;   // keys per shared-memory tile
constexpr int kThreadsPerBlock = kRowsPerBlock * kLanesPerRow;

struct Params {
  int64_t B, H, T, S, D;
  float scale;
  bool causal;
  const uint8_t* pad;
  uint32_t drop_threshold;  // keep iff top 24 bits of the word >= this; 0 = no dropout
  float drop_scale;
  uint64_t seed, stream;
};

// Lane r of a row owns dims r, r + 4, r + 8, ...: the four lanes read four consecutive floats of
// a shared-memory row at once (no bank conflicts; the other rows of the warp broadcast).
// kPer = dims per lane, a compile-time bound so q and the accumulator live in registers.
template <int kPer>
__global__ void __launch_bounds__(kThreadsPerBlock)
    attention_forward_kernel(Params p, const float* q, const float* k, const float* v, float* out,
                             float* lse) {
  __shared__ float ks[kKeysPerTile][kLanesPerRow * kPer];
  __shared__ float vs[kKeysPerTile][kLanesPerRow * kPer];
  const int64_t bh = blockIdx.y;
  const int64_t b = bh / p.H, h = bh % p.H;
  const int lane = threadIdx.x % kLanesPerRow;
  const int64_t t0 = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock;
  const int64_t t = t0 + threadIdx.x / kLanesPerRow;
  const bool row_ok = t < p.T;
  const int64_t ld = p.H * p.D;  // row stride of q/k/v/out
  const int64_t shift = p.S - p.T;

  float qr[kPer], acc[kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int64_t d = lane + kLanesPerRow * i;
    qr[i] = row_ok && d < p.D ? q[(b * p.T + t) * ld + h * p.D + d] * p.scale : 0.0f;
    acc[i] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;

  // Keys past the block's last row's causal limit are masked for every row: stop there.
  int64_t s_end = p.S;
  if (p.causal) {
    const int64_t last = min(p.T, t0 + kRowsPerBlock) - 1;
    const int64_t lim = min(p.S, last + shift + 1);
    s_end = lim > 0 ? lim : 0;
  }
  for (int64_t s0 = 0; s0 < s_end; s0 += kKeysPerTile) {
    __syncthreads();  // the previous tile is no longer read
    for (int e = threadIdx.x; e < kKeysPerTile * kLanesPerRow * kPer; e += kThreadsPerBlock) {
      const int j = e / (kLanesPerRow * kPer), d = e % (kLanesPerRow * kPer);
      const int64_t s = s0 + j;
      const bool ok = s < p.S && d < p.D;
      ks[j][d] = ok ? k[(b * p.S + s) * ld + h * p.D + d] : 0.0f;
      vs[j][d] = ok ? v[(b * p.S + s) * ld + h * p.D + d] : 0.0f;
    }
    __syncthreads();

    float sc[kKeysPerTile];
    float tile_max = -INFINITY;
#pragma unroll
    for (int j = 0; j < kKeysPerTile; ++j) {
      float part = 0.0f;
#pragma unroll
      for (int i = 0; i < kPer; ++i) part += qr[i] * ks[j][lane + kLanesPerRow * i];
      // The four lanes of a row are adjacent in the warp: two xor steps sum their parts.
      part += __shfl_xor_sync(0xffffffffu, part, 1);
      part += __shfl_xor_sync(0xffffffffu, part, 2);
      const int64_t s = s0 + j;
      bool visible = s < p.S && row_ok;
      if (visible && p.causal) visible = s <= t + shift;
      if (visible && p.pad != nullptr) visible = p.pad[b * p.S + s] == 0;
      sc[j] = visible ? part : -INFINITY;
      tile_max = fmaxf(tile_max, sc[j]);
    }
    const float m_new = fmaxf(m, tile_max);
    if (m_new == -INFINITY) continue;  // nothing visible yet for this row
    const float corr = __expf(m - m_new);
    l *= corr;
#pragma unroll
    for (int i = 0; i < kPer; ++i) acc[i] *= corr;
#pragma unroll
    for (int j = 0; j < kKeysPerTile; ++j) {
      if (sc[j] == -INFINITY) continue;
      float pj = __expf(sc[j] - m_new);
      l += pj;  // the softmax normalises the probabilities before dropout
      if (p.drop_threshold != 0) {
        const uint64_t idx = static_cast<uint64_t>(((bh * p.T + t) * p.S) + s0 + j);
        const uint4 w = detail::philox_block(p.seed, p.stream, idx / 4);
        pj = (detail::word(w, static_cast<int>(idx % 4)) >> 8) >= p.drop_threshold
                 ? pj * p.drop_scale
                 : 0.0f;
      }
#pragma unroll
      for (int i = 0; i < kPer; ++i) acc[i] += pj * vs[j][lane + kLanesPerRow * i];
    }
    m = m_new;
  }
  if (!row_ok) return;
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int64_t d = lane + kLanesPerRow * i;
    if (d < p.D) out[(b * p.T + t) * ld + h * p.D + d] = acc[i] * inv;
  }
  if (lse != nullptr && lane == 0) lse[bh * p.T + t] = l > 0.0f ? m + logf(l) : INFINITY;
}

}  // namespace

void attention_forward(const AttentionShape& shape, const AttentionConfig& config, const float* q,
                       const float* k, const float* v, float* out, float* lse,
                       const Stream& stream) {
  const int64_t B = shape.batch, H = shape.heads, T = shape.q_len, S = shape.kv_len,
                D = shape.head_dim;
  TFM_CHECK(B >= 0 && H > 0 && T >= 0 && S >= 0 && D > 0)
      << "cuda attention: bad shape B=" << B << " H=" << H << " T=" << T << " S=" << S
      << " Dh=" << D;
  TFM_CHECK(D <= kAttentionMaxHeadDim)
      << "cuda attention: head_dim " << D << " exceeds " << kAttentionMaxHeadDim;
  TFM_CHECK(config.dropout >= 0.0 && config.dropout < 1.0)
      << "cuda attention: dropout must be in [0, 1), got " << config.dropout;
  TFM_CHECK(B * H < 65536) << "cuda attention: B·H = " << B * H << " exceeds grid.y";
  if (B == 0 || T == 0) return;
  Params p{B,
           H,
           T,
           S,
           D,
           static_cast<float>(config.scale),
           config.causal,
           config.key_padding_mask,
           static_cast<uint32_t>(std::ceil(config.dropout * 16777216.0)),
           static_cast<float>(1.0 / (1.0 - config.dropout)),
           config.seed,
           config.stream};
  const dim3 grid(static_cast<unsigned>((T + kRowsPerBlock - 1) / kRowsPerBlock),
                  static_cast<unsigned>(B * H));
  cudaStream_t st = detail::native(stream);
  if (D <= 32) {
    attention_forward_kernel<8><<<grid, kThreadsPerBlock, 0, st>>>(p, q, k, v, out, lse);
  } else if (D <= 64) {
    attention_forward_kernel<16><<<grid, kThreadsPerBlock, 0, st>>>(p, q, k, v, out, lse);
  } else {
    attention_forward_kernel<32><<<grid, kThreadsPerBlock, 0, st>>>(p, q, k, v, out, lse);
  }
  TFM_CUDA_CHECK_LAUNCH();
}

}  // namespace tfm::cuda
