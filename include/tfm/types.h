// The small vocabulary shared by tfm's public API and its internals: where a model runs (Device),
// the arithmetic of its linear layers (ComputeType), how a search picks tokens (Search), and the
// linear layers' activation (Activation).
#pragma once

#include <cstdint>
#include <string_view>

namespace tfm {

enum class Device : uint8_t { cpu, cuda };
const char* device_name(Device d);  // "cpu" | "cuda"
// "cpu" | "cuda"; anything else is a tfm::Error naming the choices.
Device parse_device(std::string_view name);

// What the linear layers (and the output projection) compute in: the one precision choice of tfm,
// made once when a model is loaded (Translator) or a run starts (Trainer).
// - float32: f32 weights and products.
// - bfloat16: weights and inputs rounded to bf16, products summed in f32. In training, mixed
//   precision: f32 master weights, gradients and optimiser.
// - int8 (inference only): weights s8 per output channel, inputs u8 per row, exact s32 sums.
// - automatic ("auto"): resolved against the device's features (resolve_compute_type).
enum class ComputeType : uint8_t { float32, bfloat16, int8, automatic };
// "fp32" | "bf16" | "int8" | "auto".
const char* compute_type_name(ComputeType t);
// Accepts tfm's names and CTranslate2's: fp32|float32|default (the type of the model's
// weights), bf16|bfloat16, int8, auto. float32 is the default everywhere (TranslatorOptions, tfm
// translate, tfm serve, Python).
ComputeType parse_compute_type(std::string_view name);

// What `automatic` means on this machine, and a check that a concrete choice can run there.
// Inference: bfloat16 where the CPU multiplies bf16 (AVX512-BF16), float32 elsewhere. Training:
// the same, int8 being an error. Explicit bfloat16 on a CPU without AVX512-BF16 runs emulated on
// the f32 kernels (the same results, not faster). On cuda: fp32, bf16 or (inference) int8, on
// cuBLASLt; auto is bf16, the tensor cores' type, in training and inference.
ComputeType resolve_compute_type(ComputeType requested, Device device = Device::cpu,
                                 bool training = false);

// How a search picks each next token: greedy (the most likely one), beam (the beam_size most
// likely hypotheses kept; a beam of 1 is greedy search), or sampling (a random draw after the
// temperature, top-k and top-p).
enum class Search : uint8_t { greedy, beam, sampling };
const char* search_name(Search s);  // "greedy" | "beam" | "sampling"
// "greedy" | "beam" | "sampling"; anything else is a tfm::InvalidArgument naming the choices.
Search parse_search(std::string_view name);
// The search the usual spellings ask for (tfm translate's flags, the server's JSON, CTranslate2's
// keywords): sampling when asked for, else beam search when beam_size > 1, else greedy.
Search search_for(int64_t beam_size, bool sampling);

// Pointwise activation fused into a linear layer's epilogue. gelu is the exact erf form, x·Φ(x)
// (PyTorch's nn.GELU() default); gelu_tanh the tanh approximation
// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) (GPT-2's gelu_new); silu x·σ(x) (Marian's swish).
enum class Activation : uint8_t { none, relu, gelu, silu, gelu_tanh };
// "none" | "relu" | "gelu" | "silu" | "gelu_tanh"
const char* activation_name(Activation act);
Activation parse_activation(std::string_view name);

}  // namespace tfm
