// An exclusive lock on a directory for the length of a run, so two processes never write one
// model directory at once (interleaved logs, one run's best/ over the other's, a temp file
// renamed from under its writer).
#pragma once

#include <string>

namespace tfm {

class DirLock {
 public:
  // Takes flock(LOCK_EX) on DIR/.tfm.lock (created if missing) without waiting, and writes this
  // process's id into it. When another process holds it: tfm::Error naming `dir` and the holder's
  // pid. The lock is the kernel's, tied to the open file: a killed holder releases it at once, and
  // the file left behind locks nothing.
  explicit DirLock(const std::string& dir);
  ~DirLock();
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  int fd_ = -1;
};

// The lock file's name inside a locked directory.
inline constexpr const char* kDirLockFile = ".tfm.lock";

}  // namespace tfm
