// The CUDA backend as libtfm sees it: a table of entry points filled by libtfm_cuda.so, the
// plugin built from core/cuda and ops/cuda, which libtfm opens the first time a cuda function is
// called (core/plugin.h). libtfm itself has no link-time reference to CUDA: every function of
// tfm::cuda that code outside the backend calls is defined in libtfm as a forwarding stub
// (ops/cuda_backend.cpp) generated from the list below, so the call sites (`cuda::gemm(...)`)
// and the declarations in core/cuda/*.h and ops/cuda/*.h are those of a linked backend.
//
// Adding a CUDA function that libtfm (or a test) calls: declare and define it in core/cuda or
// ops/cuda as usual, then add one line to TFM_CUDA_FUNCTIONS: (return type, name, parameter
// types, in order). A line that does not match the declaration fails to compile, and a
// function missing from the list is an undefined reference when a program links libtfm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tfm/core/cuda/accumulate.h"
#include "tfm/core/cuda/device_allocator.h"
#include "tfm/core/cuda/memory.h"
#include "tfm/core/cuda/runtime.h"
#include "tfm/core/cuda/strided_copy.h"
#include "tfm/core/rng.h"
#include "tfm/ops/cuda/adam.h"
#include "tfm/ops/cuda/attention.h"
#include "tfm/ops/cuda/cross_entropy.h"
#include "tfm/ops/cuda/decode_attention.h"
#include "tfm/ops/cuda/decode_steps.h"
#include "tfm/ops/cuda/dropout.h"
#include "tfm/ops/cuda/elementwise.h"
#include "tfm/ops/cuda/embedding.h"
#include "tfm/ops/cuda/gemm.h"
#include "tfm/ops/cuda/index.h"
#include "tfm/ops/cuda/layer_norm.h"
#include "tfm/ops/cuda/lowp_linear.h"
#include "tfm/ops/cuda/reduce.h"
#include "tfm/ops/cuda/softmax.h"
#include "tfm/types.h"

// clang-format off
// Functions of tfm::cuda, one a line: (return type, name, parameter types).
#define TFM_CUDA_FUNCTIONS(X)                                                                    \
  /* core/cuda/runtime.h (device_count, no_device_reason and Stream: below) */                   \
  X(void, require_device, const char*)                                                           \
  X(std::string, explain_no_device, int, int, int)                                               \
  X(DeviceInfo, device_info, int)                                                                \
  X(std::string, describe, const DeviceInfo&)                                                    \
  X(void, synchronize)                                                                           \
  X(const Stream&, default_stream)                                                               \
  /* core/cuda: memory, copies, the allocator */                                                 \
  X(CudaCachingAllocator&, device_allocator)                                                     \
  X(void, copy_host_to_device, void*, const void*, size_t)                                       \
  X(void, copy_device_to_host, void*, const void*, size_t)                                       \
  X(void, copy_device_to_device, void*, const void*, size_t)                                     \
  X(void, memset_zero, void*, size_t)                                                            \
  X(void, gather_strided, int, const int64_t*, const int64_t*, size_t, const void*, void*)       \
  X(void, copy_2d, int64_t, size_t, const void*, size_t, void*, size_t)                          \
  X(void, add_into, float*, const float*, int64_t)                                               \
  /* ops/cuda */                                                                                 \
  X(void, adam_step, int64_t, float*, const float*, float*, float*, const AdamUpdate&,            \
    const Stream&)                                                                               \
  X(void, adam_step_multi, const std::vector<AdamTensor>&, const AdamUpdate&, const Stream&)     \
  X(void, attention_forward, const AttentionShape&, const AttentionConfig&, const float*,        \
    const float*, const float*, float*, float*, const Stream&)                                   \
  X(void, attention_backward, const AttentionShape&, const AttentionConfig&, const float*,       \
    const float*, const float*, const float*, const float*, const float*, float*, float*,        \
    float*, const Stream&)                                                                       \
  X(CrossEntropyTotals, cross_entropy_forward, int64_t, int64_t, const float*, const int32_t*,   \
    int64_t, double, float*, float*, const Stream&)                                              \
  X(void, cross_entropy_backward, int64_t, int64_t, const float*, const int32_t*, int64_t,       \
    double, const float*, const float*, double, float*, const Stream&)                           \
  X(void, decode_attention_forward, const kernels::DecodeAttentionArgs&, const Stream&)          \
  X(void, mask_step_rows, int64_t, int64_t, float*, const uint8_t*, int32_t, int32_t, int32_t,   \
    const Stream&)                                                                               \
  X(void, top_k_rows, int64_t, int64_t, int64_t, const float*, int32_t*, float*, const Stream&)  \
  X(void, mean_over_heads, int64_t, int64_t, int64_t, const float*, float*, const Stream&)       \
  X(void, dropout_apply, int64_t, const float*, const RandomStream&, double, float*,             \
    const Stream&)                                                                               \
  X(void, axpby, int64_t, float, const float*, float, const float*, float*, const Stream&)       \
  X(void, mul, int64_t, const float*, const float*, float*, const Stream&)                       \
  X(void, scale, int64_t, float, const float*, float*, const Stream&)                            \
  X(void, divide, int64_t, float, const float*, float*, const Stream&)                           \
  X(void, relu_forward, int64_t, const float*, float*, const Stream&)                            \
  X(void, relu_backward, int64_t, const float*, const float*, float*, const Stream&)             \
  X(void, gelu_forward, int64_t, const float*, float*, const Stream&)                            \
  X(void, gelu_backward, int64_t, const float*, const float*, float*, const Stream&)             \
  X(void, input_activation_forward, Activation, int64_t, const float*, float*, const Stream&)    \
  X(void, input_activation_backward, Activation, int64_t, const float*, const float*, float*,    \
    const Stream&)                                                                               \
  X(void, float_to_bf16, int64_t, const float*, uint16_t*, const Stream&)                        \
  X(void, column_sums, int64_t, int64_t, const float*, float*, const Stream&)                    \
  X(void, embedding_forward, int64_t, const int32_t*, int64_t, int64_t, const float*, float*,    \
    const Stream&)                                                                               \
  X(void, embedding_backward, int64_t, const int32_t*, int64_t, int64_t, int64_t, const float*,  \
    float*, const Stream&)                                                                       \
  X(void, gemm, bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,             \
    const float*, int64_t, float, float*, int64_t, const Stream&)                                \
  X(void, linear_forward, int64_t, int64_t, int64_t, const float*, const float*, const float*,   \
    Activation, float*, const Stream&)                                                           \
  X(void, linear_backward, int64_t, int64_t, int64_t, const float*, const float*, const float*,  \
    float*, float*, float*, const Stream&)                                                        \
  X(void, gemm_bf16, bool, bool, int64_t, int64_t, int64_t, float, const uint16_t*, int64_t,     \
    const uint16_t*, int64_t, float, float*, int64_t, const Stream&)                             \
  X(void, linear_forward_bf16, int64_t, int64_t, int64_t, const uint16_t*, const uint16_t*,      \
    const float*, Activation, float*, const Stream&)                                             \
  X(void, linear_backward_bf16, int64_t, int64_t, int64_t, const float*, const uint16_t*,        \
    const uint16_t*, float*, float*, float*, const Stream&)                                      \
  X(bool, gemm_s8_cublaslt, int64_t, int64_t, int64_t, const int8_t*, int64_t, const int8_t*,    \
    int64_t, int32_t*, int64_t, const Stream&)                                                   \
  X(void, quantize_rows_s8, int64_t, int64_t, int64_t, const float*, int8_t*, int64_t, float*,     \
    int32_t*, const Stream&)                                                                     \
  X(void, gemm_s8_simple, int64_t, int64_t, int64_t, const int8_t*, const int8_t*, int32_t*,       \
    int64_t, const Stream&)                                                                      \
  X(void, linear_forward_int8, int64_t, int64_t, int64_t, const float*, const int8_t*,           \
    const float*, const int32_t*, const float*, Activation, float*, Int8Gemm, const Stream&)     \
  X(void, copy_rows, int64_t, size_t, const void*, int64_t, const int32_t*, void*, int64_t,      \
    const Stream&)                                                                               \
  X(void, pick_columns, int64_t, int64_t, const float*, const int32_t*, float*, const Stream&)    \
  X(void, equal_mask, int64_t, const int32_t*, int32_t, uint8_t*, const Stream&)                 \
  X(void, layer_norm_forward, int64_t, int64_t, const float*, const float*, const float*,        \
    double, float*, double*, double*, const Stream&)                                             \
  X(void, add_layer_norm_forward, int64_t, int64_t, const float*, const float*, const float*,    \
    const float*, double, float*, float*, double*, double*, const Stream&)                       \
  X(void, layer_norm_backward, int64_t, int64_t, const float*, const float*, const double*,      \
    const double*, const float*, const float*, float*, float*, float*, const Stream&)            \
  X(void, accumulate_sum_of_squares, int64_t, const float*, double*, const Stream&)              \
  X(double, sum_of_squares, int64_t, const float*, const Stream&)                                \
  X(void, sum_scaled, int64_t, const float*, double, float*, const Stream&)                      \
  X(void, sum_rows, int64_t, int64_t, const float*, float*, const Stream&)                       \
  X(void, broadcast_rows, int64_t, int64_t, const float*, float, float*, const Stream&)          \
  X(void, softmax_forward, int64_t, int64_t, const float*, float*, const Stream&)                \
  X(void, softmax_backward, int64_t, int64_t, const float*, const float*, float*, const Stream&) \
  X(void, log_softmax_forward, int64_t, int64_t, const float*, float*, const Stream&)            \
  X(void, log_softmax_backward, int64_t, int64_t, const float*, const float*, float*,            \
    const Stream&)

// Entry points whose stubs are written out in ops/cuda_backend.cpp: the device probes, which
// answer (no device, and why) when the plugin cannot be loaded; Stream's members;
// CudaCachingAllocator::size_class; and check.h's detail:: functions.
#define TFM_CUDA_OTHER_ENTRY_POINTS(X)                                                           \
  X(int, device_count)                                                                           \
  X(std::string, no_device_reason)                                                               \
  X(Stream, stream_create)                                                                       \
  X(void, stream_release, Stream&)                                                               \
  X(void, stream_synchronize, const Stream&)                                                     \
  X(size_t, allocator_size_class, size_t)                                                        \
  X(std::string, format_error, const char*, const char*, int, const char*, const char*)          \
  X(void, throw_cuda_error, int, const char*, const char*, int)                                  \
  X(void, throw_cublas_error, int, const char*, const char*, int)
// clang-format on

namespace tfm::cuda {

// The table the plugin fills: one function pointer per entry point.
struct Backend {
#define TFM_CUDA_BACKEND_FIELD(ret, name, ...) ret (*name)(__VA_ARGS__) = nullptr;
  TFM_CUDA_FUNCTIONS(TFM_CUDA_BACKEND_FIELD)
  TFM_CUDA_OTHER_ENTRY_POINTS(TFM_CUDA_BACKEND_FIELD)
#undef TFM_CUDA_BACKEND_FIELD
};

// Both lists as text: the plugin refuses a libtfm whose table differs from its own (a plugin
// from another build found on the library path).
#define TFM_CUDA_BACKEND_TEXT(ret, name, ...) #ret " " #name "(" #__VA_ARGS__ ");"
inline constexpr char kBackendSignature[] =
    TFM_CUDA_FUNCTIONS(TFM_CUDA_BACKEND_TEXT) TFM_CUDA_OTHER_ENTRY_POINTS(TFM_CUDA_BACKEND_TEXT);
#undef TFM_CUDA_BACKEND_TEXT

// Whether the plugin is there and loaded (opened on the first call): a GPU may still be missing
// (has_device()); when not, no_device_reason() says what is.
bool backend_available();

inline constexpr char kBackendFile[] = "libtfm_cuda.so";
// extern "C" in the plugin (ops/cuda/backend_plugin.cpp): fills `table` and returns null, or
// returns why it cannot (a different table or tfm version).
inline constexpr char kBackendEntry[] = "tfm_plugin_cuda_backend";
using BackendEntry = const char* (*)(Backend* table, const char* signature, const char* version);

}  // namespace tfm::cuda
