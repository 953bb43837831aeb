#!/usr/bin/env bash
# ctest ctranslate2_diff: the differential test of tfm.ctranslate2 against the real CTranslate2
# package (tools/ct2_diff.py: tools/ct2_program.py run by both on the weights of
# tests/fixtures/ct2, converted for CTranslate2 by bench/ctranslate2/convert_tfm.py).
# Runs with the interpreter of TFM_VENV or the repository's .venv (scripts/setup_venv.sh) and this
# build's extension; skipped (exit 77) where either is missing. The default suite has the
# fixture-based form of the test (python/tests/test_ctranslate2.py).
# Usage: ct2_diff_test.sh EXTENSION   (the built tfm._tfm module; "" when the build has none)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
ext=${1:-}
python=${TFM_VENV:-$root/.venv}/bin/python
if [[ ! -x $python ]] || ! "$python" -c "import ctranslate2, sentencepiece" 2>/dev/null; then
  echo "ctranslate2_diff: SKIPPED: no Python with ctranslate2 at $python (scripts/setup_venv.sh)"
  exit 77
fi
if [[ -z $ext || ! -f $ext ]]; then
  echo "ctranslate2_diff: SKIPPED: this build has no Python extension (-DTFM_BUILD_PYTHON=ON)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/tfm"
cp "$root"/python/tfm/*.py "$tmp/tfm/"
cp "$ext" "$tmp/tfm/"
cd "$tmp"
PYTHONPATH=$tmp OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} \
  "$python" "$root/tools/ct2_diff.py" --fixture "$root/tests/fixtures/ct2"
