// Checked output: every byte a command writes to a file or to standard output either arrives or
// the command fails with an error naming the path and the errno text ("No space left on device"),
// never exit 0 with a truncated result. std::ofstream and stdio report only "failed", and only to
// a caller that asks; this writes with write(2) and checks every call, flush and close.
#pragma once

#include <string>
#include <string_view>

namespace tfm {

class OutputFile {
 public:
  enum class Mode { truncate, append };
  // "" or "-": standard output (flushed, never closed). Otherwise the file is created or
  // truncated (append: appended to). Opening names the path and the reason on failure; a path
  // that is a directory is refused before anything is written.
  explicit OutputFile(const std::string& path, Mode mode = Mode::truncate);
  ~OutputFile();  // flushes quietly: call close() to see the errors
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Buffered (64 KiB); an error may surface here or at the next flush/close.
  void write(std::string_view bytes);
  OutputFile& operator<<(std::string_view bytes) {
    write(bytes);
    return *this;
  }
  // Everything written so far reaches the file (or pipe) now.
  void flush();
  // flush, then close(2) (checked: some file systems report write errors only there). Once.
  void close();

  // "<stdout>" or the path, as error messages say it.
  const std::string& name() const { return name_; }
  bool is_stdout() const { return !own_; }

 private:
  void write_all(const char* p, size_t n);
  [[noreturn]] void fail(const char* what, int err);

  std::string name_;
  int fd_ = -1;
  bool own_ = false;
  bool failed_ = false;
  std::string buf_;
};

// Flushes the C and C++ standard output streams and reports a failure (a full disk behind a
// redirect, /dev/full, a closed pipe) as tfm::Error with the errno text. For the last words of a
// command that printed with std::cout.
void flush_standard_output();

}  // namespace tfm
