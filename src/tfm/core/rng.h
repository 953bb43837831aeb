// Counter-based random numbers (Philox4x32-10). A value depends only on (seed, stream, index),
// never on the order in which threads draw it, so dropout masks are the same for any thread count
// and a run can be resumed from (seed, next stream) alone.
#pragma once

#include <array>
#include <cstdint>

namespace tfm {

// Four 32-bit random words for counter `ctr` under key `key`.
std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key);

// A stream: a seed plus a stream id. Element i of the stream is a pure function of (seed, id, i).
class RandomStream {
 public:
  RandomStream(uint64_t seed, uint64_t stream) : seed_(seed), stream_(stream) {}
  // Four independent 32-bit words for block i (elements 4i..4i+3).
  std::array<uint32_t, 4> block(uint64_t i) const;
  // Uniform in [0, 1) with 24 random bits, for element i.
  float uniform(uint64_t i) const;
  // Uniform in [0, 1) with 53 random bits, for element i (uses two words of block i/2).
  double uniform_f64(uint64_t i) const;
  // Standard normal for element i (Box-Muller over a double uniform pair).
  double normal(uint64_t i) const;
  uint64_t seed() const { return seed_; }
  uint64_t id() const { return stream_; }

 private:
  uint64_t seed_;
  uint64_t stream_;
};

// Hands out streams in sequence: each random op takes the next one. Its whole state is
// (seed, next stream), which training checkpoints save.
class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : seed_(seed) {}
  // A generator the initialisers (ops/init.h) do not draw from: they leave tensors as allocated.
  // For a model whose every parameter is about to be overwritten by a load, where filling them
  // with random numbers first would be wasted work (and touch every page twice).
  static Generator no_fill() {
    Generator g;
    g.fills_ = false;
    return g;
  }
  bool fills() const { return fills_; }
  // no_fill(), and the weights an inference binding prepares (the linear layers', the output
  // projection's) not even allocated: for a model bound straight from a file
  // (load_model_for_inference), whose f32 weights never exist.
  static Generator weights_unallocated() {
    Generator g = no_fill();
    g.allocates_weights_ = false;
    return g;
  }
  bool allocates_weights() const { return allocates_weights_; }
  RandomStream next_stream() { return RandomStream(seed_, next_++); }
  uint64_t seed() const { return seed_; }
  uint64_t position() const { return next_; }
  void set_state(uint64_t seed, uint64_t position) {
    seed_ = seed;
    next_ = position;
  }

 private:
  uint64_t seed_;
  uint64_t next_ = 0;
  bool fills_ = true;
  bool allocates_weights_ = true;
};

// The process default generator, used when an op is given none. Not thread-safe: threads that
// run random ops concurrently should each pass their own Generator.
Generator& default_generator();
void manual_seed(uint64_t seed);

}  // namespace tfm
