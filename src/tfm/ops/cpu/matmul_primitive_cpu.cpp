// oneDNN matmul primitives with fused bias and post-op, behind a bounded LRU cache (the f32,
// bf16 and u8s8 matmuls of primitives.h) and the weights packed in their layout.
#include "tfm/ops/cpu/primitives.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "tfm/core/allocator.h"
#include "tfm/core/check.h"
#include "tfm/core/cpu_isa.h"
#include "tfm/core/parallel.h"
#include "tfm/core/signal_stack.h"
#include "tfm/ops/cpu/dnnl_context.h"
#include "tfm/ops/cpu/lowp_matmul_cpu.h"

namespace tfm::cpu {

namespace {

// The operand types of a cached oneDNN matmul primitive.
enum class MatmulOperands : uint8_t { f32, bf16, u8s8, bf16_packed };

struct PrimitiveKey {
  int64_t m, n, k;
  bool bias;
  Activation post;
  // oneDNN fixes its work split when the primitive is created, from the thread count then.
  int threads;
  // f32: (M, K) · (N, K)ᵀ. bf16: op(A) · op(B) with the layouts the flags say. u8s8: x (M, K) u8
  // times weights s8 in the layout oneDNN picks (format any), into s32, no bias or post-op.
  // bf16_packed: x (M, K) bf16 times weights bf16 in the layout oneDNN picks, f32 out.
  MatmulOperands operands = MatmulOperands::f32;
  bool trans_a = false, trans_b = true;
  bool operator==(const PrimitiveKey&) const = default;
};

struct PrimitiveKeyHash {
  size_t operator()(const PrimitiveKey& key) const {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    mix(static_cast<uint64_t>(key.m));
    mix(static_cast<uint64_t>(key.n));
    mix(static_cast<uint64_t>(key.k));
    mix(static_cast<uint64_t>(key.bias));
    mix(static_cast<uint64_t>(key.post));
    mix(static_cast<uint64_t>(key.threads));
    mix(static_cast<uint64_t>(key.operands) | static_cast<uint64_t>(key.trans_a) << 2 |
        static_cast<uint64_t>(key.trans_b) << 3);
    return static_cast<size_t>(h);
  }
};

struct PrimitiveEntry {
  dnnl::matmul primitive;
  dnnl::memory::desc src, weights, bias, dst, scratchpad;
  size_t scratchpad_bytes = 0;
};

std::shared_ptr<const PrimitiveEntry> create_primitive(const PrimitiveKey& key) {
  using dnnl::memory;
  using dt = memory::data_type;
  const memory::dims src_dims{key.m, key.k}, w_dims{key.k, key.n}, dst_dims{key.m, key.n};
  auto entry = std::make_shared<PrimitiveEntry>();
  if (key.operands == MatmulOperands::u8s8) {
    entry->src = memory::desc(src_dims, dt::u8, memory::format_tag::ab);
    entry->dst = memory::desc(dst_dims, dt::s32, memory::format_tag::ab);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const memory::desc any(w_dims, dt::s8, memory::format_tag::any);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(entry->src, any, entry->dst), attr,
                                          dnnl_engine());
    entry->weights = pd.weights_desc();
    entry->scratchpad = pd.scratchpad_desc();
    entry->scratchpad_bytes = entry->scratchpad.get_size();
    entry->primitive = dnnl::matmul(pd);
    return entry;
  }
  const dt in = key.operands == MatmulOperands::f32 ? dt::f32 : dt::bf16;
  // Transposed operands are read through their strides, no copy: op(A) (M, K) of a row-major
  // (K, M) is strides (1, M); op(B) (K, N) of a row-major (N, K) (nn.Linear's weight) is (1, K).
  entry->src =
      memory::desc(src_dims, in, key.trans_a ? memory::dims{1, key.m} : memory::dims{key.k, 1});
  const bool packed = key.operands == MatmulOperands::bf16_packed;
  entry->weights =
      packed
          ? memory::desc(w_dims, dt::bf16, memory::format_tag::any)
          : memory::desc(w_dims, in, key.trans_b ? memory::dims{1, key.k} : memory::dims{key.n, 1});
  entry->dst = memory::desc(dst_dims, dt::f32, memory::dims{key.n, 1});
  dnnl::primitive_attr attr;
  // The caller hands in scratch memory per call: the primitive then holds no mutable state and
  // may run on several threads at once, and the memory comes from tfm's caching allocator.
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (key.post != Activation::none) {
    dnnl::post_ops ops;
    // swish's alpha 1: x·σ(x), SiLU.
    const dnnl::algorithm alg = key.post == Activation::relu   ? dnnl::algorithm::eltwise_relu
                                : key.post == Activation::gelu ? dnnl::algorithm::eltwise_gelu_erf
                                : key.post == Activation::silu ? dnnl::algorithm::eltwise_swish
                                                               : dnnl::algorithm::eltwise_gelu_tanh;
    ops.append_eltwise(1.0f, alg, key.post == Activation::silu ? 1.0f : 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  dnnl::matmul::primitive_desc pd;
  if (key.bias) {
    entry->bias = memory::desc(memory::dims{1, key.n}, dt::f32, memory::dims{key.n, 1});
    pd = dnnl::matmul::primitive_desc(
        dnnl::matmul::desc(entry->src, entry->weights, entry->bias, entry->dst), attr,
        dnnl_engine());
  } else {
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(entry->src, entry->weights, entry->dst),
                                      attr, dnnl_engine());
  }
  if (packed) entry->weights = pd.weights_desc();
  entry->scratchpad = pd.scratchpad_desc();
  entry->scratchpad_bytes = entry->scratchpad.get_size();
  entry->primitive = dnnl::matmul(pd);
  return entry;
}

class PrimitiveCache {
 public:
  explicit PrimitiveCache(size_t capacity) : capacity_(capacity) {}

  std::shared_ptr<const PrimitiveEntry> get(const PrimitiveKey& key) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = index_.find(key);
      if (it != index_.end()) {
        ++hits_;
        lru_.splice(lru_.begin(), lru_, it->second);
        return it->second->second;
      }
      ++misses_;
    }
    // Created outside the lock so one slow creation does not stall other shapes; two threads
    // racing on the same key both build it and the second insert is dropped.
    auto entry = create_primitive(key);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(key);
    if (it != index_.end()) return it->second->second;
    lru_.emplace_front(key, entry);
    index_[key] = lru_.begin();
    evict();
    return entry;
  }

  void set_capacity(size_t capacity) {
    std::lock_guard<std::mutex> lock(mu_);
    capacity_ = std::max<size_t>(capacity, 1);
    evict();
  }

  PrimitiveCacheStats stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return {lru_.size(), capacity_, hits_, misses_};
  }

  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    index_.clear();
    lru_.clear();
  }

 private:
  using Item = std::pair<PrimitiveKey, std::shared_ptr<const PrimitiveEntry>>;

  // Callers hold mu_.
  void evict() {
    while (lru_.size() > capacity_) {
      index_.erase(lru_.back().first);
      lru_.pop_back();  // a caller still executing it holds its own shared_ptr
    }
  }

  mutable std::mutex mu_;
  size_t capacity_;
  std::list<Item> lru_;  // most recently used first
  std::unordered_map<PrimitiveKey, std::list<Item>::iterator, PrimitiveKeyHash> index_;
  uint64_t hits_ = 0, misses_ = 0;
};

// A model has a handful of linear shapes per distinct row count; 256 covers training batches of
// varying length plus decoding without rebuilding in steady state.
PrimitiveCache& primitive_cache() {
  static PrimitiveCache cache(256);
  return cache;
}

}  // namespace

namespace {

// Copies of packed weights in other layouts, created at first need (OnednnWeights).
struct OtherLayouts {
  std::mutex mu;
  std::vector<std::pair<dnnl::memory::desc, std::shared_ptr<void>>> copies;
};

// w's data in the layout `wanted`: its own when that is the packed one, else a reordered copy
// (kept in w.other_layouts, so each layout is made once).
const void* weights_in_layout(const OnednnWeights& w, const dnnl::memory::desc& wanted) {
  const auto& packed = *static_cast<const dnnl::memory::desc*>(w.desc.get());
  if (packed == wanted) return w.data.get();
  TFM_CHECK(w.other_layouts != nullptr)
      << "oneDNN matmul (n=" << w.n << " k=" << w.k
      << ") wants another weight layout than the packed one, and the weights keep no copies";
  auto& others = *std::static_pointer_cast<OtherLayouts>(w.other_layouts);
  std::lock_guard<std::mutex> lock(others.mu);
  for (const auto& [desc, data] : others.copies)
    if (desc == wanted) return data.get();
  std::shared_ptr<void> data = cpu_allocator().allocate(wanted.get_size());
  dnnl::memory from(packed, dnnl_engine(), w.data.get());
  dnnl::memory to(wanted, dnnl_engine(), data.get());
  dnnl::reorder(from, to).execute(dnnl_stream(), from, to);  // a permutation: exact
  dnnl_stream().wait();
  others.copies.emplace_back(wanted, data);
  return data.get();
}

// `packed`, when given, holds b: the weights packed for the matmul, read in the layout the
// primitive for this key wants (b is ignored then).
void run_primitive(const PrimitiveKey& key, const void* a, const void* b, const float* bias,
                   void* c, const OnednnWeights* packed = nullptr) {
  try {
    auto entry = primitive_cache().get(key);
    if (packed != nullptr) b = weights_in_layout(*packed, entry->weights);
    const dnnl::engine& eng = dnnl_engine();
    std::unordered_map<int, dnnl::memory> args;
    args.emplace(DNNL_ARG_SRC, dnnl::memory(entry->src, eng, const_cast<void*>(a)));
    args.emplace(DNNL_ARG_WEIGHTS, dnnl::memory(entry->weights, eng, const_cast<void*>(b)));
    args.emplace(DNNL_ARG_DST, dnnl::memory(entry->dst, eng, c));
    if (bias != nullptr)
      args.emplace(DNNL_ARG_BIAS, dnnl::memory(entry->bias, eng, const_cast<float*>(bias)));
    std::shared_ptr<void> scratch;
    if (entry->scratchpad_bytes > 0) {
      scratch = cpu_allocator().allocate(entry->scratchpad_bytes);
      args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(entry->scratchpad, eng, scratch.get()));
    }
    ensure_signal_stacks();  // it may run oneDNN's JIT GEMM (core/signal_stack.h)
    entry->primitive.execute(dnnl_stream(), args);
    dnnl_stream().wait();
  } catch (const dnnl::error& e) {
    const char* names[] = {"f32", "bf16", "int8", "bf16 (packed weights)"};
    TFM_FAIL() << "oneDNN " << names[static_cast<int>(key.operands)] << " matmul (m=" << key.m
               << " n=" << key.n << " k=" << key.k << " trans_a=" << key.trans_a
               << " trans_b=" << key.trans_b << " bias=" << key.bias
               << " post=" << static_cast<int>(key.post) << ") failed: " << e.what()
               << " at CPU level " << cpu_isa_summary();
  }
}

// Inside another op's parallel region oneDNN runs on the calling thread only.
int primitive_threads() {
  return omp_in_parallel() ? 1 : get_threads();
}

}  // namespace

void matmul_primitive_f32(int64_t m, int64_t n, int64_t k, const float* x, const float* w,
                          const float* bias, Activation post, float* y) {
  TFM_CHECK(m > 0 && n > 0 && k > 0)
      << "matmul_primitive_f32: empty problem m=" << m << " n=" << n << " k=" << k;
  run_primitive({m, n, k, bias != nullptr, post, primitive_threads()}, x, w, bias, y);
}

void matmul_primitive_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                           const uint16_t* a, const uint16_t* b, const float* bias, Activation post,
                           float* c) {
  TFM_CHECK(m > 0 && n > 0 && k > 0)
      << "matmul_primitive_bf16: empty problem m=" << m << " n=" << n << " k=" << k;
  if (cpu_has_bf16_dot()) {
    run_primitive({m, n, k, bias != nullptr, post, primitive_threads(), MatmulOperands::bf16,
                   trans_a, trans_b},
                  a, b, bias, c);
    return;
  }
  // Below AVX512-BF16 (oneDNN 2.6 has no bf16 matmul under AVX-512, and only a slow one without
  // the instruction): the operands widened to f32, which is exact, on the f32 GEMM. The same
  // function, products of rounded operands summed in f32, in oneDNN's f32 order; correct, not
  // faster than fp32.
  const auto widen = [](int64_t count, const uint16_t* src) {
    auto buf = std::static_pointer_cast<float>(
        cpu_allocator().allocate(static_cast<size_t>(count) * sizeof(float)));
    float* dst = buf.get();
    parallel_for(count, int64_t{1} << 15, [&](int64_t i0, int64_t i1) {
#pragma omp simd
      for (int64_t i = i0; i < i1; ++i) dst[i] = bf16_to_float(src[i]);
    });
    return buf;
  };
  const auto af = widen(m * k, a), bf = widen(k * n, b);
  run_primitive(
      {m, n, k, bias != nullptr, post, primitive_threads(), MatmulOperands::f32, trans_a, trans_b},
      af.get(), bf.get(), bias, c);
}

namespace {

// w (N, K) row-major, as nn.Linear's weight, reordered into the layout the one-row matmul of
// `operands` picks for it (format any; other M's layouts are made when needed, run_primitive).
OnednnWeights pack_onednn_weights(int64_t n, int64_t k, MatmulOperands operands,
                                  dnnl::memory::data_type type, const void* w, const char* what) {
  OnednnWeights packed;
  packed.n = n;
  packed.k = k;
  try {
    const auto entry =
        primitive_cache().get({1, n, k, false, Activation::none, primitive_threads(), operands});
    auto desc = std::make_shared<dnnl::memory::desc>(entry->weights);
    packed.bytes = desc->get_size();
    packed.data = cpu_allocator().allocate(packed.bytes);
    // (K, N) view of the (N, K) row-major weight: strides (1, K).
    const dnnl::memory::desc plain({k, n}, type, dnnl::memory::dims{1, k});
    dnnl::memory from(plain, dnnl_engine(), const_cast<void*>(w));
    dnnl::memory to(*desc, dnnl_engine(), packed.data.get());
    dnnl::reorder(from, to).execute(dnnl_stream(), from, to);
    dnnl_stream().wait();
    packed.desc = desc;
    packed.other_layouts = std::make_shared<OtherLayouts>();
  } catch (const dnnl::error& e) {
    TFM_FAIL() << "packing " << what << " weights (" << n << ", " << k
               << ") for oneDNN failed: " << e.what();
  }
  return packed;
}

}  // namespace

OnednnWeights pack_s8_matmul_weights(int64_t n, int64_t k, const int8_t* q) {
  TFM_CHECK(n > 0 && k > 0) << "pack_s8_matmul_weights: empty weight (" << n << ", " << k << ")";
  TFM_CHECK(cpu_has_vnni()) << "int8 matmuls on oneDNN need VNNI (CPU level " << cpu_isa_summary()
                            << "); packed_int8_cpu.h serves other CPUs";
  return pack_onednn_weights(n, k, MatmulOperands::u8s8, dnnl::memory::data_type::s8, q, "int8");
}

void matmul_primitive_u8s8(int64_t m, const uint8_t* x, const OnednnWeights& w, int32_t* acc) {
  TFM_CHECK(m > 0 && w.desc != nullptr)
      << "matmul_primitive_u8s8: empty problem or unpacked weights (m=" << m << ")";
  run_primitive({m, w.n, w.k, false, Activation::none, primitive_threads(), MatmulOperands::u8s8},
                x, nullptr, nullptr, acc, &w);
}

OnednnWeights pack_bf16_matmul_weights(int64_t n, int64_t k, const uint16_t* w16) {
  TFM_CHECK(n > 0 && k > 0) << "pack_bf16_matmul_weights: empty weight (" << n << ", " << k << ")";
  TFM_CHECK(cpu_has_bf16_dot()) << "bf16 matmuls on packed weights need AVX512-BF16 (CPU level "
                                << cpu_isa_summary() << "); packed_bf16_cpu.h serves other CPUs";
  return pack_onednn_weights(n, k, MatmulOperands::bf16_packed, dnnl::memory::data_type::bf16, w16,
                             "bf16");
}

void matmul_primitive_bf16_packed(int64_t m, const uint16_t* x, const OnednnWeights& w,
                                  const float* bias, Activation post, float* y) {
  TFM_CHECK(m > 0 && w.desc != nullptr)
      << "matmul_primitive_bf16_packed: empty problem or unpacked weights (m=" << m << ")";
  run_primitive(
      {m, w.n, w.k, bias != nullptr, post, primitive_threads(), MatmulOperands::bf16_packed}, x,
      nullptr, bias, y, &w);
}

PrimitiveCacheStats matmul_primitive_cache_stats() {
  return primitive_cache().stats();
}
void clear_matmul_primitive_cache() {
  primitive_cache().clear();
}
void set_matmul_primitive_cache_capacity(size_t capacity) {
  primitive_cache().set_capacity(capacity);
}

OnednnWeights onednn_weights_as_laid_out(int64_t n, int64_t k, std::shared_ptr<void> data,
                                         std::shared_ptr<const void> desc) {
  OnednnWeights w;
  w.n = n;
  w.k = k;
  w.bytes = static_cast<const dnnl::memory::desc*>(desc.get())->get_size();
  w.data = std::move(data);
  w.desc = std::move(desc);
  w.other_layouts = std::make_shared<OtherLayouts>();
  return w;
}

}  // namespace tfm::cpu
