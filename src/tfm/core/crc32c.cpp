#include "tfm/core/crc32c.h"

#include <array>

namespace tfm {

namespace {

// One table, a byte at a time: event files are a few hundred bytes an update.
constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}

constexpr std::array<uint32_t, 256> kTable = make_table();

}  // namespace

uint32_t crc32c(std::string_view bytes, uint32_t crc) {
  uint32_t c = ~crc;
  for (const char ch : bytes) c = kTable[(c ^ static_cast<uint8_t>(ch)) & 0xFF] ^ (c >> 8);
  return ~c;
}

}  // namespace tfm
