#!/usr/bin/env python3
"""tfm serve with a converted NLLB model: each request's source_lang/target_lang (POST
/v1/translate) and LibreTranslate's source/target (POST /translate) give Transformers' text for
that language pair (the cases of tests/fixtures/hf_text/nllb/reference.json), requests of several
pairs at once; an unknown code is a 400 that names it.

Usage: convert_serve_test.py TFM MODEL_DIR REFERENCE_JSON
"""
from __future__ import annotations

import concurrent.futures as cf
import json
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.request

TFM, MODEL, REFERENCE = sys.argv[1:4]
FAILURES = []


def check(cond: bool, what: str) -> None:
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what, flush=True)


def start() -> tuple[subprocess.Popen, int, list[str]]:
    proc = subprocess.Popen([TFM, "serve", "--model", MODEL, "--port", "0", "--threads", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    ready = threading.Event()
    port = []

    def drain():
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            if m:
                port.append(int(m.group(1)))
                ready.set()
        ready.set()

    threading.Thread(target=drain, daemon=True).start()
    if not ready.wait(60) or not port:
        proc.kill()
        raise SystemExit("server did not start: " + "\n".join(lines))
    return proc, port[0], lines


def post(port: int, path: str, body: dict) -> tuple[int, dict | str]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read().decode())
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def main() -> int:
    with open(REFERENCE, encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    proc, port, log = start()
    try:
        def one(case):
            body = {"text": case["sources"]}
            if case["src_lang"] is not None:
                body["source_lang"] = case["src_lang"]
            if case["tgt_lang"] is not None:
                body["target_lang"] = case["tgt_lang"]
            if case["num_beams"] is not None:
                body["beam_size"] = case["num_beams"]
            return body, post(port, "/v1/translate", body)

        # Every case at once: requests of different language pairs share the server.
        with cf.ThreadPoolExecutor(len(cases)) as pool:
            for body, (status, out) in pool.map(one, cases):
                what = {k: v for k, v in body.items() if k != "text"}
                check(status == 200, f"/v1/translate {what}: status {status}: {out}")
                if status == 200:
                    want = next(c["outputs"] for c in cases
                                if c["src_lang"] == body.get("source_lang")
                                and c["tgt_lang"] == body.get("target_lang")
                                and c["num_beams"] == body.get("beam_size"))
                    check(out["translations"] == want, f"/v1/translate {what}: {out} != {want}")
        # LibreTranslate's form: source and target are the tokenizer's codes.
        case = next(c for c in cases if c["src_lang"] and c["num_beams"] is None)
        status, out = post(port, "/translate", {"q": case["sources"], "source": case["src_lang"],
                                                "target": case["tgt_lang"]})
        check(status == 200 and out.get("translatedText") == case["outputs"],
              f"/translate {case['src_lang']}→{case['tgt_lang']}: {status} {out}")
        status, out = post(port, "/v1/translate", {"text": "Ein Hund", "target_lang": "xx_Latn"})
        check(status == 400 and "target_lang" in out and "xx_Latn" in out,
              f"unknown target_lang: {status} {out}")
        status, out = post(port, "/v1/translate", {"text": "Ein Hund", "source_lang": "yy_Latn"})
        check(status == 400 and "source_lang" in out and "yy_Latn" in out,
              f"unknown source_lang: {status} {out}")
    finally:
        proc.terminate()
        proc.wait(30)
    if FAILURES:
        print("\n".join(log[-20:]))
    print(f"convert_serve_test: {len(FAILURES)} failed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
