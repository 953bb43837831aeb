// One query position per batch row over a KV cache, on the device: the CUDA side of the
// decode_attention contract (kernels::DecodeAttentionArgs, ops/kernel_args.h), with the same
// kv_rows / kv_slots indirections and masks as cpu::decode_attention_forward. Device pointers.
// The indices are checked here, not before the launch: a row or slot outside a.key_rows is
// left out (a bad row's output is zeros) and recorded as a device fault, thrown at the next copy
// to the host (core/cuda/device_fault.h).
#pragma once

#include "tfm/core/cuda/runtime.h"
#include "tfm/ops/kernel_args.h"

namespace tfm::cuda {

// Largest kv_len + head_dim the kernel's shared memory holds (48 KiB of floats, less scratch).
inline constexpr int64_t kDecodeAttentionMaxSpan = 12000;

void decode_attention_forward(const kernels::DecodeAttentionArgs& a,
                              const Stream& stream = default_stream());

}  // namespace tfm::cuda
