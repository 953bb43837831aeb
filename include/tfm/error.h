// The exceptions of tfm: every failure of the library (a bad file, a bad value, a shape that does
// not fit) is a tfm::Error whose message says what went wrong and where, in words a user can act
// on; the source location is kept apart for debugging. Two kinds a caller may want to tell apart
// derive from it: InvalidArgument (a value the caller gave is out of range or contradicts
// another: the caller's mistake, a 400 to a server, a ValueError to Python) and QueueFull (the
// translator's request queue is at its limit: retry later, a 503).
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

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

// A value the caller gave is not allowed: out of range, of the wrong kind, or at odds with
// another value or with the model. Nothing has been done when it is thrown.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// The translator's queue holds TranslatorOptions::max_queued_requests requests already; nothing
// was queued. Retrying later may succeed.
class QueueFull : public Error {
 public:
  using Error::Error;
};

// The name a user knows an option by, from its field name in the C++ API ("beam_size"): the
// validators (validate_translation_options, validate_train_options) name every option through
// one, so `tfm translate` says "--beam-size", the server "'beam_size'" and the library
// "beam_size" with the same checks. A speller may also be asked for "field=value" (the value of
// a choice, such as "search=sampling") and should then name how its user makes that choice.
using OptionSpeller = std::function<std::string(std::string_view field)>;

// The C++ API's own spelling: the field name itself ("field=value" as "field value").
inline std::string field_name(std::string_view field) {
  std::string s(field);
  for (char& c : s)
    if (c == '=') c = ' ';
  return s;
}

}  // namespace tfm
