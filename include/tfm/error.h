// The one exception type of tfm: every failure of the library (a bad file, a bad value, a shape
// that does not fit) is a tfm::Error whose message says what went wrong and where, in words a
// user can act on; the source location is kept apart for debugging.
#pragma once

#include <stdexcept>
#include <string>

namespace tfm {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, const std::string& location = "")
      : std::runtime_error(join(message, location)), message_(message), location_(location) {}
  // The message alone, without the source location (what a user needs).
  const std::string& message() const { return message_; }
  // "condition at file:line" of the check that failed; empty when not raised by a check.
  const std::string& location() const { return location_; }

 private:
  // Appends rather than chaining operator+, which trips GCC 12's -Wrestrict false positive.
  static std::string join(const std::string& message, const std::string& location) {
    if (location.empty()) return message;
    std::string s;
    s.reserve(message.size() + location.size() + 3);
    s.append(message).append(" [").append(location).append("]");
    return s;
  }
  std::string message_;
  std::string location_;
};

}  // namespace tfm
