#!/usr/bin/env bash
# The test command: installs what is missing, builds (Release), runs the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh Release
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j"$(nproc)" "$@"
