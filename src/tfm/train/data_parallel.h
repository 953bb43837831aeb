// Gradients summed over the ranks of a data-parallel run (docs/distributed.md).
#pragma once

#include <cstdint>
#include <vector>

#include "tfm/autograd/tape.h"
#include "tfm/core/autograd_meta.h"
#include "tfm/dist/world.h"
#include "tfm/train/param_arena.h"

namespace tfm {

// Every gradient of the arena becomes its sum over the world's ranks, added in rank order, in
// place, overlapped with the last backward pass of an update. The arena is cut into
// buckets of whole consecutive slots (about world.bucket_floats() elements each). During the
// backward pass (autograd::BackwardHooks) each parameter reports when its gradient is final;
// a bucket is posted (World::start_sum) once all its slots are final and every bucket after it
// has been posted: buckets go out from the last to the first, the order in which a backward
// pass finishes a model's parameters (the decoder's last layers first, the shared embedding,
// registered first, last), and the same order on every rank whatever its batches did. finish()
// posts what is left and waits. The sum is per element in rank order, so the bits do not depend
// on the buckets or on what was overlapped. A parameter this rank's batches did not reach counts
// as zeros, and after the sum every parameter has a gradient, so every rank's optimiser steps
// the same parameters.
class OverlappedGradientSum {
 public:
  OverlappedGradientSum(dist::World& world, ParameterArena& arena, bool overlap = true);

  // The hooks for the backward pass to overlap with (none with overlap off).
  autograd::BackwardHooks hooks();
  // Posts the buckets not yet posted, waits for all, and defines every parameter's gradient.
  void finish();

  int64_t buckets() const { return static_cast<int64_t>(first_slot_.size()) - 1; }
  // Buckets posted before finish() in the last pass, and the seconds finish() waited.
  int64_t posted_early() const { return posted_early_; }
  double finish_seconds() const { return finish_seconds_; }

 private:
  void slot_final(const AutogradMeta& m);
  void post_ready();

  dist::World& world_;
  ParameterArena& arena_;
  bool overlap_;
  std::vector<size_t> first_slot_;  // bucket b holds slots [first_slot_[b], first_slot_[b + 1])
  std::vector<int64_t> bucket_of_slot_;
  std::vector<int64_t> pending_slots_;  // per bucket: slots not final yet
  int64_t next_ = 0;                    // buckets [next_, buckets()) are posted
  int64_t posted_early_ = 0;
  double finish_seconds_ = 0;
};

}  // namespace tfm
