// Element types. Kernels exist for f32 (the working type) and f64 (reference and gradient checks);
// bf16/f16/i8 are storage types for later precision work; i32 holds token ids, u8 masks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "tfm/types.h"

namespace tfm {

enum class DType : uint8_t { f32, f64, bf16, f16, i8, u8, i32, i64 };

size_t dtype_size(DType dt);
const char* dtype_name(DType dt);
bool is_floating(DType dt);

// Maps a C++ type to its DType, for typed accessors and kernel templates.
template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::f32;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::f64;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::i32;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::i64;
};
template <>
struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::u8;
};
template <>
struct DTypeOf<int8_t> {
  static constexpr DType value = DType::i8;
};


}  // namespace tfm
