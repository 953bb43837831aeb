#!/usr/bin/env bash
# The suite under AddressSanitizer + UndefinedBehaviorSanitizer (docs/contributing.md): builds
# RelWithDebInfo with -DTFM_SANITIZE=address,undefined into build-sanitize/ (override with
# BUILD_DIR) and runs ctest there; any report fails the run. Not part of CI (the build alone takes
# about half an hour on 2 cores); run it before a release and after touching kernels or memory
# management. Extra arguments go to ctest (e.g. -R Linear). On a CPU above AVX2 it runs the suite
# a second time at TFM_CPU_ISA=avx2, as scripts/test.sh does.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export BUILD_DIR=${BUILD_DIR:-build-sanitize}
# CUDA sources take no sanitizer flags and cannot run here; leave them out of this build.
scripts/build.sh RelWithDebInfo -DTFM_SANITIZE=address,undefined -DTFM_WITH_CUDA=OFF
cd "$BUILD_DIR"
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
# halt_on_error: a UBSan report is a failure, not a line in the log. detect_leaks: ASan's
# LeakSanitizer; tfm's caching allocator and oneDNN's primitive caches hold memory until exit on
# purpose, and they free it then, so leaks are real. The Python tools run no tfm code.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
start=$(date +%s)
ctest --output-on-failure -j"$(nproc)" -E '^python_tools$' "$@"
level=$(./tfm --version | sed -n 's/^cpu: //p')
if [[ "$level" != avx2 ]]; then
  TFM_CPU_ISA=avx2 ONEDNN_MAX_CPU_ISA=AVX2 \
    ctest --output-on-failure -j"$(nproc)" -E '^(python_tools|fuzz_.*)$' "$@"
fi
echo "sanitize.sh: clean; ctest took $(($(date +%s) - start)) s"
