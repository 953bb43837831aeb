#!/usr/bin/env bash
# Installs the Debian packages tfm needs (DESIGN.md, "Dependencies"), only those missing.
# Idempotent; runs as root or through sudo. Set TFM_SETUP_SKIP_TORCH=1 to skip python3-torch
# (only tools/ and the PyTorch comparisons use it; tests that need it skip without it).
set -euo pipefail

packages=(
  build-essential cmake pkg-config ccache
  libdnnl-dev
  libsentencepiece-dev sentencepiece
  nlohmann-json3-dev libyaml-dev libcli11-dev
  # tfm serve: compressed request bodies (zlib, Brotli's decoder); the translate page's browser
  # test drives Debian's chromium headless (tests/cli/serve_page_test.py).
  zlib1g-dev libbrotli-dev chromium
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-numpy
  # The libFuzzer targets (tests/fuzz, scripts/test.sh): Clang with its fuzzer runtime, and
  # Clang's OpenMP runtime for the library they link.
  clang-14 libfuzzer-14-dev libomp-14-dev
  # The Python package (python/, scripts/test_python.sh).
  python3-dev python3-venv python3-setuptools python3-wheel python3-pytest pybind11-dev python3-pybind11
  # Data-parallel training (TFM_WITH_MPI, docs/distributed.md): Open MPI's headers, library and
  # mpirun.
  libopenmpi-dev openmpi-bin
  # The quick start's corpus (scripts/quickstart.sh, tfm prepare-bible): two Bible modules and
  # mod2imp, which exports them; tests/cli/prepare_bible_cli_test.sh checks the real modules.
  sword-text-sparv sword-text-web libsword-utils
)
# Debian's torch calls the system libblas.so.3, which is the (very slow) reference BLAS unless an
# optimised one is installed: the PyTorch comparisons in bench/ would be meaningless without it.
if [[ "${TFM_SETUP_SKIP_TORCH:-0}" != 1 ]]; then packages+=(python3-torch libopenblas0-openmp); fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
if [[ $(id -u) -eq 0 ]]; then
  sudo=()
elif command -v sudo >/dev/null; then
  sudo=(sudo)
else
  echo "setup: need root or sudo to install: ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
