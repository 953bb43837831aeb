// Building blocks shared by the attention forward and backward kernels (internal to ops/cpu):
// 64-byte SIMD vectors through GCC/Clang vector extensions (one zmm register with AVX-512, split
// by the compiler elsewhere), a vectorised exp, register-tiled small GEMMs for the score and
// P·V tiles, the dropout keep mask and a per-thread scratch buffer.
//
// The tiles are tiny (tens of rows, Dh ≤ a few hundred), which is why they do not go through
// primitives.h: a oneDNN call costs about as much as a whole 32×32×64 tile.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>

#include "tfm/core/check.h"
#include "tfm/ops/cpu/philox_cpu.h"
#include "tfm/ops/cpu/simd_exp.h"

// Vector types returned by value change ABI without AVX-512; everything here is inline.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace tfm::cpu::attn {

template <typename T>
struct Simd;
template <>
struct Simd<float> {
  typedef float V __attribute__((vector_size(64)));
  typedef int32_t I __attribute__((vector_size(64)));
  static constexpr int L = 16;
};
template <>
struct Simd<double> {
  typedef double V __attribute__((vector_size(64)));
  typedef int64_t I __attribute__((vector_size(64)));
  static constexpr int L = 8;
};
template <typename T>
using Vec = typename Simd<T>::V;

// The vector registers a register tile may fill, counted in Vec: 32 zmm holding one Vec each where
// the code is compiled for AVX-512 (TFM_NATIVE on such a CPU), 16 ymm holding half a Vec each in
// the portable x86-64-v3 build. Tiles sized for 32 registers spill half their accumulators to the
// stack in the second case: on the AVX2 machine that made attention's tiles a quarter of a
// training step (docs/history/performance.md, "AVX2").
#ifdef __AVX512F__
constexpr int kTileVecRegs = 32;
#else
constexpr int kTileVecRegs = 8;
#endif

// The kernels built on these blocks are compiled once at the library's baseline and, for f32, a
// second time for AVX-512 (attention_cpu.cpp, attention_backward_cpu.cpp,
// decode_attention_cpu.cpp: a function under `#pragma GCC target` that calls the same templates
// with Regs = 32). Every block that takes or returns a vector is always inlined, so each copy
// gets its own instructions and no 64-byte vector is ever passed between code of the two levels
// (their calling conventions differ). The blocks add the same products in the same order at
// either register budget, so both copies give the same bits (tests/ops/test_cpu_levels.cpp).
#define TFM_TILE_INLINE [[gnu::always_inline]] inline

template <typename T>
constexpr T kNegInf = -std::numeric_limits<T>::infinity();
template <typename T>
constexpr T kInf = std::numeric_limits<T>::infinity();

// Work below which a parallel chunk is not worth a thread wake-up (~a few microseconds).
constexpr double kMinChunkFlops = 1 << 18;

inline int64_t round_up(int64_t n, int64_t m) {
  return (n + m - 1) / m * m;
}

// A vector of W (by default one Vec<T>; decode attention also loads 8-lane halves) from p.
template <typename T, typename W = Vec<T>>
TFM_TILE_INLINE W vload(const T* p) {
  W v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <typename T>
TFM_TILE_INLINE void vstore(T* p, Vec<T> v) {
  std::memcpy(p, &v, sizeof v);
}
template <typename T>
TFM_TILE_INLINE Vec<T> splat(T x) {
  return Vec<T>{} + x;
}
// Element type and lane count of a vector type V.
template <typename V>
using Elem = std::remove_cvref_t<decltype(std::declval<V>()[0])>;
template <typename V>
constexpr int kLanes = static_cast<int>(sizeof(V) / sizeof(Elem<V>));

// Horizontal sum / max by halving: the compiler turns the half copies into lane extracts.
template <typename V, typename Op>
TFM_TILE_INLINE Elem<V> reduce_lanes(V v, Op op) {
  using E = Elem<V>;
  if constexpr (sizeof(V) == 2 * sizeof(E)) {
    return op(v[0], v[1]);
  } else {
    typedef E H __attribute__((vector_size(sizeof(V) / 2)));
    H lo, hi;
    std::memcpy(&lo, &v, sizeof(H));
    std::memcpy(&hi, reinterpret_cast<const char*>(&v) + sizeof(H), sizeof(H));
    return reduce_lanes(op(lo, hi), op);
  }
}
template <typename V>
TFM_TILE_INLINE Elem<V> hsum(V v) {
  return reduce_lanes(
      v, [](auto a, auto b) __attribute__((always_inline)) { return a + b; });
}
template <typename V>
TFM_TILE_INLINE Elem<V> hmax(V v) {
  return reduce_lanes(
      v, [](auto a, auto b) __attribute__((always_inline)) { return a > b ? a : b; });
}

// exp for softmax arguments: simd_exp.h's one f32 exp on the tile's vectors. f64 is the
// reference/gradient-check path and uses std::exp.
TFM_TILE_INLINE Vec<float> exp_vec(Vec<float> x) {
  return exp_f32<Vec<float>, Simd<float>::I>(x);
}
TFM_TILE_INLINE Vec<double> exp_vec(Vec<double> x) {
  for (int i = 0; i < Simd<double>::L; ++i) x[i] = std::exp(x[i]);
  return x;
}

// row[j] = exp(row[j] - m) for j < n (a multiple of the vector width); returns the sum.
template <typename T>
TFM_TILE_INLINE T exp_shifted_sum(T* row, int64_t n, T m) {
  constexpr int L = Simd<T>::L;
  Vec<T> sum{};
  for (int64_t j = 0; j < n; j += L) {
    const Vec<T> p = exp_vec(vload(row + j) - m);
    vstore(row + j, p);
    sum += p;
  }
  return hsum(sum);
}

// s + Σ_i a[i]·b[i], each product rounded on its own and added in order. Written out because
// GCC vectorises the plain loop by the vector width in use (products of a vector rounded, then
// added in order, the leftovers fused into one multiply-add each), which would make the two
// levels' copies of a kernel differ; for lengths that are a multiple of 8 this is what the
// plain loop gave in the AVX2 build.
template <typename T>
TFM_TILE_INLINE T sum_products_in_order(const T* a, const T* b, int64_t n, T s) {
  for (int64_t i = 0; i < n; ++i) {
    T p = a[i] * b[i];
    asm("" : "+x"(p));  // opaque: no fused multiply-add with s, no vector of products
    s += p;
  }
  return s;
}

// One register tile of C (R × NV·L) (+)= A (R × K) · B (K × NV·L). Element (i, p) of A is
// a[i·a_rs + p·a_cs] (A may be a transposed view); row p of B starts at b + p·ldb.
template <typename T, int R, int NV, bool kAcc>
TFM_TILE_INLINE void gemm_micro(int64_t K, const T* a, int64_t a_rs, int64_t a_cs, const T* b,
                                int64_t ldb, T* c, int64_t ldc) {
  constexpr int L = Simd<T>::L;
  Vec<T> acc[R][NV];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = kAcc ? vload(c + r * ldc + v * L) : Vec<T>{};
  for (int64_t p = 0; p < K; ++p) {
    Vec<T> bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = vload(b + p * ldb + v * L);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const T av = a[r * a_rs + p * a_cs];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] += bv[v] * av;
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) vstore(c + r * ldc + v * L, acc[r][v]);
}

// The last rows < R of gemm_rows: one micro tile of exactly `rows` rows.
template <typename T, int NV, bool kAcc, int R>
TFM_TILE_INLINE void gemm_tail_rows(int64_t rows, int64_t K, const T* a, int64_t a_rs, int64_t a_cs,
                                    const T* b, int64_t ldb, T* c, int64_t ldc) {
  if constexpr (R > 0) {
    if (rows == R) return gemm_micro<T, R, NV, kAcc>(K, a, a_rs, a_cs, b, ldb, c, ldc);
    gemm_tail_rows<T, NV, kAcc, R - 1>(rows, K, a, a_rs, a_cs, b, ldb, c, ldc);
  }
}

template <typename T, int NV, bool kAcc, int Regs>
TFM_TILE_INLINE void gemm_rows(int64_t M, int64_t K, const T* a, int64_t a_rs, int64_t a_cs,
                               const T* b, int64_t ldb, T* c, int64_t ldc) {
  // Enough rows to reuse each loaded B vector many times and hide FMA latency, few enough that
  // accumulators, B vectors and a broadcast fit in the registers: with 32, 8 × 2 or 6 × 3..4
  // (about 24 accumulators); with 16 ymm, 6 × 1 of two halves (BLIS's Haswell 6 × 16 tile).
  constexpr int R = Regs >= 32 ? (NV <= 2 ? 8 : 6) : 6;
  static_assert(R * NV + NV < Regs, "the tile does not fit in the registers");
  int64_t i = 0;
  for (; i + R <= M; i += R)
    gemm_micro<T, R, NV, kAcc>(K, a + i * a_rs, a_rs, a_cs, b, ldb, c + i * ldc, ldc);
  gemm_tail_rows<T, NV, kAcc, R - 1>(M - i, K, a + i * a_rs, a_rs, a_cs, b, ldb, c + i * ldc, ldc);
}

template <typename T, bool kAcc, int Regs>
TFM_TILE_INLINE void tile_gemm_impl(int64_t M, int64_t N, int64_t K, const T* a, int64_t a_rs,
                                    int64_t a_cs, const T* b, int64_t ldb, T* c, int64_t ldc) {
  constexpr int L = Simd<T>::L;
  int64_t j = 0;
  if constexpr (Regs < 32) {  // one vector of columns a tile (see kTileVecRegs)
    for (; j + L <= N; j += L)
      gemm_rows<T, 1, kAcc, Regs>(M, K, a, a_rs, a_cs, b + j, ldb, c + j, ldc);
  } else {
    for (; j + 4 * L <= N; j += 4 * L)
      gemm_rows<T, 4, kAcc, Regs>(M, K, a, a_rs, a_cs, b + j, ldb, c + j, ldc);
    switch ((N - j) / L) {
      case 1:
        gemm_rows<T, 1, kAcc, Regs>(M, K, a, a_rs, a_cs, b + j, ldb, c + j, ldc);
        j += L;
        break;
      case 2:
        gemm_rows<T, 2, kAcc, Regs>(M, K, a, a_rs, a_cs, b + j, ldb, c + j, ldc);
        j += 2 * L;
        break;
      case 3:
        gemm_rows<T, 3, kAcc, Regs>(M, K, a, a_rs, a_cs, b + j, ldb, c + j, ldc);
        j += 3 * L;
        break;
      default:
        break;
    }
  }
  // Columns past the last full vector (odd head widths only).
  for (int64_t i = 0; i < M; ++i)
    for (int64_t jj = j; jj < N; ++jj) {
      T s = kAcc ? c[i * ldc + jj] : T(0);
      // One fused multiply-add a step, written out: the plain loop's roundings depended on
      // how GCC vectorised it at each call site and level.
      for (int64_t p = 0; p < K; ++p) s = std::fma(a[i * a_rs + p * a_cs], b[p * ldb + jj], s);
      c[i * ldc + jj] = s;
    }
}

// C (M × N, ldc) = A·B, or += A·B when accumulate; A and B addressed as in gemm_micro. Regs:
// the vector registers the tiles may fill (kTileVecRegs; 32 in an AVX-512 copy).
template <int Regs, typename T>
TFM_TILE_INLINE void tile_gemm(bool accumulate, int64_t M, int64_t N, int64_t K, const T* a,
                               int64_t a_rs, int64_t a_cs, const T* b, int64_t ldb, T* c,
                               int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (accumulate)
    tile_gemm_impl<T, true, Regs>(M, N, K, a, a_rs, a_cs, b, ldb, c, ldc);
  else
    tile_gemm_impl<T, false, Regs>(M, N, K, a, a_rs, a_cs, b, ldb, c, ldc);
}

// s[i·lds + j] = q_i · k_j for M (few) query rows and N keys, straight from the strided rows: for
// one or two queries (decoding) transposing K into a panel would cost as much as the dots.
template <typename T>
TFM_TILE_INLINE void scores_dot(int64_t M, int64_t N, int64_t D, const T* q, int64_t ldq,
                                const T* k, int64_t ldk, T* s, int64_t lds) {
  constexpr int L = Simd<T>::L;
  const int64_t dv = D / L * L;
  for (int64_t i = 0; i < M; ++i) {
    const T* qi = q + i * ldq;
    int64_t j = 0;
    for (; j + 4 <= N; j += 4) {
      Vec<T> acc[4] = {};
      for (int64_t d = 0; d < dv; d += L) {
        const Vec<T> qv = vload(qi + d);
#pragma GCC unroll 4
        for (int g = 0; g < 4; ++g) acc[g] += qv * vload(k + (j + g) * ldk + d);
      }
      for (int g = 0; g < 4; ++g) {
        T t = hsum(acc[g]);
        t = sum_products_in_order(qi + dv, k + (j + g) * ldk + dv, D - dv, t);
        s[i * lds + j + g] = t;
      }
    }
    for (; j < N; ++j) {
      Vec<T> acc{};
      for (int64_t d = 0; d < dv; d += L) acc += vload(qi + d) * vload(k + j * ldk + d);
      T t = hsum(acc);
      t = sum_products_in_order(qi + dv, k + j * ldk + dv, D - dv, t);
      s[i * lds + j] = t;
    }
  }
}

// dst (16 × ldd block) ← the 16×16 block at src (row stride lds) transposed, in registers:
// interleave pairs of rows, then quads within 128-bit lanes, then 128-bit lanes (the shuffles
// compile to vunpcklps/vshufps/vshuff32x4 with AVX-512).
TFM_TILE_INLINE void transpose16(const float* src, int64_t lds, int64_t rows, float* dst,
                                 int64_t ldd) {
  using V = Vec<float>;
  V r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = i < rows ? vload(src + i * lds) : V{};
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = __builtin_shufflevector(r[2 * i], r[2 * i + 1], 0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9,
                                       25, 12, 28, 13, 29);
    t[2 * i + 1] = __builtin_shufflevector(r[2 * i], r[2 * i + 1], 2, 18, 3, 19, 6, 22, 7, 23, 10,
                                           26, 11, 27, 14, 30, 15, 31);
  }
  for (int g = 0; g < 4; ++g)
    for (int h = 0; h < 2; ++h) {
      const V a = t[4 * g + h], b = t[4 * g + h + 2];
      r[4 * g + 2 * h] =
          __builtin_shufflevector(a, b, 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29);
      r[4 * g + 2 * h + 1] =
          __builtin_shufflevector(a, b, 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31);
    }
  // Now r[4g + c], 128-bit lane L, holds rows 4g..4g+3 of column 4L + c.
  const auto lanes02 =
      [](V a, V b) __attribute__((always_inline)) {  // 128-bit lanes 0, 2 of a then of b
    return __builtin_shufflevector(a, b, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27);
  };
  const auto lanes13 = [](V a, V b) __attribute__((always_inline)) {
    return __builtin_shufflevector(a, b, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30,
                                   31);
  };
  for (int c = 0; c < 4; ++c) {
    const V v0 = lanes02(r[c], r[4 + c]), v1 = lanes13(r[c], r[4 + c]);
    const V w0 = lanes02(r[8 + c], r[12 + c]), w1 = lanes13(r[8 + c], r[12 + c]);
    vstore(dst + c * ldd, lanes02(v0, w0));
    vstore(dst + (4 + c) * ldd, lanes02(v1, w1));
    vstore(dst + (8 + c) * ldd, lanes13(v0, w0));
    vstore(dst + (12 + c) * ldd, lanes13(v1, w1));
  }
}

// Packs rows [0, n) of a strided (n × D) block transposed into dst (D × npad), zero columns
// from n to npad, so score tiles read contiguous key vectors.
template <typename T>
TFM_TILE_INLINE void pack_transposed(int64_t n, int64_t npad, int64_t D, const T* src, int64_t lds,
                                     T* dst) {
  if constexpr (std::is_same_v<T, float>) {
    if (npad % 16 == 0 && D >= 16) {  // 16×16 blocks in registers, zero rows past n
      const int64_t d16 = D / 16 * 16;
      for (int64_t j0 = 0; j0 < npad; j0 += 16)
        for (int64_t d0 = 0; d0 < d16; d0 += 16)
          transpose16(j0 < n ? src + j0 * lds + d0 : src, lds, std::max<int64_t>(0, n - j0),
                      dst + d0 * npad + j0, npad);
      for (int64_t d = d16; d < D; ++d)
        for (int64_t j = 0; j < npad; ++j) dst[d * npad + j] = j < n ? src[j * lds + d] : T(0);
      return;
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    const T* r = src + j * lds;
    for (int64_t d = 0; d < D; ++d) dst[d * npad + j] = r[d];
  }
  for (int64_t d = 0; d < D; ++d)
    for (int64_t j = n; j < npad; ++j) dst[d * npad + j] = T(0);
}

// --- Dropout ------------------------------------------------------------------------------

// z[j] = keep(base + j) ? keep_scale : 0 for j < n: the dropout multipliers of n consecutive
// elements of the stream (one query row's keys in a block).
template <typename T>
inline void dropout_multipliers(uint64_t seed, uint64_t stream, uint64_t base, int64_t n,
                                uint32_t threshold, T keep_scale, T* z) {
  if (n <= 0) return;
  const uint64_t end = base + static_cast<uint64_t>(n);
  uint32_t w[32];
  for (uint64_t blk = base / 4; blk * 4 < end; blk += 8) {
    philox_words_x8(blk, seed, stream, w);
    const uint64_t e0 = blk * 4;
    const uint64_t lo = std::max(e0, base), hi = std::min(e0 + 32, end);
    for (uint64_t e = lo; e < hi; ++e)
      z[e - base] = (w[e - e0] >> 8) >= threshold ? keep_scale : T(0);
  }
}

// --- Scratch ------------------------------------------------------------------------------

// A per-thread, 64-byte aligned buffer that grows and is never given back, so steady-state calls
// (decoding step after step) allocate nothing. Arrays are carved from it in order.
class Scratch {
 public:
  explicit Scratch(size_t bytes) {
    thread_local Buffer buf;
    if (buf.size < bytes) {
      buf.data.reset(static_cast<char*>(std::aligned_alloc(64, round_up_bytes(bytes))));
      TFM_CHECK(buf.data != nullptr)
          << "attention: cannot allocate " << bytes << " bytes of scratch";
      buf.size = round_up_bytes(bytes);
    }
    base_ = buf.data.get();
    size_ = bytes;
  }
  template <typename T>
  T* take(int64_t count) {
    T* p = reinterpret_cast<T*>(base_ + used_);
    used_ += round_up_bytes(static_cast<size_t>(count) * sizeof(T));
    TFM_CHECK(used_ <= size_) << "attention: scratch overrun (" << used_ << " > " << size_ << ")";
    return p;
  }
  // Bytes to reserve for an array of count T (each array starts 64-byte aligned).
  template <typename T>
  static size_t bytes_for(int64_t count) {
    return round_up_bytes(static_cast<size_t>(count) * sizeof(T));
  }

 private:
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  struct Buffer {
    std::unique_ptr<char, Free> data;
    size_t size = 0;
  };
  static size_t round_up_bytes(size_t n) { return (n + 63) / 64 * 64; }
  char* base_ = nullptr;
  size_t size_ = 0;
  size_t used_ = 0;
};

}  // namespace tfm::cpu::attn
