#include "tfm/train/event_file.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "tfm/core/check.h"
#include "tfm/core/crc32c.h"

namespace tfm {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPrefix = "events.out.tfevents.";

// Protobuf's wire format, the little of it the messages need.
enum Wire : uint32_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

void key(std::string& out, uint32_t field, Wire wire) {
  varint(out, (static_cast<uint64_t>(field) << 3) | wire);
}

template <typename T>
void little_endian(std::string& out, T bits) {
  for (size_t i = 0; i < sizeof(T); ++i) out += static_cast<char>((bits >> (8 * i)) & 0xFF);
}

void bytes_field(std::string& out, uint32_t field, std::string_view b) {
  key(out, field, kBytes);
  varint(out, b.size());
  out.append(b);
}

// tensorboard.Event: wall_time = 1 (double), step = 2 (int64); the caller adds the payload.
std::string event_head(int64_t step) {
  const double wall =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::string e;
  key(e, 1, kFixed64);
  little_endian(e, std::bit_cast<uint64_t>(wall));
  key(e, 2, kVarint);
  varint(e, static_cast<uint64_t>(step));
  return e;
}

// The seconds of the newest event file's name in `dir` (0: none).
int64_t newest_file_seconds(const fs::path& dir) {
  int64_t newest = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kPrefix, 0) != 0) continue;
    try {
      newest = std::max<int64_t>(newest, std::stoll(name.substr(kPrefix.size(), 10)));
    } catch (const std::exception&) {
    }
  }
  return newest;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

}  // namespace

std::string tfrecord_frame(std::string_view record) {
  std::string out;
  std::string length;
  little_endian(length, static_cast<uint64_t>(record.size()));
  out += length;
  little_endian(out, masked_crc32c(length));
  out.append(record);
  little_endian(out, masked_crc32c(record));
  return out;
}

EventFileWriter::EventFileWriter(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  TFM_CHECK(!ec && fs::is_directory(dir)) << "cannot create the TensorBoard directory " << dir
                                          << ": " << (ec ? ec.message() : "it is a file");
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  char name[64];
  std::snprintf(name, sizeof name, "%010lld",
                static_cast<long long>(std::max(now, newest_file_seconds(dir) + 1)));
  path_ = (fs::path(dir) / (std::string(kPrefix) + name + "." + host_name() + "." +
                            std::to_string(getpid()) + ".tfm"))
              .string();
  out_ = std::make_unique<OutputFile>(path_, OutputFile::Mode::append);
  std::string e = event_head(0);
  bytes_field(e, 3, "brain.Event:2");  // file_version: 2 turns on SessionLog-based purging
  write_event(e);
  flush();
}

EventFileWriter::~EventFileWriter() = default;

void EventFileWriter::scalar(std::string_view tag, int64_t step, double value) {
  std::string v;  // Summary.Value: tag = 1, simple_value = 2 (float)
  bytes_field(v, 1, tag);
  key(v, 2, kFixed32);
  little_endian(v, std::bit_cast<uint32_t>(static_cast<float>(value)));
  std::string summary;  // Summary: repeated Value value = 1
  bytes_field(summary, 1, v);
  std::string e = event_head(step);
  bytes_field(e, 5, summary);  // Event.summary = 5
  write_event(e);
}

void EventFileWriter::session_start(int64_t step) {
  std::string log;  // SessionLog: status = 1 (START = 1)
  key(log, 1, kVarint);
  varint(log, 1);
  std::string e = event_head(step);
  bytes_field(e, 7, log);  // Event.session_log = 7
  write_event(e);
  flush();
}

void EventFileWriter::flush() {
  out_->flush();
}

void EventFileWriter::write_event(const std::string& event) {
  out_->write(tfrecord_frame(event));
}

}  // namespace tfm
