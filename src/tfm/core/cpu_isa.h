// The CPU level every kernel choice reads: detected once per process, lowered on request.
//
// tfm is one binary for every x86-64 CPU from AVX2 up (docs/architecture.md, "CPU levels"): the
// library is compiled for AVX2 + FMA, and each hand-written kernel that has a faster form for a
// higher level is compiled for that level too and picked at run time from cpu_isa(). The level
// can be lowered, never raised, by TFM_CPU_ISA (as CTranslate2's CT2_FORCE_CPU_ISA) or by
// oneDNN's ONEDNN_MAX_CPU_ISA; the lower of the two holds for tfm and oneDNN alike, so forcing
// AVX2 on an AVX-512 machine runs the same kernels, in tfm and in oneDNN, as an AVX2 CPU does.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tfm {

// Ordered: each level includes the ones below it (oneDNN's avx2 < avx512_core <
// avx512_core_vnni < avx512_core_bf16).
enum class CpuIsa : uint8_t {
  avx2 = 0,         // AVX2 + FMA (x86-64-v3): the floor
  avx512 = 1,       // AVX-512 F, BW, DQ, VL
  avx512_vnni = 2,  // + VNNI (vpdpbusd: exact u8 x s8 dot products)
  avx512_bf16 = 3,  // + AVX512-BF16 (vdpbf16ps: bf16 dot products)
};

const char* cpu_isa_name(CpuIsa isa);
// "avx2" | "avx512" | "avx512_vnni" | "avx512_bf16" (any case); anything else is an error naming
// the choices.
CpuIsa parse_cpu_isa(std::string_view name);

// What this CPU (and the OS, which must save the wider registers) supports. Throws when the CPU
// lacks AVX2 or FMA, which tfm needs.
CpuIsa detected_cpu_isa();

// The level in use: the detected one, lowered by TFM_CPU_ISA and by ONEDNN_MAX_CPU_ISA (or
// DNNL_MAX_CPU_ISA). Fixed at the first call; a TFM_CPU_ISA above the CPU's level is an error.
CpuIsa cpu_isa();

// What each precision runs on at the current level.
inline bool cpu_has_bf16_dot() {
  return cpu_isa() >= CpuIsa::avx512_bf16;
}
inline bool cpu_has_vnni() {
  return cpu_isa() >= CpuIsa::avx512_vnni;
}

// Whether bf16 GEMMs beat fp32 ones here, which `auto` precision asks: AVX512-BF16 at the
// current level, on an AMD CPU (Zen 4 and later) or with AMX-BF16. Intel's AVX512-BF16 without
// AMX multiplies no more per cycle than its FMAs do, so bf16 only adds conversions there.
bool cpu_bf16_outruns_fp32();

// One line for --version, logs and benchmark records: "avx2 (detected avx512_bf16; TFM_CPU_ISA)".
std::string cpu_isa_summary();

}  // namespace tfm
