// Errors with context: TFM_CHECK(cond) << "what went wrong" throws tfm::Error when cond is false.
// The message carries the failed condition, the source location and whatever was streamed in,
// so a user sees e.g. "linear: input (4, 7) does not match weight (8, 5) in_features".
// TFM_CHECK_ARG throws tfm::InvalidArgument instead: for a value the caller gave.
#pragma once

#include <sstream>
#include <string>

#include "tfm/error.h"

namespace tfm {

namespace detail {

// Collects the streamed message and throws from its destructor, which runs at the end of the
// full expression `TFM_CHECK(c) << a << b;`. Throwing destructors must say noexcept(false).
class CheckFailure {
 public:
  CheckFailure(const char* cond, const char* file, int line, bool argument = false) {
    file_ = file;
    line_ = line;
    cond_ = cond;
    argument_ = argument;
  }
  CheckFailure(const CheckFailure&) = delete;
  CheckFailure& operator=(const CheckFailure&) = delete;
  ~CheckFailure() noexcept(false) {
    std::string msg = stream_.str();
    if (msg.empty()) msg = std::string("check failed: ") + cond_;
    std::string location = std::string(cond_) + " at " + file_ + ":" + std::to_string(line_);
    if (argument_) throw InvalidArgument(msg, location);
    throw Error(msg, location);
  }
  template <typename T>
  CheckFailure& operator<<(const T& v) {
    stream_ << v;
    return *this;
  }

 private:
  std::ostringstream stream_;
  const char* file_;
  const char* cond_;
  int line_;
  bool argument_;
};

// Lets `TFM_CHECK(c) << ...` be a single expression usable without braces.
struct Voidify {
  void operator&(const CheckFailure&) {}
};

}  // namespace detail
}  // namespace tfm

#define TFM_CHECK(cond) \
  (cond) ? (void)0      \
         : ::tfm::detail::Voidify() & ::tfm::detail::CheckFailure(#cond, __FILE__, __LINE__)

#define TFM_FAIL() TFM_CHECK(false)

#define TFM_CHECK_ARG(cond)           \
  (cond) ? (void)0                    \
         : ::tfm::detail::Voidify() & \
               ::tfm::detail::CheckFailure(#cond, __FILE__, __LINE__, /*argument=*/true)

#define TFM_FAIL_ARG() TFM_CHECK_ARG(false)
