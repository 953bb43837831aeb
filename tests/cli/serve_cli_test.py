#!/usr/bin/env python3
"""tfm serve over loopback HTTP (run by serve_test.sh, which trains the model).

    serve_cli_test.py TFM MODEL_DIR SENTENCES_FILE TMP_DIR

Starts servers with `--port 0` (the kernel picks a free port; the server logs it) and checks:
translations equal `tfm translate`'s under concurrent clients; LibreTranslate's form (JSON,
form-encoded, single and list `q`); statuses 400, 401, 404, 413, 503 and 504 each from a request
that must produce it; /metrics parses as Prometheus text; /v1/model; the access log; and that
SIGTERM with requests in flight answers all of them and exits 0. Every wait is bounded.
Standard library only. Exit 0: all passed.
"""
from __future__ import annotations

import concurrent.futures as cf
import json
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.parse

import serve_lib as sl
from serve_lib import check

TFM, MODEL, SENTENCES, TMP = sys.argv[1:5]
LM = sys.argv[5] if len(sys.argv) > 5 else None  # a decoder-only model for /v1/generate
KEY = "s3cret-key"


def Server(*flags: str, model: str | None = None) -> sl.Server:
    return sl.Server(TFM, model or MODEL, *flags)


SENT: dict[int, int] = {}  # requests sent to each port, for the access-log check
SENT_LOCK = threading.Lock()


def request(url: str, body=None, headers=None, method=None, timeout: float = 60):
    """serve_lib.request, counted per port."""
    with SENT_LOCK:
        port = urllib.parse.urlsplit(url).port
        SENT[port] = SENT.get(port, 0) + 1
    return sl.request(url, body, headers, method, timeout)


AUTH = {"Authorization": "Bearer " + KEY}


def translate(server, texts, **extra):
    status, _, body = request(server.url("/v1/translate"), {"text": texts, **extra}, AUTH)
    return status, (json.loads(body) if body.startswith("{") else body)


def reference(lines: list[str], *flags: str) -> list[str]:
    return sl.reference(TFM, MODEL, lines, *flags)


METRIC_LINE = re.compile(
    r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*"'
    r'(,[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*")*)?\})? (\S+)$')


def parse_metrics(text: str) -> dict:
    """Prometheus text format 0.0.4: {name: {labels: value}}; raises on a malformed line."""
    types, samples = {}, {}
    for line in text.splitlines():
        if not line:
            continue
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if parts[1] == "TYPE":
                assert parts[3] in ("counter", "gauge", "histogram", "summary", "untyped"), line
                types[parts[2]] = parts[3]
            else:
                assert parts[1] == "HELP" and len(parts) == 4, line
            continue
        m = METRIC_LINE.match(line)
        assert m, "malformed sample line: " + line
        name, labels, value = m.group(1), m.group(3) or "", m.group(5)
        float(value)  # +Inf, NaN and numbers parse
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        assert name in types or base in types, "sample without a TYPE: " + line
        samples.setdefault(name, {})[labels] = float(value)
    for name, kind in types.items():
        if kind != "histogram":
            continue
        buckets = samples.get(name + "_bucket", {})
        assert buckets, name + " has no buckets"
        ordered = sorted(buckets.items(),
                         key=lambda kv: float(re.search(r'le="([^"]+)"', kv[0]).group(1)))
        values = [v for _, v in ordered]
        assert values == sorted(values), name + " buckets are not cumulative"
        assert 'le="+Inf"' in buckets and buckets['le="+Inf"'] == samples[name + "_count"][""], \
            name + ": +Inf bucket != count"
    return samples


wait_for = sl.wait_for


def in_flight(server) -> float:
    _, _, body = request(server.url("/metrics"), headers=AUTH, timeout=10)
    return parse_metrics(body)["tfm_serve_requests_in_flight"][""]


def lm_checks(lm: str, pool: list[str]) -> None:
    """POST /v1/generate with a decoder-only model: concurrent clients get `tfm generate`'s lines,
    n-best and scores too; the wrong endpoint for a model, a target_prefix and bad values are 400s
    that name the problem."""
    prompts = [" ".join(l.split()[:2]) for l in pool if l][:10] + [""]

    def generate_ref(*flags: str) -> list[str]:
        out = subprocess.run([TFM, "generate", "--model", lm, "--threads", "1", "--max-length", "20",
                              *flags], input="".join(p + "\n" for p in prompts),
                             capture_output=True, text=True, timeout=120, check=True)
        return out.stdout.split("\n")[:-1]

    ref = generate_ref()
    check(len(ref) == len(prompts) and all(r.startswith(p) for r, p in zip(ref, prompts)) and
          sum(r != p for r, p in zip(ref, prompts)) >= len(prompts) // 2,
          f"tfm generate's reference: {ref}")
    ref_nb = [l.split(" ||| ") for l in generate_ref("--beam-size", "2", "--n-best", "2")]
    g = Server("--max-batch-delay-ms", "20", model=lm)
    try:
        def client(c: int):
            mine = [prompts[(c + i) % len(prompts)] for i in range(1 + c % 3)]
            status, _, body = request(g.url("/v1/generate"), {"text": mine, "max_length": 20})
            want = [ref[prompts.index(p)] for p in mine]
            got = json.loads(body).get("generations") if status == 200 else body
            return status == 200 and got == want, (status, got, want)

        with cf.ThreadPoolExecutor(6) as ex:
            results = list(ex.map(client, range(12)))
        check(all(ok for ok, _ in results),
              f"/v1/generate under 12 concurrent clients: {[r for ok, r in results if not ok]}")
        status, _, body = request(g.url("/v1/generate"), {
            "text": prompts[:3], "max_length": 20, "beam_size": 2, "n_best": 2,
            "return_scores": True})
        out = json.loads(body) if status == 200 else {}
        want_text = [[r[1] for r in ref_nb if r[0] == str(i)] for i in range(3)]
        want_scores = [[float(r[2]) for r in ref_nb if r[0] == str(i)] for i in range(3)]
        check(status == 200 and out.get("generations") == want_text and
              all(abs(a - b) < 1e-5 for s1, s2 in zip(out.get("scores", []), want_scores)
                  for a, b in zip(s1, s2)), f"/v1/generate n-best: {status} {body} vs {ref_nb}")
        for want, what, url, body in [
                (400, "is a decoder-only model: POST /v1/generate", "/v1/translate",
                 {"text": ["x"]}),
                (400, "target_prefix does not apply", "/v1/generate",
                 {"text": ["x"], "target_prefix": ["y"]}),
                (400, "beam_size", "/v1/generate", {"text": ["x"], "beam_size": 0}),
                (400, "prompt 1 has", "/v1/generate",
                 {"text": [" ".join(["haus"] * 300)]})]:
            status, _, got = request(g.url(url), body)
            check(status == want and what in got, f"{url} {body}: {status} {got}")
    finally:
        g.stop()
    s = Server()
    try:
        status, _, got = request(s.url("/v1/generate"), {"text": ["x"]})
        check(status == 400 and "is an encoder-decoder model: POST /v1/translate" in got,
              f"/v1/generate on a translation model: {status} {got}")
    finally:
        s.stop()


def libretranslatepy_replay(s, text: str, want: str) -> None:
    """The requests libretranslatepy 2.1.4 sends (captured byte for byte from its languages()
    and translate(), with and without an API key, on Python 3.11's urllib): a GET with a form
    body, and a form POST. serve_libretranslate_test.py runs the client itself."""
    q = urllib.parse.urlencode({"q": text})
    head = ("Accept-Encoding: identity\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            "Content-Length: {n}\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: Python-urllib/3.11\r\n"
            "Connection: close\r\n\r\n")
    bodies = [("GET /languages", "api_key=" + KEY), ("POST /translate", f"{q}&source=de&target=en&api_key={KEY}"),
              ("GET /languages", ""), ("POST /translate", f"{q}&source=auto&target=en")]
    for i, (line, body) in enumerate(bodies):
        raw = (f"{line} HTTP/1.1\r\n" + head.format(n=len(body.encode()), port=s.port) + body).encode()
        with sl.connect(s.port) as c:
            c.sendall(raw)
            r = sl.read_response(c)
        if line.endswith("/languages"):
            ok = r is not None and r.status == 200 and r.json() == [
                {"code": "de", "name": "German", "targets": ["en"]}]
        elif i == 1:
            ok = r is not None and r.status == 200 and r.json() == {"translatedText": want}
        else:  # no key: the server wants one
            ok = r is not None and r.status == 401
        check(ok, f"libretranslatepy's request {i + 1} ({line}): {r}")


def web_checks(pool: list[str], ref: dict) -> None:
    """What browsers and LibreTranslate clients need: the page, CORS, /languages, HTML bodies,
    alternatives, attention; checked against `tfm translate`."""
    origin = "http://example.test:8000"
    s = Server("--api-key", KEY, "--cors", origin, "--source-lang", "de", "--target-lang", "en")
    try:
        status, hdrs, body = request(s.url("/"))
        check(status == 200 and hdrs.get("Content-Type", "").startswith("text/html") and
              'src="/app.js"' in body, f"GET /: {status} {hdrs} {body[:100]}")
        status, hdrs, body = request(s.url("/app.js"))
        check(status == 200 and "javascript" in hdrs.get("Content-Type", "") and
              "/v1/translate" in body, f"GET /app.js: {status}")
        status, _, body = request(s.url("/languages"))
        check(status == 200 and json.loads(body) == [{"code": "de", "name": "German",
                                                       "targets": ["en"]}],
              f"/languages: {status} {body}")
        # LibreTranslate's frontend settings (no key needed to read that one is): the pair, the
        # key, what tfm lacks (files, suggestions), and the page's wait, which the page uses.
        status, _, body = request(s.url("/frontend/settings"))
        fs = json.loads(body) if status == 200 else {}
        check(fs.get("language") == {"source": {"code": "de", "name": "German"},
                                     "target": {"code": "en", "name": "English"}} and
              fs.get("apiKeys") is True and fs.get("keyRequired") is True and
              fs.get("charLimit") == -1 and fs.get("filesTranslation") is False and
              fs.get("supportedFilesFormat") == [] and fs.get("suggestions") is False and
              isinstance(fs.get("frontendTimeout"), int) and fs["frontendTimeout"] > 0,
              f"/frontend/settings: {status} {body}")
        # CORS: a preflight from the allowed origin, its answers; another origin gets nothing.
        pre = {"Origin": origin, "Access-Control-Request-Method": "POST",
               "Access-Control-Request-Headers": "authorization, content-type"}
        status, hdrs, _ = request(s.url("/v1/translate"), headers=pre, method="OPTIONS")
        check(status == 204 and hdrs.get("Access-Control-Allow-Origin") == origin and
              "POST" in hdrs.get("Access-Control-Allow-Methods", "") and
              "authorization" in hdrs.get("Access-Control-Allow-Headers", "").lower(),
              f"CORS preflight: {status} {hdrs}")
        status, hdrs, _ = request(s.url("/v1/translate"), {"text": pool[:1]},
                                  {**AUTH, "Origin": origin})
        check(status == 200 and hdrs.get("Access-Control-Allow-Origin") == origin,
              f"CORS answer: {status} {hdrs}")
        status, hdrs, _ = request(s.url("/v1/translate"), {"text": pool[:1]},
                                  {"Origin": origin})
        check(status == 401 and hdrs.get("Access-Control-Allow-Origin") == origin,
              f"CORS on a 401 (the page must see it): {status} {hdrs}")
        status, hdrs, _ = request(s.url("/health"), headers={"Origin": "http://evil.test"})
        check("Access-Control-Allow-Origin" not in hdrs, f"CORS for another origin: {hdrs}")

        libre = s.url("/translate")
        a, b = pool[1], pool[2]
        html = f'<p class="x">{a} <b>{b}</b></p><script>var s = "{a}";</script>'
        status, _, body = request(libre, {"q": html, "source": "de", "target": "en",
                                          "format": "html", "api_key": KEY})
        want = f'<p class="x">{ref[a]} <b>{ref[b]}</b></p><script>var s = "{a}";</script>'
        check(status == 200 and json.loads(body)["translatedText"] == want,
              f"LibreTranslate html: {status} {body} != {want}")
        nbest = [l.split(" ||| ")[1] for l in subprocess.run(
            [TFM, "translate", "--model", MODEL, "--threads", "1", "--beam-size", "4",
             "--n-best", "3"], input=a + "\n", capture_output=True, text=True, timeout=60,
            check=True).stdout.splitlines()]
        status, _, body = request(libre, {"q": a, "source": "auto", "target": "en",
                                          "alternatives": 2, "api_key": KEY})
        out = json.loads(body) if status == 200 else {}
        check(out.get("translatedText") == nbest[0] and out.get("alternatives") == nbest[1:],
              f"LibreTranslate alternatives: {status} {body} != {nbest}")
        status, _, body = request(libre, {"q": a, "source": "de", "target": "fr",
                                          "api_key": KEY})
        check(status == 400 and "de to en" in body, f"a target the server lacks: {status} {body}")
        status, _, body = request(s.url("/detect"), "q=a",
                                  {"Content-Type": "application/x-www-form-urlencoded"})
        check(status == 501, f"/detect: {status} {body}")

        libretranslatepy_replay(s, a, ref[a])

        # Attention: a row per target token, a column per source position, rows summing to 1.
        status, out = translate(s, pool[3:5], beam_size=2, n_best=2, return_attention=True)
        ok = status == 200 and len(out.get("attention", [])) == 2
        for hyps in out.get("attention", []) if ok else []:
            for h in hyps:
                rows, src, trg = h["weights"], h["source_tokens"], h["target_tokens"]
                ok = ok and len(rows) == len(trg) > 0 and src[-1] == "</s>" and \
                    all(len(r) == len(src) and abs(sum(r) - 1) < 1e-4 for r in rows) and \
                    "".join(trg).replace("\u2581", " ").strip() in \
                    [t.strip() for t in out["translations"][out["attention"].index(hyps)]]
        check(ok, f"return_attention: {status} {str(out)[:300]}")
    finally:
        check(s.stop() == 0, "web server: SIGTERM exit status")


def main() -> int:
    with open(SENTENCES, encoding="utf-8") as f:
        pool = [l.rstrip("\n") for l in f][:24]
    pool += ["", "der hund sieht die katze", "haus"]
    long_text = " ".join(["haus"] * 300)  # beyond the tiny model's 258 positions
    ref = dict(zip(pool, reference(pool)))
    ref_beam = reference(pool[:6], "--beam-size", "3")
    # Target prefixes: every other sentence starts with the first word of another's translation.
    others = [t for t in ref_beam[::-1] if t]
    prefixes = [others[i % len(others)].split()[0] if i % 2 == 0 else "" for i in range(6)]
    with open(TMP + "/prefixes.txt", "w", encoding="utf-8") as f:
        f.write("".join(p + "\n" for p in prefixes))
    ref_prefix = reference(pool[:6], "--beam-size", "3", "--target-prefix", TMP + "/prefixes.txt")
    check(sum(a != b for a, b in zip(ref_prefix, ref_beam)) >= 2 and
          all(t.startswith(p) for t, p in zip(ref_prefix, prefixes)),
          f"the prefixes do not change the reference: {ref_prefix} vs {ref_beam}")
    ref_long = reference([long_text])[0]

    # --- The main server: API key, small limits, concurrent clients. ---
    s = Server("--api-key", KEY, "--max-sentences", "8", "--max-request-bytes", "4096",
               "--max-batch-delay-ms", "20")
    try:
        status, _, body = request(s.url("/health"))
        check(status == 200 and json.loads(body)["status"] == "ok", f"/health: {status} {body}")

        status, _, body = request(s.url("/v1/model"), headers=AUTH)
        info = json.loads(body) if status == 200 else {}
        positions = info.get("config", {}).get("max_length")
        check(status == 200 and info.get("src_vocab_size") == 40 and
              info.get("max_length") == positions, f"/v1/model: {status} {body}")

        # N concurrent clients, each a few requests of its own sentences: exactly tfm translate.
        def client(c: int) -> list[str]:
            errors = []
            for r in range(3):
                texts = [pool[(c * 5 + r * 3 + i) % len(pool)] for i in range(1 + (c + r) % 6)]
                status, out = translate(s, texts)
                want = [ref[t] for t in texts]
                if status != 200 or out.get("translations") != want:
                    errors.append(f"client {c} request {r}: {status} {out} != {want}")
            return errors

        with cf.ThreadPoolExecutor(12) as ex:
            errors = [e for errs in ex.map(client, range(12)) for e in errs]
        check(not errors, "concurrent clients: " + "; ".join(errors[:3]))

        status, out = translate(s, pool[0])  # one string: a list of one translation
        check(status == 200 and out["translations"] == [ref[pool[0]]], f"single text: {out}")
        status, out = translate(s, pool[:6], beam_size=3, return_scores=True)
        check(status == 200 and out["translations"] == ref_beam and len(out["scores"]) == 6 and
              all(isinstance(x, float) for x in out["scores"]), f"beam 3: {out} != {ref_beam}")
        status, out = translate(s, pool[:6], beam_size=3, target_prefix=prefixes)
        check(status == 200 and out["translations"] == ref_prefix,
              f"target_prefix: {out} != {ref_prefix}")
        status, out = translate(s, pool[:2], beam_size=3, n_best=2)
        check(status == 200 and [len(t) for t in out["translations"]] == [2, 2] and
              out["translations"][0][0] == ref_beam[0], f"n_best 2: {out}")
        status, out = translate(s, pool[:3], sampling={"topk": 5, "temperature": 0.7, "seed": 3})
        status2, out2 = translate(s, pool[:3], sampling={"topk": 5, "temperature": 0.7, "seed": 3})
        check(status == 200 and status2 == 200 and out == out2 and len(out["translations"]) == 3,
              f"sampling is not reproducible: {out} {out2}")
        status, out = translate(s, [long_text])
        check(status == 200 and out["translations"] == [ref_long] and
              f"{positions} positions" in out.get("warnings", [""])[0], f"truncation warning: {out}")
        status, out = translate(s, [])
        check(status == 200 and out == {"translations": []}, f"empty list: {out}")

        # LibreTranslate: JSON with a string and a list, and a form; its api_key field.
        libre = s.url("/translate")
        status, _, body = request(libre, {"q": pool[1], "source": "de", "target": "en",
                                          "format": "text", "api_key": KEY})
        check(status == 200 and json.loads(body) == {"translatedText": ref[pool[1]]},
              f"LibreTranslate JSON: {status} {body}")
        status, _, body = request(libre, {"q": pool[1:4], "source": "de", "target": "en"}, AUTH)
        check(status == 200 and json.loads(body)["translatedText"] == [ref[t] for t in pool[1:4]],
              f"LibreTranslate list: {status} {body}")
        form = urllib.parse.urlencode({"q": pool[2], "source": "de", "target": "en",
                                       "format": "text", "api_key": KEY}).encode()
        status, _, body = request(libre, form,
                                  {"Content-Type": "application/x-www-form-urlencoded"})
        check(status == 200 and json.loads(body) == {"translatedText": ref[pool[2]]},
              f"LibreTranslate form: {status} {body}")

        # Errors, each with a JSON message.
        def expect(want: int, what: str, url: str, body=None, headers=AUTH, method=None):
            status, hdrs, text = request(url, body, headers, method)
            ok = status == want
            try:
                ok = ok and bool(json.loads(text)["error"])
            except (ValueError, KeyError, TypeError):
                ok = False
            check(ok, f"{what}: want {want}, got {status} {text}")
            return hdrs

        tr = s.url("/v1/translate")
        expect(400, "malformed JSON", tr, '{"text": ["a"')
        expect(400, "not an object", tr, '["a"]')
        expect(400, "text is a number", tr, {"text": 5})
        expect(400, "a list of numbers", tr, {"text": ["a", 3]})
        expect(400, "beam_size a string", tr, {"text": "a", "beam_size": "4"})
        expect(400, "beam_size 0", tr, {"text": "a", "beam_size": 0})
        expect(400, "n_best above beam", tr, {"text": "a", "beam_size": 2, "n_best": 3})
        expect(400, "sampling with a beam", tr, {"text": "a", "beam_size": 2, "sampling": {}})
        expect(400, "topp out of range", tr, {"text": "a", "sampling": {"topp": 0}})
        expect(400, "missing text", tr, {"beam_size": 2})
        expect(400, "target_prefix of another length", tr, {"text": ["a", "b"],
                                                              "target_prefix": ["x"]})
        expect(400, "target_prefix a list for one text", tr, {"text": "a", "target_prefix": ["x"]})
        expect(400, "target_prefix a number", tr, {"text": "a", "target_prefix": 3})
        expect(400, "target_prefix too long", tr, {"text": "a", "max_length": 3,
                                                   "target_prefix": "the dog sees the cat"})
        expect(400, "LibreTranslate xml", libre, {"q": "a", "format": "xml"})
        expect(400, "unknown field", tr, {"text": "a", "beam": 2})
        # A form is LibreTranslate's (415 naming its route); JSON sent as one (curl -d) is JSON.
        form = {**AUTH, "Content-Type": "application/x-www-form-urlencoded"}
        status, _, text = request(tr, "text=a", form)
        check(status == 415 and "go to POST /translate" in text, f"a form body: {status} {text}")
        status, _, text = request(tr, '{"text": ["%s"]}' % pool[0], form)
        check(status == 200 and json.loads(text)["translations"] == [ref[pool[0]]],
              f"JSON sent as a form: {status} {text}")
        expect(405, "GET on a POST route", tr, method="GET")
        expect(401, "no key", tr, {"text": "a"}, headers={})
        hdrs = expect(401, "wrong key", tr, {"text": "a"},
                      headers={"Authorization": "Bearer s3cret-kez"})
        check(hdrs.get("WWW-Authenticate") == "Bearer", f"401 without WWW-Authenticate: {hdrs}")
        expect(401, "metrics without key", s.url("/metrics"), headers={})
        expect(401, "LibreTranslate wrong api_key", libre, {"q": "a", "api_key": "nope"}, {})
        expect(404, "unknown route", s.url("/v2/nothing"))
        expect(404, "unknown POST route", s.url("/v1/translatex"), {"text": "a"})
        expect(413, "body over --max-request-bytes", tr, {"text": "x" * 5000})
        expect(413, "more than --max-sentences", tr, {"text": ["a"] * 9})

        # The metrics parse, and count what happened.
        status, hdrs, body = request(s.url("/metrics"), headers=AUTH)
        try:
            m = parse_metrics(body)
            parsed = True
        except (AssertionError, ValueError, KeyError, IndexError) as e:
            parsed, m = False, {}
            print("metrics:", e, body, sep="\n")
        check(status == 200 and parsed and hdrs.get("Content-Type", "").startswith("text/plain"),
              "metrics do not parse as Prometheus text")
        if parsed:
            codes = m.get("tfm_serve_requests_total", {})
            check(codes.get('code="200"', 0) >= 37 and codes.get('code="400"', 0) >= 15 and
                  codes.get('code="401"', 0) >= 4 and codes.get('code="404"', 0) >= 2 and
                  codes.get('code="413"', 0) >= 2, f"requests by status: {codes}")
            for name in ("tfm_serve_request_duration_seconds_count", "tfm_serve_queue_sentences",
                         "tfm_serve_batch_sentences_count", "tfm_serve_batch_tokens_count",
                         "tfm_serve_tokens_per_second", "tfm_serve_target_tokens_total"):
                check(name in m, f"metrics lack {name}")
            check(m.get("tfm_serve_target_tokens_total", {}).get("", 0) > 0 and
                  m.get("tfm_serve_tokens_per_second", {}).get("", 0) > 0, "no tokens counted")
            # Dynamic batching happened: fewer batches than translated sentences.
            check(m["tfm_serve_batch_sentences_count"][""] < m["tfm_serve_batch_sentences_sum"][""],
                  "no batch held two sentences")
    finally:
        rc = s.stop()
    check(rc == 0, f"idle server: SIGTERM exit status {rc}")
    access = [l for l in s.lines if re.match(r'^\d{4}-\d\d-\d\dT\S+Z 127\.0\.0\.1 "[A-Z]+ /\S*" \d{3} ', l)]
    check(len(access) == SENT[s.port], f"access log: {len(access)} lines for {SENT[s.port]} requests")
    check(any('"POST /v1/translate" 413' in l for l in access), "access log lacks the 413")

    # --- 503: one request admitted (--max-queue 1) waits 5 s for company; the next is refused.
    # (The delays leave room for a loaded machine: clients only need to arrive within them.)
    s = Server("--max-queue", "1", "--max-batch-delay-ms", "5000")
    try:
        with cf.ThreadPoolExecutor(1) as ex:
            first = ex.submit(translate, s, pool[:2])
            check(wait_for(lambda: in_flight(s) == 1, 10), "the first request was not admitted")
            status, hdrs, body = request(s.url("/v1/translate"), {"text": pool[3]})
            check(status == 503 and hdrs.get("Retry-After") == "1",
                  f"full queue: want 503 with Retry-After, got {status} {hdrs} {body}")
            status, out = first.result(30)
            check(status == 200 and out["translations"] == [ref[t] for t in pool[:2]],
                  f"the admitted request: {status} {out}")
    finally:
        check(s.stop() == 0, "503 server: SIGTERM exit status")

    # --- 504: a request that cannot be done within --timeout-ms. ---
    s = Server("--timeout-ms", "100", "--max-batch-delay-ms", "3000")
    try:
        t0 = time.time()
        status, out = translate(s, pool[:2])
        check(status == 504 and "--timeout-ms" in str(out) and time.time() - t0 < 2.5,
              f"timeout: want 504 within 2.5 s, got {status} {out} after {time.time() - t0:.2f} s")
        check(wait_for(lambda: in_flight(s) == 0, 5), "a timed-out request stayed admitted")
        status, _, _ = request(s.url("/health"))
        check(status == 200, "the server is unhealthy after a timeout")
    finally:
        check(s.stop() == 0, "504 server: SIGTERM exit status")

    # --- SIGTERM with requests in flight: every one is answered, then exit 0. ---
    s = Server("--max-batch-delay-ms", "8000")
    clients = 8
    with cf.ThreadPoolExecutor(clients) as ex:
        futures = [ex.submit(translate, s, pool[c * 3:c * 3 + 3]) for c in range(clients)]
        admitted = wait_for(lambda: in_flight(s) == clients, 7)
        check(admitted, f"not every drain request was admitted: {in_flight(s)}")
        t0 = time.time()
        s.proc.send_signal(signal.SIGTERM)
        answers = [f.result(30) for f in futures]
    try:
        rc = s.proc.wait(30)
    except subprocess.TimeoutExpired:
        s.proc.kill()
        rc = None
    s.reader.join(5)
    lost = [c for c, (status, out) in enumerate(answers)
            if status != 200 or out["translations"] != [ref[t] for t in pool[c * 3:c * 3 + 3]]]
    check(not lost, f"SIGTERM lost requests {lost}: {answers}")
    check(rc == 0, f"drain: exit status {rc}")
    check(time.time() - t0 < 6, "the drain waited for the batch delay")
    check(any("SIGTERM" in l for l in s.lines) and s.lines[-1] == "tfm serve: stopped",
          f"drain log: {s.lines[-3:]}")

    web_checks(pool, ref)
    if LM:
        lm_checks(LM, pool)
    return sl.summary("serve_cli_test.py")


if __name__ == "__main__":
    sys.exit(main())
