#!/usr/bin/env bash
# The Python package's tests (python/tests): installs libtfm from the build directory into a
# temporary prefix, builds and installs the package into a new virtual environment (created with
# --system-site-packages, so Debian's pybind11, pytest and numpy are seen; no network), and runs
# pytest there. Usage: scripts/test_python.sh [BUILD_DIR] [pytest args...]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-${BUILD_DIR:-$src/build}}" && pwd)
shift || true
py=/usr/bin/python3  # Debian's interpreter: its packages are the only Python packages we use

missing=()
for mod in pybind11 setuptools wheel pytest venv ensurepip; do
  "$py" -c "import $mod" 2>/dev/null || missing+=("$mod")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "test_python: SKIPPED: $py lacks ${missing[*]} (scripts/setup.sh installs them)"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; exit 1; }
"$py" -m venv --system-site-packages "$tmp/venv"
echo "test_python: pip install --no-build-isolation $src/python (TFM_ROOT=$tmp/prefix)"
TFM_ROOT="$tmp/prefix" "$tmp/venv/bin/pip" install -q --no-build-isolation --no-index \
  "$src/python" >"$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; exit 1; }
# From outside python/, so `import tfm` is the installed package, not the source tree.
cd "$tmp"
TFM_BIN="$tmp/prefix/bin/tfm" TFM_ROOT="$tmp/prefix" TFM_SOURCE_DIR="$src" \
  OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} \
  "$tmp/venv/bin/python" -m pytest -p no:cacheprovider -q "$src/python/tests" "$@"
