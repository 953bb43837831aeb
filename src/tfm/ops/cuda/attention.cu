#include <cmath>

#include "tfm/core/check.h"
#include "tfm/core/cuda/device_allocator.h"
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

// Whether query t may see key s (row and key in range are the caller's business).
__device__ __forceinline__ bool visible(const Params& p, int64_t b, int64_t t, int64_t s) {
  if (p.causal && s > t + (p.S - p.T)) return false;
  return p.pad == nullptr || p.pad[b * p.S + s] == 0;
}

// What dropout multiplies probability (bh, t, s) by: 1/(1 - p) when kept, 0 when dropped.
__device__ __forceinline__ float drop_factor(const Params& p, int64_t bh, int64_t t, int64_t s) {
  if (p.drop_threshold == 0) return 1.0f;
  const uint64_t idx = static_cast<uint64_t>((bh * p.T + t) * p.S + s);
  const uint4 w = detail::philox_block(p.seed, p.stream, idx / 4);
  return (detail::word(w, static_cast<int>(idx % 4)) >> 8) >= p.drop_threshold ? p.drop_scale
                                                                               : 0.0f;
}

// Σ over a row's four lanes (adjacent in the warp) of each lane's partial dot product. The
// forward and both backward kernels form scores this same way, so they agree to the bit.
__device__ __forceinline__ float row_sum4(float part) {
  part += __shfl_xor_sync(0xffffffffu, part, 1);
  part += __shfl_xor_sync(0xffffffffu, part, 2);
  return part;
}

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
      part = row_sum4(part);
      const int64_t s = s0 + j;
      sc[j] = s < p.S && row_ok && visible(p, b, t, s) ? part : -INFINITY;
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
      pj *= drop_factor(p, bh, t, s0 + j);
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

// delta (B·H·T) = Σ_d grad_out · out for each row and head: the Σ_s P·dP term of the softmax
// backward (it holds with dropout too, since out already carries the dropped probabilities).
__global__ void attention_delta_kernel(Params p, const float* out, const float* grad_out,
                                       float* delta) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= p.B * p.H * p.T) return;
  const int64_t t = idx % p.T, bh = idx / p.T, b = bh / p.H, h = bh % p.H;
  const int64_t off = (b * p.T + t) * p.H * p.D + h * p.D;
  float s = 0.0f;
  for (int64_t d = 0; d < p.D; ++d) s += out[off + d] * grad_out[off + d];
  delta[idx] = s;
}

// grad_q: the forward's blocking (rows = queries), probabilities rebuilt as exp(score - lse).
// dS = P ∘ (drop ∘ dO·Vᵀ - delta); dq = scale · dS · K.
template <int kPer>
__global__ void __launch_bounds__(kThreadsPerBlock)
    attention_dq_kernel(Params p, const float* q, const float* k, const float* v, const float* lse,
                        const float* grad_out, const float* delta, float* grad_q) {
  __shared__ float ks[kKeysPerTile][kLanesPerRow * kPer];
  __shared__ float vs[kKeysPerTile][kLanesPerRow * kPer];
  const int64_t bh = blockIdx.y;
  const int64_t b = bh / p.H, h = bh % p.H;
  const int lane = threadIdx.x % kLanesPerRow;
  const int64_t t0 = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock;
  const int64_t t = t0 + threadIdx.x / kLanesPerRow;
  const bool row_ok = t < p.T;
  const int64_t ld = p.H * p.D;
  float qr[kPer], gr[kPer], acc[kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int64_t d = lane + kLanesPerRow * i;
    const bool ok = row_ok && d < p.D;
    qr[i] = ok ? q[(b * p.T + t) * ld + h * p.D + d] * p.scale : 0.0f;
    gr[i] = ok ? grad_out[(b * p.T + t) * ld + h * p.D + d] : 0.0f;
    acc[i] = 0.0f;
  }
  const float row_lse = row_ok ? lse[bh * p.T + t] : INFINITY;
  const float row_delta = row_ok ? delta[bh * p.T + t] : 0.0f;
  int64_t s_end = p.S;
  if (p.causal) {
    const int64_t lim = min(p.S, min(p.T, t0 + kRowsPerBlock) - 1 + (p.S - p.T) + 1);
    s_end = lim > 0 ? lim : 0;
  }
  for (int64_t s0 = 0; s0 < s_end; s0 += kKeysPerTile) {
    __syncthreads();
    for (int e = threadIdx.x; e < kKeysPerTile * kLanesPerRow * kPer; e += kThreadsPerBlock) {
      const int j = e / (kLanesPerRow * kPer), d = e % (kLanesPerRow * kPer);
      const int64_t s = s0 + j;
      const bool ok = s < p.S && d < p.D;
      ks[j][d] = ok ? k[(b * p.S + s) * ld + h * p.D + d] : 0.0f;
      vs[j][d] = ok ? v[(b * p.S + s) * ld + h * p.D + d] : 0.0f;
    }
    __syncthreads();
#pragma unroll 4
    for (int j = 0; j < kKeysPerTile; ++j) {
      float sp = 0.0f, dp = 0.0f;
#pragma unroll
      for (int i = 0; i < kPer; ++i) {
        sp += qr[i] * ks[j][lane + kLanesPerRow * i];
        dp += gr[i] * vs[j][lane + kLanesPerRow * i];
      }
      sp = row_sum4(sp);
      dp = row_sum4(dp);
      const int64_t s = s0 + j;
      if (!(s < p.S && row_ok && visible(p, b, t, s))) continue;
      const float pj = __expf(sp - row_lse);
      const float ds = pj * (dp * drop_factor(p, bh, t, s) - row_delta);
#pragma unroll
      for (int i = 0; i < kPer; ++i) acc[i] += ds * ks[j][lane + kLanesPerRow * i];
    }
  }
  if (!row_ok) return;
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int64_t d = lane + kLanesPerRow * i;
    if (d < p.D) grad_q[(b * p.T + t) * ld + h * p.D + d] = acc[i] * p.scale;
  }
}

// grad_k and grad_v: rows = keys, query tiles (scaled q, grad_out, lse, delta) in shared memory.
// dv = (drop ∘ P)ᵀ · dO; dk = scale · dSᵀ · Q.
template <int kPer>
__global__ void __launch_bounds__(kThreadsPerBlock)
    attention_dkv_kernel(Params p, const float* q, const float* k, const float* v, const float* lse,
                         const float* grad_out, const float* delta, float* grad_k, float* grad_v) {
  __shared__ float qs[kRowsPerBlock][kLanesPerRow * kPer];
  __shared__ float gs[kRowsPerBlock][kLanesPerRow * kPer];
  __shared__ float lse_s[kRowsPerBlock], delta_s[kRowsPerBlock];
  const int64_t bh = blockIdx.y;
  const int64_t b = bh / p.H, h = bh % p.H;
  const int lane = threadIdx.x % kLanesPerRow;
  const int64_t s_first = static_cast<int64_t>(blockIdx.x) * kKeysPerTile;
  const int64_t s = s_first + threadIdx.x / kLanesPerRow;
  const bool row_ok = s < p.S;
  const int64_t ld = p.H * p.D;
  float kr[kPer], vr[kPer], dk[kPer], dv[kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int64_t d = lane + kLanesPerRow * i;
    const bool ok = row_ok && d < p.D;
    kr[i] = ok ? k[(b * p.S + s) * ld + h * p.D + d] : 0.0f;
    vr[i] = ok ? v[(b * p.S + s) * ld + h * p.D + d] : 0.0f;
    dk[i] = 0.0f;
    dv[i] = 0.0f;
  }
  // Causal: key s is seen only by queries t >= s - (S - T).
  int64_t t_begin = 0;
  if (p.causal) {
    const int64_t first = s_first - (p.S - p.T);
    t_begin = first > 0 ? first : 0;
  }
  for (int64_t t0 = t_begin; t0 < p.T; t0 += kRowsPerBlock) {
    __syncthreads();
    for (int e = threadIdx.x; e < kRowsPerBlock * kLanesPerRow * kPer; e += kThreadsPerBlock) {
      const int j = e / (kLanesPerRow * kPer), d = e % (kLanesPerRow * kPer);
      const int64_t t = t0 + j;
      const bool ok = t < p.T && d < p.D;
      qs[j][d] = ok ? q[(b * p.T + t) * ld + h * p.D + d] * p.scale : 0.0f;
      gs[j][d] = ok ? grad_out[(b * p.T + t) * ld + h * p.D + d] : 0.0f;
    }
    for (int j = threadIdx.x; j < kRowsPerBlock; j += kThreadsPerBlock) {
      const int64_t t = t0 + j;
      lse_s[j] = t < p.T ? lse[bh * p.T + t] : INFINITY;
      delta_s[j] = t < p.T ? delta[bh * p.T + t] : 0.0f;
    }
    __syncthreads();
#pragma unroll 4
    for (int j = 0; j < kRowsPerBlock; ++j) {
      float sp = 0.0f, dp = 0.0f;
#pragma unroll
      for (int i = 0; i < kPer; ++i) {
        // Same operand order as the forward's qr[i] * ks[j][...]: the score is the same bits.
        sp += qs[j][lane + kLanesPerRow * i] * kr[i];
        dp += gs[j][lane + kLanesPerRow * i] * vr[i];
      }
      sp = row_sum4(sp);
      dp = row_sum4(dp);
      const int64_t t = t0 + j;
      if (!(t < p.T && row_ok && visible(p, b, t, s))) continue;
      const float pj = __expf(sp - lse_s[j]);
      const float keep = drop_factor(p, bh, t, s);
      const float ds = pj * (dp * keep - delta_s[j]);
      const float pd = pj * keep;
#pragma unroll
      for (int i = 0; i < kPer; ++i) {
        dv[i] += pd * gs[j][lane + kLanesPerRow * i];
        dk[i] += ds * qs[j][lane + kLanesPerRow * i];
      }
    }
  }
  if (!row_ok) return;
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int64_t d = lane + kLanesPerRow * i;
    if (d < p.D) {
      grad_k[(b * p.S + s) * ld + h * p.D + d] = dk[i];
      grad_v[(b * p.S + s) * ld + h * p.D + d] = dv[i];
    }
  }
}

Params make_params(const AttentionShape& shape, const AttentionConfig& config, const char* what) {
  const int64_t B = shape.batch, H = shape.heads, T = shape.q_len, S = shape.kv_len,
                D = shape.head_dim;
  TFM_CHECK(B >= 0 && H > 0 && T >= 0 && S >= 0 && D > 0)
      << what << ": bad shape B=" << B << " H=" << H << " T=" << T << " S=" << S << " Dh=" << D;
  TFM_CHECK(D <= kAttentionMaxHeadDim)
      << what << ": head_dim " << D << " exceeds " << kAttentionMaxHeadDim;
  TFM_CHECK(config.dropout >= 0.0 && config.dropout < 1.0)
      << what << ": dropout must be in [0, 1), got " << config.dropout;
  TFM_CHECK(B * H < 65536) << what << ": B·H = " << B * H << " exceeds grid.y";
  TFM_CHECK(shape.kv_batch_stride == 0 || shape.kv_batch_stride == S * H * D)
      << what << ": keys and values must be contiguous (kv_batch_stride " << shape.kv_batch_stride
      << ", S·H·Dh = " << S * H * D << ")";
  return Params{B,
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
}

}  // namespace

void attention_forward(const AttentionShape& shape, const AttentionConfig& config, const float* q,
                       const float* k, const float* v, float* out, float* lse,
                       const Stream& stream) {
  const Params p = make_params(shape, config, "cuda attention");
  if (p.B == 0 || p.T == 0) return;
  const int64_t T = p.T, D = p.D;
  const dim3 grid(static_cast<unsigned>((T + kRowsPerBlock - 1) / kRowsPerBlock),
                  static_cast<unsigned>(p.B * p.H));
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

void attention_backward(const AttentionShape& shape, const AttentionConfig& config, const float* q,
                        const float* k, const float* v, const float* out, const float* lse,
                        const float* grad_out, float* grad_q, float* grad_k, float* grad_v,
                        const Stream& stream) {
  const Params p = make_params(shape, config, "cuda attention_backward");
  if (p.B == 0) return;
  TFM_CHECK(p.T == 0 || lse != nullptr)
      << "cuda attention_backward: needs the forward's lse (B, H, T)";
  cudaStream_t st = detail::native(stream);
  const int64_t rows = p.B * p.H * p.T;
  // Freed back to the cache on return; later work on this stream is ordered after ours.
  auto ws = device_allocator().allocate(sizeof(float) * static_cast<size_t>(rows > 0 ? rows : 1));
  auto* delta = static_cast<float*>(ws.get());
  const unsigned bh = static_cast<unsigned>(p.B * p.H);
  if (rows > 0) {
    attention_delta_kernel<<<static_cast<unsigned>((rows + 255) / 256), 256, 0, st>>>(
        p, out, grad_out, delta);
    TFM_CUDA_CHECK_LAUNCH();
    const dim3 grid(static_cast<unsigned>((p.T + kRowsPerBlock - 1) / kRowsPerBlock), bh);
    if (p.D <= 32) {
      attention_dq_kernel<8>
          <<<grid, kThreadsPerBlock, 0, st>>>(p, q, k, v, lse, grad_out, delta, grad_q);
    } else if (p.D <= 64) {
      attention_dq_kernel<16>
          <<<grid, kThreadsPerBlock, 0, st>>>(p, q, k, v, lse, grad_out, delta, grad_q);
    } else {
      attention_dq_kernel<32>
          <<<grid, kThreadsPerBlock, 0, st>>>(p, q, k, v, lse, grad_out, delta, grad_q);
    }
    TFM_CUDA_CHECK_LAUNCH();
  }
  if (p.S > 0) {
    // With T = 0 this still runs and writes the zero gradients of k and v.
    const dim3 grid(static_cast<unsigned>((p.S + kKeysPerTile - 1) / kKeysPerTile), bh);
    if (p.D <= 32) {
      attention_dkv_kernel<8>
          <<<grid, kThreadsPerBlock, 0, st>>>(p, q, k, v, lse, grad_out, delta, grad_k, grad_v);
    } else if (p.D <= 64) {
      attention_dkv_kernel<16>
          <<<grid, kThreadsPerBlock, 0, st>>>(p, q, k, v, lse, grad_out, delta, grad_k, grad_v);
    } else {
      attention_dkv_kernel<32>
          <<<grid, kThreadsPerBlock, 0, st>>>(p, q, k, v, lse, grad_out, delta, grad_k, grad_v);
    }
    TFM_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace tfm::cuda
