// TensorBoard event files, written natively: TFRecord framing (length, masked CRC-32C of the
// length, the record, masked CRC-32C of the record) around tensorboard.Event protobuf messages,
// encoded by hand (the few fields used: wall_time, step, file_version, summary with simple_value
// scalars, session_log). TensorBoard, tensorboardX and TensorFlow's readers read them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "tfm/core/output_file.h"

namespace tfm {

class EventFileWriter {
 public:
  // Creates `dir` when missing and a new file in it,
  // events.out.tfevents.<seconds, 10 digits>.<host>.<pid>.tfm, starting with the file_version
  // event. The seconds are the clock's, or one more than the newest event file's there, so the
  // files sort (as TensorBoard reads them) in the order they were written.
  explicit EventFileWriter(const std::string& dir);
  ~EventFileWriter();

  // One scalar (stored as float32, TensorBoard's simple_value) at a step.
  void scalar(std::string_view tag, int64_t step, double value);
  // A SessionLog START at `step`: a run that resumes from a checkpoint says where it starts, and
  // TensorBoard drops the events at `step` and after from earlier files (an interrupted run's
  // updates past its last checkpoint, which this run makes again).
  void session_start(int64_t step);
  // What was written reaches the file (a reader sees whole records).
  void flush();

  const std::string& path() const { return path_; }

 private:
  void write_event(const std::string& event);
  std::string path_;
  std::unique_ptr<OutputFile> out_;
};

// The framing of one record: what write_event appends for `record` (for tests).
std::string tfrecord_frame(std::string_view record);

}  // namespace tfm
