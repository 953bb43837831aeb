// The one oneDNN engine, the per-thread streams and the bound on oneDNN's instruction set
// (dnnl_context.h).
#include "tfm/ops/cpu/dnnl_context.h"

#include <oneapi/dnnl/dnnl.h>

#include "tfm/core/check.h"
#include "tfm/core/cpu_isa.h"

namespace tfm::cpu {

namespace {

dnnl_cpu_isa_t onednn_isa_of(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::avx2:
      return dnnl_cpu_isa_avx2;
    case CpuIsa::avx512:
      return dnnl_cpu_isa_avx512_core;
    case CpuIsa::avx512_vnni:
      return dnnl_cpu_isa_avx512_core_vnni;
    case CpuIsa::avx512_bf16:
      return dnnl_cpu_isa_avx512_core_bf16;
  }
  return dnnl_cpu_isa_all;
}

}  // namespace

void init_onednn_isa() {
  static const bool done = [] {
    const CpuIsa isa = cpu_isa();
    if (isa < detected_cpu_isa()) {
      // Ignored when oneDNN has already fixed its level (then the check below says so).
      dnnl_set_max_cpu_isa(onednn_isa_of(isa));
      const dnnl_cpu_isa_t got = dnnl_get_effective_cpu_isa();
      TFM_CHECK((got & ~onednn_isa_of(isa)) == 0)
          << "oneDNN runs at a higher level (0x" << std::hex << static_cast<int>(got)
          << ") than tfm's " << cpu_isa_name(isa)
          << ": it was initialised before tfm could bound it";
    }
    return true;
  }();
  (void)done;
}

dnnl::engine& dnnl_engine() {
  init_onednn_isa();
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& dnnl_stream() {
  thread_local dnnl::stream stream(dnnl_engine());
  return stream;
}

}  // namespace tfm::cpu
