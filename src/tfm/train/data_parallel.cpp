#include "tfm/train/data_parallel.h"

namespace tfm {

void sum_gradients(dist::World& world, ParameterArena& arena) {
  if (world.size() == 1) return;
  arena.adopt_gradients();  // any gradient set outside the tape, into its slot
  world.sum_in_rank_order(arena.grads());
  arena.define_gradients();
}

}  // namespace tfm
