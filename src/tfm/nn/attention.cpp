#include "tfm/nn/attention.h"

#include <algorithm>
#include <cstring>

#include "tfm/autograd/tape.h"
#include "tfm/ops/decode_attention.h"

namespace tfm::nn {

namespace {

// Rows [0, rows) and positions [0, len) of a (R, P, C) buffer: a (rows, len, C) view with the
// buffer's row stride.
Tensor view_of(const Tensor& buf, int64_t rows, int64_t len) {
  return buf.slice(0, rows).transpose(0, 1).slice(0, len).transpose(0, 1);
}

// Copies positions [0, len) of src rows into dst at position `at` (both (·, P, C) buffers or
// contiguous (rows, len, C) tensors given with their row strides, in elements).
void copy_rows(const Tensor& src, int64_t src_row_stride, const std::vector<int64_t>* index,
               int64_t rows, int64_t len, int64_t width, Tensor& dst, int64_t dst_row_stride,
               int64_t at) {
  const size_t es = dtype_size(src.dtype());
  const char* s = static_cast<const char*>(src.raw_data());
  char* d = static_cast<char*>(dst.raw_data());
  const size_t bytes = static_cast<size_t>(len * width) * es;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t from = index ? (*index)[i] : i;
    std::memcpy(d + static_cast<size_t>(i * dst_row_stride + at * width) * es,
                s + static_cast<size_t>(from * src_row_stride) * es, bytes);
  }
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
      const int64_t old_stride = k_buf_.size(1) * width;
      copy_rows(k_buf_, old_stride, nullptr, b, len, width, kb, cap * width, 0);
      copy_rows(v_buf_, old_stride, nullptr, b, len, width, vb, cap * width, 0);
    }
    k_buf_ = kb;
    v_buf_ = vb;
  }
  const int64_t stride = capacity() * width;
  copy_rows(k_new, t * width, nullptr, b, t, width, k_buf_, stride, len);
  copy_rows(v_new, t * width, nullptr, b, t, width, v_buf_, stride, len);
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
  copy_rows(k_buf_, cap * width, &rows, n, len, width, k_spare_, cap * width, 0);
  copy_rows(v_buf_, cap * width, &rows, n, len, width, v_spare_, cap * width, 0);
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
                                           bool return_weights, Generator* gen) const {
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
                             return_weights ? &r.weights : nullptr);
  else
    r = attention(q, kv.k, kv.v, heads_, key_padding_mask, opt);
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
