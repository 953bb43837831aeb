#include "tfm/nn/attention.h"

#include <algorithm>

#include "tfm/autograd/tape.h"
#include "tfm/core/device_copy.h"
#include "tfm/ops/decode_attention.h"
#include "tfm/ops/host.h"
#include "tfm/ops/index.h"

namespace tfm::nn {

namespace {

// Rows [0, rows) and positions [0, len) of a (R, P, C) buffer: a (rows, len, C) view with the
// buffer's row stride.
Tensor view_of(const Tensor& buf, int64_t rows, int64_t len) {
  return buf.slice(0, rows).transpose(0, 1).slice(0, len).transpose(0, 1);
}

// Positions [at, at + len) of rows [0, rows) of a (R, P, C) buffer: a view with the buffer's
// row stride.
Tensor window_of(const Tensor& buf, int64_t rows, int64_t at, int64_t len) {
  return buf.slice(0, rows).transpose(0, 1).slice(at, at + len).transpose(0, 1);
}

// Keys up to which a whole-sequence attention at inference (the encoder's, a teacher-forced
// cross-attention) runs as one-query rows (decode_attention's kernel) instead of the fused
// tiles. Rows of a sentence of up to a few hundred tokens find its keys and values in L1/L2,
// and the row kernel's AVX2 dot products beat the tiles' 64-byte vectors there (Zen 2, `small`,
// 1 thread: Multi30k's test set, ~16 tokens a sentence, the encoder 1.30 -> 1.15 s; lines of
// ~130 and ~270 tokens 0.89 -> 0.65 s and 2.46 -> 1.70 s). Longer keys (a document) stay on the
// tiles, which reuse each key across 64 queries where a row would stream all of them from L3 for
// every query: not measured past ~530 tokens, where the rows were still faster.
constexpr int64_t kRowKernelKeys = 512;

// Whether attend() takes the row kernel for q (B, T > 1, C): a module bound for inference (an
// unbound one, a model that trains, keeps the training kernels, so that its forward without
// gradients is the training forward bit for bit), on the CPU in f32, not causal (a causal T > 1
// call is a teacher-forced decoder's), no dropout, keys of one row each.
bool by_rows(bool bound, const Tensor& q, const KVCache& kv, bool causal, double dropout,
             const Tensor& kv_rows) {
  return bound && q.dim() == 3 && q.size(1) > 1 && !causal && dropout == 0.0 &&
         q.dtype() == DType::f32 && kv.k.dtype() == DType::f32 && kv.v.dtype() == DType::f32 &&
         q.device() == Device::cpu && kv.k.device() == Device::cpu && !kv.slots.defined() &&
         !kv_rows.defined() && kv.k.size(1) <= kRowKernelKeys &&
         !autograd::needs_grad({&q, &kv.k, &kv.v});
}

// q (B, T, C) as B·T one-query rows, row b·T + t attending over keys row b; the weights, when
// asked for, (B·T, H, 1, S) -> (B, H, T, S) as attention() returns them.
AttentionResult attend_by_rows(const Tensor& q, const KVCache& kv, int64_t heads,
                               const Tensor& key_padding_mask, bool return_weights) {
  const int64_t b = q.size(0), t = q.size(1), c = q.size(2);
  std::vector<int32_t> rows(static_cast<size_t>(b * t));
  for (int64_t i = 0; i < b * t; ++i) rows[static_cast<size_t>(i)] = static_cast<int32_t>(i / t);
  AttentionResult r;
  Tensor weights;
  r.out = decode_attention(q.contiguous().reshape({b * t, 1, c}), kv.k, kv.v, heads,
                           key_padding_mask, 0.0, return_weights ? &weights : nullptr,
                           Tensor::from_vector<int32_t>({b * t}, rows), Tensor())
              .reshape({b, t, c});
  if (return_weights)
    r.weights = weights.reshape({b, t, heads, kv.k.size(1)}).transpose(1, 2).contiguous();
  return r;
}

}  // namespace

void KVCache::reserve_buffers(int64_t rows, int64_t cap, int64_t width, DType dtype,
                              Device device) {
  const bool fits = k_buf_.defined() && rows <= k_buf_.size(0) && cap <= k_buf_.size(1);
  if (fits) return;
  const int64_t len = length();
  // Growing in length while fewer rows remain than the buffers hold (sentences finished): the
  // new buffers hold only the rows in use, each row's history gathered into its own row, so a
  // batch whose rows end keeps no room for them.
  const bool compact = len > 0 && cap > capacity() && rows < k_buf_.size(0);
  if (!compact) rows = std::max(rows, k_buf_.defined() ? k_buf_.size(0) : int64_t{0});
  cap = std::max(cap, capacity());
  Tensor kb = Tensor::empty({rows, cap, width}, dtype, device);
  Tensor vb = Tensor::empty({rows, cap, width}, dtype, device);
  Tensor sb = Tensor::empty({rows, cap, 1}, DType::i32, device);
  std::vector<int32_t> ids(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) ids[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  Tensor row_ids = to_device(Tensor::from_vector<int32_t>({rows, 1, 1}, ids), device);
  if (compact) {  // position p of row i from buffer row slots[i, p]
    const HostView<int32_t> s = to_host<int32_t>(slots.contiguous());  // (B, L)
    const int64_t held = k.size(0);
    std::vector<int64_t> from(static_cast<size_t>(rows));
    for (int64_t p = 0; p < len; ++p) {
      for (int64_t i = 0; i < rows; ++i) from[static_cast<size_t>(i)] = s[i * len + p];
      copy_rows(window_of(k_buf_, held, p, 1), &from, window_of(kb, rows, p, 1));
      copy_rows(window_of(v_buf_, held, p, 1), &from, window_of(vb, rows, p, 1));
      copy_rows(row_ids, nullptr, window_of(sb, rows, p, 1));
    }
  } else if (len > 0) {  // k spans the buffer rows in use, slots the rows
    const int64_t held = k.size(0), b = slots.size(0);
    copy_rows(view_of(k_buf_, held, len), nullptr, view_of(kb, held, len));
    copy_rows(view_of(v_buf_, held, len), nullptr, view_of(vb, held, len));
    copy_rows(view_of(slot_buf_, b, len), nullptr, view_of(sb, b, len));
  }
  k_buf_ = kb;
  v_buf_ = vb;
  slot_buf_ = sb;
  slot_spare_ = Tensor::empty({rows, cap, 1}, DType::i32, device);
  row_ids_ = row_ids;
  if (compact) set_views(rows, rows, len);
}

void KVCache::set_views(int64_t held, int64_t rows, int64_t len) {
  k = view_of(k_buf_, held, len);
  v = view_of(v_buf_, held, len);
  // (B, L, 1) → (B, L), still a view: the unit axis moved to the front and dropped.
  slots = view_of(slot_buf_, rows, len).transpose(0, 2).select(0).transpose(0, 1);
}

void KVCache::adopt() {
  const Tensor k0 = k.contiguous(), v0 = v.contiguous();  // (B, L, C)
  const int64_t b = k0.size(0), len = k0.size(1);
  k = v = Tensor();
  reserve_buffers(b, len, k0.size(2), k0.dtype(), k0.device());
  copy_rows(k0, nullptr, view_of(k_buf_, b, len));
  copy_rows(v0, nullptr, view_of(v_buf_, b, len));
  for (int64_t p = 0; p < len; ++p)
    copy_rows(row_ids_.slice(0, b), nullptr, window_of(slot_buf_, b, p, 1));
  set_views(b, b, len);
}

void KVCache::append(const Tensor& k_new_in, const Tensor& v_new_in, int64_t reserve) {
  const Tensor k_new = k_new_in.contiguous(), v_new = v_new_in.contiguous();  // (B, t, C)
  TFM_CHECK(k_new.dim() == 3 && v_new.shape() == k_new.shape() && k_new.dtype() == v_new.dtype())
      << "KVCache::append: keys " << k_new.describe() << " and values " << v_new.describe()
      << " must be the same (B, t, C)";
  const int64_t b = k_new.size(0), t = k_new.size(1), width = k_new.size(2);
  const int64_t len = length();
  if (len > 0)
    TFM_CHECK(b == batch() && width == k.size(2) && k_new.dtype() == k.dtype())
        << "KVCache::append: cache holds " << k.describe() << " for " << batch()
        << " rows, new keys are " << k_new.describe();
  if (len > 0 && !k_buf_.defined()) adopt();  // set directly (cross-attention style)
  int64_t grown = 0;
  if (len + t > capacity()) {
    grown = std::max(len + t, capacity() == 0 ? kFirstPositions : 2 * capacity());
    if (reserve >= len + t) grown = std::min(grown, reserve);
  }
  reserve_buffers(b, grown, width, k_new.dtype(), k_new.device());
  // Buffer rows in use after this step: every row a slot names (all of k's, after a growth that
  // compacted them), and those written.
  const int64_t held = std::max(b, len > 0 ? k.size(0) : int64_t{0});
  copy_rows(k_new, nullptr, window_of(k_buf_, b, len, t));
  copy_rows(v_new, nullptr, window_of(v_buf_, b, len, t));
  for (int64_t p = len; p < len + t; ++p)  // row i's new positions are in buffer row i
    copy_rows(row_ids_.slice(0, b), nullptr, window_of(slot_buf_, b, p, 1));
  set_views(held, b, len + t);
}

void KVCache::reorder(const std::vector<int64_t>& rows) {
  if (!k.defined()) return;
  if (!k_buf_.defined()) adopt();
  const int64_t b = batch(), len = length();
  const int64_t n = static_cast<int64_t>(rows.size());
  for (int64_t r : rows)
    TFM_CHECK(r >= 0 && r < b) << "KVCache::reorder: row " << r << " out of range for batch " << b;
  reserve_buffers(n, 0, k.size(2), k.dtype(), k.device());
  copy_rows(view_of(slot_buf_, b, len), &rows, view_of(slot_spare_, n, len));
  std::swap(slot_buf_, slot_spare_);
  set_views(k.size(0), n, len);
}

void KVCache::gather_rows(const std::vector<int64_t>& rows) {
  if (!k.defined()) return;
  auto [kr, vr] = rows_in_order();
  k = index_rows(kr, rows);
  v = index_rows(vr, rows);
  k_buf_ = v_buf_ = slot_buf_ = slot_spare_ = row_ids_ = slots = Tensor();
}

std::pair<Tensor, Tensor> KVCache::rows_in_order() const {
  if (!slots.defined()) return {k, v};
  const int64_t len = length(), width = k.size(2), b = batch(), held = k.size(0);
  const HostView<int32_t> s = to_host<int32_t>(slots);  // (B, L)
  std::vector<int64_t> flat(s.size());  // (slot row, position) among the R · L positions
  for (size_t i = 0; i < flat.size(); ++i) flat[i] = s[i] * len + static_cast<int64_t>(i) % len;
  const Tensor kc = k.contiguous().reshape({held * len, width});
  const Tensor vc = v.contiguous().reshape({held * len, width});
  return {index_rows(kc, flat).reshape({b, len, width}),
          index_rows(vc, flat).reshape({b, len, width})};
}

MultiHeadAttention::MultiHeadAttention(int64_t width, int64_t heads, bool bias,
                                       double attention_dropout, Generator& gen)
    : q_proj_(width, width, bias, gen),
      k_proj_(width, width, bias, gen),
      v_proj_(width, width, bias, gen),
      out_proj_(width, width, bias, gen),
      heads_(heads),
      attention_dropout_(attention_dropout) {
  register_module("q_proj", &q_proj_);
  register_module("k_proj", &k_proj_);
  register_module("v_proj", &v_proj_);
  register_module("out_proj", &out_proj_);
}

KVCache MultiHeadAttention::project(const Tensor& memory) const {
  KVCache kv;
  kv.k = k_proj_(memory);
  kv.v = v_proj_(memory);
  return kv;
}

AttentionResult MultiHeadAttention::attend(const Tensor& query, const KVCache& kv,
                                           const Tensor& key_padding_mask, bool causal,
                                           bool return_weights, Generator* gen,
                                           const Tensor& kv_rows) const {
  AttentionOptions opt;
  opt.causal = causal;
  opt.dropout = training() ? attention_dropout_ : 0.0;
  opt.generator = gen;
  opt.return_weights = return_weights;
  const Tensor q = q_proj_(query);
  AttentionResult r;
  // One new position per row, inference: a decoding step (causal changes nothing at T = 1).
  // The choice is made here, not inside attention(): each op keeps one kernel per call so its
  // output is bitwise the same whether or not the weights are asked for (test_attention,
  // test_decode_attention); a search returning attention thus finds what one without does.
  if (q.dim() == 3 && q.size(1) == 1 && q.dtype() == DType::f32 && kv.k.dtype() == DType::f32 &&
      kv.v.dtype() == DType::f32 && kv.k.device() == q.device() && opt.dropout == 0.0 &&
      !autograd::needs_grad({&q, &kv.k, &kv.v}))
    r.out = decode_attention(q, kv.k, kv.v, heads_, key_padding_mask, 0.0,
                             return_weights ? &r.weights : nullptr, kv_rows, kv.slots);
  else if (by_rows(q_proj_.kernel().bound(), q, kv, causal, opt.dropout, kv_rows))
    r = attend_by_rows(q, kv, heads_, key_padding_mask, return_weights);
  else if (kv.slots.defined()) {  // the general kernel reads rows in order
    const auto [k, v] = kv.rows_in_order();
    r = attention(q, k, v, heads_, key_padding_mask, opt);
  } else if (kv_rows.defined()) {  // the general kernel reads gathered rows
    const HostView<int32_t> map = to_host<int32_t>(kv_rows);
    const std::vector<int64_t> rows(map.data(), map.data() + map.size());
    r = attention(q, index_rows(kv.k, rows), index_rows(kv.v, rows), heads_,
                  key_padding_mask.defined() ? index_rows(key_padding_mask, rows) : Tensor(), opt);
  } else {
    r = attention(q, kv.k, kv.v, heads_, key_padding_mask, opt);
  }
  r.out = out_proj_(r.out);
  return r;
}

AttentionResult MultiHeadAttention::operator()(const Tensor& query, const Tensor& memory,
                                               const Tensor& key_padding_mask, bool causal,
                                               bool return_weights, Generator* gen) const {
  return attend(query, project(memory), key_padding_mask, causal, return_weights, gen);
}

AttentionResult MultiHeadAttention::self_step(const Tensor& x, KVCache& cache, bool return_weights,
                                              int64_t reserve) const {
  KVCache fresh = project(x);
  cache.append(fresh.k, fresh.v, reserve);
  // Causal attention is aligned to the end of the keys: new query t sees every cached position.
  return attend(x, cache, Tensor(), /*causal=*/true, return_weights, nullptr);
}

}  // namespace tfm::nn
