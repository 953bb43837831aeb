// A model directory (docs/design.md, "Files"): model.safetensors (weights; its __metadata__ holds
// the config JSON and the format version) and config.json (the same config, readable).
#pragma once

#include <memory>
#include <string>

#include "tfm/model/transformer.h"

namespace tfm {

// Writes dir/model.safetensors and dir/config.json atomically (dir is created if missing).
void save_model(const Transformer& model, const std::string& dir);
// The config of a model directory (from the weights' metadata, checked against config.json).
ModelConfig read_model_config(const std::string& dir);
// Builds the model of dir's config and loads its weights; every parameter must be present with
// its exact shape and dtype f32, and no other tensor may be in the file.
std::unique_ptr<Transformer> load_model(const std::string& dir);

}  // namespace tfm
