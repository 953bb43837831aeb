#include "tfm/core/rng.h"

#include <cmath>

namespace tfm {

std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int r = 0; r < 10; ++r) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * ctr[0];
    const uint64_t p1 = static_cast<uint64_t>(kM1) * ctr[2];
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    ctr = {hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0};
    key[0] += kW0;
    key[1] += kW1;
  }
  return ctr;
}

std::array<uint32_t, 4> RandomStream::block(uint64_t i) const {
  return philox4x32({static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32),
                     static_cast<uint32_t>(stream_), static_cast<uint32_t>(stream_ >> 32)},
                    {static_cast<uint32_t>(seed_), static_cast<uint32_t>(seed_ >> 32)});
}

float RandomStream::uniform(uint64_t i) const {
  const uint32_t w = block(i / 4)[i % 4];
  return static_cast<float>(w >> 8) * (1.0f / 16777216.0f);
}

double RandomStream::uniform_f64(uint64_t i) const {
  const auto b = block(i / 2);
  const uint64_t hi = b[(i % 2) * 2], lo = b[(i % 2) * 2 + 1];
  const uint64_t bits = ((hi << 32) | lo) >> 11;
  return static_cast<double>(bits) * (1.0 / 9007199254740992.0);
}

double RandomStream::normal(uint64_t i) const {
  // Box-Muller on the pair (2i, 2i+1) of this stream's doubles; 1 - u avoids log(0).
  const double u1 = 1.0 - uniform_f64(2 * i);
  const double u2 = uniform_f64(2 * i + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

Generator& default_generator() {
  // Process-wide, like torch's default generator. Not synchronised: ops draw streams on the
  // calling thread; code that runs ops from several threads gives each its own Generator.
  static Generator g(0);
  return g;
}

void manual_seed(uint64_t seed) {
  default_generator().set_state(seed, 0);
}

}  // namespace tfm
