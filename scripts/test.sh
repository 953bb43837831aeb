#!/usr/bin/env bash
# The test command: installs what is missing, builds (Release), runs the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh Release
cd "${BUILD_DIR:-build}"
# ctest runs nproc tests at once, each with its own OpenMP threads: with libgomp's spinning waits
# a thread whose partner is descheduled burns its time slice at every barrier, and the trainer
# tests ran 30-70x slower (docs/performance.md, "The shared machine"). Results do not depend on
# the wait policy.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
ctest --output-on-failure -j"$(nproc)" "$@"
