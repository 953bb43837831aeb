#include "tfm/train/data_parallel.h"

#include <chrono>

#include "tfm/autograd/tape.h"

namespace tfm {

namespace {

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace

OverlappedGradientSum::OverlappedGradientSum(dist::World& world, ParameterArena& arena,
                                             bool overlap)
    : world_(world), arena_(arena), overlap_(overlap) {
  const std::vector<ArenaSlot>& slots = arena.slots();
  const int64_t target = world.bucket_floats();
  bucket_of_slot_.resize(slots.size());
  first_slot_.push_back(0);
  int64_t filled = 0;
  for (size_t k = 0; k < slots.size(); ++k) {
    if (filled > 0 && filled + slots[k].numel > target) {
      first_slot_.push_back(k);
      filled = 0;
    }
    filled += slots[k].numel;
    bucket_of_slot_[k] = static_cast<int64_t>(first_slot_.size()) - 1;
  }
  first_slot_.push_back(slots.size());
  pending_slots_.resize(static_cast<size_t>(buckets()));
  for (int64_t b = 0; b < buckets(); ++b)
    pending_slots_[static_cast<size_t>(b)] =
        static_cast<int64_t>(first_slot_[static_cast<size_t>(b) + 1] - first_slot_[b]);
  next_ = buckets();
  // Gradients set outside the tape go into their slots before anything is posted.
  arena_.adopt_gradients();
}

autograd::BackwardHooks OverlappedGradientSum::hooks() {
  autograd::BackwardHooks h;
  if (!overlap_ || world_.size() == 1) return h;
  h.slot_final = [this](AutogradMeta& m) { slot_final(m); };
  h.after_node = [this] { world_.progress(); };
  return h;
}

void OverlappedGradientSum::slot_final(const AutogradMeta& m) {
  const int64_t k = arena_.slot_of(m);
  if (k < 0) return;  // not one of this arena's parameters
  --pending_slots_[static_cast<size_t>(bucket_of_slot_[static_cast<size_t>(k)])];
  post_ready();
}

void OverlappedGradientSum::post_ready() {
  // From the last bucket down, each once it and all after it are final.
  while (next_ > 0 && pending_slots_[static_cast<size_t>(next_ - 1)] <= 0) {
    --next_;
    const std::vector<ArenaSlot>& slots = arena_.slots();
    const int64_t lo = slots[first_slot_[static_cast<size_t>(next_)]].offset;
    const size_t end = first_slot_[static_cast<size_t>(next_) + 1];
    const int64_t hi = end < slots.size() ? slots[end].offset : arena_.size();
    world_.start_sum(arena_.grads().slice(lo, hi));
  }
}

void OverlappedGradientSum::finish() {
  if (world_.size() == 1) return;
  const double start = now_s();
  posted_early_ = buckets() - next_;
  for (int64_t& p : pending_slots_) p = 0;  // whatever the pass did not reach counts as zeros
  post_ready();
  world_.finish_sums();
  arena_.define_gradients();
  finish_seconds_ = now_s() - start;
}

}  // namespace tfm
