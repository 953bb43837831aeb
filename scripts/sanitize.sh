#!/usr/bin/env bash
# The suite under AddressSanitizer + UndefinedBehaviorSanitizer (docs/contributing.md): builds
# RelWithDebInfo with -DTFM_SANITIZE=address,undefined into build-sanitize/ (override with
# BUILD_DIR) and runs ctest there; any report fails the run. Not part of CI (the build alone takes
# about 40 minutes on 2 cores); run it before a release and after touching kernels or memory
# management. Extra arguments go to ctest (e.g. -R Linear). On a CPU above AVX2 it runs the suite
# a second time at TFM_CPU_ISA=avx2, as scripts/test.sh does.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
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
# The MPI runs on their own: Open MPI keeps what MPI_Init allocates until exit, so LeakSanitizer
# gets its suppressions (tests/sanitize/lsan_mpi.supp) and whole stacks to match them against
# (fast_unwind_on_malloc=0: the frame-pointer unwinder stops inside libmpi, which has none).
mpi_env=(env "ASAN_OPTIONS=$ASAN_OPTIONS:fast_unwind_on_malloc=0"
  "LSAN_OPTIONS=suppressions=$root/tests/sanitize/lsan_mpi.supp:print_suppressions=0")
# suite SKIP [ctest args]: the suite but python_tools and the tests matched by SKIP (regex
# alternatives, "|fuzz_.*"). With ctest arguments (the caller's -R), those tests alone, all under
# the MPI settings (slower, but they may include mpi_cli).
suite() {
  local skip=$1
  shift
  if [[ $# -gt 0 ]]; then
    "${mpi_env[@]}" ctest --output-on-failure -j"$(nproc)" -E "^(python_tools$skip)\$" "$@"
  else
    ctest --output-on-failure -j"$(nproc)" -E "^(python_tools|mpi_cli$skip)\$"
    "${mpi_env[@]}" ctest --output-on-failure -R '^mpi_cli$'
  fi
}
start=$(date +%s)
suite "" "$@"
level=$(./tfm --version | sed -n 's/^cpu: //p')
if [[ "$level" != avx2 ]]; then
  TFM_CPU_ISA=avx2 ONEDNN_MAX_CPU_ISA=AVX2 suite "|fuzz_.*" "$@"
fi
echo "sanitize.sh: clean; ctest took $(($(date +%s) - start)) s"
