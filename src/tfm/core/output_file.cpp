#include "tfm/core/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "tfm/core/check.h"

namespace tfm {

namespace {

constexpr size_t kBufferBytes = size_t{1} << 16;

}  // namespace

OutputFile::OutputFile(const std::string& path, Mode mode) {
  if (path.empty() || path == "-") {
    name_ = "<stdout>";
    fd_ = STDOUT_FILENO;
    // Whatever std::cout or printf buffered comes first, as it was written first.
    flush_standard_output();
    return;
  }
  name_ = path;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    TFM_CHECK(!S_ISDIR(st.st_mode)) << "cannot write '" << path << "': it is a directory";
  }
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (mode == Mode::append ? O_APPEND : O_TRUNC);
  fd_ = ::open(path.c_str(), flags, 0666);
  if (fd_ < 0) {
    const int err = errno;
    TFM_FAIL() << "cannot write '" << path << "': " << std::strerror(err);
  }
  own_ = true;
  buf_.reserve(kBufferBytes);
}

OutputFile::~OutputFile() {
  if (fd_ < 0) return;
  if (!failed_) {
    try {
      flush();
    } catch (const Error&) {
      // A destructor cannot report; close() is where errors are seen.
    }
  }
  if (own_ && fd_ >= 0) ::close(fd_);
}

void OutputFile::fail(const char* what, int err) {
  failed_ = true;
  buf_.clear();
  TFM_FAIL() << "cannot write '" << name_ << "'" << what << ": " << std::strerror(err);
  __builtin_unreachable();
}

void OutputFile::write_all(const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n < (size_t{1} << 30) ? n : (size_t{1} << 30));
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("", errno);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void OutputFile::write(std::string_view bytes) {
  TFM_CHECK(fd_ >= 0 && !failed_) << "write to '" << name_ << "' after close or failure";
  if (buf_.size() + bytes.size() > kBufferBytes) {
    flush();
    if (bytes.size() >= kBufferBytes) {
      write_all(bytes.data(), bytes.size());
      return;
    }
  }
  buf_.append(bytes);
}

void OutputFile::flush() {
  TFM_CHECK(fd_ >= 0 && !failed_) << "flush of '" << name_ << "' after close or failure";
  if (buf_.empty()) return;
  write_all(buf_.data(), buf_.size());
  buf_.clear();
}

void OutputFile::close() {
  flush();
  const int fd = fd_;
  fd_ = -1;
  if (own_ && ::close(fd) != 0) fail(" (on close)", errno);
}

void flush_standard_output() {
  errno = 0;
  std::cout.flush();
  // ferror catches a failure in an earlier, implicit flush whose errno is gone; fflush retries
  // the buffer, which on a full disk fails again with the real reason.
  if (std::fflush(stdout) != 0 || std::ferror(stdout) || std::cout.bad()) {
    const int err = errno != 0 ? errno : EIO;
    std::clearerr(stdout);
    std::cout.clear();
    TFM_FAIL() << "cannot write '<stdout>': " << std::strerror(err);
  }
}

}  // namespace tfm
