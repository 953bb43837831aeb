// TensorBoard event files: CRC-32C against the published test vectors (RFC 3720, B.4), the
// TFRecord framing, and files that sort in the order they were made. What TensorBoard reads of
// them is tests/cli/check_tfevents.py's (the ctests tensorboard_cli and tensorboard_reader).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>

#include "tfm/core/crc32c.h"
#include "tfm/core/file_util.h"
#include "tfm/train/event_file.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;

uint32_t u32(const std::string& s, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(s[at + static_cast<size_t>(i)]);
  return v;
}

TEST(Crc32c, PublishedVectors) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  std::string up(32, '\0');
  for (int i = 0; i < 32; ++i) up[static_cast<size_t>(i)] = static_cast<char>(i);
  EXPECT_EQ(crc32c(up), 0x46DD794Eu);
  EXPECT_EQ(crc32c(""), 0u);
  // Continued over two pieces: the CRC of the whole.
  EXPECT_EQ(crc32c("56789", crc32c("1234")), 0xE3069283u);
}

TEST(Crc32c, MaskRotatesAndAddsTheConstant) {
  const uint32_t c = crc32c("abc");
  EXPECT_EQ(masked_crc32c("abc"), ((c >> 15) | (c << 17)) + 0xA282EAD8u);
}

TEST(EventFile, RecordFraming) {
  const std::string record = "payload bytes";
  const std::string f = tfrecord_frame(record);
  ASSERT_EQ(f.size(), 8 + 4 + record.size() + 4);
  EXPECT_EQ(u32(f, 0), record.size());  // little-endian uint64 length
  EXPECT_EQ(u32(f, 4), 0u);
  EXPECT_EQ(u32(f, 8), masked_crc32c(f.substr(0, 8)));
  EXPECT_EQ(f.substr(12, record.size()), record);
  EXPECT_EQ(u32(f, 12 + record.size()), masked_crc32c(record));
}

TEST(EventFile, FilesSortInTheOrderTheyWereMade) {
  const fs::path dir = fs::temp_directory_path() / ("tfm_events_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  std::vector<std::string> made;
  for (int i = 0; i < 3; ++i) {  // within one second, usually: the names must still sort
    EventFileWriter w((dir / "run").string());
    w.scalar("train/loss", 1, 2.5);
    w.flush();
    made.push_back(fs::path(w.path()).filename().string());
    const std::string bytes = read_file(w.path());
    // The first record is the file_version event.
    EXPECT_NE(bytes.find("brain.Event:2"), std::string::npos);
    EXPECT_NE(bytes.find("train/loss"), std::string::npos);
  }
  std::vector<std::string> sorted = made;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, made);
  for (const std::string& name : made) EXPECT_EQ(name.rfind("events.out.tfevents.", 0), 0u);
  fs::remove_all(dir);
}

TEST(EventFile, AFileWhereTheDirectoryShouldBe) {
  const fs::path file =
      fs::temp_directory_path() / ("tfm_events_file_" + std::to_string(::getpid()));
  write_file_atomic(file.string(), "x");
  try {
    EventFileWriter w(file.string());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create the TensorBoard directory"),
              std::string::npos)
        << e.what();
  }
  fs::remove(file);
}

}  // namespace
}  // namespace tfm
