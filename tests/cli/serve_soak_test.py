#!/usr/bin/env python3
"""tfm serve under everything at once (run by serve_test.sh, which trains the model).

    serve_soak_test.py TFM MODEL_DIR SENTENCES_FILE TMP_DIR [LM_DIR]

For SOAK_SECONDS on one server: translation clients checking every answer against
`tfm translate`, pipelining clients (five requests a packet, answers in order), half-closing
clients, gzip and brotli bombs (200 MB of JSON each), 100 clients sending a byte every half
second (cut off at --read-timeout-ms), and a stream of new connections left idle; then SIGTERM
with all of it still running. Throughout, /health (a new connection every 100 ms) must answer
within 1 s and the server's resident memory stay under its size after start-up plus
MEMORY_BOUND_MB; every answer must be right or an expected refusal (413 for bombs, 408 for the
tricklers); after SIGTERM the server must exit 0 within DRAIN_SECONDS. Bounded, loopback only.
"""
from __future__ import annotations

import json
import random
import signal
import socket
import sys
import threading
import time

import serve_lib as sl
from serve_lib import bomb, check, connect, raw_request, read_response

SOAK_SECONDS = 20
MEMORY_BOUND_MB = 100
DRAIN_SECONDS = 5

TFM, MODEL, SENTENCES, TMP = sys.argv[1:5]
with open(SENTENCES, encoding="utf-8") as f:
    POOL = [l.rstrip("\n") for l in f][:30]
REF = dict(zip(POOL, sl.reference(TFM, MODEL, POOL)))


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.counts: dict[str, int] = {}
        self.wrong: list[str] = []

    def add(self, what: str, ok: bool = True, detail: str = ""):
        with self.lock:
            self.counts[what] = self.counts.get(what, 0) + 1
            if not ok and len(self.wrong) < 10:
                self.wrong.append(f"{what}: {detail}")


def translate_bytes(port: int, texts: list[str]) -> bytes:
    return raw_request("POST", "/v1/translate", json.dumps({"text": texts}).encode(),
                       {"Content-Type": "application/json"}, port)


def main() -> int:
    s = sl.Server(TFM, MODEL, "--read-timeout-ms", "3000", "--max-pending-connections", "300",
                  threads="2")
    port = s.port
    tally = Tally()
    stop = threading.Event()
    draining = threading.Event()
    bombs = {enc: bomb(enc) for enc in ("gzip", "br")}
    sl.request(s.url("/v1/translate"), {"text": POOL[:4]})
    base = s.rss_mb()
    health: list[float] = []
    peak = [base]

    def ignore_after_drain(fn):
        def run():
            rng = random.Random(threading.get_ident())
            while not stop.is_set():
                try:
                    fn(rng)
                except OSError as e:  # refused or reset once the drain closes the port
                    if not draining.is_set():
                        tally.add("connection error", False, repr(e))
                        time.sleep(0.1)
        return run

    def translator(rng):
        texts = rng.sample(POOL, rng.randint(1, 5))
        status, _, body = sl.request(s.url("/v1/translate"), {"text": texts}, timeout=30)
        ok = status == 200 and json.loads(body)["translations"] == [REF[t] for t in texts]
        tally.add("translate", ok, f"{status} {body[:120]}")

    def pipeliner(rng):
        texts = [rng.sample(POOL, 2) for _ in range(4)]
        with connect(port, 30) as c:
            c.sendall(b"".join([translate_bytes(port, t) for t in texts[:2]] +
                               [raw_request("GET", "/health", port=port)] +
                               [translate_bytes(port, t) for t in texts[2:]]))
            buf = bytearray()
            got = [read_response(c, buf) for _ in range(5)]
        if draining.is_set() and None in got:
            return
        ok = all(got) and [r.status for r in got] == [200] * 5 and all(
            got[i].json()["translations"] == [REF[t] for t in texts[j]]
            for i, j in ((0, 0), (1, 1), (3, 2), (4, 3)))
        tally.add("pipelined", ok, str(got))

    def half_closer(rng):
        texts = rng.sample(POOL, 2)
        with connect(port, 30) as c:
            c.sendall(translate_bytes(port, texts))
            c.shutdown(socket.SHUT_WR)
            r = read_response(c)
        if draining.is_set() and r is None:
            return
        tally.add("half-closed", r is not None and r.status == 200 and
                  r.json()["translations"] == [REF[t] for t in texts], str(r))
        time.sleep(0.2)

    def bomber(rng):
        enc = rng.choice(list(bombs))
        with connect(port, 30) as c:
            c.sendall(raw_request("POST", "/v1/translate", bombs[enc],
                                  {"Content-Type": "application/json", "Content-Encoding": enc},
                                  port))
            r = read_response(c)
        if draining.is_set() and r is None:
            return
        tally.add("bomb", r is not None and r.status == 413, str(r))
        time.sleep(0.3)

    def trickler(rng):
        data = translate_bytes(port, ["haus"])
        with connect(port, 30) as c:
            for i in range(len(data)):
                if stop.is_set():
                    return
                try:
                    c.send(data[i:i + 1])
                except OSError:
                    break
                time.sleep(0.5)
                if sl.closed_by_peer(c, 0.001):
                    break
            c.settimeout(5)
            try:
                r = read_response(c)
            except OSError:
                r = None
        tally.add("trickle cut off", True)

    def idler(rng):
        socks = [connect(port, 30) for _ in range(20)]
        time.sleep(1)
        for c in socks:
            c.close()

    def prober():
        while not stop.is_set():
            t0 = time.time()
            try:
                status, _, _ = sl.request(s.url("/health"), timeout=5)
            except OSError:
                status = None
            if draining.is_set():
                return
            health.append(time.time() - t0 if status == 200 else 99.0)
            time.sleep(0.1)

    def sampler():
        while not stop.is_set():
            try:
                peak[0] = max(peak[0], s.rss_mb())
            except (OSError, IndexError):
                return
            time.sleep(0.05)

    workers = ([translator] * 4 + [pipeliner] * 2 + [half_closer, bomber, idler] +
               [trickler] * 100)
    threads = [threading.Thread(target=ignore_after_drain(w), daemon=True) for w in workers]
    threads += [threading.Thread(target=prober, daemon=True),
                threading.Thread(target=sampler, daemon=True)]
    for t in threads:
        t.start()
    time.sleep(SOAK_SECONDS)
    draining.set()
    t0 = time.time()
    s.proc.send_signal(signal.SIGTERM)
    rc = s.wait(DRAIN_SECONDS + 10)
    took = time.time() - t0
    stop.set()
    for t in threads:
        t.join(10)

    print(f"serve_soak_test.py: {SOAK_SECONDS} s, answers {tally.counts}, /health worst "
          f"{max(health, default=99) * 1000:.0f} ms over {len(health)} probes, memory "
          f"{base:.0f} MB at start, peak {peak[0]:.0f} MB", flush=True)
    check(not tally.wrong, "wrong answers: " + "; ".join(tally.wrong))
    for what, least in (("translate", 20), ("pipelined", 4), ("half-closed", 4), ("bomb", 4),
                        ("trickle cut off", 100)):
        check(tally.counts.get(what, 0) >= least,
              f"too few '{what}' answers: {tally.counts.get(what, 0)} < {least}")
    check(len(health) >= SOAK_SECONDS * 5 and max(health) < 1.0,
          f"/health: worst {max(health, default=99):.2f} s over {len(health)} probes")
    check(peak[0] - base < MEMORY_BOUND_MB,
          f"memory: peak {peak[0]:.0f} MB, {peak[0] - base:.0f} MB over the start "
          f"(bound {MEMORY_BOUND_MB})")
    check(rc == 0 and took < DRAIN_SECONDS,
          f"SIGTERM under load: {sl.signal_name(rc)} after {took:.1f} s")
    return sl.summary("serve_soak_test.py")


if __name__ == "__main__":
    sl.main_guard(main)
