#!/usr/bin/env bash
# The test command: installs what is missing, builds (Release), runs the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scripts/setup.sh --python --wheel-root
scripts/build.sh Release
cd "${BUILD_DIR:-build}"
# ctest runs nproc tests at once, each with its own OpenMP threads: with libgomp's spinning waits
# a thread whose partner is descheduled burns its time slice at every barrier, and the trainer
# tests ran 30-70x slower (docs/history/performance.md, "The shared machine"). Results do not depend on
# the wait policy.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
ctest --output-on-failure -j"$(nproc)" "$@"
# The Python package (python/): its wheel in a fresh virtual environment, against this build.
"$root/scripts/test_python.sh" .
# The same wheel in a bare Debian root without the build's libraries, against this build's tfm
# (about 20 s once test_python.sh has built it and the root exists).
"$root/scripts/test_wheel.sh" .

# Once more at the lowest CPU level the library supports (docs/architecture.md, "CPU levels"):
# on a CPU above AVX2 this runs the AVX2 kernels, the bf16 emulation and the int8 kernel used
# without VNNI, in tfm and in oneDNN, so CI on any machine covers every level's paths. The tests
# that do not depend on the level (the Python tools, the fuzzers, CUDA) are not repeated.
level=$(./tfm --version | sed -n 's/^cpu: //p')
if [[ "$level" == avx2 ]]; then
  echo "test.sh: this CPU's level is avx2: the suite above ran the lowest level's kernels already"
else
  echo "test.sh: CPU level $level; the suite again at TFM_CPU_ISA=avx2 ONEDNN_MAX_CPU_ISA=AVX2"
  TFM_CPU_ISA=avx2 ONEDNN_MAX_CPU_ISA=AVX2 \
    ctest --output-on-failure -j"$(nproc)" -E '^(python_tools|fuzz_.*|cuda_fatbin|Cuda.*)$' "$@"
fi

# The fuzz targets once more, coverage guided: built with Clang and libFuzzer (scripts/setup.sh
# installs them) in their own build directory, each run for TFM_FUZZ_SECONDS (default 20) under
# ASan/UBSan over its committed seed corpus (tests/fuzz/corpus/). docs/failure.md says how to run
# them longer. Without clang-14 the GCC build above has already run them through fuzz_driver.
cd "$root"
if command -v clang++-14 >/dev/null &&
  [[ -n $(find /usr/lib/llvm-14 -name 'libclang_rt.fuzzer-*.a' -print -quit 2>/dev/null) ]]; then
  fuzz_dir=${FUZZ_BUILD_DIR:-build-fuzz}
  # TFM_FUZZ_ONLY: the targets alone, each from the sources it tests (the library's per-level
  # kernels need GCC); fuzz_model_weights, which needs the whole library, ran above.
  cmake -S . -B "$fuzz_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-14 \
    -DCMAKE_CXX_COMPILER=clang++-14 -DTFM_WITH_CUDA=OFF -DTFM_FUZZ_ONLY=ON \
    -DTFM_FUZZ_SECONDS="${TFM_FUZZ_SECONDS:-20}"
  cmake --build "$fuzz_dir" -j"$(nproc)"
  ctest --test-dir "$fuzz_dir" --output-on-failure -j"$(nproc)" -L fuzz
else
  echo "test.sh: clang-14 with libFuzzer not found: the coverage-guided fuzz runs are skipped" \
    "(scripts/setup.sh installs clang-14 and libfuzzer-14-dev)"
fi

