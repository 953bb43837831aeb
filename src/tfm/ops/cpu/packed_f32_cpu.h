// fp32 inference GEMM for linear layers over weights packed once into column panels, for the
// few-row products of decoding (a step feeds 16–64 rows). dnnl_sgemm packs the whole weight on
// every call, which at these row counts costs as much as the multiply; here the packing is done
// once and each call streams the panels straight into an 8-row × 48-column register tile.
#pragma once

#include <cstdint>
#include <memory>

#include "tfm/core/cpu_isa.h"
#include "tfm/ops/cpu/primitives.h"

namespace tfm::cpu {

// Columns per panel: three AVX-512 vectors, six AVX2 ones.
inline constexpr int64_t kPackedF32Panel = 48;

// w (N, K) row-major as in nn.Linear, stored as ceil(N / 48) panels of (K, 48): panel p holds
// output channels [48p, 48p + 48) with the channels of one k adjacent, zero-padded past N.
struct PackedF32 {
  int64_t n = 0, k = 0;
  std::shared_ptr<float> data;  // panels · K · 48 floats
  size_t bytes = 0;
};

PackedF32 pack_f32(int64_t n, int64_t k, const float* w);

// out (M, K) = rows ids[0..M) of w: the values pack_f32 was given, gathered from the panels (K
// loads a stride of 48 floats apart per row). Ids are trusted (in [0, N)). For a tied embedding
// table whose only copy is the output projection's panels: a lookup of a few thousand tokens
// costs microseconds beside the products that follow it.
void packed_f32_rows(int64_t m, const int32_t* ids, const PackedF32& w, float* out);

// y (M, N) = post(x (M, K) · wᵀ + bias); bias (N) may be null; x and y contiguous. Every output
// is one sequential sum over k (no split of the reduction), so a row's result does not depend
// on M, on the other rows, on the thread count, or on the CPU level: every level's tile adds the
// same fused multiply-adds in the same order. Outside a parallel region the panels are split over
// the threads; inside one it runs on the calling thread. `isa` (at most cpu_isa()) picks the
// tile; tests pass a lower one to compare the levels.
void packed_f32_linear_forward(int64_t m, const float* x, const PackedF32& w, const float* bias,
                               Activation post, float* y, CpuIsa isa = cpu_isa());

}  // namespace tfm::cpu
