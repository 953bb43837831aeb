// ModelInfo from a config already in hand (the Translator's loaded model), so a load reads the
// directory once.
#pragma once

#include <string>

#include "tfm/model/config.h"
#include "tfm/model_info.h"

namespace tfm::runtime {

ModelInfo make_model_info(const std::string& dir, const ModelConfig& config,
                          int64_t parameter_count);

}  // namespace tfm::runtime
