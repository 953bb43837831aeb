// CRC-32C (Castagnoli, the polynomial 0x1EDC6F41 reflected), the checksum of TFRecord framing
// (TensorBoard's event files, train/event_file.h), and its "masked" form.
#pragma once

#include <cstdint>
#include <string_view>

namespace tfm {

// The CRC-32C of `bytes` ("123456789" gives 0xE3069283), continuing from `crc` (the value of the
// bytes before, 0 for none).
uint32_t crc32c(std::string_view bytes, uint32_t crc = 0);

// TFRecord's masked CRC: the CRC rotated right by 15 bits plus 0xA282EAD8, so that a CRC stored
// in data that is itself checksummed does not checksum to a fixed value.
inline uint32_t masked_crc32c(std::string_view bytes) {
  const uint32_t c = crc32c(bytes);
  return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}

}  // namespace tfm
