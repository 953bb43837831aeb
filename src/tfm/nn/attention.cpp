#include "tfm/nn/attention.h"

#include <algorithm>

#include "tfm/autograd/tape.h"
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

}  // namespace

void KVCache::adopt() {
  k_buf_ = k.contiguous();
  v_buf_ = v.contiguous();
  k = k_buf_;
  v = v_buf_;
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
        << "KVCache::append: cache holds " << k.describe() << ", new keys are " << k_new.describe();
  if (len > 0 && !k_buf_.defined()) adopt();  // set directly (cross-attention style)
  if (!k_buf_.defined() || len + t > capacity() || b > k_buf_.size(0)) {
    const int64_t cap = std::max({reserve, len + t, 2 * capacity()});
    const int64_t rows = std::max(b, k_buf_.defined() ? k_buf_.size(0) : int64_t{0});
    Tensor kb = Tensor::empty({rows, cap, width}, k_new.dtype());
    Tensor vb = Tensor::empty({rows, cap, width}, k_new.dtype());
    if (len > 0) {
      copy_rows(view_of(k_buf_, b, len), nullptr, view_of(kb, b, len));
      copy_rows(view_of(v_buf_, b, len), nullptr, view_of(vb, b, len));
    }
    k_buf_ = kb;
    v_buf_ = vb;
  }
  copy_rows(k_new, nullptr, window_of(k_buf_, b, len, t));
  copy_rows(v_new, nullptr, window_of(v_buf_, b, len, t));
  k = view_of(k_buf_, b, len + t);
  v = view_of(v_buf_, b, len + t);
}

void KVCache::reorder(const std::vector<int64_t>& rows) {
  if (!k.defined()) return;
  if (!k_buf_.defined()) adopt();
  const int64_t b = batch(), len = length(), width = k.size(2), cap = capacity();
  const int64_t n = static_cast<int64_t>(rows.size());
  for (int64_t r : rows)
    TFM_CHECK(r >= 0 && r < b) << "KVCache::reorder: row " << r << " out of range for batch " << b;
  if (!k_spare_.defined() || k_spare_.size(0) < n || k_spare_.size(1) != cap) {
    k_spare_ = Tensor::empty({std::max(n, b), cap, width}, k.dtype());
    v_spare_ = Tensor::empty({std::max(n, b), cap, width}, k.dtype());
  }
  copy_rows(view_of(k_buf_, b, len), &rows, view_of(k_spare_, n, len));
  copy_rows(view_of(v_buf_, b, len), &rows, view_of(v_spare_, n, len));
  std::swap(k_buf_, k_spare_);
  std::swap(v_buf_, v_spare_);
  k = view_of(k_buf_, n, len);
  v = view_of(v_buf_, n, len);
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
  if (q.dim() == 3 && q.size(1) == 1 && q.dtype() == DType::f32 && q.device() == Device::cpu &&
      kv.k.dtype() == DType::f32 && kv.v.dtype() == DType::f32 && kv.k.device() == Device::cpu &&
      opt.dropout == 0.0 && !autograd::needs_grad({&q, &kv.k, &kv.v}))
    r.out = decode_attention(q, kv.k, kv.v, heads_, key_padding_mask, 0.0,
                             return_weights ? &r.weights : nullptr, kv_rows);
  else if (kv_rows.defined()) {  // the general kernel reads gathered rows
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
