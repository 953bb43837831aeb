// Attention backward, FlashAttention-2 style: one task per (b, h), which owns that head's slices
// of dQ, dK and dV, so nothing is shared between threads and every sum runs in a fixed order.
// For each key block the task recomputes the probabilities of every query block from the saved
// logsumexp, P = exp(s·scale - lse), and accumulates
//   dV_j += (P∘Z)ᵀ dO,   dP = (dO Vᵀ)∘Z,   dS = scale · P∘(dP − D),   dK_j += dSᵀ Q,   dQ += dS K
// with Z the dropout multipliers and D_t = dO_t·O_t (= Σ_s P_ts dP_ts, the softmax correction).
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "tfm/core/cpu_isa.h"
#include "tfm/core/parallel.h"
#include "tfm/ops/cpu/attention_cpu.h"
#include "tfm/ops/cpu/attention_tiles_cpu.h"

namespace tfm::cpu {

namespace {

using attn::kNegInf;
using attn::Scratch;
using attn::Simd;
using attn::Vec;

constexpr int64_t kBlockQ = 64;
constexpr int64_t kBlockK = 64;

template <typename T>
struct BackwardArgs {
  const AttentionShape& shape;
  const AttentionConfig& cfg;
  const T *q, *k, *v, *out, *lse, *grad_out, *weights, *grad_weights;
  T *grad_q, *grad_k, *grad_v;
};

// Regs: the tiles' register budget (attn::kTileVecRegs, or 32 in the AVX-512 copy below).
template <typename T, int Regs>
TFM_TILE_INLINE void backward_task(const BackwardArgs<T>& a, int64_t bh) {
  constexpr int L = Simd<T>::L;
  const AttentionShape& sh = a.shape;
  const AttentionConfig& cfg = a.cfg;
  const int64_t H = sh.heads, Tq = sh.q_len, S = sh.kv_len, Dh = sh.head_dim, C = H * Dh;
  const int64_t b = bh / H, h = bh % H;
  const int64_t shift = S - Tq;
  const T scale = static_cast<T>(cfg.scale);

  // Row stride C throughout; q/out/dO/dQ are (T, Dh) slices, k/v/dK/dV (S, Dh).
  const T* qh = a.q + b * Tq * C + h * Dh;
  const T* oh = a.out + b * Tq * C + h * Dh;
  const T* doh = a.grad_out + b * Tq * C + h * Dh;
  T* dqh = a.grad_q + b * Tq * C + h * Dh;
  const T* kh = a.k + b * S * C + h * Dh;
  const T* vh = a.v + b * S * C + h * Dh;
  T* dkh = a.grad_k + b * S * C + h * Dh;
  T* dvh = a.grad_v + b * S * C + h * Dh;
  const T* lse = a.lse + bh * Tq;
  const T* wh = a.weights ? a.weights + bh * Tq * S : nullptr;  // (T, S)
  const T* gwh = a.grad_weights ? a.grad_weights + bh * Tq * S : nullptr;
  const uint8_t* mask = cfg.key_padding_mask ? cfg.key_padding_mask + b * S : nullptr;

  const bool dropout = cfg.dropout > 0;
  const uint32_t threshold = dropout_threshold(cfg.dropout);
  const T keep_scale = dropout ? static_cast<T>(1.0 / (1.0 - cfg.dropout)) : T(1);

  const int64_t bq = std::min(Tq, kBlockQ);
  const int64_t bk_pad = attn::round_up(kBlockK, L);
  const size_t tile_bytes = Scratch::bytes_for<T>(bq * bk_pad);
  Scratch scratch(Scratch::bytes_for<T>(Tq) + 2 * Scratch::bytes_for<T>(Dh * bk_pad) +
                  3 * tile_bytes + 2 * Scratch::bytes_for<T>(bk_pad));
  T* corr = scratch.take<T>(Tq);         // D_t
  T* kt = scratch.take<T>(Dh * bk_pad);  // (Dh, npad) packed keys
  T* vt = scratch.take<T>(Dh * bk_pad);  // (Dh, npad) packed values
  T* p = scratch.take<T>(bq * bk_pad);   // (rows, npad) probabilities
  T* pz = scratch.take<T>(bq * bk_pad);  // P∘Z (dropout only)
  T* ds = scratch.take<T>(bq * bk_pad);  // dP, then dS
  T* bias = scratch.take<T>(bk_pad);
  T* z = scratch.take<T>(bk_pad);

  // D_t = dO_t·O_t, plus Σ_s W_ts·G_ts when the returned probabilities have a gradient G.
  for (int64_t t = 0; t < Tq; ++t) {
    T s = attn::sum_products_in_order(doh + t * C, oh + t * C, Dh, T(0));
    if (gwh) s = attn::sum_products_in_order(wh + t * S, gwh + t * S, S, s);
    corr[t] = s;
    std::fill(dqh + t * C, dqh + t * C + Dh, T(0));
  }

  for (int64_t s0 = 0; s0 < S; s0 += kBlockK) {
    const int64_t n = std::min(kBlockK, S - s0);
    const int64_t npad = attn::round_up(n, L);
    bool any = false;
    for (int64_t j = 0; j < npad; ++j) {
      const bool ok = j < n && !(mask && mask[s0 + j]);
      bias[j] = ok ? T(0) : kNegInf<T>;
      any = any || ok;
    }
    // dK and dV of these keys are summed in place, only by this task: written by the first
    // query block, accumulated by the others.
    T* dk = dkh + s0 * C;  // (n, Dh), row stride C
    T* dv = dvh + s0 * C;
    const int64_t t_first = cfg.causal ? std::max<int64_t>(0, s0 - shift) : 0;
    if (!any || t_first >= Tq) {  // no query sees these keys
      for (int64_t j = 0; j < n; ++j) {
        std::fill(dk + j * C, dk + j * C + Dh, T(0));
        std::fill(dv + j * C, dv + j * C + Dh, T(0));
      }
      continue;
    }
    attn::pack_transposed(n, npad, Dh, kh + s0 * C, C, kt);
    attn::pack_transposed(n, npad, Dh, vh + s0 * C, C, vt);

    for (int64_t t0 = t_first / bq * bq; t0 < Tq; t0 += bq) {
      const int64_t rows = std::min(bq, Tq - t0);
      const bool accumulate = t0 >= t_first / bq * bq + bq;
      attn::tile_gemm<Regs>(false, rows, npad, Dh, qh + t0 * C, C, int64_t{1}, kt, npad, p, npad);
      attn::tile_gemm<Regs>(false, rows, npad, Dh, doh + t0 * C, C, int64_t{1}, vt, npad, ds, npad);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t t = t0 + r;
        T* prow = p + r * npad;
        T* drow = ds + r * npad;
        const T row_lse = lse[t];
        for (int64_t j = 0; j < npad; j += L)
          attn::vstore(prow + j, attn::exp_vec(attn::vload(prow + j) * scale +
                                               attn::vload(bias + j) - row_lse));
        const int64_t visible = cfg.causal ? std::clamp<int64_t>(t + shift - s0 + 1, 0, n) : n;
        std::fill(prow + visible, prow + npad, T(0));
        if (dropout) {
          attn::dropout_multipliers(cfg.seed, cfg.stream,
                                    static_cast<uint64_t>((bh * Tq + t) * S + s0), n, threshold,
                                    keep_scale, z);
          T* pzrow = pz + r * npad;
          for (int64_t j = 0; j < n; ++j) {
            pzrow[j] = prow[j] * z[j];
            drow[j] *= z[j];
          }
        }
        if (gwh)
          for (int64_t j = 0; j < n; ++j) drow[j] += gwh[t * S + s0 + j];
        const T dt = corr[t];
        for (int64_t j = 0; j < npad; j += L)
          attn::vstore(drow + j, attn::vload(prow + j) * (attn::vload(drow + j) - dt) * scale);
      }
      const T* pv = dropout ? pz : p;
      // dV (n, Dh) += (P∘Z)ᵀ dO; dK (n, Dh) += dSᵀ Q: A is the transposed (rows, npad) tile.
      attn::tile_gemm<Regs>(accumulate, n, Dh, rows, pv, int64_t{1}, npad, doh + t0 * C, C, dv, C);
      attn::tile_gemm<Regs>(accumulate, n, Dh, rows, ds, int64_t{1}, npad, qh + t0 * C, C, dk, C);
      // dQ (rows, Dh) += dS K.
      attn::tile_gemm<Regs>(true, rows, Dh, n, ds, npad, int64_t{1}, kh + s0 * C, C, dqh + t0 * C,
                            C);
    }
  }
}

// Tasks [begin, end): the baseline copy, and the f32 one compiled for AVX-512 (the same sums).
template <typename T>
void backward_tasks(const BackwardArgs<T>& a, int64_t begin, int64_t end) {
  for (int64_t bh = begin; bh < end; ++bh) backward_task<T, attn::kTileVecRegs>(a, bh);
}

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,fma,bmi2")
void backward_tasks_avx512(const BackwardArgs<float>& a, int64_t begin, int64_t end) {
  for (int64_t bh = begin; bh < end; ++bh) backward_task<float, 32>(a, bh);
}
#pragma GCC pop_options

}  // namespace

template <typename T>
void attention_backward(const AttentionShape& shape, const AttentionConfig& config, const T* q,
                        const T* k, const T* v, const T* out, const T* lse, const T* grad_out,
                        const T* weights, const T* grad_weights, T* grad_q, T* grad_k, T* grad_v,
                        CpuIsa isa) {
  TFM_CHECK(isa <= cpu_isa()) << "attention_backward: level " << cpu_isa_name(isa)
                              << " is above this process's " << cpu_isa_name(cpu_isa());
  if (shape.batch == 0 || shape.heads == 0) return;
  const BackwardArgs<T> args{shape,   config,       q,      k,      v,     out, lse, grad_out,
                             weights, grad_weights, grad_q, grad_k, grad_v};
  const double task_flops = 14.0 * static_cast<double>(shape.q_len * shape.kv_len * shape.head_dim);
  const int64_t grain =
      std::max<int64_t>(1, static_cast<int64_t>(attn::kMinChunkFlops / (task_flops + 1)));
  const bool avx512 = std::is_same_v<T, float> && isa >= CpuIsa::avx512;
  parallel_for(shape.batch * shape.heads, grain, [&](int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, float>)
      if (avx512) return backward_tasks_avx512(args, begin, end);
    backward_tasks(args, begin, end);
  });
}

template void attention_backward<float>(const AttentionShape&, const AttentionConfig&, const float*,
                                        const float*, const float*, const float*, const float*,
                                        const float*, const float*, const float*, float*, float*,
                                        float*, CpuIsa);
template void attention_backward<double>(const AttentionShape&, const AttentionConfig&,
                                         const double*, const double*, const double*, const double*,
                                         const double*, const double*, const double*, const double*,
                                         double*, double*, double*, CpuIsa);

}  // namespace tfm::cpu
