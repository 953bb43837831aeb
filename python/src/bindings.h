// What the binding's files share: the InvalidArgumentError mapping and each file's bind function.
#pragma once

#include <pybind11/pybind11.h>

#include <tfm/error.h>

namespace tfm_python {

// A bad option value (thrown by the binding only, so it can become InvalidArgumentError: the
// library has the one exception type).
struct InvalidArgument : tfm::Error {
  using tfm::Error::Error;
};

// Runs f with a library error re-thrown as InvalidArgument: for calls whose only possible
// failure is a bad value.
template <typename F>
auto as_invalid_argument(F&& f) {
  try {
    return f();
  } catch (const InvalidArgument&) {
    throw;
  } catch (const tfm::Error& e) {
    throw InvalidArgument(e.message());
  }
}

// tfm._tfm.Trainer, TrainOptions, the events and TrainResult (trainer.cpp).
void bind_trainer(pybind11::module_& m);

// __version__, build_commit and the command line (package.cpp).
void bind_package(pybind11::module_& m);

}  // namespace tfm_python
