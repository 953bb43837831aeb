// Attention forward: one task per (b, h, block of queries). For each block of keys the task
// computes the score tile, folds it into a running max / sum per query row (online softmax),
// rescales its output accumulator when the max grows and adds P·V. Nothing of size T·S is
// stored unless the caller asks for the probabilities.
#include "tfm/ops/cpu/attention_cpu.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "tfm/core/cpu_isa.h"
#include "tfm/core/parallel.h"
#include "tfm/ops/cpu/attention_tiles_cpu.h"

namespace tfm::cpu {

namespace {

using attn::kInf;
using attn::kNegInf;
using attn::Scratch;
using attn::Simd;
using attn::Vec;

// Query rows per task and keys per tile. 64×64 f32 tiles (16 KiB each) keep the score tile, the
// packed keys and the accumulator in L1/L2.
constexpr int64_t kBlockQ = 64;
constexpr int64_t kBlockK = 64;
// Below this many query rows in a block, scores are plain dot products (see scores_dot).
constexpr int64_t kDotRows = 4;

template <typename T>
struct ForwardArgs {
  const AttentionShape& shape;
  const AttentionConfig& cfg;
  const T* q;
  const T* k;
  const T* v;
  T* out;
  T* lse;
  T* weights;
};

// Scales, masks and exponentiates one score row of a key tile, updating the row's running max m
// and sum l and rescaling its accumulator acc (Dh). On return row[0, npad) holds the tile's
// (dropout-scaled) unnormalised probabilities for P·V.
template <typename T>
TFM_TILE_INLINE void online_softmax_row(T* row, int64_t n, int64_t npad, int64_t visible,
                                        const T* bias, T scale, T& m, T& l, T* acc, int64_t dh,
                                        T* raw_out, const T* dropout_z) {
  constexpr int L = Simd<T>::L;
  Vec<T> mx = attn::splat(kNegInf<T>);
  for (int64_t j = 0; j < npad; j += L) {
    const Vec<T> x = attn::vload(row + j) * scale + attn::vload(bias + j);
    attn::vstore(row + j, x);
    mx = mx > x ? mx : x;
  }
  T row_max = attn::hmax(mx);
  if (visible < n) {  // causal edge: keys past the diagonal are invisible to this row
    for (int64_t j = visible; j < n; ++j) row[j] = kNegInf<T>;
    row_max = kNegInf<T>;
    for (int64_t j = 0; j < visible; ++j) row_max = std::max(row_max, row[j]);
  }
  if (raw_out) std::copy(row, row + n, raw_out);
  const T m_new = std::max(m, row_max);
  if (m_new == kNegInf<T>) {  // nothing visible yet: contributes nothing
    std::fill(row, row + npad, T(0));
    return;
  }
  const bool first = m == kNegInf<T>;  // acc and l are still zero
  const T alpha = first ? T(0) : std::exp(m - m_new);
  const T sum = attn::exp_shifted_sum(row, npad, m_new);
  l = l * alpha + sum;
  m = m_new;
  if (!first && alpha != T(1))
    for (int64_t d = 0; d < dh; ++d) acc[d] *= alpha;
  if (dropout_z)
    for (int64_t j = 0; j < n; ++j) row[j] *= dropout_z[j];
}

// Regs: the tiles' register budget (attn::kTileVecRegs, or 32 in the AVX-512 copy below).
template <typename T, int Regs>
TFM_TILE_INLINE void forward_task(const ForwardArgs<T>& a, int64_t task, int64_t block_q,
                                  int64_t n_qblocks) {
  constexpr int L = Simd<T>::L;
  const AttentionShape& sh = a.shape;
  const AttentionConfig& cfg = a.cfg;
  const int64_t H = sh.heads, Tq = sh.q_len, S = sh.kv_len, Dh = sh.head_dim, C = H * Dh;
  const int64_t bh = task / n_qblocks, b = bh / H, h = bh % H;
  const int64_t t0 = (task % n_qblocks) * block_q;
  const int64_t rows = std::min(block_q, Tq - t0);
  const int64_t shift = S - Tq;  // causal: query t sees keys s <= t + shift
  const T scale = static_cast<T>(cfg.scale);

  const T* qh = a.q + (b * Tq + t0) * C + h * Dh;  // (rows, Dh), row stride C
  const int64_t kv_stride = sh.kv_batch_stride ? sh.kv_batch_stride : S * C;
  const T* kh = a.k + b * kv_stride + h * Dh;  // (S, Dh), row stride C
  const T* vh = a.v + b * kv_stride + h * Dh;
  T* oh = a.out + (b * Tq + t0) * C + h * Dh;
  T* wh = a.weights ? a.weights + (bh * Tq + t0) * S : nullptr;  // (rows, S)
  const uint8_t* mask = cfg.key_padding_mask ? cfg.key_padding_mask + b * S : nullptr;

  const int64_t bk_pad = attn::round_up(kBlockK, L);
  const bool use_dot = rows < kDotRows;
  Scratch scratch(Scratch::bytes_for<T>(rows * bk_pad) + Scratch::bytes_for<T>(rows * Dh) +
                  2 * Scratch::bytes_for<T>(rows) + 2 * Scratch::bytes_for<T>(bk_pad) +
                  (use_dot ? 0 : Scratch::bytes_for<T>(Dh * bk_pad)));
  T* tile = scratch.take<T>(rows * bk_pad);  // (rows, npad) scores, then probabilities
  T* acc = scratch.take<T>(rows * Dh);       // (rows, Dh) unnormalised output
  T* m = scratch.take<T>(rows);
  T* l = scratch.take<T>(rows);
  T* bias = scratch.take<T>(bk_pad);                         // 0 for a usable key, -inf for padding
  T* z = scratch.take<T>(bk_pad);                            // dropout multipliers of one row
  T* kt = use_dot ? nullptr : scratch.take<T>(Dh * bk_pad);  // (Dh, npad) packed keys

  std::fill(acc, acc + rows * Dh, T(0));
  std::fill(m, m + rows, kNegInf<T>);
  std::fill(l, l + rows, T(0));
  if (wh) std::fill(wh, wh + rows * S, kNegInf<T>);

  const bool dropout = cfg.dropout > 0;
  const uint32_t threshold = dropout_threshold(cfg.dropout);
  const T keep_scale = dropout ? static_cast<T>(1.0 / (1.0 - cfg.dropout)) : T(1);

  // Keys past the last row's diagonal are invisible to the whole block.
  const int64_t key_end = cfg.causal ? std::clamp<int64_t>(t0 + rows + shift, 0, S) : S;
  for (int64_t s0 = 0; s0 < key_end; s0 += kBlockK) {
    const int64_t n = std::min(kBlockK, key_end - s0);
    const int64_t npad = attn::round_up(n, L);
    bool any = false;
    for (int64_t j = 0; j < npad; ++j) {
      const bool ok = j < n && !(mask && mask[s0 + j]);
      bias[j] = ok ? T(0) : kNegInf<T>;
      any = any || ok;
    }
    if (!any) continue;  // all padding

    if (use_dot) {
      attn::scores_dot(rows, n, Dh, qh, C, kh + s0 * C, C, tile, npad);
      for (int64_t r = 0; r < rows; ++r)
        std::fill(tile + r * npad + n, tile + (r + 1) * npad, T(0));
    } else {
      attn::pack_transposed(n, npad, Dh, kh + s0 * C, C, kt);
      attn::tile_gemm<Regs>(false, rows, npad, Dh, qh, C, int64_t{1}, kt, npad, tile, npad);
    }
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t t = t0 + r;
      const int64_t visible = cfg.causal ? std::clamp<int64_t>(t + shift - s0 + 1, 0, n) : n;
      if (dropout)
        attn::dropout_multipliers(cfg.seed, cfg.stream,
                                  static_cast<uint64_t>((bh * Tq + t) * S + s0), n, threshold,
                                  keep_scale, z);
      online_softmax_row(tile + r * npad, n, npad, visible, bias, scale, m[r], l[r], acc + r * Dh,
                         Dh, wh ? wh + r * S + s0 : nullptr, dropout ? z : nullptr);
    }
    attn::tile_gemm<Regs>(true, rows, Dh, n, tile, npad, int64_t{1}, vh + s0 * C, C, acc, Dh);
  }

  // Normalise. A row that saw no key has l = 0: output 0 and lse = +inf, so the backward's
  // recomputed probabilities exp(s - lse) are 0 there too (no NaN anywhere).
  for (int64_t r = 0; r < rows; ++r) {
    const T inv = l[r] > 0 ? T(1) / l[r] : T(0);
    const T row_lse = l[r] > 0 ? m[r] + std::log(l[r]) : kInf<T>;
    for (int64_t d = 0; d < Dh; ++d) oh[r * C + d] = acc[r * Dh + d] * inv;
    if (a.lse) a.lse[bh * Tq + t0 + r] = row_lse;
    if (wh) {
      T* w = wh + r * S;
      int64_t s = 0;
      for (; s + L <= S; s += L) attn::vstore(w + s, attn::exp_vec(attn::vload(w + s) - row_lse));
      for (; s < S; ++s) w[s] = std::exp(w[s] - row_lse);
    }
  }
}

// Tasks [begin, end): the baseline copy, and the f32 one compiled for AVX-512 (the same sums).
template <typename T>
void forward_tasks(const ForwardArgs<T>& a, int64_t begin, int64_t end, int64_t block_q,
                   int64_t n_qblocks) {
  for (int64_t task = begin; task < end; ++task)
    forward_task<T, attn::kTileVecRegs>(a, task, block_q, n_qblocks);
}

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,fma,bmi2")
void forward_tasks_avx512(const ForwardArgs<float>& a, int64_t begin, int64_t end, int64_t block_q,
                          int64_t n_qblocks) {
  for (int64_t task = begin; task < end; ++task)
    forward_task<float, 32>(a, task, block_q, n_qblocks);
}
#pragma GCC pop_options

}  // namespace

template <typename T>
void attention_forward(const AttentionShape& shape, const AttentionConfig& config, const T* q,
                       const T* k, const T* v, T* out, T* lse, T* weights, CpuIsa isa) {
  TFM_CHECK(isa <= cpu_isa()) << "attention_forward: level " << cpu_isa_name(isa)
                              << " is above this process's " << cpu_isa_name(cpu_isa());
  const int64_t Tq = shape.q_len;
  if (shape.batch == 0 || shape.heads == 0 || Tq == 0) return;
  const int64_t block_q = std::min(Tq, kBlockQ);
  const int64_t n_qblocks = (Tq + block_q - 1) / block_q;
  const ForwardArgs<T> args{shape, config, q, k, v, out, lse, weights};
  // Tasks are independent and each is computed by one thread start to finish, so the result
  // does not depend on how they are spread over threads. Small tasks (decoding) are grouped so
  // a chunk is worth waking a thread for; a tiny call runs on the caller's thread.
  const double task_flops = 4.0 * static_cast<double>(block_q * shape.kv_len * shape.head_dim);
  const int64_t grain =
      std::max<int64_t>(1, static_cast<int64_t>(attn::kMinChunkFlops / (task_flops + 1)));
  const bool avx512 = std::is_same_v<T, float> && isa >= CpuIsa::avx512;
  parallel_for(shape.batch * shape.heads * n_qblocks, grain, [&](int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, float>)
      if (avx512) return forward_tasks_avx512(args, begin, end, block_q, n_qblocks);
    forward_tasks(args, begin, end, block_q, n_qblocks);
  });
}

template void attention_forward<float>(const AttentionShape&, const AttentionConfig&, const float*,
                                       const float*, const float*, float*, float*, float*, CpuIsa);
template void attention_forward<double>(const AttentionShape&, const AttentionConfig&,
                                        const double*, const double*, const double*, double*,
                                        double*, double*, CpuIsa);

}  // namespace tfm::cpu
