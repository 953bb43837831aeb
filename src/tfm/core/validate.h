// Checks of the values a user gives (flags, config files) before any work starts, with messages
// that name the value and say what is allowed: "--beam-size must be at least 1 (got 0)", never a
// range ending in a 300-digit number. NaN and ±Inf are refused wherever a float is read. A value
// out of range is a tfm::InvalidArgument.
#pragma once

#include <cstdint>
#include <string>

namespace tfm {

// `v` for messages: integers as they are, floats in %g (1e+30, nan, inf).
std::string format_value(double v);

// name must be at least lo (got v).
void require_at_least(const std::string& name, int64_t v, int64_t lo);
// lo <= v <= hi, integers.
void require_in_range(const std::string& name, int64_t v, int64_t lo, int64_t hi);
// v finite (not NaN, not ±Inf).
void require_finite(const std::string& name, double v);
// v finite and lo <= v <= hi (lo_open / hi_open: strict at that end).
void require_in_range(const std::string& name, double v, double lo, double hi, bool lo_open = false,
                      bool hi_open = false);

}  // namespace tfm
