// Checkpoint averaging (`tfm average`): the element-wise mean of the parameters of several
// checkpoints of one model, which usually scores better than any one of them (Vaswani et al.
// average the last 5 or 20 checkpoints).
#pragma once

#include <string>
#include <vector>

namespace tfm {

// Loads every model directory in `dirs` (same config required), averages each parameter in
// double precision, and writes a model directory `out` (with the first input's vocabularies).
void average_models(const std::vector<std::string>& dirs, const std::string& out);

}  // namespace tfm
