#include "tfm/core/validate.h"

#include <cmath>
#include <cstdio>

#include "tfm/core/check.h"

namespace tfm {

std::string format_value(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

void require_at_least(const std::string& name, int64_t v, int64_t lo) {
  TFM_CHECK_ARG(v >= lo) << name << " must be at least " << lo << " (got " << v << ")";
}

void require_in_range(const std::string& name, int64_t v, int64_t lo, int64_t hi) {
  TFM_CHECK_ARG(v >= lo && v <= hi)
      << name << " must be between " << lo << " and " << hi << " (got " << v << ")";
}

void require_finite(const std::string& name, double v) {
  TFM_CHECK_ARG(std::isfinite(v)) << name << " must be a finite number (got " << format_value(v)
                                  << ")";
}

void require_in_range(const std::string& name, double v, double lo, double hi, bool lo_open,
                      bool hi_open) {
  require_finite(name, v);
  const bool ok = (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
  TFM_CHECK_ARG(ok) << name << " must be in " << (lo_open ? "(" : "[") << format_value(lo) << ", "
                    << format_value(hi) << (hi_open ? ")" : "]") << " (got " << format_value(v)
                    << ")";
}

}  // namespace tfm
