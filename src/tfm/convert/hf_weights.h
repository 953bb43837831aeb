// The weights of a Transformers checkpoint placed in tfm's parameters: names mapped, GPT-2's
// Conv1D matrices transposed and its fused q/k/v split, learned position tables cut past their
// offset, final_logits_bias as the output bias, f16/bf16 widened to f32. Shared, tied and
// absent tensors are resolved as Transformers resolves them when it loads the checkpoint.
#pragma once

#include <map>
#include <string>

#include "tfm/convert/hf_config.h"
#include "tfm/model/transformer.h"

namespace tfm::convert {

// model.safetensors, or every shard that model.safetensors.index.json lists, by stored name.
// A directory with only pytorch_model.bin is an error that names the Python converter.
std::map<std::string, Tensor> read_hf_tensors(const std::string& dir);

// Builds m.config's model from the checkpoint's tensors. Every parameter must find its tensor
// (with the shape the config implies), and every tensor must find a use or be one that
// Transformers itself does not load (buffers, tied copies); anything else is an error naming it.
// m.config.output_bias is set when the checkpoint's final_logits_bias is not all zeros.
std::unique_ptr<Transformer> build_from_hf(HfModel& m, const std::map<std::string, Tensor>& hf,
                                           const std::string& what);

}  // namespace tfm::convert
