#include "tfm/core/cuda/device_fault.h"

#include <cuda_runtime.h>

#include <atomic>
#include <sstream>

#include "tfm/core/check.h"
#include "tfm/core/cuda/check.h"

namespace tfm::cuda {

namespace {

std::atomic<DeviceFault*> g_record{nullptr};

}  // namespace

DeviceFault* device_fault_record() {
  DeviceFault* r = g_record.load(std::memory_order_acquire);
  if (r != nullptr) return r;
  // Leaked on purpose: kernels may hold the pointer until the process ends. Pinned and mapped,
  // so a kernel writes it in place and the host reads it without a copy; with unified
  // addressing the host pointer is the device's.
  static DeviceFault* made = [] {
    void* p = nullptr;
    TFM_CUDA_CHECK(cudaHostAlloc(&p, sizeof(DeviceFault), cudaHostAllocMapped));
    auto* f = new (p) DeviceFault();
    g_record.store(f, std::memory_order_release);
    return f;
  }();
  return made;
}

void raise_device_fault() {
  DeviceFault* r = g_record.load(std::memory_order_acquire);
  if (r == nullptr) return;
  volatile DeviceFault* v = r;
  if (v->site == 0) return;
  const auto site = static_cast<FaultSite>(v->site);
  const int64_t position = v->position, value = v->value, bound = v->bound;
  v->site = 0;
  v->claim = 0;
  std::ostringstream what;
  switch (site) {
    case FaultSite::embedding_id:
      what << "embedding: id " << value << " at flat position " << position
           << " of ids is outside [0, V) for V = " << bound;
      break;
    case FaultSite::decode_kv_rows:
      what << "decode_attention: kv_rows[" << position << "] = " << value << " outside the "
           << bound << " key rows";
      break;
    case FaultSite::decode_kv_slots:
      what << "decode_attention: kv_slots at flat position " << position << " = " << value
           << " outside the " << bound << " key rows";
      break;
    case FaultSite::int8_input_row:
      what << "int8 linear: row " << position << " of the input holds inf or NaN";
      break;
    case FaultSite::none:
      break;
  }
  if (what.tellp() == 0) what << "a kernel recorded an unknown fault " << static_cast<int>(site);
  TFM_FAIL() << what.str() << " (found on the device)";
}

}  // namespace tfm::cuda
