// Which tfm a program runs: the version (one number for the library, the `tfm` command and the
// Python package, set by the project() line of the top-level CMakeLists.txt) and the git commit
// it was built from.
#pragma once

namespace tfm {

// "0.1.0".
const char* version();
// The commit's short hash ("5658b66a1b2c"), with "-dirty" when tracked files differed from it at
// build time; "unknown" when built outside a git checkout.
const char* build_commit();

}  // namespace tfm
