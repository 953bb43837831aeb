#include "tfm/data/batch.h"

#include <algorithm>

#include "tfm/core/check.h"

namespace tfm {

Tensor source_batch(const std::vector<const Ids*>& seqs, int64_t pad_id, int64_t eos_id) {
  TFM_CHECK(!seqs.empty()) << "source_batch: empty batch";
  size_t len = 0;
  for (const Ids* s : seqs) len = std::max(len, s->size() + 1);
  Tensor t = Tensor::full({static_cast<int64_t>(seqs.size()), static_cast<int64_t>(len)},
                          static_cast<double>(pad_id), DType::i32);
  int32_t* p = t.data<int32_t>();
  for (size_t b = 0; b < seqs.size(); ++b) {
    std::copy(seqs[b]->begin(), seqs[b]->end(), p + b * len);
    p[b * len + seqs[b]->size()] = static_cast<int32_t>(eos_id);
  }
  return t;
}

Batch make_batch(const std::vector<const Ids*>& src, const std::vector<const Ids*>& trg,
                 int64_t pad_id, int64_t bos_id, int64_t eos_id) {
  TFM_CHECK(!trg.empty()) << "make_batch: empty batch";
  TFM_CHECK(src.empty() || src.size() == trg.size())
      << "make_batch: " << src.size() << " sources for " << trg.size() << " targets";
  Batch b;
  if (!src.empty()) {
    b.src = source_batch(src, pad_id, eos_id);
    for (const Ids* s : src) b.src_tokens += static_cast<int64_t>(s->size()) + 1;
  }
  size_t len = 0;
  for (const Ids* t : trg) len = std::max(len, t->size() + 1);
  const int64_t B = static_cast<int64_t>(trg.size()), T = static_cast<int64_t>(len);
  b.trg_in = Tensor::full({B, T}, static_cast<double>(pad_id), DType::i32);
  b.trg_out = Tensor::full({B, T}, static_cast<double>(pad_id), DType::i32);
  int32_t* in = b.trg_in.data<int32_t>();
  int32_t* out = b.trg_out.data<int32_t>();
  for (int64_t i = 0; i < B; ++i) {
    const Ids& y = *trg[i];
    in[i * T] = static_cast<int32_t>(bos_id);
    for (size_t t = 0; t < y.size(); ++t) {
      in[i * T + t + 1] = y[t];
      out[i * T + t] = y[t];
    }
    out[i * T + y.size()] = static_cast<int32_t>(eos_id);
    b.trg_tokens += static_cast<int64_t>(y.size()) + 1;
  }
  return b;
}

}  // namespace tfm
