// What the binding's files share: each file's bind function. (A tfm::InvalidArgument from the
// library becomes InvalidArgumentError, any other tfm::Error tfm.Error: module.cpp.)
#pragma once

#include <pybind11/pybind11.h>

#include <tfm/error.h>

namespace tfm_python {

// tfm._tfm.Trainer, TrainOptions, the events and TrainResult (trainer.cpp).
void bind_trainer(pybind11::module_& m);

// __version__, build_commit and the command line (package.cpp).
void bind_package(pybind11::module_& m);

}  // namespace tfm_python
