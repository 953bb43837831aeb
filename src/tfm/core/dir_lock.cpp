#include "tfm/core/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tfm/core/check.h"

namespace tfm {

DirLock::DirLock(const std::string& dir) {
  const std::string path = dir + "/" + kDirLockFile;
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    const int err = errno;
    TFM_FAIL() << "cannot lock " << dir << ": opening '" << path
               << "' failed: " << std::strerror(err);
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    // The holder wrote its pid after taking the lock; a reader racing that write sees none.
    char buf[32] = {};
    const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
    std::string pid = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    ::close(fd_);
    fd_ = -1;
    // A library user may hold the lock in this very process (a Trainer not yet destroyed).
    const bool self = pid == std::to_string(::getpid());
    TFM_CHECK(err != EWOULDBLOCK)
        << dir << " is in use by "
        << (self ? std::string("another user in this process (a Trainer not yet destroyed)")
                 : "another tfm process" + (pid.empty() ? std::string() : " (pid " + pid + ")"))
        << "; wait for it to finish or stop it, or use another directory";
    TFM_FAIL() << "cannot lock " << dir << ": " << std::strerror(err);
  }
  const std::string me = std::to_string(::getpid()) + "\n";
  // Best effort: the pid only makes the message above more useful.
  if (::ftruncate(fd_, 0) == 0) {
    [[maybe_unused]] const ssize_t w = ::pwrite(fd_, me.data(), me.size(), 0);
  }
}

DirLock::~DirLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace tfm
