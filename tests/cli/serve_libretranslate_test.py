#!/usr/bin/env python3
"""LibreTranslate's Python client, libretranslatepy, unchanged, against tfm serve (run by
serve_test.sh, which trains the model).

    serve_libretranslate_test.py TFM MODEL_DIR SENTENCES_FILE TMP_DIR [LM_DIR]

libretranslatepy comes from the Python package index into the virtual environment of
scripts/setup_venv.sh (tools/requirements.txt): $TFM_VENV, default .venv at the repository's
root. Without it this test is skipped (exit 77): the default suite keeps serve_cli_test.py's
replay of the client's exact requests, which needs no network. The client runs in that
environment's Python; its languages() and translate() (with and without an API key, source
"auto" or the server's) must give /languages and `tfm translate`'s lines, and a language pair
the server lacks must raise the client's HTTP error.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import serve_lib as sl
from serve_lib import check

TFM, MODEL, SENTENCES, TMP = sys.argv[1:5]
ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
VENV = os.environ.get("TFM_VENV") or os.path.join(ROOT, ".venv")
PYTHON = os.path.join(VENV, "bin", "python")

CLIENT = r"""
import json, sys, urllib.error
from libretranslatepy import LibreTranslateAPI
url, key, texts = sys.argv[1], sys.argv[2] or None, json.loads(sys.argv[3])
lt = LibreTranslateAPI(url, key)
out = {"languages": lt.languages(),
       "de": [lt.translate(t, "de", "en") for t in texts],
       "auto": [lt.translate(t, "auto", "en") for t in texts]}
try:
    lt.translate(texts[0], "de", "es")
    out["es"] = "no error"
except urllib.error.HTTPError as e:
    out["es"] = [e.code, json.loads(e.read())["error"]]
print(json.dumps(out))
"""


def client(url: str, key: str, texts: list[str]) -> dict:
    r = subprocess.run([PYTHON, "-c", CLIENT, url, key, json.dumps(texts)], capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError("libretranslatepy failed:\n" + r.stderr)
    return json.loads(r.stdout)


def main() -> int:
    probe = subprocess.run([PYTHON, "-c", "import libretranslatepy"], capture_output=True) \
        if os.path.exists(PYTHON) else None
    if probe is None or probe.returncode != 0:
        print(f"serve_libretranslate_test.py: skipped: no libretranslatepy in {VENV} "
              "(scripts/setup_venv.sh installs tools/requirements.txt)")
        return 77
    with open(SENTENCES, encoding="utf-8") as f:
        texts = [l.rstrip("\n") for l in f][:5] + ["der hund & die katze"]
    ref = sl.reference(TFM, MODEL, texts)
    for key in ("", "lt-key"):
        flags = ["--source-lang", "de", "--target-lang", "en"] + (["--api-key", key] if key else [])
        s = sl.Server(TFM, MODEL, *flags)
        try:
            out = client(s.url("/"), key, texts)
            check(out["languages"] == [{"code": "de", "name": "German", "targets": ["en"]}],
                  f"languages() with key {key!r}: {out['languages']}")
            check(out["de"] == ref and out["auto"] == ref,
                  f"translate() with key {key!r}: {out['de']} / {out['auto']} != {ref}")
            check(out["es"][0] == 400 and "de to en" in out["es"][1],
                  f"translate() to a language the server lacks: {out['es']}")
        finally:
            check(s.stop() == 0, "SIGTERM exit status")
    return sl.summary("serve_libretranslate_test.py")


if __name__ == "__main__":
    sl.main_guard(main)
