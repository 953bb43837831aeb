// Gradients summed over the ranks of a data-parallel run (docs/distributed.md).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tfm/core/tensor.h"
#include "tfm/dist/world.h"

namespace tfm {

// Each parameter's gradient becomes its sum over the world's ranks, added in rank order, in
// place. The gradients travel as one flat buffer in the parameters' order (the world cuts it
// into buckets); a gradient this rank lacks (a parameter its batches did not reach) counts as
// zeros and is created, so every rank ends with the same set of gradients.
void sum_gradients(dist::World& world, const std::vector<std::pair<std::string, Tensor>>& params);

}  // namespace tfm
