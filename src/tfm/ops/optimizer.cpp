#include "tfm/ops/optimizer.h"

#include <algorithm>
#include <cmath>

#include "tfm/core/parallel.h"
#include "tfm/ops/cpu/adam_cpu.h"
#include "tfm/ops/cpu/lowp_matmul_cpu.h"
#include "tfm/ops/dispatch.h"
#ifdef TFM_WITH_CUDA
#include "tfm/ops/cuda/adam.h"
#include "tfm/ops/cuda/reduce.h"
#endif

namespace tfm {

namespace {

constexpr int64_t kNormChunk = int64_t{1} << 15;

void check_flat(const Tensor& t, int64_t n, const char* name) {
  TFM_CHECK(t.defined()) << "adam_step: " << name << " is undefined";
  TFM_CHECK(t.dtype() == DType::f32 && t.dim() == 1 && t.numel() == n && t.is_contiguous())
      << "adam_step: " << name << " must be contiguous f32 (" << n << "), got " << t.describe();
}

}  // namespace

void adam_step(const kernels::AdamUpdate& a, const Tensor& pt, const Tensor& gt, const Tensor& mt,
               const Tensor& vt, const std::vector<FlatRange>& ranges, const Tensor& p_bf16) {
  const int64_t n = pt.numel();
  check_flat(pt, n, "p");
  check_flat(gt, n, "g");
  check_flat(mt, n, "m");
  check_flat(vt, n, "v");
  for (const Tensor* t : {&gt, &mt, &vt}) check_same_device(pt, *t, "adam_step");
  uint16_t* pb = nullptr;
  if (p_bf16.defined()) {
    TFM_CHECK(p_bf16.dtype() == DType::bf16 && p_bf16.dim() == 1 && p_bf16.numel() == n &&
              p_bf16.is_contiguous())
        << "adam_step: p_bf16 must be contiguous bf16 (" << n << "), got " << p_bf16.describe();
    check_same_device(pt, p_bf16, "adam_step");
    pb = static_cast<uint16_t*>(p_bf16.raw_data());
  }
  int64_t end = 0;
  for (const FlatRange& r : ranges) {
    TFM_CHECK(r.offset >= end && r.numel >= 0 && r.offset + r.numel <= n)
        << "adam_step: ranges must be sorted, disjoint and inside " << n << " elements";
    end = r.offset + r.numel;
  }
  float* p = pt.data<float>();
  const float* g = gt.data<float>();
  float* m = mt.data<float>();
  float* v = vt.data<float>();
#ifdef TFM_WITH_CUDA
  if (on_cuda(pt)) {  // one launch over every range
    std::vector<cuda::AdamTensor> spans;
    for (const FlatRange& r : ranges) {
      if (r.numel == 0) continue;
      spans.push_back({r.numel, p + r.offset, g + r.offset, m + r.offset, v + r.offset,
                       pb != nullptr ? pb + r.offset : nullptr});
    }
    cuda::adam_step_multi(spans, a);
    return;
  }
#endif
  // One pass over the buffers: each thread takes a span of elements and updates the part of
  // every range inside it (gaps are skipped). The arithmetic is per element, so the split does
  // not change a bit.
  parallel_for(n, 1 << 14, [&](int64_t b, int64_t e) {
    auto k = static_cast<size_t>(
        std::partition_point(ranges.begin(), ranges.end(),
                             [b](const FlatRange& r) { return r.offset + r.numel <= b; }) -
        ranges.begin());
    for (; k < ranges.size() && ranges[k].offset < e; ++k) {
      const int64_t lo = std::max(b, ranges[k].offset);
      const int64_t hi = std::min(e, ranges[k].offset + ranges[k].numel);
      if (lo >= hi) continue;
      cpu::adam_update(a, hi - lo, p + lo, g + lo, m + lo, v + lo);
      if (pb != nullptr)
        for (int64_t i = lo; i < hi; ++i) pb[i] = cpu::to_bf16(p[i]);
    }
  });
}

double sum_of_squares(const std::vector<Tensor>& xs) {
  struct Chunk {
    const float* x;
    int64_t n;
  };
  std::vector<Tensor> keep;  // contiguous copies of strided inputs
  std::vector<Chunk> chunks;
#ifdef TFM_WITH_CUDA
  if (!xs.empty() && on_cuda(xs.front())) {
    double total = 0.0;
    for (const Tensor& t : xs) {
      check_same_device(xs.front(), t, "sum_of_squares");
      TFM_CHECK(t.dtype() == DType::f32) << "sum_of_squares: expected f32, got " << t.describe();
      const Tensor c = t.contiguous();
      total += cuda::sum_of_squares(c.numel(), c.data<float>());
    }
    return total;
  }
#endif
  for (const Tensor& t : xs) {
    check_on_cpu(t, "sum_of_squares", "x");
    TFM_CHECK(t.dtype() == DType::f32) << "sum_of_squares: expected f32, got " << t.describe();
    keep.push_back(t.contiguous());
    const float* x = keep.back().data<float>();
    const int64_t n = t.numel();
    for (int64_t b = 0; b < n; b += kNormChunk)
      chunks.push_back({x + b, std::min(kNormChunk, n - b)});
  }
  std::vector<double> partial(chunks.size(), 0.0);
  parallel_for(static_cast<int64_t>(chunks.size()), 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      const float* x = chunks[c].x;
      double s = 0.0;
      for (int64_t i = 0; i < chunks[c].n; ++i) s += static_cast<double>(x[i]) * x[i];
      partial[c] = s;
    }
  });
  double total = 0.0;
  for (double s : partial) total += s;
  return total;
}

}  // namespace tfm
