// File helpers with the durability checkpoints need: atomic replacement (a crash or a full disk
// leaves either the old file or the new one, never a torn mix), whole-file reads, and read-only
// memory maps that live as long as the tensors viewing them.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tfm/core/tensor.h"

namespace tfm {

// Writes `path` by way of a temporary file in the same directory (rename is atomic only within
// one file system): write, fsync the file, rename over `path`, fsync the directory so the rename
// itself is durable. Any failure (ENOSPC, EIO, ...) throws tfm::Error naming the path and the
// errno text, and removes the temporary file; `path` is untouched until commit() succeeds.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();  // without a successful commit(): closes and removes the temporary file
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, size_t n);
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }
  // fsync, close, rename over the target, fsync the directory. Once only.
  void commit();

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  void abandon() noexcept;

  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  bool committed_ = false;
};

// The whole of `bytes` to `path`, atomically (see AtomicFileWriter).
void write_file_atomic(const std::string& path, std::string_view bytes);

// Copies `from` to `to` atomically (AtomicFileWriter): `to` is the old file or the whole new one.
void copy_file_atomic(const std::string& from, const std::string& to);

// A directory seen only complete: `fill` writes the new contents into a temporary sibling
// ('.NAME.tmp.PID.N', same file system), which then replaces `dir` by one rename (an atomic
// exchange with the old directory when there is one, which is removed afterwards). A failure in
// `fill` removes the temporary directory and leaves `dir` as it was.
void write_dir_atomic(const std::string& dir,
                      const std::function<void(const std::string& tmp_dir)>& fill);

// The leftovers of writers killed mid-write in `dir` (not below it): files and directories named
// '.NAME.tmp.*' as AtomicFileWriter and write_dir_atomic make them. Removes them and returns
// their paths. Only for a directory no other process is writing (hold its DirLock).
std::vector<std::string> remove_stale_temp_files(const std::string& dir);

// The whole file; error naming the path and errno text when it cannot be read.
std::string read_file(const std::string& path);

// Throws naming the path when something other than a regular file is there (a directory, a FIFO
// that would block its reader forever, a device); nothing there is left to the open that follows.
// For the files of a model directory, which are read whole and never streamed.
void require_regular_file(const std::string& path);

// Maps a regular file read-only and private (anything else is refused without blocking). The
// storage's deleter unmaps, so tensors built on it keep the mapping alive. An empty file gives a
// storage of 0 bytes with no mapping. The mapping is page aligned; later edits to the file by
// others are not guarded against (as with any mmap reader), so files are replaced by rename, never
// rewritten in place.
std::shared_ptr<Storage> map_file(const std::string& path);

}  // namespace tfm
