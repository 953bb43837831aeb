#include "tfm/types.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "tfm/core/check.h"
#include "tfm/core/cpu_isa.h"

namespace tfm {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

const char* device_name(Device d) {
  return d == Device::cpu ? "cpu" : "cuda";
}

Device parse_device(std::string_view name) {
  const std::string v = lower(name);
  if (v == "cpu") return Device::cpu;
  if (v == "cuda") return Device::cuda;
  TFM_FAIL_ARG() << "unknown device '" << name << "' (expected cpu or cuda)";
  return Device::cpu;
}

const char* compute_type_name(ComputeType t) {
  switch (t) {
    case ComputeType::float32:
      return "fp32";
    case ComputeType::bfloat16:
      return "bf16";
    case ComputeType::int8:
      return "int8";
    case ComputeType::automatic:
      return "auto";
  }
  return "?";
}

ComputeType parse_compute_type(std::string_view name) {
  const std::string v = lower(name);
  // "default": CTranslate2's name for the type the model was saved in, f32 in tfm's files.
  if (v == "fp32" || v == "float32" || v == "float" || v == "default") return ComputeType::float32;
  if (v == "bf16" || v == "bfloat16") return ComputeType::bfloat16;
  if (v == "int8") return ComputeType::int8;
  if (v == "auto") return ComputeType::automatic;
  TFM_FAIL_ARG() << "unknown compute type '" << name << "' (expected fp32, bf16, int8 or auto)";
  return ComputeType::float32;
}

ComputeType resolve_compute_type(ComputeType requested, Device device, bool training) {
  if (device == Device::cuda) {
    // fp32 (cuBLASLt without TF32); bf16 (tensor-core GEMMs of bf16 operands, f32 sums: mixed
    // precision in training) on every GPU the build targets (sm_80 and later), so auto is bf16;
    // int8 (IMMA GEMMs) for inference.
    TFM_CHECK(!(training && requested == ComputeType::int8))
        << "int8 is an inference compute type; training takes fp32, bf16 or auto";
    return requested == ComputeType::automatic ? ComputeType::bfloat16 : requested;
  }
  TFM_CHECK(device == Device::cpu) << "no compute types on " << device_name(device);
  TFM_CHECK(!(training && requested == ComputeType::int8))
      << "int8 is an inference compute type; training takes fp32, bf16 or auto";
  if (requested != ComputeType::automatic) return requested;
  // bf16 where it is faster than fp32: emulated below AVX512-BF16, and no faster on Intel cores
  // without AMX (cpu_bf16_outruns_fp32).
  return cpu_bf16_outruns_fp32() ? ComputeType::bfloat16 : ComputeType::float32;
}

const char* search_name(Search s) {
  switch (s) {
    case Search::greedy:
      return "greedy";
    case Search::beam:
      return "beam";
    case Search::sampling:
      return "sampling";
  }
  return "?";
}

Search parse_search(std::string_view name) {
  for (Search s : {Search::greedy, Search::beam, Search::sampling})
    if (lower(name) == search_name(s)) return s;
  TFM_FAIL_ARG() << "unknown search '" << name << "' (expected greedy, beam or sampling)";
  return Search::greedy;
}

Search search_for(int64_t beam_size, bool sampling) {
  if (sampling) return Search::sampling;
  return beam_size > 1 ? Search::beam : Search::greedy;
}

const char* activation_name(Activation act) {
  switch (act) {
    case Activation::none:
      return "none";
    case Activation::relu:
      return "relu";
    case Activation::gelu:
      return "gelu";
    case Activation::silu:
      return "silu";
    case Activation::gelu_tanh:
      return "gelu_tanh";
  }
  return "?";
}

Activation parse_activation(std::string_view name) {
  for (Activation a : {Activation::none, Activation::relu, Activation::gelu, Activation::silu,
                       Activation::gelu_tanh})
    if (name == activation_name(a)) return a;
  TFM_FAIL_ARG() << "unknown activation '" << name
                 << "' (expected none, relu, gelu, silu or gelu_tanh)";
  return Activation::none;
}

}  // namespace tfm
