// Grad mode: while off, ops record nothing (decoding, validation, optimiser updates).
#pragma once

namespace tfm {

class GradMode {
 public:
  static bool enabled();
  static void set_enabled(bool on);
};

// Turns grad mode off for a scope.
class NoGradGuard {
 public:
  NoGradGuard() : prev_(GradMode::enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

}  // namespace tfm
