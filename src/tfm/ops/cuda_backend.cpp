// libtfm's side of the CUDA backend (ops/cuda_backend.h): the plugin is opened on the first call
// of any tfm::cuda function, and each function forwards to the plugin's through the table.
#include "tfm/ops/cuda_backend.h"

#include <cstdlib>
#include <type_traits>
#include <utility>

#include "tfm/core/check.h"
#include "tfm/core/cuda/check.h"
#include "tfm/core/plugin.h"
#include "tfm/version.h"

namespace tfm::cuda {

namespace {

struct Loaded {
  Backend table;
  std::string error;  // why the plugin is not there; empty when it loaded
};

const Loaded& loaded() {
  static const Loaded l = [] {
    Loaded r;
    const plugin::LoadResult p = plugin::open(kBackendFile, kBackendEntry, false);
    if (p.entry == nullptr) {
      r.error = "no CUDA backend: " + p.error;
      if (p.error.find(std::string(kBackendFile) + " not found") == 0)
        r.error += "; it is built with tfm where CMake finds the CUDA toolkit (docs/cuda.md)";
      return r;
    }
    const auto entry = reinterpret_cast<BackendEntry>(p.entry);
    if (const char* why = entry(&r.table, kBackendSignature, version()); why != nullptr)
      r.error = "no CUDA backend: " + p.path + " cannot be used: " + why;
    return r;
  }();
  return l;
}

// The table, or a tfm::Error saying why there is none.
const Backend& backend() {
  const Loaded& l = loaded();
  TFM_CHECK(l.error.empty()) << l.error;
  return l.table;
}

}  // namespace

// Each declaration in core/cuda and ops/cuda that a line of TFM_CUDA_FUNCTIONS names must match
// it exactly (before the stubs below declare their own).
#define TFM_CUDA_MATCHES_HEADER(ret, name, ...) \
  static_assert(                                \
      std::is_same_v<decltype(static_cast<ret (*)(__VA_ARGS__)>(&name)), ret (*)(__VA_ARGS__)>);
TFM_CUDA_FUNCTIONS(TFM_CUDA_MATCHES_HEADER)
#undef TFM_CUDA_MATCHES_HEADER

// The stubs: `ret name(T1 p1, T2 p2, ...) { return backend().name(p1, p2, ...); }`. The
// parameters are numbered by TFM_CUDA_EACH, which applies m(index, type) to each type.
#define TFM_CUDA_NARGS(...)                                                                      \
  TFM_CUDA_NARGS_(__VA_ARGS__ __VA_OPT__(, ) 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, \
                  1, 0)
#define TFM_CUDA_NARGS_(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, N, ...) N
#define TFM_CUDA_CAT(a, b) TFM_CUDA_CAT_(a, b)
#define TFM_CUDA_CAT_(a, b) a##b
#define TFM_CUDA_EACH(m, ...) \
  TFM_CUDA_CAT(TFM_CUDA_EACH_, TFM_CUDA_NARGS(__VA_ARGS__))(m, __VA_ARGS__)
#define TFM_CUDA_EACH_0(m, ...)
#define TFM_CUDA_EACH_1(m, t) m(1, t)
#define TFM_CUDA_EACH_2(m, t, ...) m(2, t), TFM_CUDA_EACH_1(m, __VA_ARGS__)
#define TFM_CUDA_EACH_3(m, t, ...) m(3, t), TFM_CUDA_EACH_2(m, __VA_ARGS__)
#define TFM_CUDA_EACH_4(m, t, ...) m(4, t), TFM_CUDA_EACH_3(m, __VA_ARGS__)
#define TFM_CUDA_EACH_5(m, t, ...) m(5, t), TFM_CUDA_EACH_4(m, __VA_ARGS__)
#define TFM_CUDA_EACH_6(m, t, ...) m(6, t), TFM_CUDA_EACH_5(m, __VA_ARGS__)
#define TFM_CUDA_EACH_7(m, t, ...) m(7, t), TFM_CUDA_EACH_6(m, __VA_ARGS__)
#define TFM_CUDA_EACH_8(m, t, ...) m(8, t), TFM_CUDA_EACH_7(m, __VA_ARGS__)
#define TFM_CUDA_EACH_9(m, t, ...) m(9, t), TFM_CUDA_EACH_8(m, __VA_ARGS__)
#define TFM_CUDA_EACH_10(m, t, ...) m(10, t), TFM_CUDA_EACH_9(m, __VA_ARGS__)
#define TFM_CUDA_EACH_11(m, t, ...) m(11, t), TFM_CUDA_EACH_10(m, __VA_ARGS__)
#define TFM_CUDA_EACH_12(m, t, ...) m(12, t), TFM_CUDA_EACH_11(m, __VA_ARGS__)
#define TFM_CUDA_EACH_13(m, t, ...) m(13, t), TFM_CUDA_EACH_12(m, __VA_ARGS__)
#define TFM_CUDA_EACH_14(m, t, ...) m(14, t), TFM_CUDA_EACH_13(m, __VA_ARGS__)
#define TFM_CUDA_EACH_15(m, t, ...) m(15, t), TFM_CUDA_EACH_14(m, __VA_ARGS__)
#define TFM_CUDA_EACH_16(m, t, ...) m(16, t), TFM_CUDA_EACH_15(m, __VA_ARGS__)
#define TFM_CUDA_PARAM(i, t) t p##i
#define TFM_CUDA_ARG(i, t) std::forward<t>(p##i)
#define TFM_CUDA_STUB(ret, name, ...)                                \
  ret name(TFM_CUDA_EACH(TFM_CUDA_PARAM, __VA_ARGS__)) {             \
    return backend().name(TFM_CUDA_EACH(TFM_CUDA_ARG, __VA_ARGS__)); \
  }
TFM_CUDA_FUNCTIONS(TFM_CUDA_STUB)

bool backend_available() {
  return loaded().error.empty();
}

// Without the plugin there is no device, and the reason says what is missing: code that checks
// for a device first (has_device, the Translator and Trainer options) reports it in its error.
int device_count() {
  const Loaded& l = loaded();
  return l.error.empty() ? l.table.device_count() : 0;
}

bool has_device() {
  return device_count() > 0;
}

std::string no_device_reason() {
  const Loaded& l = loaded();
  return l.error.empty() ? l.table.no_device_reason() : l.error;
}

// Only the plugin makes streams that own a handle, so an owning Stream means it is loaded.
Stream Stream::create() {
  return backend().stream_create();
}

Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    if (owned_) loaded().table.stream_release(*this);
    handle_ = o.handle_;
    owned_ = o.owned_;
    o.owned_ = false;
  }
  return *this;
}

Stream::~Stream() {
  if (owned_) loaded().table.stream_release(*this);
}

void Stream::synchronize() const {
  backend().stream_synchronize(*this);
}

size_t CudaCachingAllocator::size_class(size_t bytes) {
  return backend().allocator_size_class(bytes);
}

namespace detail {

std::string format_error(const char* library, const char* call, int status, const char* name,
                         const char* description) {
  return backend().format_error(library, call, status, name, description);
}

void throw_cuda_error(int status, const char* call, const char* file, int line) {
  backend().throw_cuda_error(status, call, file, line);
  std::abort();  // the plugin's function throws
}

void throw_cublas_error(int status, const char* call, const char* file, int line) {
  backend().throw_cublas_error(status, call, file, line);
  std::abort();
}

}  // namespace detail

}  // namespace tfm::cuda
