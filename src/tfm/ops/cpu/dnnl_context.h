// The one oneDNN engine of the process and a stream per thread, shared by every oneDNN caller
// (gemm_cpu.cpp and matmul_primitive_cpu.cpp for fp32 and training bf16, lowp_matmul_cpu.cpp for
// bf16/int8 inference), defined in dnnl_context.cpp. Only ops/cpu sources include this.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

namespace tfm::cpu {

// Bounds oneDNN's instruction set to tfm's level (core/cpu_isa.h) before oneDNN first reads it:
// with TFM_CPU_ISA=avx2 on an AVX-512 machine, oneDNN's JIT kernels are its AVX2 ones too. Runs
// once; every oneDNN entry point of tfm calls it first (dnnl_engine() does).
void init_onednn_isa();

dnnl::engine& dnnl_engine();
// A CPU stream executes synchronously and holds no data, but oneDNN does not promise that one
// stream object may be used from several threads at once: one per thread, on the shared engine.
dnnl::stream& dnnl_stream();

}  // namespace tfm::cpu
