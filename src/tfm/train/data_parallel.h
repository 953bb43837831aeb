// Gradients summed over the ranks of a data-parallel run (docs/distributed.md).
#pragma once

#include "tfm/dist/world.h"
#include "tfm/train/param_arena.h"

namespace tfm {

// Every gradient of the arena becomes its sum over the world's ranks, added in rank order, in
// place: the flat gradient buffer is sent as it lies (the world cuts it into buckets of
// consecutive slots). A parameter this rank's batches did not reach counts as zeros, and after
// the sum every parameter has a gradient, so every rank's optimiser steps the same parameters.
void sum_gradients(dist::World& world, ParameterArena& arena);

}  // namespace tfm
