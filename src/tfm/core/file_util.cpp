#include "tfm/core/file_util.h"

#include <csignal>
#include <cstdlib>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "tfm/core/check.h"

namespace tfm {

namespace {

std::string errno_text(int err) {
  return std::strerror(err);
}

// Directory part of a path, for the temporary file and the directory fsync.
std::string parent_dir(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Distinguishes temporary files of concurrent writers in one process; the pid does so across
// processes.
std::atomic<uint64_t> temp_counter{0};

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  TFM_CHECK(!path_.empty() && path_.back() != '/')
      << "cannot write file '" << path_ << "': not a file path";
  const std::string dir = parent_dir(path_), base = base_name(path_);
  // The rename replaces whatever is at the path: only ever a regular file (a FIFO or a device
  // there, /dev/null included, would be replaced by the new file).
  struct stat st {};
  TFM_CHECK(::stat(path_.c_str(), &st) != 0 || S_ISREG(st.st_mode))
      << "cannot write '" << path_ << "': it exists and is not a regular file";
  // O_EXCL with a fresh name rather than mkstemp: the file gets the usual 0666 & ~umask mode
  // instead of mkstemp's 0600, so a checkpoint is as readable as any file the user writes.
  for (int attempt = 0; attempt < 100; ++attempt) {
    temp_path_ = dir + "/." + base + ".tmp." + std::to_string(::getpid()) + "." +
                 std::to_string(temp_counter.fetch_add(1));
    fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0 || errno != EEXIST) break;
  }
  if (fd_ < 0) {
    const int err = errno;
    TFM_FAIL() << "cannot write '" << path_ << "': creating temporary file '" << temp_path_
               << "' failed: " << errno_text(err);
  }
}

AtomicFileWriter::~AtomicFileWriter() {
  if (!committed_) abandon();
}

void AtomicFileWriter::abandon() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
  temp_path_.clear();
}

namespace {

// Fault injection for the crash-safety tests: with TFM_FAULT_KILL_AFTER_BYTES=N in the
// environment, the process SIGKILLs itself once N bytes have gone through AtomicFileWriter (the
// N-th byte written, mid-file) — as a power cut or the OOM killer would. Read once; unset: no cost.
// Returns how many of the next n bytes may be written; fewer than n means: write them, then die.
size_t fault_budget(size_t n) {
  static const int64_t limit = [] {
    const char* v = std::getenv("TFM_FAULT_KILL_AFTER_BYTES");
    return v != nullptr && *v != '\0' ? std::atoll(v) : int64_t{-1};
  }();
  static int64_t written = 0;
  if (limit < 0) return n;
  const int64_t left = std::max<int64_t>(0, limit - written);
  const size_t allowed = static_cast<size_t>(std::min<int64_t>(left, static_cast<int64_t>(n)));
  written += static_cast<int64_t>(allowed);
  return allowed;
}

}  // namespace

void AtomicFileWriter::write(const void* data, size_t n) {
  TFM_CHECK(fd_ >= 0 && !committed_) << "write to '" << path_ << "' after commit or failure";
  const char* p = static_cast<const char*>(data);
  const size_t allowed = fault_budget(n);
  const bool die = allowed < n;
  n = allowed;
  while (n > 0) {
    // Large writes are split: Linux writes at most ~2 GiB per call anyway.
    const ssize_t w = ::write(fd_, p, n < (size_t{1} << 30) ? n : (size_t{1} << 30));
    if (w < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      abandon();
      TFM_FAIL() << "cannot write '" << path_ << "': " << errno_text(err);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  if (die) ::raise(SIGKILL);
}

void AtomicFileWriter::commit() {
  TFM_CHECK(fd_ >= 0 && !committed_) << "commit of '" << path_ << "' after commit or failure";
  // Data must be on disk before the rename makes it visible, or a crash could expose a file
  // whose name is new but whose blocks are not.
  if (::fsync(fd_) != 0) {
    const int err = errno;
    abandon();
    TFM_FAIL() << "cannot write '" << path_ << "': fsync failed: " << errno_text(err);
  }
  // close can report deferred write errors (NFS); a failure here means the data may be lost.
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int err = errno;
    abandon();
    TFM_FAIL() << "cannot write '" << path_ << "': close failed: " << errno_text(err);
  }
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    const std::string temp = temp_path_;  // abandon() forgets it
    abandon();
    TFM_FAIL() << "cannot write '" << path_ << "': rename from '" << temp
               << "' failed: " << errno_text(err);
  }
  committed_ = true;
  temp_path_.clear();
  // The rename lives in the directory; without this fsync a crash may bring back the old file.
  const std::string dir = parent_dir(path_);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) {
    const int err = errno;
    TFM_FAIL() << "wrote '" << path_
               << "' but cannot open its directory to sync it: " << errno_text(err);
  }
  const int rc = ::fsync(dfd);
  const int err = errno;
  ::close(dfd);
  // Some file systems cannot fsync a directory (EINVAL); they give no stronger guarantee anyway.
  TFM_CHECK(rc == 0 || err == EINVAL)
      << "wrote '" << path_ << "' but syncing its directory failed: " << errno_text(err);
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  AtomicFileWriter w(path);
  w.write(bytes);
  w.commit();
}

void copy_file_atomic(const std::string& from, const std::string& to) {
  const int fd = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    TFM_FAIL() << "cannot copy '" << from << "' to '" << to << "': " << errno_text(err);
  }
  // Streamed rather than read whole: a vocabulary is small, but nothing here needs it to be.
  try {
    AtomicFileWriter w(to);
    char buf[1 << 16];
    for (;;) {
      const ssize_t r = ::read(fd, buf, sizeof buf);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) {
        const int err = errno;
        TFM_FAIL() << "cannot copy '" << from << "': reading failed: " << errno_text(err);
      }
      if (r == 0) break;
      w.write(buf, static_cast<size_t>(r));
    }
    w.commit();
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

namespace {

void fsync_dir(const std::string& dir) {
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;  // nothing stronger to offer; the data files themselves were synced
  ::fsync(dfd);
  ::close(dfd);
}

}  // namespace

void write_dir_atomic(const std::string& dir,
                      const std::function<void(const std::string& tmp_dir)>& fill) {
  namespace fs = std::filesystem;
  std::string target = dir;
  while (target.size() > 1 && target.back() == '/') target.pop_back();
  const std::string parent = parent_dir(target), base = base_name(target);
  TFM_CHECK(!base.empty() && base != "." && base != "..")
      << "cannot write directory '" << dir << "': not a directory name";
  // The exchange below swaps whatever is at `dir` for the new directory: only ever a directory.
  struct stat st {};
  TFM_CHECK(::stat(target.c_str(), &st) != 0 || S_ISDIR(st.st_mode))
      << "cannot write directory '" << dir << "': it exists and is not a directory";
  std::error_code ec;
  fs::create_directories(parent, ec);
  TFM_CHECK(!ec) << "cannot create directory '" << parent << "': " << ec.message();
  std::string tmp;
  for (int attempt = 0;; ++attempt) {
    tmp = parent + "/." + base + ".tmp." + std::to_string(::getpid()) + "." +
          std::to_string(temp_counter.fetch_add(1));
    if (::mkdir(tmp.c_str(), 0777) == 0) break;
    const int err = errno;
    TFM_CHECK(err == EEXIST && attempt < 100)
        << "cannot write directory '" << dir << "': creating '" << tmp
        << "' failed: " << errno_text(err);
  }
  try {
    fill(tmp);
    fsync_dir(tmp);
    // Exchange when the target exists: at no moment is `dir` missing or half written.
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) != 0) {
      const int err = errno;
      if (err == ENOENT) {
        if (::rename(tmp.c_str(), target.c_str()) != 0) {
          const int err2 = errno;
          TFM_FAIL() << "cannot write directory '" << dir << "': rename from '" << tmp
                     << "' failed: " << errno_text(err2);
        }
        tmp.clear();
      } else if (err == EINVAL || err == ENOSYS) {
        // A file system without exchange: the old directory goes aside first (a short window
        // without `dir`, never one with a half-written `dir`).
        const std::string old = tmp + ".old";
        TFM_CHECK(::rename(target.c_str(), old.c_str()) == 0 &&
                  ::rename(tmp.c_str(), target.c_str()) == 0)
            << "cannot write directory '" << dir << "': rename failed: " << errno_text(errno);
        tmp = old;
      } else {
        TFM_FAIL() << "cannot write directory '" << dir << "': rename from '" << tmp
                   << "' failed: " << errno_text(err);
      }
    }
    fsync_dir(parent);
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
    throw;
  }
  if (!tmp.empty()) fs::remove_all(tmp, ec);  // the old contents, after an exchange
}

std::vector<std::string> remove_stale_temp_files(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> removed;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() < 2 || name[0] != '.' || name.find(".tmp.") == std::string::npos) continue;
    std::error_code rm;
    fs::remove_all(it->path(), rm);
    TFM_CHECK(!rm) << "cannot remove the stale temporary '" << it->path().string()
                   << "': " << rm.message();
    removed.push_back(it->path().string());
  }
  return removed;
}

std::string read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    TFM_FAIL() << "cannot open '" << path << "': " << errno_text(err);
  }
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      const int err = errno;
      ::close(fd);
      TFM_FAIL() << "cannot read '" << path << "': " << errno_text(err);
    }
    if (r == 0) break;
    out.append(buf, static_cast<size_t>(r));
  }
  ::close(fd);
  return out;
}

namespace {

void check_regular(const struct stat& st, const std::string& path) {
  TFM_CHECK(S_ISREG(st.st_mode)) << "cannot read '" << path << "': it is "
                                 << (S_ISDIR(st.st_mode)    ? "a directory"
                                     : S_ISFIFO(st.st_mode) ? "a FIFO"
                                     : S_ISCHR(st.st_mode)  ? "a character device"
                                                            : "something else")
                                 << ", not a regular file";
}

}  // namespace

void require_regular_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;  // opening it says what is wrong
  check_regular(st, path);
}

std::shared_ptr<Storage> map_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading would wait for a writer, forever; so it opens, and
  // the check below refuses it. (No effect on a regular file.)
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    TFM_FAIL() << "cannot open '" << path << "': " << errno_text(err);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    TFM_FAIL() << "cannot stat '" << path << "': " << errno_text(err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    check_regular(st, path);
  }
  auto storage = std::make_shared<Storage>();
  const size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {  // mmap refuses length 0
    ::close(fd);
    return storage;
  }
  // Private and copy-on-write: the file is opened read-only and never changes, but tensors
  // viewing the map may be updated in place (an optimiser step after loading), which then
  // touches private pages instead of faulting.
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);  // the mapping keeps its own reference to the file
  TFM_CHECK(p != MAP_FAILED) << "cannot map '" << path << "': " << errno_text(err);
  storage->data = std::shared_ptr<void>(p, [size](void* q) { ::munmap(q, size); });
  storage->nbytes = size;
  return storage;
}

}  // namespace tfm
