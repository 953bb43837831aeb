#include "tfm/ops/cpu/lowp_matmul_cpu.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "tfm/core/allocator.h"
#include "tfm/core/check.h"
#include "tfm/core/cpu_isa.h"
#include "tfm/core/parallel.h"
#include "tfm/ops/cpu/activation_cpu.h"

namespace tfm::cpu {

namespace {

// lo = min(0, min x), hi = max(0, max x); false if x holds an inf or NaN (which min and max
// would pass over: the probe x·0 turns NaN on them). AVX2 is the library's floor; GCC leaves the
// plain loop scalar (min/max reductions on floats).
bool row_range(int64_t k, const float* x, float* lo_out, float* hi_out) {
  __m256 vlo = _mm256_setzero_ps(), vhi = _mm256_setzero_ps(), vprobe = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= k; j += 8) {
    const __m256 v = _mm256_loadu_ps(x + j);
    vlo = _mm256_min_ps(vlo, v);
    vhi = _mm256_max_ps(vhi, v);
    vprobe = _mm256_fmadd_ps(v, _mm256_setzero_ps(), vprobe);
  }
  alignas(32) float lo8[8], hi8[8], probe8[8];
  _mm256_store_ps(lo8, vlo);
  _mm256_store_ps(hi8, vhi);
  _mm256_store_ps(probe8, vprobe);
  float lo = 0.f, hi = 0.f, probe = 0.f;
  for (int l = 0; l < 8; ++l) {
    lo = std::min(lo, lo8[l]);
    hi = std::max(hi, hi8[l]);
    probe += probe8[l];
  }
  for (; j < k; ++j) {
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
    probe += x[j] * 0.f;
  }
  *lo_out = lo;
  *hi_out = hi;
  return probe == 0.f;
}

// out = clamp(round(x · inv) + zp, 0, 255), rounding half to even. The compiler does not
// vectorise the rounding and narrowing; by hand it is several times faster.
void quantize_row(int64_t k, const float* x, float inv, float zp, uint8_t* out) {
  int64_t j = 0;
  const __m256 vinv = _mm256_set1_ps(inv), vzp = _mm256_set1_ps(zp);
  const __m256 lo = _mm256_setzero_ps(), hi = _mm256_set1_ps(255.f);
  for (; j + 16 <= k; j += 16) {
    __m256i q[2];
    for (int h = 0; h < 2; ++h) {
      __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + j + 8 * h), vinv);
      v = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      v = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(v, vzp), lo), hi);
      q[h] = _mm256_cvtps_epi32(v);  // exact: v is an integer in [0, 255]
    }
    // 16 s32 -> 16 u16 -> 16 u8 (the packs work per 128-bit lane; the permute restores order).
    const __m256i w16 = _mm256_permute4x64_epi64(_mm256_packus_epi32(q[0], q[1]), 0xD8);
    const __m128i b8 =
        _mm_packus_epi16(_mm256_castsi256_si128(w16), _mm256_extracti128_si256(w16, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j), b8);
  }
  for (; j < k; ++j)
    out[j] = static_cast<uint8_t>(std::clamp(std::nearbyint(x[j] * inv) + zp, 0.f, 255.f));
}

// An error cannot leave an OpenMP region (it would terminate the program): workers note a bad
// row and the caller throws after the loop.
void note_bad_row(std::atomic<int64_t>& bad_row, int64_t r) {
  int64_t none = -1;
  bad_row.compare_exchange_strong(none, r);
}

void check_pack_args(ComputeType kind, int64_t n, int64_t k) {
  TFM_CHECK(n > 0 && k > 0) << "pack_weights(" << compute_type_name(kind) << "): empty weight ("
                            << n << ", " << k << ")";
}

}  // namespace

void float_to_bf16(int64_t n, const float* src, uint16_t* dst) {
  const int64_t grain = int64_t{1} << 15;
  parallel_for(n, grain, [&](int64_t i0, int64_t i1) {
#pragma omp simd
    for (int64_t i = i0; i < i1; ++i) dst[i] = to_bf16(src[i]);
  });
}

void quantize_rows_u8(int64_t m, int64_t k, const float* x, uint8_t* q, float* scale,
                      int32_t* zero) {
  std::atomic<int64_t> bad_row{-1};
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(k, 1));
  parallel_for(m, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* row = x + r * k;
      uint8_t* out = q + r * k;
      // 0 stays inside the range so that it, and ReLU's many zeros, quantise exactly.
      float lo, hi;
      if (!row_range(k, row, &lo, &hi)) {
        note_bad_row(bad_row, r);
        continue;
      }
      const float s = hi > lo ? (hi - lo) / 255.f : 1.f;
      const float inv = 1.f / s;
      const float zp = std::clamp(std::nearbyint(-lo * inv), 0.f, 255.f);
      quantize_row(k, row, inv, zp, out);
      scale[r] = s;
      zero[r] = static_cast<int32_t>(zp);
    }
  });
  TFM_CHECK(bad_row.load() < 0) << "int8 linear: row " << bad_row.load()
                                << " of the input holds inf or NaN";
}

std::shared_ptr<const PackedWeights> pack_weights(ComputeType kind, int64_t n, int64_t k,
                                                  const float* w, bool sequences, bool lookups) {
  check_pack_args(kind, n, k);
  auto packed = std::make_shared<PackedWeights>();
  packed->kind = kind;
  packed->n = n;
  packed->k = k;
  switch (kind) {
    case ComputeType::float32:
      packed->f32 = pack_f32(n, k, w);
      packed->bytes = packed->f32.bytes;
      break;
    case ComputeType::bfloat16:
      if (sequences && cpu_has_bf16_dot()) {
        std::vector<uint16_t> rounded(static_cast<size_t>(n * k));
        float_to_bf16(n * k, w, rounded.data());
        packed->onednn = pack_bf16_matmul_weights(n, k, rounded.data());
        packed->bytes = packed->onednn.bytes;
      } else {
        packed->bf16 = pack_bf16(n, k, w);
        packed->bytes = packed->bf16.bytes;
      }
      break;
    case ComputeType::int8: {
      std::vector<int8_t> q(static_cast<size_t>(n * k));
      packed->scales.resize(n);
      packed->sums.resize(n);
      quantize_weights_s8(n, k, w, q.data(), packed->scales.data(), packed->sums.data());
      // oneDNN's exact VNNI path where the CPU has it; without VNNI its products saturate
      // (packed_int8_cpu.h), so tfm's exact kernel instead.
      if (cpu_has_vnni()) {
        packed->onednn = pack_s8_matmul_weights(n, k, q.data());
        packed->bytes = packed->onednn.bytes;
        if (lookups) {
          packed->rows_bytes = q.size();
          packed->rows_s8 = std::static_pointer_cast<int8_t>(cpu_allocator().allocate(q.size()));
          std::memcpy(packed->rows_s8.get(), q.data(), q.size());
        }
      } else {
        packed->int8 = pack_int8(n, k, q.data());
        packed->bytes = packed->int8.bytes;
      }
      break;
    }
    case ComputeType::automatic:
      TFM_FAIL() << "pack_weights: resolve the compute type first";
  }
  return packed;
}

void packed_weight_rows(int64_t m, const int32_t* ids, const PackedWeights& w, float* out) {
  if (w.kind == ComputeType::float32) return packed_f32_rows(m, ids, w.f32, out);
  TFM_CHECK(w.kind == ComputeType::int8 && (w.int8.data || w.rows_s8))
      << "packed_weight_rows: an embedding lookup reads fp32 weights, and int8 ones packed for "
      << "lookups, not " << compute_type_name(w.kind)
      << (w.kind == ComputeType::int8 ? " in oneDNN's layout without lookups" : "");
  if (w.int8.data) return packed_int8_rows(m, ids, w.int8, w.scales.data(), out);
  const int64_t k = w.k;
  parallel_for(m, std::max<int64_t>(1, (int64_t{1} << 14) / k), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int8_t* q = w.rows_s8.get() + ids[r] * k;
      const float s = w.scales[static_cast<size_t>(ids[r])];
      for (int64_t c = 0; c < k; ++c) out[r * k + c] = static_cast<float>(q[c]) * s;
    }
  });
}

void lowp_linear_forward(int64_t m, const float* x, const PackedWeights& w, const float* bias,
                         Activation post, float* y) {
  if (m == 0) return;
  TFM_CHECK(m > 0) << "lowp_linear_forward: negative row count " << m;
  switch (w.kind) {
    case ComputeType::float32:
      packed_f32_linear_forward(m, x, w.f32, bias, post, y);
      return;
    case ComputeType::bfloat16:
      if (w.onednn.desc != nullptr) {
        auto xb = cpu_allocator().allocate(static_cast<size_t>(m * w.k) * 2);
        float_to_bf16(m * w.k, x, static_cast<uint16_t*>(xb.get()));
        matmul_primitive_bf16_packed(m, static_cast<const uint16_t*>(xb.get()), w.onednn, bias,
                                     post, y);
      } else {
        packed_bf16_linear_forward(m, x, w.bf16, bias, post, y);
      }
      return;
    case ComputeType::int8:
      if (w.int8.data != nullptr)
        packed_int8_linear_forward(m, x, w.int8, w.scales.data(), w.sums.data(), bias, post, y);
      else
        onednn_int8_linear_forward(m, x, w, bias, post, y);
      return;
    case ComputeType::automatic:
      break;
  }
  TFM_FAIL() << "lowp_linear_forward: weights of no compute type";
}

void onednn_int8_linear_forward(int64_t m, const float* x, const PackedWeights& w,
                                const float* bias, Activation post, float* y) {
  if (m == 0) return;
  TFM_CHECK(m > 0) << "onednn_int8_linear_forward: negative row count " << m;
  TFM_CHECK(w.kind == ComputeType::int8 && w.onednn.desc != nullptr)
      << "onednn_int8_linear_forward: " << compute_type_name(w.kind)
      << " weights have no oneDNN copy at this CPU level (" << cpu_isa_summary() << ")";
  const int64_t n = w.n, k = w.k;
  auto src_buf = cpu_allocator().allocate(static_cast<size_t>(m * k));
  auto acc_buf = cpu_allocator().allocate(static_cast<size_t>(m * n) * 4);
  std::vector<float> row_scale(m);
  std::vector<int32_t> row_zero(m);
  quantize_rows_u8(m, k, x, static_cast<uint8_t*>(src_buf.get()), row_scale.data(),
                   row_zero.data());
  matmul_primitive_u8s8(m, static_cast<const uint8_t*>(src_buf.get()), w.onednn,
                        static_cast<int32_t*>(acc_buf.get()));

  // y = post(sx[i] · sw[j] · (acc[i, j] − zero[i] · Σ_k q[j, k]) + bias[j])
  const auto* acc = static_cast<const int32_t*>(acc_buf.get());
  const float* sw = w.scales.data();
  const int32_t* sums = w.sums.data();
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / n);
  parallel_for(m, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int32_t* a = acc + r * n;
      float* out = y + r * n;
      const float sx = row_scale[r];
      const int32_t zp = row_zero[r];
      const bool relu = post == Activation::relu;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) {
        float v = sx * sw[j] * static_cast<float>(a[j] - zp * sums[j]);
        if (bias != nullptr) v += bias[j];
        out[j] = relu ? std::max(v, 0.f) : v;
      }
      input_activation_serial<float>(post, n, out, out);
    }
  });
}

}  // namespace tfm::cpu
