#!/usr/bin/env python3
"""tfm serve against hostile and careless clients (run by serve_test.sh, which trains the model).

    serve_hostile_test.py TFM MODEL_DIR SENTENCES_FILE TMP_DIR [LM_DIR] [--only NAME,...]

Each check is a function below, on a server of its own: compressed and chunked bodies counted
against --max-request-bytes as they are decoded (gzip, deflate and brotli bombs); memory a
request costs, bounded and given back; slow clients (a byte a second) that must not block
/health or translation, the read timeout and the cap on connections waiting for a request;
pipelined requests answered in order; half-closed clients answered; a client that resets or
closes its connection mid-request cancels it; SIGTERM draining what was
read while trickling clients are dropped, and a second signal that ends the process; the
LibreTranslate form (duplicate q, the URL's q); numbers JSON cannot hold; the metrics' request
durations and bucket labels; unknown fields; malformed framing. Every wait is bounded.
"""
from __future__ import annotations

import concurrent.futures as cf
import json
import os
import random
import re
import signal
import socket
import struct
import sys
import threading
import time
import urllib.parse
import zlib

import serve_lib as sl
from serve_lib import Server, bomb, check, connect, raw_request, read_response, request

args = [a for a in sys.argv[1:] if not a.startswith("--only")]
only = [a.split("=", 1)[1].split(",") for a in sys.argv[1:] if a.startswith("--only=")]
TFM, MODEL, SENTENCES, TMP = args[:4]
with open(SENTENCES, encoding="utf-8") as f:
    POOL = [l.rstrip("\n") for l in f][:24]


def server(*flags: str) -> Server:
    return Server(TFM, MODEL, *flags)


def translate_json(port: int, texts) -> bytes:
    body = json.dumps({"text": texts}).encode()
    return raw_request("POST", "/v1/translate", body, {"Content-Type": "application/json"}, port)


def chunked(body: bytes, size: int) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + size]), body[i:i + size])
                    for i in range(0, len(body), size)) + b"0\r\n\r\n"


def health_ms(s: Server) -> float:
    t0 = time.time()
    status, _, _ = request(s.url("/health"), timeout=10)
    return (time.time() - t0) * 1000 if status == 200 else 1e9


# --- Bodies: decoded sizes count. ---

def test_bombs():
    """gzip, deflate and brotli bodies of 200 MB JSON, plain and chunked: 413 naming the limit,
    and the server's memory does not grow with them."""
    s = server()
    try:
        base = s.rss_mb()
        for enc in ("gzip", "deflate", "br"):
            data = bomb(enc)
            for framing in ("length", "chunked"):
                headers = {"Content-Type": "application/json", "Content-Encoding": enc}
                body = data
                if framing == "chunked":
                    headers["Transfer-Encoding"] = "chunked"
                    body = chunked(data, 8192)
                with sl.PeakRss(s) as peak, connect(s.port, 30) as c:
                    c.sendall(raw_request("POST", "/v1/translate", body, headers, s.port))
                    r = read_response(c)
                check(r is not None and r.status == 413 and b"--max-request-bytes" in r.body,
                      f"{enc} bomb ({len(data)} bytes, {framing}): want 413, got {r}")
                check(peak.peak - base < 48,
                      f"{enc} bomb ({framing}): the server grew {peak.peak - base:.0f} MB")
        # Chunked without compression: 3 MB in 4 KB chunks, no Content-Length.
        with sl.PeakRss(s) as peak, connect(s.port, 30) as c:
            body = json.dumps({"text": "x" * (3 << 20)}).encode()
            c.sendall(raw_request("POST", "/v1/translate", chunked(body, 4096),
                                  {"Content-Type": "application/json",
                                   "Transfer-Encoding": "chunked"}, s.port))
            r = read_response(c)
        check(r is not None and r.status == 413, f"3 MB chunked body: want 413, got {r}")
        # A small compressed body is decoded and translated.
        body = json.dumps({"text": POOL[:3]}).encode()
        for enc, data in (("gzip", zlib.compress(body, 9, wbits=31)),
                          ("deflate", zlib.compress(body, 9))):
            st, _, got = request(s.url("/v1/translate"), data,
                                 {"Content-Type": "application/json", "Content-Encoding": enc})
            check(st == 200 and len(json.loads(got)["translations"]) == 3,
                  f"a small {enc} body: {st} {got}")
        st, _, got = request(s.url("/v1/translate"), b"\x1f\x8b\x08\x00garbage",
                             {"Content-Type": "application/json", "Content-Encoding": "gzip"})
        check(st == 400 and "gzip" in got, f"a corrupt gzip body: want 400, got {st} {got}")
        st, _, got = request(s.url("/v1/translate"), body,
                             {"Content-Type": "application/json", "Content-Encoding": "zstd"})
        check(st == 415 and "zstd" in got, f"an unknown Content-Encoding: want 415, got {st} {got}")
        check(request(s.url("/health"))[0] == 200, "the server is unhealthy after the bombs")
    finally:
        check(s.stop() == 0, "bomb server: SIGTERM exit status")


def test_memory():
    """A 1 MB text the model reads only the beginning of (one word without spaces, random
    letters, CJK): memory per request bounded, and given back once the requests are done."""
    s = server("--timeout-ms", "60000")
    try:
        request(s.url("/v1/translate"), {"text": POOL[:4]})
        base = s.rss_mb()
        rng = random.Random(1)
        texts = {"one word": "haus" * 250000,
                 "random letters": "".join(rng.choice("abcdefghijklmnopqrstuvwxyz ")
                                           for _ in range(1000000)),
                 "CJK": "".join(chr(0x4E00 + rng.randrange(2000)) for _ in range(330000))}
        for name, text in texts.items():
            t0 = time.time()
            with sl.PeakRss(s) as peak:
                st, _, got = request(s.url("/v1/translate"), {"text": text}, timeout=90)
            ok = st == 200 and "longer than the model" in got
            check(ok, f"1 MB text ({name}): {st} {got[:200]}")
            check(peak.peak - base < 64 and time.time() - t0 < 10,
                  f"1 MB text ({name}): the server grew {peak.peak - base:.0f} MB "
                  f"in {time.time() - t0:.1f} s")
            print(f"  1 MB text ({name}): +{peak.peak - base:.0f} MB, {time.time() - t0:.1f} s")
        # Eight at once, then idle: the memory comes back.
        body = {"text": ["haus " * 100000] + ["haus baum"] * 20}  # 500 KB
        with sl.PeakRss(s) as peak, cf.ThreadPoolExecutor(8) as ex:
            results = list(ex.map(lambda _: request(s.url("/v1/translate"), body, timeout=90)[0],
                                  range(8)))
        check(all(r == 200 for r in results), f"8 concurrent 500 KB requests: {results}")
        print(f"  8 x 500 KB: peak +{peak.peak - base:.0f} MB")
        released = sl.wait_for(lambda: s.rss_mb() - base < 24, 5)
        check(released, f"memory not given back: {s.rss_mb() - base:.0f} MB above the start "
                        f"(peak {peak.peak - base:.0f} MB)")
    finally:
        check(s.stop() == 0, "memory server: SIGTERM exit status")


# --- Connections. ---

def test_slow_clients():
    """150 clients sending a byte a second: /health and translation answer at once; each
    trickler is cut off at --read-timeout-ms with a 408."""
    s = server("--read-timeout-ms", "4000")
    slow: list[socket.socket] = []
    stop = threading.Event()
    try:
        for _ in range(150):
            slow.append(connect(s.port))
        text = raw_request("POST", "/v1/translate", b'{"text": ["haus"]}',
                           {"Content-Type": "application/json"}, s.port)

        def trickle():
            for i in range(len(text)):
                if stop.is_set():
                    return
                for c in slow:
                    try:
                        c.send(text[i:i + 1])
                    except OSError:
                        pass
                stop.wait(1.0)

        threading.Thread(target=trickle, daemon=True).start()
        worst, ok = 0.0, True
        for _ in range(6):
            worst = max(worst, health_ms(s))
            t0 = time.time()
            st, _, got = request(s.url("/v1/translate"), {"text": POOL[:2]}, timeout=10)
            ok = ok and st == 200 and time.time() - t0 < 2
            time.sleep(0.4)
        check(worst < 1000, f"/health under 150 slow clients: worst {worst:.0f} ms")
        check(ok, "translation under 150 slow clients: not answered within 2 s")
        # The read timeout: every trickler is answered 408 and closed.
        answered = 0
        for c in slow:
            c.settimeout(6)
            try:
                r = read_response(c)
                answered += r is not None and r.status == 408
            except OSError:
                pass
        check(answered == 150, f"trickling clients answered 408 at --read-timeout-ms: {answered}/150")
    finally:
        stop.set()
        for c in slow:
            c.close()
        check(s.stop() == 0, "slow-client server: SIGTERM exit status")


def test_pending_cap():
    """More idle connections than --max-pending-connections: the oldest are closed, and the
    server keeps answering new clients."""
    s = server("--max-pending-connections", "40")
    socks = []
    try:
        for _ in range(60):
            socks.append(connect(s.port))
            time.sleep(0.005)
        check(health_ms(s) < 1000, "/health with the pending cap reached")
        time.sleep(0.3)
        first = sum(sl.closed_by_peer(c, 0.3) for c in socks[:20])
        last = sum(sl.closed_by_peer(c, 0.05) for c in socks[-20:])
        check(first == 20 and last == 0,
              f"the oldest waiting connections are closed first: {first}/20 of the oldest, "
              f"{last}/20 of the newest")
    finally:
        for c in socks:
            c.close()
        check(s.stop() == 0, "pending-cap server: SIGTERM exit status")


def test_pipelining():
    """Five requests in one packet, mixed routes: five answers, in order."""
    s = server()
    try:
        ref = sl.reference(TFM, MODEL, POOL[:4])
        reqs = [raw_request("GET", "/health", port=s.port), translate_json(s.port, POOL[0:2]),
                raw_request("GET", "/v1/model", port=s.port), translate_json(s.port, POOL[2:4]),
                raw_request("GET", "/nothing", port=s.port)]
        with connect(s.port) as c:
            c.sendall(b"".join(reqs))
            buf = bytearray()
            got = [read_response(c, buf) for _ in reqs]
        want = [200, 200, 200, 200, 404]
        check([r.status if r else None for r in got] == want,
              f"pipelined statuses: {[r.status if r else None for r in got]} != {want}")
        if all(got):
            check(got[1].json().get("translations") == ref[0:2] and
                  got[3].json().get("translations") == ref[2:4] and
                  "src_vocab_size" in got[2].json(), f"pipelined answers out of order: {got}")
    finally:
        check(s.stop() == 0, "pipelining server: SIGTERM exit status")


def test_half_close():
    """A client that shuts down its sending side after the request still gets the answer: at
    once, and while the request waits for its batch (the server's probe of the closed side, an
    interim 100, is read past)."""
    s = server("--max-batch-delay-ms", "1500")
    try:
        ref = sl.reference(TFM, MODEL, POOL[:2])
        with connect(s.port) as c:
            c.sendall(translate_json(s.port, POOL[:2]))
            c.shutdown(socket.SHUT_WR)
            r = read_response(c)
        check(r is not None and r.status == 200 and r.json()["translations"] == ref,
              f"half-closed client: {r}")
        with connect(s.port) as c:  # the half-close while the request waits in the queue
            c.sendall(translate_json(s.port, POOL[:2]))
            check(sl.wait_for(lambda: in_flight(s) == 1, 10), "the request was not admitted")
            c.shutdown(socket.SHUT_WR)
            r = read_response(c)
        check(r is not None and r.status == 200 and r.json()["translations"] == ref,
              f"client half-closed while queued: {r}")
        with connect(s.port) as c:  # two pipelined, then the half-close
            c.sendall(raw_request("GET", "/health", port=s.port) * 2)
            c.shutdown(socket.SHUT_WR)
            buf = bytearray()
            rs = [read_response(c, buf), read_response(c, buf)]
        check(all(r is not None and r.status == 200 for r in rs), f"half-closed, two: {rs}")
    finally:
        check(s.stop() == 0, "half-close server: SIGTERM exit status")


def in_flight(s: Server) -> float:
    """Translation requests the server holds (its --max-queue counts these)."""
    _, _, text = request(s.url("/metrics"), timeout=10)
    m = re.search(r"^tfm_serve_requests_in_flight (\S+)$", text, re.M)
    return float(m.group(1)) if m else -1.0


def open_fds(s: Server) -> int:
    return len(os.listdir(f"/proc/{s.proc.pid}/fd"))


def test_disconnect():
    """A client that resets its connection while its request waits for a batch, and one that
    closes it normally (FIN): the request is cancelled at once (its place in the queue free again
    long before its batch would run), logged as 499, its descriptor closed; the next request
    takes the place and is answered."""
    disconnect(reset=True)
    disconnect(reset=False)


def disconnect(reset: bool):
    how = "reset" if reset else "closed"
    s = server("--max-queue", "1", "--max-batch-delay-ms", "20000")
    signalled = False
    try:
        ref = sl.reference(TFM, MODEL, POOL[3:5])
        base = open_fds(s)
        a = connect(s.port)
        a.sendall(translate_json(s.port, POOL[1:3]))
        check(sl.wait_for(lambda: in_flight(s) == 1, 10), "the first request was not admitted")
        if reset:  # as from a client killed or timed out
            a.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        a.close()  # else a FIN, as from a client that gave up (curl --max-time, Ctrl-C)
        t0 = time.time()
        freed = sl.wait_for(lambda: in_flight(s) == 0, 5)
        check(freed, f"the {how} client's request still held after {time.time() - t0:.1f} s "
              "(its batch waits 20 s)")
        check(sl.wait_for(lambda: open_fds(s) == base, 5),
              f"descriptors: {open_fds(s)} after the client {how}, {base} before")
        b = connect(s.port, timeout=30)
        b.sendall(translate_json(s.port, POOL[3:5]))
        check(sl.wait_for(lambda: in_flight(s) == 1, 10), "the next request was not admitted")
        # The drain sends the waiting batch at once.
        s.proc.send_signal(signal.SIGTERM)
        signalled = True
        r = read_response(b)
        b.close()
        check(r is not None and r.status == 200 and r.json()["translations"] == ref,
              f"the request after the client {how}: {r}")
    finally:
        rc = s.wait(30) if signalled else s.stop()
        check(rc == 0, f"disconnect server: SIGTERM exit status {rc}")
    check(any('"POST /v1/translate" 499' in l for l in s.lines),
          f"the access log lacks the {how} client's 499")


def test_sigterm():
    """SIGTERM with requests in flight and three trickling clients: the requests are answered,
    the tricklers closed, exit 0 at once; a second signal during a long drain ends the process."""
    s = server("--max-batch-delay-ms", "8000")
    ref = sl.reference(TFM, MODEL, POOL[:6])
    slow = [connect(s.port) for _ in range(3)]
    idle = connect(s.port)
    for c in slow:
        c.send(b"POST /v1/translate HTTP/1.1\r\nHost: x\r\n")
    with cf.ThreadPoolExecutor(3) as ex:
        futures = [ex.submit(request, s.url("/v1/translate"), {"text": POOL[i * 2:i * 2 + 2]})
                   for i in range(3)]
        admitted = sl.wait_for(lambda: "requests_in_flight 3" in
                               request(s.url("/metrics"))[2], 7)
        check(admitted, "the three drain requests were not admitted")
        t0 = time.time()
        s.proc.send_signal(signal.SIGTERM)
        answers = [f.result(30) for f in futures]
    rc = s.wait(20)
    took = time.time() - t0
    got = [json.loads(b).get("translations") if st == 200 else (st, b) for st, _, b in answers]
    check(got == [ref[0:2], ref[2:4], ref[4:6]], f"SIGTERM: the requests in flight: {got}")
    check(rc == 0 and took < 4, f"SIGTERM with trickling clients: {sl.signal_name(rc)} after "
                                f"{took:.1f} s (want exit 0 within 4 s)")
    check(all(sl.closed_by_peer(c, 1) for c in slow + [idle]),
          "trickling and idle connections are closed by the drain")
    for c in slow + [idle]:
        c.close()

    # A second SIGTERM while a long request drains: the process ends at once.
    s = server()
    long_texts = [" ".join(["haus baum"] * 130)] * 256
    with cf.ThreadPoolExecutor(1) as ex:
        fut = ex.submit(request, s.url("/v1/translate"), {"text": long_texts}, timeout=120)
        check(sl.wait_for(lambda: "requests_in_flight 1" in request(s.url("/metrics"))[2], 10),
              "the long request was not admitted")
        s.proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        t0 = time.time()
        s.proc.send_signal(signal.SIGTERM)
        rc = s.wait(20)
        took = time.time() - t0
        try:
            fut.result(30)
        except OSError:
            pass
    check(rc is not None and rc == -signal.SIGTERM and took < 2,
          f"second SIGTERM: {sl.signal_name(rc)} after {took:.1f} s (want killed by SIGTERM "
          f"within 2 s)")
    check(any("second SIGTERM" in l for l in s.lines), f"second signal not logged: {s.lines[-3:]}")


# --- Requests. ---

def test_libretranslate_form():
    """Form bodies keep every q, in order; the URL's q is not merged in; a form over 8 KB is
    fine under the limit and a 413 citing --max-request-bytes above it."""
    s = server("--max-request-bytes", "65536")
    try:
        a, b = POOL[0], POOL[1]
        ref = dict(zip([a, b], sl.reference(TFM, MODEL, [a, b])))
        form = urllib.parse.urlencode([("q", a), ("q", b), ("q", a), ("source", "de"),
                                       ("target", "en")]).encode()
        hdrs = {"Content-Type": "application/x-www-form-urlencoded"}
        st, _, got = request(s.url("/translate"), form, hdrs)
        check(st == 200 and json.loads(got)["translatedText"] == [ref[a], ref[b], ref[a]],
              f"three q values: {st} {got}")
        one = urllib.parse.urlencode({"q": a}).encode()
        st, _, got = request(s.url("/translate?q=" + urllib.parse.quote(b)), one, hdrs)
        check(st == 200 and json.loads(got)["translatedText"] == ref[a],
              f"the URL's q merged into the body's: {st} {got}")
        big = urllib.parse.urlencode({"q": " ".join([a] * 600)}).encode()  # ~12 KB
        st, _, got = request(s.url("/translate"), big, hdrs)
        check(len(big) > 8192 and st == 200, f"a {len(big)}-byte form: {st} {got[:200]}")
        huge = urllib.parse.urlencode({"q": " ".join([a] * 4000)}).encode()  # ~100 KB
        st, _, got = request(s.url("/translate"), huge, hdrs)
        check(st == 413 and "65536" in got and "--max-request-bytes" in got,
              f"a {len(huge)}-byte form over --max-request-bytes 65536: {st} {got}")
        mp = (b"--XyZ\r\nContent-Disposition: form-data; name=\"q\"\r\n\r\n" + a.encode() +
              b"\r\n--XyZ\r\nContent-Disposition: form-data; name=\"q\"\r\n\r\n" + b.encode() +
              b"\r\n--XyZ--\r\n")
        st, _, got = request(s.url("/translate"), mp,
                             {"Content-Type": "multipart/form-data; boundary=XyZ"})
        check(st == 200 and json.loads(got)["translatedText"] == [ref[a], ref[b]],
              f"multipart with two q: {st} {got}")
    finally:
        check(s.stop() == 0, "form server: SIGTERM exit status")


def test_json_numbers_and_fields():
    """1e999 is a 400 naming its field; unknown fields are 400s naming them and the closest
    known field."""
    s = server()
    try:
        for body, field in [('{"text": "a", "length_penalty": 1e999}', "length_penalty"),
                            ('{"text": "a", "sampling": {"temperature": -1e999}}',
                             "sampling.temperature"),
                            ('{"text": "a", "beam_size": 1e999}', "beam_size")]:
            st, _, got = request(s.url("/v1/translate"), body)
            check(st == 400 and field in got and "json.exception" not in got,
                  f"{body}: want 400 naming '{field}', got {st} {got}")
        for body, unknown, known in [({"text": "a", "beam": 4}, "beam", "beam_size"),
                                     ({"text": "a", "nbest": 3}, "nbest", "n_best"),
                                     ({"text": "a", "sampling": {"top_k": 3}}, "sampling.top_k",
                                      "sampling.topk"),
                                     ({"txt": "a"}, "txt", "text")]:
            st, _, got = request(s.url("/v1/translate"), body)
            check(st == 400 and f"'{unknown}'" in got and f"'{known}'" in got,
                  f"{body}: want 400 naming '{unknown}' and '{known}', got {st} {got}")
        st, _, got = request(s.url("/translate"), {"q": "a", "sourc": "de"})
        check(st == 400 and "'sourc'" in got and "'source'" in got,
              f"LibreTranslate unknown field: {st} {got}")
    finally:
        check(s.stop() == 0, "json server: SIGTERM exit status")


def test_metrics():
    """A request refused before routing (413 on its Content-Length) is timed from its arrival,
    not from the host's boot; bucket labels are the bounds as written."""
    s = server("--max-request-bytes", "1000")
    try:
        t0 = time.time()
        with connect(s.port) as c:
            c.sendall(raw_request("POST", "/v1/translate", b"", {"Content-Length": "5000"},
                                  s.port))
            r = read_response(c)
        check(r is not None and r.status == 413 and time.time() - t0 < 1,
              f"Content-Length over the limit: want 413 at once, got {r} after "
              f"{time.time() - t0:.1f} s")
        with connect(s.port) as c:
            c.sendall(b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n")
            r = read_response(c)
        check(r is not None and r.status == 414, f"a request target over the limit: {r}")
        _, _, text = request(s.url("/metrics"))
        m = re.search(r"^tfm_serve_request_duration_seconds_sum (\S+)$", text, re.M)
        total = float(m.group(1)) if m else 1e9
        check(total < 2, f"request durations sum to {total} s after two early refusals")
        labels = re.findall(r'le="([^"]+)"', text)
        bad = [l for l in labels if l != "+Inf" and repr(float(l)) != l and
               str(int(float(l))) != l]
        check(labels and not bad, f"bucket labels not in their shortest form: {bad[:4]}")
        check('le="0.005"' in text and 'le="2.5"' in text and 'le="16"' in text,
              "bucket labels 0.005, 2.5 and 16 missing")
    finally:
        check(s.stop() == 0, "metrics server: SIGTERM exit status")


def test_framing():
    """Malformed or ambiguous framing is refused with the right status; Expect: 100-continue
    works; HTTP/1.0 closes."""
    s = server()
    try:
        cases = [
            (b"POST /v1/translate HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked"
             b"\r\n\r\n0\r\n\r\n", 400, "both Content-Length and Transfer-Encoding"),
            (b"POST /v1/translate HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
             400, "two Content-Lengths"),
            (b"POST /v1/translate HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501,
             "Transfer-Encoding gzip"),
            (b"GET /health HTTP/1.1\r\nX: " + b"y" * 70000 + b"\r\n\r\n", 431, "huge header"),
            (b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n", 414, "huge request target"),
            (b"BREW /pot HTTP/1.1\r\n\r\n", 501, "unknown method"),
            (b"GET /health HTTP/3.0\r\n\r\n", 505, "HTTP/3.0"),
            (b"garbage\r\n\r\n", 400, "no request line"),
            (b"POST /v1/translate HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400,
             "a bad chunk size"),
        ]
        for data, want, what in cases:
            with connect(s.port) as c:
                c.sendall(data)
                r = read_response(c)
            check(r is not None and r.status == want, f"{what}: want {want}, got {r}")
        with connect(s.port) as c:  # Expect: 100-continue, the body after the interim answer
            body = json.dumps({"text": POOL[:1]}).encode()
            c.sendall(raw_request("POST", "/v1/translate", b"",
                                  {"Content-Type": "application/json", "Expect": "100-continue",
                                   "Content-Length": str(len(body))}, s.port))
            c.settimeout(5)
            interim = c.recv(100)
            c.sendall(body)
            r = read_response(c)
        check(interim.startswith(b"HTTP/1.1 100 Continue\r\n\r\n") and r and r.status == 200,
              f"Expect: 100-continue: {interim!r} then {r}")
        with connect(s.port) as c:
            c.sendall(b"GET /health HTTP/1.0\r\n\r\n")
            r = read_response(c)
            check(r is not None and r.status == 200 and sl.closed_by_peer(c, 2),
                  "HTTP/1.0 without keep-alive: answered and closed")
        with connect(s.port) as c:
            c.sendall(raw_request("HEAD", "/health", port=s.port) +
                      raw_request("GET", "/health", port=s.port))
            buf = bytearray()
            h, g = read_response(c, buf, head=True), read_response(c, buf)
        check(h and h.status == 200 and int(h.headers["content-length"]) == len(g.body) > 0,
              f"HEAD then GET: {h} {g}")
        check(health_ms(s) < 1000, "the server is unhealthy after malformed requests")
    finally:
        check(s.stop() == 0, "framing server: SIGTERM exit status")


TESTS = [test_bombs, test_memory, test_slow_clients, test_pending_cap, test_pipelining,
         test_half_close, test_disconnect, test_sigterm, test_libretranslate_form, test_json_numbers_and_fields,
         test_metrics, test_framing]


def main() -> int:
    for t in TESTS:
        if only and t.__name__.removeprefix("test_") not in only[0]:
            continue
        t0 = time.time()
        before = len(sl.failures)
        try:
            t()
        except Exception as e:  # one broken check does not hide the others
            import traceback
            traceback.print_exc()
            check(False, f"{t.__name__} raised {e!r}")
        print(f"{t.__name__}: {'ok' if len(sl.failures) == before else 'FAILED'} "
              f"({time.time() - t0:.1f} s)", flush=True)
    return sl.summary("serve_hostile_test.py")


if __name__ == "__main__":
    sl.main_guard(main)
