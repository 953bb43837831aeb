// Fuzz target for the safetensors reader: any byte string must either parse into tensors that
// lie inside the input and survive a write/read round trip unchanged, or raise tfm::Error.
// Anything else (a crash, a sanitizer report, another exception type) is a bug.
// Built as a libFuzzer target under Clang and with tests/fuzz/fuzz_driver.cpp under GCC.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "tfm/core/check.h"
#include "tfm/model/safetensors.h"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_safetensors: invariant violated: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A block of exactly `size` bytes, so ASan flags any read past the end.
  auto bytes = std::make_shared<tfm::Storage>();
  bytes->data = std::shared_ptr<void>(new uint8_t[size ? size : 1],
                                      [](void* p) { delete[] static_cast<uint8_t*>(p); });
  if (size) std::memcpy(bytes->data.get(), data, size);
  bytes->nbytes = size;
  tfm::SafetensorsFile f;
  try {
    f = tfm::parse_safetensors(bytes, "fuzz input");
  } catch (const tfm::Error&) {
    return 0;
  }
  // Accepted: every tensor must be within the input (or an aligned copy) and read back intact.
  const auto* lo = static_cast<const uint8_t*>(bytes->data.get());
  uint64_t total = 0;
  for (const auto& [name, t] : f.tensors) {
    const auto* p = static_cast<const uint8_t*>(t.raw_data());
    const bool inside = p >= lo && p + t.nbytes() <= lo + size;
    // Outside the input only as the aligning copy of a misaligned tensor.
    if (!inside)
      check(reinterpret_cast<uintptr_t>(p) % tfm::dtype_size(t.dtype()) == 0 &&
                t.storage()->nbytes == t.nbytes(),
            "tensor outside the input");
    volatile uint8_t sink = 0;
    for (size_t i = 0; i < t.nbytes(); ++i) sink = sink ^ p[i];  // touch every byte
    total += t.nbytes();
  }
  check(total <= size, "tensors hold more bytes than the input");
  // Our writer's output of an accepted file must parse back to the same tensors, bitwise.
  const std::string again = tfm::serialize_safetensors(f.tensors, f.metadata);
  auto copy = std::make_shared<tfm::Storage>();
  copy->data = std::shared_ptr<void>(new uint8_t[again.size()],
                                     [](void* p) { delete[] static_cast<uint8_t*>(p); });
  std::memcpy(copy->data.get(), again.data(), again.size());
  copy->nbytes = again.size();
  const tfm::SafetensorsFile g = tfm::parse_safetensors(copy, "fuzz round trip");
  check(g.metadata == f.metadata, "metadata changed in a round trip");
  check(g.tensors.size() == f.tensors.size(), "tensor count changed in a round trip");
  for (const auto& [name, t] : f.tensors) {
    const tfm::Tensor& u = g.get(name);
    check(u.shape() == t.shape() && u.dtype() == t.dtype(), "shape or dtype changed");
    check(t.nbytes() == 0 || std::memcmp(u.raw_data(), t.raw_data(), t.nbytes()) == 0,
          "tensor bytes changed in a round trip");
  }
  check(tfm::serialize_safetensors(g.tensors, g.metadata) == again, "writer is not stable");
  return 0;
}
