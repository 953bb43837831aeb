#include "tfm/core/cpu_isa.h"

#include <cpuid.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>

#include "tfm/core/check.h"

namespace tfm {

namespace {

struct Features {
  bool avx2 = false, fma = false, avx512 = false, vnni = false, bf16 = false;
  bool amd = false;       // AuthenticAMD
  bool amx_bf16 = false;  // AMX-BF16 with the tile state enabled by the OS
};

uint64_t xgetbv0() {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

Features read_features() {
  Features f;
  unsigned a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return f;
  f.amd = b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163;  // "Auth" "enti" "cAMD"
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = c & (1u << 27), avx = c & (1u << 28);
  f.fma = c & (1u << 12);
  if (!osxsave || !avx) return f;
  const uint64_t xcr0 = xgetbv0();
  const bool ymm_state = (xcr0 & 0x6) == 0x6;                 // SSE and AVX state saved
  const bool zmm_state = ymm_state && (xcr0 & 0xE0) == 0xE0;  // opmask, ZMM_Hi256, Hi16_ZMM
  if (!ymm_state || __get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = b & (1u << 5);
  const bool f512 = b & (1u << 16), dq = b & (1u << 17), bw = b & (1u << 30), vl = b & (1u << 31);
  f.avx512 = zmm_state && f512 && dq && bw && vl;
  f.vnni = f.avx512 && (c & (1u << 11));
  const unsigned max_sub = a;
  const bool tile_state = (xcr0 & 0x60000) == 0x60000;  // XTILECFG and XTILEDATA
  f.amx_bf16 = tile_state && (d & (1u << 22));
  if (max_sub >= 1) {
    __cpuid_count(7, 1, a, b, c, d);
    f.bf16 = f.avx512 && (a & (1u << 5));
  }
  return f;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return out;
}

// oneDNN's names for its levels (ONEDNN_MAX_CPU_ISA), as tfm levels: below AVX2 tfm's kernels
// still run at AVX2 (the floor); AMX and ALL leave tfm unbounded.
std::optional<CpuIsa> onednn_limit(const char* value) {
  if (value == nullptr || *value == '\0') return std::nullopt;
  const std::string v = lower(value);
  if (v == "sse41" || v == "avx" || v == "avx2" || v == "avx2_vnni") return CpuIsa::avx2;
  if (v == "avx512_core" || v == "avx512_mic" || v == "avx512_mic_4ops") return CpuIsa::avx512;
  if (v == "avx512_core_vnni") return CpuIsa::avx512_vnni;
  return std::nullopt;  // avx512_core_bf16, avx512_core_amx, all: no bound below bf16
}

struct Level {
  CpuIsa detected = CpuIsa::avx2;
  CpuIsa used = CpuIsa::avx2;
  std::string why;  // what lowered it, empty if nothing did
};

Level resolve() {
  Level level;
  level.detected = detected_cpu_isa();
  level.used = level.detected;
  if (const char* env = std::getenv("TFM_CPU_ISA"); env != nullptr && *env != '\0') {
    const CpuIsa asked = parse_cpu_isa(env);
    TFM_CHECK(asked <= level.detected)
        << "TFM_CPU_ISA=" << env << " asks for more than this CPU has ("
        << cpu_isa_name(level.detected) << "); it can only lower the level";
    if (asked < level.used) {
      level.used = asked;
      level.why = "TFM_CPU_ISA";
    }
  }
  for (const char* var : {"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"}) {
    const auto bound = onednn_limit(std::getenv(var));
    if (bound && *bound < level.used) {
      level.used = *bound;
      level.why = var;
    }
  }
  return level;
}

const Level& level() {
  static const Level l = resolve();
  return l;
}

}  // namespace

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::avx2:
      return "avx2";
    case CpuIsa::avx512:
      return "avx512";
    case CpuIsa::avx512_vnni:
      return "avx512_vnni";
    case CpuIsa::avx512_bf16:
      return "avx512_bf16";
  }
  return "?";
}

CpuIsa parse_cpu_isa(std::string_view name) {
  const std::string v = lower(name);
  for (CpuIsa isa : {CpuIsa::avx2, CpuIsa::avx512, CpuIsa::avx512_vnni, CpuIsa::avx512_bf16})
    if (v == cpu_isa_name(isa)) return isa;
  TFM_FAIL() << "unknown CPU level '" << name
             << "' (choose avx2, avx512, avx512_vnni or avx512_bf16)";
  return CpuIsa::avx2;
}

namespace {

const Features& features() {
  static const Features f = read_features();
  return f;
}

}  // namespace

CpuIsa detected_cpu_isa() {
  const Features& f = features();
  TFM_CHECK(f.avx2 && f.fma) << "this CPU lacks AVX2 and FMA, which tfm needs (x86-64-v3: Intel "
                                "Haswell, AMD Excavator or later)";
  if (f.bf16 && f.vnni) return CpuIsa::avx512_bf16;
  if (f.vnni) return CpuIsa::avx512_vnni;
  if (f.avx512) return CpuIsa::avx512;
  return CpuIsa::avx2;
}

CpuIsa cpu_isa() {
  return level().used;
}

bool cpu_bf16_outruns_fp32() {
  // Measured (docs/benchmarks.md): training `quick` in bf16 ran 1.5x fp32 on a Zen 4, whose
  // vdpbf16ps does twice an FMA's multiply-adds a cycle; on a Sapphire Rapids core without AMX it
  // ran 0.65x (translation 0.89x): there vdpbf16ps issues on one port where FMAs issue on two,
  // so the products per cycle are equal and bf16's conversions are pure cost. With AMX, oneDNN's
  // bf16 GEMMs run on the tiles.
  const Features& f = features();
  return cpu_has_bf16_dot() && (f.amd || f.amx_bf16);
}

std::string cpu_isa_summary() {
  const Level& l = level();
  std::string s = cpu_isa_name(l.used);
  if (l.used != l.detected)
    s += std::string(" (detected ") + cpu_isa_name(l.detected) + "; " + l.why + ")";
  return s;
}

}  // namespace tfm
