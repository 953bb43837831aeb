#include <cublasLt.h>

#include <map>
#include <memory>
#include <tuple>

#include "tfm/core/check.h"
#include "tfm/core/cuda/device_allocator.h"
#include "tfm/ops/cuda/common.cuh"
#include "tfm/ops/cuda/elementwise.h"
#include "tfm/ops/cuda/gemm.h"

namespace tfm::cuda {

namespace {

// One handle and one workspace for the process, made on first use. Leaked on purpose: they
// may be needed by tensors released after main returns.
struct LtContext {
  cublasLtHandle_t handle = nullptr;
  std::shared_ptr<void> workspace;
};

LtContext& lt_context() {
  static LtContext* ctx = [] {
    require_device("cuBLASLt");
    auto* c = new LtContext();
    TFM_CUBLAS_CHECK(cublasLtCreate(&c->handle));
    c->workspace = device_allocator().allocate(kGemmWorkspaceBytes);
    return c;
  }();
  return *ctx;
}

// The largest power of two (at most 256, cuBLASLt's default assumption) dividing the address,
// and at least the element size. Views into a tensor (a head's slice of a fused projection, say)
// are often less aligned than the allocator's blocks, and an algorithm chosen for 256-byte
// alignment would refuse them.
uint32_t alignment_of(const void* p, uint32_t element_bytes) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  uint32_t align = 256;
  while (align > element_bytes && a % align != 0) align /= 2;
  return align;
}

// The heuristic query costs far more than a small GEMM, and building the five cuBLASLt
// descriptors of a call costs about what launching it does; so both are kept per problem: sizes,
// transposes, leading dimensions, epilogue, operand alignments and the operands' type (f32, bf16
// for mixed precision, s8 for int8 inference; C is s32 for s8, f32 otherwise) decide the
// algorithm. Kept per thread: the bias
// pointer is set on the cached descriptor at each call, and no lock is taken.
using PlanKey = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int,
                           uint32_t, uint32_t, uint32_t, int>;

// The descriptors and algorithm of one problem, destroyed with the thread's cache.
struct Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {  // host objects only: safe at any time, the CUDA context alive or not
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

std::map<PlanKey, std::unique_ptr<Plan>>& plan_cache() {
  thread_local std::map<PlanKey, std::unique_ptr<Plan>> plans;
  return plans;
}

// RAII for the preference of one heuristic query.
struct Preference {
  cublasLtMatmulPreference_t pref = nullptr;
  ~Preference() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
  }
};

// The compute, scale and C types that go with the operands' type: f32 for f32 and bf16 operands,
// s32 for s8 (IMMA: exact integer sums).
struct LtTypes {
  cublasComputeType_t compute;
  cudaDataType_t scale, c;
};

LtTypes lt_types(cudaDataType_t ab_type) {
  if (ab_type == CUDA_R_8I) return {CUBLAS_COMPUTE_32I, CUDA_R_32I, CUDA_R_32I};
  return {CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F};
}

// The plan for a problem, made (descriptors, then the heuristic's algorithm) the first time.
// Null when the heuristic offers no algorithm and `optional` (s8: the caller has its own kernel);
// an error otherwise. A miss is cached too.
Plan* plan_for(const PlanKey& key, const LtContext& ctx, bool optional) {
  auto& cache = plan_cache();
  if (auto it = cache.find(key); it != cache.end()) return it->second.get();
  const auto& [trans_a, trans_b, m, n, k, lda, ldb, ldc, epilogue_value, align_first, align_second,
               align_c, operand_type] = key;
  const auto epilogue = static_cast<cublasLtEpilogue_t>(epilogue_value);
  const auto ab_type = static_cast<cudaDataType_t>(operand_type);
  const LtTypes types = lt_types(ab_type);
  auto plan = std::make_unique<Plan>();
  Plan& d = *plan;
  TFM_CUBLAS_CHECK(cublasLtMatmulDescCreate(&d.op, types.compute, types.scale));
  const cublasOperation_t op_first = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  TFM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_first,
                                                  sizeof op_first));
  TFM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_second,
                                                  sizeof op_second));
  TFM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                                  sizeof epilogue));
  if (types.c == CUDA_R_32F) {
    // The bias is f32 whatever the operands are (cuBLASLt's default would follow them for bf16).
    const cudaDataType_t bias_type = CUDA_R_32F;
    TFM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                    &bias_type, sizeof bias_type));
  }
  // Stored (column-major) shapes: the first operand is B's storage, the second A's.
  const auto u = [](int64_t x) { return static_cast<uint64_t>(x); };
  TFM_CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&d.a, ab_type, u(trans_b ? k : n), u(trans_b ? n : k), ldb));
  TFM_CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&d.b, ab_type, u(trans_a ? m : k), u(trans_a ? k : m), lda));
  TFM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d.c, types.c, u(n), u(m), ldc));
  Preference p;
  const size_t ws = kGemmWorkspaceBytes;
  TFM_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&p.pref));
  TFM_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      p.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> aligns[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_first},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_second},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_c},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_c}};
  for (const auto& [attr, value] : aligns)
    TFM_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(p.pref, attr, &value, sizeof value));
  cublasLtMatmulHeuristicResult_t heur{};
  int found = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(ctx.handle, d.op, d.a, d.b, d.c, d.c,
                                                               p.pref, 1, &heur, &found);
  if (optional && (status != CUBLAS_STATUS_SUCCESS || found == 0))
    return cache.emplace(key, nullptr).first->second.get();
  TFM_CUBLAS_CHECK(status);
  TFM_CHECK(found > 0) << "cuda gemm: cuBLASLt has no algorithm for " << m << "x" << n << "x" << k
                       << " (trans_a=" << trans_a << ", trans_b=" << trans_b << ")";
  d.algo = heur.algo;
  return cache.emplace(key, std::move(plan)).first->second.get();
}

// Row-major C (M×N) = op(A)·op(B) is column-major Cᵀ (N×M) = op(B)ᵀ·op(A)ᵀ, and a row-major
// matrix is its transpose read column-major: so cuBLAS sees B first, each with its own flag.
// A bias (length N = rows of the column-major result) and activation go in the epilogue.
// `a` and `b` hold elements of ab_type: f32, bf16 (mixed precision) or s8; C and the scalars
// alpha, beta are f32, or s32 for s8. False (nothing queued) when `optional` and cuBLASLt has no
// algorithm for the problem.
bool lt_matmul_typed(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const void* alpha,
                     const void* a, int64_t lda, const void* b, int64_t ldb, const void* beta,
                     void* c, int64_t ldc, const float* bias, cublasLtEpilogue_t epilogue,
                     const Stream& stream, cudaDataType_t ab_type, bool optional = false) {
  TFM_CHECK(m >= 0 && n >= 0 && k > 0)
      << "cuda gemm: sizes must be M, N >= 0 and K > 0, got " << m << "x" << n << "x" << k;
  if (m == 0 || n == 0) return true;
  TFM_CHECK(ldc >= n && lda >= (trans_a ? m : k) && ldb >= (trans_b ? k : n))
      << "cuda gemm: leading dimensions lda=" << lda << " ldb=" << ldb << " ldc=" << ldc
      << " too small for " << m << "x" << n << "x" << k;
  LtContext& ctx = lt_context();
  const uint32_t ab_bytes = ab_type == CUDA_R_16BF ? 2 : ab_type == CUDA_R_8I ? 1 : 4;
  const uint32_t align_first = alignment_of(b, ab_bytes), align_second = alignment_of(a, ab_bytes),
                 align_c = alignment_of(c, 4);
  const PlanKey key =
      std::make_tuple(trans_a, trans_b, m, n, k, lda, ldb, ldc, static_cast<int>(epilogue),
                      align_first, align_second, align_c, static_cast<int>(ab_type));
  Plan* d = plan_for(key, ctx, optional);
  if (d == nullptr) return false;
  if (bias != nullptr) {
    TFM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                    sizeof bias));
  }
  TFM_CUBLAS_CHECK(cublasLtMatmul(ctx.handle, d->op, alpha, b, d->a, a, d->b, beta, c, d->c, c,
                                  d->c, &d->algo, ctx.workspace.get(), kGemmWorkspaceBytes,
                                  detail::native(stream)));
  return true;
}

// The f32-result form (f32 or bf16 operands).
void lt_matmul(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               const void* a, int64_t lda, const void* b, int64_t ldb, float beta, float* c,
               int64_t ldc, const float* bias, cublasLtEpilogue_t epilogue, const Stream& stream,
               cudaDataType_t ab_type = CUDA_R_32F) {
  lt_matmul_typed(trans_a, trans_b, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc, bias, epilogue,
                  stream, ab_type);
}

// Bias and ReLU in the epilogue; GELU, SiLU and tanh-GELU after it (see linear_forward in gemm.h).
cublasLtEpilogue_t linear_epilogue(const float* bias, Activation act) {
  if (act == Activation::relu)
    return bias != nullptr ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  return bias != nullptr ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
          const Stream& stream) {
  lt_matmul(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nullptr,
            CUBLASLT_EPILOGUE_DEFAULT, stream);
}

void linear_forward(int64_t m, int64_t n, int64_t k, const float* x, const float* w,
                    const float* bias, Activation act, float* y, const Stream& stream) {
  lt_matmul(false, true, m, n, k, 1.0f, x, k, w, k, 0.0f, y, n, bias, linear_epilogue(bias, act),
            stream);
  input_activation_forward(act, m * n, y, y, stream);
}

void gemm_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb, float beta, float* c,
               int64_t ldc, const Stream& stream) {
  lt_matmul(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nullptr,
            CUBLASLT_EPILOGUE_DEFAULT, stream, CUDA_R_16BF);
}

void linear_forward_bf16(int64_t m, int64_t n, int64_t k, const uint16_t* x, const uint16_t* w,
                         const float* bias, Activation act, float* y, const Stream& stream) {
  lt_matmul(false, true, m, n, k, 1.0f, x, k, w, k, 0.0f, y, n, bias, linear_epilogue(bias, act),
            stream, CUDA_R_16BF);
  input_activation_forward(act, m * n, y, y, stream);
}

void linear_backward_bf16(int64_t m, int64_t n, int64_t k, const float* dz, const uint16_t* x,
                          const uint16_t* w, float* dx, float* dw, float* db,
                          const Stream& stream) {
  if (db != nullptr) column_sums(m, n, dz, db, stream);
  if ((dx == nullptr && dw == nullptr) || m == 0 || n == 0 || k == 0) return;
  // dz's bf16 rounding, shared by both GEMMs. Freed once queued: the caching allocator hands the
  // block out again only to work queued after these GEMMs on the one stream.
  std::shared_ptr<void> dz_buf = device_allocator().allocate(static_cast<size_t>(m * n) * 2);
  auto* dzb = static_cast<uint16_t*>(dz_buf.get());
  float_to_bf16(m * n, dz, dzb, stream);
  if (dx != nullptr) gemm_bf16(false, false, m, k, n, 1.0f, dzb, n, w, k, 0.0f, dx, k, stream);
  if (dw != nullptr) gemm_bf16(true, false, n, k, m, 1.0f, dzb, n, x, k, 0.0f, dw, k, stream);
}

bool gemm_s8_cublaslt(int64_t m, int64_t n, int64_t k, const int8_t* a, int64_t lda,
                      const int8_t* b, int64_t ldb, int32_t* c, int64_t ldc, const Stream& stream) {
  const int32_t alpha = 1, beta = 0;
  return lt_matmul_typed(false, true, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc, nullptr,
                         CUBLASLT_EPILOGUE_DEFAULT, stream, CUDA_R_8I, /*optional=*/true);
}

void linear_backward(int64_t m, int64_t n, int64_t k, const float* dz, const float* x,
                     const float* w, float* dx, float* dw, float* db, const Stream& stream) {
  if (dx != nullptr) gemm(false, false, m, k, n, 1.0f, dz, n, w, k, 0.0f, dx, k, stream);
  if (dw != nullptr) gemm(true, false, n, k, m, 1.0f, dz, n, x, k, 0.0f, dw, k, stream);
  if (db != nullptr) column_sums(m, n, dz, db, stream);
}

}  // namespace tfm::cuda
