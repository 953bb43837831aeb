// The kernel contract shared by ops/cpu and ops/cuda: the argument structs an op front end fills
// once and hands to whichever device's kernel runs. One definition, so the two backends cannot
// drift apart (they had: the CUDA attention shape lacked the KV-cache row stride, and the Adam
// scalars named the weight-decay switch with opposite senses). Plain data only: no device
// headers, nothing nvcc cannot compile.
#pragma once

#include <cstdint>

namespace tfm::kernels {

// Fused multi-head attention (cpu/attention_cpu.h, cuda/attention.h). q/k/v/out rows have stride
// H·Dh; head h is the Dh columns from h·Dh.
struct AttentionShape {
  int64_t batch = 0;     // B
  int64_t heads = 0;     // H
  int64_t q_len = 0;     // T
  int64_t kv_len = 0;    // S
  int64_t head_dim = 0;  // Dh
  // Elements between batch rows of k and v (forward only); 0 means S·H·Dh (contiguous). A KV
  // cache preallocated to a longer length passes its row stride and is read in place. The CUDA
  // kernels take contiguous k and v only (they check).
  int64_t kv_batch_stride = 0;
};

struct AttentionConfig {
  double scale = 1.0;
  // Query t may see key s only if s <= t + (S - T) (aligned to the end, as with a KV cache).
  bool causal = false;
  // (B, S) on the kernel's device, nonzero = ignore; null = none.
  const uint8_t* key_padding_mask = nullptr;
  // Dropout on the probabilities: element (b, h, t, s) is kept iff
  // RandomStream(seed, stream).uniform(((b·H + h)·T + t)·S + s) >= dropout, and kept values are
  // scaled by 1/(1 - dropout). 0 = no dropout.
  double dropout = 0.0;
  uint64_t seed = 0;
  uint64_t stream = 0;
};

// One decoding step's attention (T = 1) over cached keys/values (cpu/decode_attention_cpu.h).
struct DecodeAttentionArgs {
  int64_t batch = 0, heads = 0, kv_len = 0, head_dim = 0;  // B, H, S, Dh
  const float* q = nullptr;                                // (B, H·Dh) contiguous
  const float* k = nullptr;     // (B, S, H·Dh): row b at k + b·kv_batch_stride, rows H·Dh apart
  const float* v = nullptr;     // as k
  int64_t kv_batch_stride = 0;  // >= S·H·Dh
  int64_t key_rows = 0;         // rows of k and v: what kv_rows and kv_slots index
  const uint8_t* mask = nullptr;  // (B, S), nonzero = ignore; null = none
  // (B): row b reads the keys, values and mask of row kv_rows[b] (the beams of one sentence
  // share its cross-attention keys); null: row b's own.
  const int32_t* kv_rows = nullptr;
  // (B, S): position s of row b is in key/value row kv_slots[b·ld + s] (a KV cache whose beams
  // share their ancestors' positions instead of copying them); null: row kv_rows[b] or b. The
  // CPU kernel is given checked indices; the CUDA one checks them (core/cuda/device_fault.h).
  const int32_t* kv_slots = nullptr;
  int64_t kv_slots_ld = 0;  // kv_slots' row stride (>= S)
  float scale = 1.f;
  float* out = nullptr;  // (B, H·Dh); a row that sees no key gets zeros
  // (B, H, S): the probabilities, when not null (zeros where a row sees no key). The output is
  // bitwise the same either way: they are only copied out of the softmax the sum uses.
  float* probs = nullptr;
};

// What the fused softmax cross-entropy forward returns (cpu/cross_entropy_cpu.h,
// cuda/cross_entropy.h).
struct CrossEntropyTotals {
  double loss_sum = 0;  // Σ over kept rows of the label-smoothed loss
  double nll_sum = 0;   // Σ over kept rows of -log p(target)
  int64_t tokens = 0;   // rows whose target is not ignore_index
  int64_t correct = 0;  // kept rows whose first maximal logit is the target's
};

// The per-step scalars of an Adam/AdamW update (cpu/adam_cpu.h, cuda/adam.h). Per element, with
// every operation not listed as a fused multiply-add rounded on its own:
//   gi    = g·grad_scale                 (+ weight_decay·p, fused, when coupled_wd)
//   m     = fma(β1, m, (1 - β1)·gi)
//   v     = fma(β2, v, ((1 - β2)·gi)·gi)
//   denom = fma(sqrt(v), inv_sqrt_bc2, eps)
//   p     = fma(p, decay, -(step_size·m / denom))
struct AdamUpdate {
  float step_size = 0;     // lr / (1 - β1^t)
  float inv_sqrt_bc2 = 0;  // 1 / sqrt(1 - β2^t)
  float beta1 = 0, beta2 = 0, eps = 0;
  float weight_decay = 0;  // coupled L2 (Adam): added to the gradient when coupled_wd
  bool coupled_wd = false;
  float decay = 1;       // AdamW: 1 - lr·λ
  float grad_scale = 1;  // each gradient is used multiplied by this
};

// The scalars of update number `step` (1-based) with learning rate lr; decoupled = AdamW.
AdamUpdate adam_update_for_step(int64_t step, double lr, double beta1, double beta2, double eps,
                                double weight_decay, bool decoupled, double grad_scale);

}  // namespace tfm::kernels
