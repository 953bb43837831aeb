#include "tfm/data/batch.h"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "tfm/core/check.h"

namespace tfm {

Tensor source_batch(const std::vector<const Ids*>& seqs, const SeqFormat& format) {
  TFM_CHECK(!seqs.empty()) << "source_batch: empty batch";
  const size_t extra = static_cast<size_t>(format.source_specials());
  size_t len = 0;
  for (size_t b = 0; b < seqs.size(); ++b) {
    TFM_CHECK(seqs[b]->size() + extra > 0)
        << "source " << b << " of the batch is empty and the model adds neither BOS nor EOS to "
        << "a source (source_bos and source_eos are false): the encoder would see no token";
    len = std::max(len, seqs[b]->size() + extra);
  }
  // Built on the host, then made a tensor in one upload.
  std::vector<int32_t> ids(seqs.size() * len, static_cast<int32_t>(format.pad_id));
  for (size_t b = 0; b < seqs.size(); ++b) {
    auto row = ids.begin() + static_cast<std::ptrdiff_t>(b * len);
    if (format.source_bos) *row++ = static_cast<int32_t>(format.bos_id);
    row = std::copy(seqs[b]->begin(), seqs[b]->end(), row);
    if (format.source_eos) *row = static_cast<int32_t>(format.eos_id);
  }
  return Tensor::from_vector<int32_t>(
      {static_cast<int64_t>(seqs.size()), static_cast<int64_t>(len)}, ids);
}

Batch make_batch(const std::vector<const Ids*>& src, const std::vector<const Ids*>& trg,
                 const SeqFormat& format) {
  const int64_t pad_id = format.pad_id, bos_id = format.bos_id, eos_id = format.eos_id;
  TFM_CHECK(!trg.empty()) << "make_batch: empty batch";
  TFM_CHECK(src.empty() || src.size() == trg.size())
      << "make_batch: " << src.size() << " sources for " << trg.size() << " targets";
  Batch b;
  if (!src.empty()) {
    b.src = source_batch(src, format);
    for (const Ids* s : src)
      b.src_tokens += static_cast<int64_t>(s->size()) + format.source_specials();
  }
  size_t len = 0;
  for (const Ids* t : trg) len = std::max(len, t->size() + 1);
  const int64_t B = static_cast<int64_t>(trg.size()), T = static_cast<int64_t>(len);
  std::vector<int32_t> in(static_cast<size_t>(B * T), static_cast<int32_t>(pad_id));
  std::vector<int32_t> out(in);
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
  b.trg_in = Tensor::from_vector<int32_t>({B, T}, in);
  b.trg_out = Tensor::from_vector<int32_t>({B, T}, out);
  return b;
}

}  // namespace tfm
