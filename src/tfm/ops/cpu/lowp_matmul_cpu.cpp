#include "tfm/ops/cpu/lowp_matmul_cpu.h"

#include "tfm/ops/cpu/dnnl_context.h"

#include <immintrin.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "tfm/core/allocator.h"
#include "tfm/core/check.h"
#include "tfm/core/cpu_isa.h"
#include "tfm/core/parallel.h"
#include "tfm/ops/cpu/activation_cpu.h"

// GCC 12 warns about the deliberately undefined registers inside its own AVX-512 intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tfm::cpu {

namespace {

using dnnl::memory;
using dt = memory::data_type;

dt src_type(ComputeType kind) {
  return kind == ComputeType::bfloat16 ? dt::bf16 : dt::u8;
}
dt weight_type(ComputeType kind) {
  return kind == ComputeType::bfloat16 ? dt::bf16 : dt::s8;
}
// int8 leaves the s32 sums to tfm's epilogue: per-row activation scales and zero points are
// beyond oneDNN 2.6's matmul attributes (output scales vary along N only).
dt dst_type(ComputeType kind) {
  return kind == ComputeType::bfloat16 ? dt::f32 : dt::s32;
}

struct Key {
  ComputeType kind;
  int64_t m, n, k;
  bool bias;
  Activation post;
  int threads;  // oneDNN fixes its work split at creation, from the thread count then
  bool operator==(const Key&) const = default;
};

struct KeyHash {
  size_t operator()(const Key& key) const {
    uint64_t h = 1469598103934665603ull;
    for (uint64_t v : {uint64_t(key.kind), uint64_t(key.m), uint64_t(key.n), uint64_t(key.k),
                       uint64_t(key.bias), uint64_t(key.post), uint64_t(key.threads)})
      h = (h ^ v) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

struct Entry {
  dnnl::matmul primitive;
  memory::desc src, dst, bias, scratchpad;
  size_t scratchpad_bytes = 0;
};

dnnl::matmul::primitive_desc make_pd(const Key& key, const memory::desc& weights, memory::desc* src,
                                     memory::desc* dst, memory::desc* bias) {
  *src = memory::desc({key.m, key.k}, src_type(key.kind), memory::format_tag::ab);
  *dst = memory::desc({key.m, key.n}, dst_type(key.kind), memory::format_tag::ab);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (key.post != Activation::none) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f,
                       key.post == Activation::relu ? dnnl::algorithm::eltwise_relu
                                                    : dnnl::algorithm::eltwise_gelu_erf,
                       0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  if (key.bias) {
    *bias = memory::desc({1, key.n}, dt::f32, memory::format_tag::ab);
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(*src, weights, *bias, *dst), attr,
                                        dnnl_engine());
  }
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(*src, weights, *dst), attr, dnnl_engine());
}

// The few shapes a model uses, per row count: bounded, and simply emptied when full (decoding
// revisits the same handful of row counts, so a refill is rare and cheap next to the run).
class PrimitiveCache {
 public:
  std::shared_ptr<const Entry> get(const Key& key, const memory::desc& weights) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = map_.find(key);
      if (it != map_.end()) return it->second;
    }
    auto entry = std::make_shared<Entry>();
    auto pd = make_pd(key, weights, &entry->src, &entry->dst, &entry->bias);
    // Packing fixed the weights' layout; a primitive that wanted another would run slow paths.
    TFM_CHECK(pd.weights_desc() == weights)
        << "oneDNN " << compute_type_name(key.kind) << " matmul (m=" << key.m << " n=" << key.n
        << " k=" << key.k << ") wants another weight layout than the packed one";
    entry->scratchpad = pd.scratchpad_desc();
    entry->scratchpad_bytes = entry->scratchpad.get_size();
    entry->primitive = dnnl::matmul(pd);
    std::lock_guard<std::mutex> lock(mu_);
    if (map_.size() >= kCapacity) map_.clear();
    map_.emplace(key, entry);
    return entry;
  }

 private:
  static constexpr size_t kCapacity = 256;
  std::mutex mu_;
  std::unordered_map<Key, std::shared_ptr<const Entry>, KeyHash> map_;
};

PrimitiveCache& cache() {
  static PrimitiveCache c;
  return c;
}

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
                                                  const float* w) {
  check_pack_args(kind, n, k);
  auto packed = std::make_shared<PackedWeights>();
  packed->kind = kind;
  packed->n = n;
  packed->k = k;
  if (kind == ComputeType::float32) {
    packed->f32 = pack_f32(n, k, w);
    packed->bytes = packed->f32.bytes;
    return packed;
  }
  std::shared_ptr<void> plain;
  if (kind == ComputeType::bfloat16) {
    packed->bf16 = pack_bf16(n, k, w);
    packed->bytes = packed->bf16.bytes;
    // Where the CPU multiplies bf16, oneDNN's blocked copy serves the larger row counts too;
    // elsewhere tfm's panels serve every row count.
    if (!cpu_has_bf16_dot()) return packed;
    plain = cpu_allocator().allocate(static_cast<size_t>(n * k) * 2);
    float_to_bf16(n * k, w, static_cast<uint16_t*>(plain.get()));
  } else {
    plain = cpu_allocator().allocate(static_cast<size_t>(n * k));
    auto* q = static_cast<int8_t*>(plain.get());
    packed->scales.resize(n);
    packed->sums.resize(n);
    quantize_weights_s8(n, k, w, q, packed->scales.data(), packed->sums.data());
    // Without VNNI oneDNN's products saturate (packed_int8_cpu.h): tfm's exact kernel instead.
    if (!cpu_has_vnni()) {
      packed->int8 = pack_int8(n, k, q);
      packed->bytes = packed->int8.bytes;
      return packed;
    }
  }
  try {
    // The layout the matmul picks for these weights (the same for every M; checked per
    // primitive).
    const Key key{kind, 1, n, k, false, Activation::none, get_threads()};
    memory::desc src, dst, bias;
    const memory::desc any({k, n}, weight_type(kind), memory::format_tag::any);
    auto pd = make_pd(key, any, &src, &dst, &bias);
    auto desc = std::make_shared<memory::desc>(pd.weights_desc());
    packed->data = cpu_allocator().allocate(desc->get_size());
    // Both bf16 copies count: tfm's panels and oneDNN's blocked layout.
    packed->bytes = desc->get_size() + packed->bf16.bytes;
    // (K, N) view of the (N, K) row-major weight: strides (1, K).
    const memory::desc plain_desc({k, n}, weight_type(kind), memory::dims{1, k});
    memory from(plain_desc, dnnl_engine(), plain.get());
    memory to(*desc, dnnl_engine(), packed->data.get());
    dnnl::reorder(from, to).execute(dnnl_stream(), from, to);
    dnnl_stream().wait();
    packed->desc = desc;
  } catch (const dnnl::error& e) {
    TFM_FAIL() << "packing " << compute_type_name(kind) << " weights (" << n << ", " << k
               << ") for oneDNN failed: " << e.what();
  }
  return packed;
}

void lowp_linear_forward(int64_t m, const float* x, const PackedWeights& w, const float* bias,
                         Activation post, float* y) {
  if (m == 0) return;
  TFM_CHECK(m > 0) << "lowp_linear_forward: negative row count " << m;
  if (w.kind == ComputeType::float32) {
    packed_f32_linear_forward(m, x, w.f32, bias, post, y);
    return;
  }
  if (w.kind == ComputeType::bfloat16 && (m <= kBf16PanelMaxRows || w.desc == nullptr)) {
    packed_bf16_linear_forward(m, x, w.bf16, bias, post, y);
    return;
  }
  if (w.kind == ComputeType::int8 && w.desc == nullptr) {
    packed_int8_linear_forward(m, x, w.int8, w.scales.data(), w.sums.data(), bias, post, y);
    return;
  }
  onednn_linear_forward(m, x, w, bias, post, y);
}

void onednn_linear_forward(int64_t m, const float* x, const PackedWeights& w, const float* bias,
                           Activation post, float* y) {
  if (m == 0) return;
  TFM_CHECK(m > 0) << "onednn_linear_forward: negative row count " << m;
  TFM_CHECK(w.kind != ComputeType::float32 && w.desc != nullptr)
      << "onednn_linear_forward: " << compute_type_name(w.kind) << " weights have no oneDNN copy"
      << (w.kind == ComputeType::float32 ? "" : " at this CPU level (" + cpu_isa_summary() + ")");
  const int64_t n = w.n, k = w.k;
  const bool int8 = w.kind == ComputeType::int8;
  // Inside another op's parallel region oneDNN runs on the calling thread only.
  const int threads = omp_in_parallel() ? 1 : get_threads();
  // int8 applies bias and post-op in its own dequantising pass.
  const Key key{w.kind, m, n, k, !int8 && bias != nullptr, int8 ? Activation::none : post, threads};
  const auto& wdesc = *static_cast<const memory::desc*>(w.desc.get());

  std::shared_ptr<void> src_buf, acc_buf;
  std::vector<float> row_scale;
  std::vector<int32_t> row_zero;
  if (int8) {
    src_buf = cpu_allocator().allocate(static_cast<size_t>(m * k));
    row_scale.resize(m);
    row_zero.resize(m);
    quantize_rows_u8(m, k, x, static_cast<uint8_t*>(src_buf.get()), row_scale.data(),
                     row_zero.data());
    acc_buf = cpu_allocator().allocate(static_cast<size_t>(m * n) * 4);
  } else {
    src_buf = cpu_allocator().allocate(static_cast<size_t>(m * k) * 2);
    float_to_bf16(m * k, x, static_cast<uint16_t*>(src_buf.get()));
  }

  try {
    auto entry = cache().get(key, wdesc);
    std::unordered_map<int, memory> args;
    args.emplace(DNNL_ARG_SRC, memory(entry->src, dnnl_engine(), src_buf.get()));
    args.emplace(DNNL_ARG_WEIGHTS, memory(wdesc, dnnl_engine(), w.data.get()));
    args.emplace(DNNL_ARG_DST,
                 memory(entry->dst, dnnl_engine(), int8 ? acc_buf.get() : static_cast<void*>(y)));
    if (key.bias)
      args.emplace(DNNL_ARG_BIAS, memory(entry->bias, dnnl_engine(), const_cast<float*>(bias)));
    std::shared_ptr<void> scratch;
    if (entry->scratchpad_bytes > 0) {
      scratch = cpu_allocator().allocate(entry->scratchpad_bytes);
      args.emplace(DNNL_ARG_SCRATCHPAD, memory(entry->scratchpad, dnnl_engine(), scratch.get()));
    }
    entry->primitive.execute(dnnl_stream(), args);
    dnnl_stream().wait();
  } catch (const dnnl::error& e) {
    TFM_FAIL() << "oneDNN " << compute_type_name(w.kind) << " matmul (m=" << m << " n=" << n
               << " k=" << k << ") failed: " << e.what();
  }
  if (!int8) return;

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
      if (post == Activation::gelu) gelu_forward_serial<float>(n, out, out);
    }
  });
}

}  // namespace tfm::cpu
