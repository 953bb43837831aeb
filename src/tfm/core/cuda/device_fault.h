// Bad indices found by kernels, reported at the next synchronisation instead of checked before
// the launch.
//
// An op whose indices live on the device (token ids, the rows and slots a decoding step's
// attention reads) would have to copy them to the host to check them: a synchronisation that
// drains the GPU's queue, several a decoding step. Instead the kernel that reads an index checks
// it, reads nothing out of range (it writes zeros there), and records the first bad one here:
// mapped host memory, read by the host after the next device-to-host copy or synchronize, which
// throws it as a tfm::Error. A result the host sees (top-k ids, a loss) always comes through such
// a copy, so no wrong answer escapes; the error arrives at that copy, not at the op's call
// (PyTorch's device-side asserts behave the same way). No CUDA types.
#pragma once

#include <cstdint>

namespace tfm::cuda {

// Which check failed; the message raise_device_fault() gives for each.
enum class FaultSite : int32_t {
  none = 0,
  embedding_id = 1,     // an id outside [0, V)
  decode_kv_rows = 2,   // decode_attention's kv_rows[b] outside the key rows
  decode_kv_slots = 3,  // decode_attention's kv_slots[b, s] outside the key rows
  int8_input_row = 4,   // an int8 linear layer's input row holding inf or NaN
};

// The first fault since the last report. `site` is written last by the kernel that wins it
// (atomicCAS on `claim`), so a nonzero site has its fields set.
struct DeviceFault {
  int32_t claim = 0;
  int32_t site = 0;
  int64_t position = 0;  // flat index of the bad entry in its index tensor
  int64_t value = 0;     // what it held
  int64_t bound = 0;     // the exclusive upper bound it broke
};

// The record kernels write into (host memory mapped into the device's address space), made on
// first use. Device code records through ops/cuda/common.cuh's record_fault().
DeviceFault* device_fault_record();

// Throws the recorded fault, if any, as a tfm::Error (and clears it). Call after the device's
// work is known to be done: the copies to the host and synchronize() do.
void raise_device_fault();

}  // namespace tfm::cuda
