#include "tfm/model/encode_chunks.h"

#include <algorithm>
#include <numeric>

#include "tfm/core/check.h"
#include "tfm/ops/host.h"

namespace tfm {

std::vector<int64_t> source_lengths(const Tensor& ids, int64_t pad_id) {
  TFM_CHECK(ids.defined() && ids.dtype() == DType::i32 && ids.dim() == 2)
      << "source_lengths: expected i32 ids (B, S), got "
      << (ids.defined() ? ids.describe() : std::string("an undefined tensor"));
  const int64_t b = ids.size(0), s = ids.size(1);
  const HostView<int32_t> p = to_host<int32_t>(ids);
  std::vector<int64_t> lengths(static_cast<size_t>(b), 1);
  for (int64_t r = 0; r < b; ++r)
    for (int64_t t = s; t > 0; --t)
      if (p[r * s + t - 1] != pad_id) {
        lengths[static_cast<size_t>(r)] = t;
        break;
      }
  return lengths;
}

std::vector<EncodeChunk> encode_chunks(const std::vector<int64_t>& lengths, int64_t max_rows) {
  TFM_CHECK(max_rows > 0) << "encode_chunks: max_rows must be positive, got " << max_rows;
  std::vector<int64_t> order(lengths.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return lengths[static_cast<size_t>(a)] < lengths[static_cast<size_t>(b)];
  });
  std::vector<EncodeChunk> chunks;
  for (int64_t r : order) {
    const int64_t len = lengths[static_cast<size_t>(r)];
    TFM_CHECK(len > 0) << "encode_chunks: row " << r << " has length " << len;
    if (chunks.empty() || static_cast<int64_t>(chunks.back().rows.size() + 1) * len > max_rows)
      chunks.emplace_back();
    chunks.back().rows.push_back(r);
    chunks.back().lengths.push_back(len);
    chunks.back().length = len;
  }
  return chunks;
}

}  // namespace tfm
