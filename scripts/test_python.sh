#!/usr/bin/env bash
# The Python package's tests (python/tests): builds the wheel as `pip install .` builds it and
# makes it self-contained (scripts/build_wheel.sh: no network, the build tools scripts/setup.sh
# installed), installs it into a new virtual environment (--system-site-packages, so Debian's
# pytest and numpy are seen), and runs pytest there against this build's `tfm`, installed with
# `cmake --install` into a temporary prefix (the tests compare the package with the command, and
# compile a program against the installed libtfm).
# Usage: scripts/test_python.sh [BUILD_DIR] [pytest args...]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-${BUILD_DIR:-$src/build}}" && pwd)
shift || true
py=/usr/bin/python3  # Debian's interpreter: the wheel is built for it

missing=()
for mod in pytest venv ensurepip; do
  "$py" -c "import $mod" 2>/dev/null || missing+=("$mod")
done
[[ -x ${TFM_BUILD_VENV:-$src/.venv-build}/bin/auditwheel ]] || missing+=(.venv-build)
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "test_python: SKIPPED: missing ${missing[*]} (scripts/setup.sh installs them)"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; exit 1; }
wheel=$("$src/scripts/build_wheel.sh" "$tmp/dist" 2>"$tmp/wheel.log" | tail -1) ||
  { cat "$tmp/wheel.log"; exit 1; }
echo "test_python: pip install $(basename "$wheel") into a new virtual environment"
"$py" -m venv --system-site-packages "$tmp/venv"
"$tmp/venv/bin/pip" install -q --no-index --disable-pip-version-check "$wheel" >"$tmp/pip.log" 2>&1 ||
  { cat "$tmp/pip.log"; exit 1; }
# From outside python/, so `import tfm` is the installed package, not the source tree.
cd "$tmp"
TFM_BIN="$tmp/prefix/bin/tfm" TFM_ROOT="$tmp/prefix" TFM_SOURCE_DIR="$src" \
  OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} \
  "$tmp/venv/bin/python" -m pytest -p no:cacheprovider -q "$src/python/tests" "$@"
