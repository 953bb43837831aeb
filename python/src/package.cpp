// The package's own attributes: tfm._tfm.__version__ and build_commit (include/tfm/version.h:
// the library's, so they agree with `tfm --version`), and _run_cli, the `tfm` command line
// (src/tfm/cli) behind the package's `tfm` entry point (tfm/_cli.py): the wheel carries one copy
// of the library, not a second one in a program.
#include <pybind11/stl.h>

#include <tfm/version.h>

#include <string>
#include <vector>

#include "bindings.h"
#include "tfm/cli/run.h"

namespace py = pybind11;

namespace tfm_python {

void bind_package(py::module_& m) {
  m.attr("__version__") = tfm::version();
  m.attr("build_commit") = tfm::build_commit();
  m.def(
      "_run_cli",
      [](std::vector<std::string> args) {
        std::vector<char*> argv;
        for (std::string& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        py::gil_scoped_release release;
        return tfm::cli::run(static_cast<int>(args.size()), argv.data());
      },
      py::arg("argv"),
      "Runs the tfm command line with argv (argv[0] the program's name); returns its exit "
      "status.");
}

}  // namespace tfm_python
