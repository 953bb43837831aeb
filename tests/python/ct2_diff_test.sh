#!/usr/bin/env bash
# ctests ctranslate2_diff and ctranslate2_generator_diff: tfm's CTranslate2 API against the real
# CTranslate2 package. By default tools/ct2_diff.py (tools/ct2_program.py run by both on the
# weights of tests/fixtures/ct2, converted for CTranslate2 by bench/ctranslate2/convert_tfm.py);
# or the tool given (tools/ct2_generator_diff.py: the Generator on a random GPT-2 that each
# package's converter converted).
# Runs with the interpreter of TFM_VENV or the repository's .venv (scripts/setup_venv.sh) and this
# build's extension; skipped (exit 77) where either is missing, or where the tool says a package
# it needs is. The default suite has the fixture-based forms of these tests
# (python/tests/test_ctranslate2.py, test_ctranslate2_generator.py).
# Usage: ct2_diff_test.sh EXTENSION [TOOL ARGS...]   (EXTENSION: the built tfm._tfm module, ""
# when the build has none; TOOL: a script of tools/)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
ext=${1:-}
shift || true
if [[ $# -eq 0 ]]; then
  set -- ct2_diff.py --fixture "$root/tests/fixtures/ct2"
fi
python=${TFM_VENV:-$root/.venv}/bin/python
if [[ ! -x $python ]] || ! "$python" -c "import ctranslate2" 2>/dev/null; then
  echo "$1: SKIPPED: no Python with ctranslate2 at $python (scripts/setup_venv.sh)"
  exit 77
fi
if [[ -z $ext || ! -f $ext ]]; then
  echo "$1: SKIPPED: this build has no Python extension (-DTFM_BUILD_PYTHON=ON)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/tfm"
cp "$root"/python/tfm/*.py "$tmp/tfm/"
cp "$ext" "$tmp/tfm/"
cd "$tmp"
tool=$1
shift
PYTHONPATH=$tmp OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} HF_HUB_OFFLINE=1 \
  "$python" "$root/tools/$tool" "$@"
