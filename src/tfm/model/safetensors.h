// safetensors (https://github.com/huggingface/safetensors), the checkpoint format of the field:
//   u64 little-endian N | N bytes of UTF-8 JSON header | data buffer
// The header maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets
// relative to the data buffer) plus an optional "__metadata__" object of string -> string.
//
// Reading validates every rule of the spec and a few stricter ones; any violation is one
// tfm::Error "<file>: <problem>", never a crash, and no allocation larger than the input:
//   - header length <= 100,000,000 and within the file; header is UTF-8, a JSON object, no
//     duplicate keys at any level, nesting no deeper than the format needs;
//   - each entry has exactly dtype/shape/data_offsets; shape holds non-negative integers;
//     numel * dtype size (checked arithmetic) == end - begin;
//   - sorted by begin, the tensors tile the data buffer: first at 0, each starting where the
//     previous ends, the last ending at the end of the file.
// dtypes: F64 F32 F16 BF16 I64 I32 I8 U8 map to tfm dtypes. The spec's other byte-sized dtypes
// (BOOL I16 U16 U32 U64 F8_E4M3 F8_E5M2) are validated like the rest, so the layout check is
// complete, then rejected by name: tfm has no such dtype and guessing a reinterpretation (BOOL as
// U8, say) would change what a round trip writes. Any other dtype string is "unknown".
//
// Loaded tensors view the mapped file (no copy) and keep the mapping alive. The data buffer is
// where the header ends, so a tensor is generally not 64-byte aligned as allocator blocks are;
// kernels take contiguous inputs and do not assume 64-byte alignment. A tensor whose address is
// not a multiple of its element size (possible in files from other writers) is copied into an
// aligned block, since reading a misaligned float is undefined behaviour.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tfm/core/tensor.h"

namespace tfm {

// Largest header accepted, as in the reference implementation.
inline constexpr uint64_t kSafetensorsMaxHeader = 100'000'000;

struct SafetensorsFile {
  std::string source;  // the path or description errors name
  std::map<std::string, std::string> metadata;
  std::vector<std::pair<std::string, Tensor>> tensors;  // in file order (by offset)

  // The tensor called `name`; error naming it and the file when absent.
  const Tensor& get(const std::string& name) const;
  bool contains(const std::string& name) const;
  // For a file mapped by load_safetensors: gives the pages that lie wholly inside tensor `name`'s
  // bytes back to the system (madvise MADV_DONTNEED; touched again, they are read from the file
  // again). A loader that has copied or converted a tensor calls it so that the process does not
  // hold the file's copy and its own at once. No effect on bytes parse_safetensors was given.
  void drop_pages(const std::string& name) const;

  std::shared_ptr<Storage> mapping;  // the whole file, where load_safetensors mapped it
};

// Maps `path` (private, copy-on-write: in-place updates never reach the file) and validates it.
// The mapping lives while a tensor of the result does (a loader copies what it keeps and lets
// the mapping go: a model must not view a file that may be replaced under it).
SafetensorsFile load_safetensors(const std::string& path);

// Validates `bytes` as a safetensors file; `what` names it in errors. The tensors view `bytes`.
SafetensorsFile parse_safetensors(std::shared_ptr<Storage> bytes, const std::string& what);

// Writes tensors (any strides; stored contiguous, little-endian) and metadata atomically (see
// AtomicFileWriter). Names must be unique, valid UTF-8 and not "__metadata__"
// (the empty name is legal, as in the spec: whatever we read, we can write).
// For alignment the data buffer starts at a multiple of 8 (the header is padded with spaces, as
// the reference writer does) and tensors are laid out by element size, largest first, keeping
// the caller's order among equal sizes: every tensor then starts at a multiple of its element
// size, so loading never needs an aligning copy.
void save_safetensors(const std::string& path,
                      const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// The bytes save_safetensors writes, without the file (tests, in-memory checkpoints).
std::string serialize_safetensors(const std::vector<std::pair<std::string, Tensor>>& tensors,
                                  const std::map<std::string, std::string>& metadata = {});

}  // namespace tfm
