#!/usr/bin/env bash
# Creates (or updates) the virtual environment with the heavy Python packages that make the
# fixtures (tools/) and run bench/'s peers: torch 2.x, transformers, ctranslate2, sentencepiece
# (tools/requirements.txt). The default test command does not need it.
#   scripts/setup_venv.sh            # into .venv/ at the repository's root (TFM_VENV overrides)
#   .venv/bin/python tools/make_hf_fixtures.py ...
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${TFM_VENV:-.venv}
[[ -x /usr/bin/python3 ]] || { echo "setup_venv: /usr/bin/python3 missing: run scripts/setup.sh" >&2; exit 1; }
if [[ ! -x "$venv/bin/python" ]]; then
  /usr/bin/python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q -r tools/requirements.txt
"$venv/bin/python" - <<'PY'
import ctranslate2, torch, transformers
print(f"setup_venv: torch {torch.__version__}, transformers {transformers.__version__}, "
      f"ctranslate2 {ctranslate2.__version__}")
PY
