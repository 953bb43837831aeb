#!/usr/bin/env python3
"""Load generator for `tfm serve` on loopback: throughput and latency against `tfm translate`.

    bench/serve_load.py --tfm build/tfm --model DIR --input FILE [--threads 2]
                        [--clients 1,8,64] [--delay-ms 5] [--open-fraction 0.7]

1. `tfm translate --input FILE` (one process, the whole file in batches): the reference rate.
2. For --max-batch-delay-ms D (dynamic batching waits for company) and 0 (batches only what is
   already queued), a server with the same thread count, and for each client count a closed loop:
   every client sends one sentence per request, the next as soon as the last is answered, until
   every line of FILE was sent once. Then an open loop: Poisson arrivals at --open-fraction of the
   rate the closed loop reached with the most clients, latency counted from the scheduled
   arrival (so a backlog shows).
Prints a markdown table: sentences/s, its ratio to tfm translate, p50/p95/p99 latency. Every
server runs on a port the kernel picks. Standard library only.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import http.client
import json
import random
import re
import statistics
import subprocess
import sys
import threading
import time


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = min(len(xs) - 1, max(0, int(round(q / 100 * (len(xs) - 1)))))
    return xs[k]


def start_server(args, delay_ms: int):
    proc = subprocess.Popen(
        [args.tfm, "serve", "--model", args.model, "--port", "0", "--threads", str(args.threads),
         "--max-batch-delay-ms", str(delay_ms), "--max-queue", "512", "--timeout-ms", "600000"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    port = None
    deadline = time.time() + 60
    while time.time() < deadline:
        line = proc.stderr.readline()
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if m:
            port = int(m.group(1))
            break
        if not line and proc.poll() is not None:
            break
    if port is None:
        proc.kill()
        sys.exit("serve_load: the server did not start")
    # Drain the access log so the pipe never blocks the server.
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    return proc, port


def post(port: int, text: str) -> str:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        conn.request("POST", "/v1/translate", json.dumps({"text": text}),
                     {"Content-Type": "application/json"})
        r = conn.getresponse()
        body = r.read()
        if r.status != 200:
            raise RuntimeError(f"HTTP {r.status}: {body[:200]!r}")
        return json.loads(body)["translations"][0]
    finally:
        conn.close()


def closed_loop(port: int, lines: list[str], clients: int):
    """Each client sends the next unsent line as soon as its last answer is in."""
    next_i = 0
    lock = threading.Lock()
    latencies: list[float] = []
    outputs = [None] * len(lines)

    def client():
        nonlocal next_i
        while True:
            with lock:
                i = next_i
                next_i += 1
            if i >= len(lines):
                return
            t = time.perf_counter()
            outputs[i] = post(port, lines[i])
            with lock:
                latencies.append(time.perf_counter() - t)

    t0 = time.perf_counter()
    with cf.ThreadPoolExecutor(clients) as ex:
        for f in [ex.submit(client) for _ in range(clients)]:
            f.result()
    return len(lines) / (time.perf_counter() - t0), latencies, outputs


def open_loop(port: int, lines: list[str], rate: float, seed: int = 1):
    """Poisson arrivals at `rate` requests/s; latency from each request's scheduled arrival."""
    rng = random.Random(seed)
    latencies: list[float] = []
    lock = threading.Lock()
    t0 = time.perf_counter()
    arrivals, t = [], 0.0
    for _ in lines:
        t += rng.expovariate(rate)
        arrivals.append(t)

    def one(i: int):
        post(port, lines[i])
        with lock:
            latencies.append(time.perf_counter() - (t0 + arrivals[i]))

    with cf.ThreadPoolExecutor(512) as ex:
        futures = []
        for i, at in enumerate(arrivals):
            wait = t0 + at - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            futures.append(ex.submit(one, i))
        for f in futures:
            f.result()
    return len(lines) / (time.perf_counter() - t0), latencies


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tfm", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--input", required=True, help="one sentence a line")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--clients", default="1,8,64")
    ap.add_argument("--delay-ms", type=int, default=5)
    ap.add_argument("--open-fraction", type=float, default=0.7)
    args = ap.parse_args()
    with open(args.input, encoding="utf-8") as f:
        lines = [l.rstrip("\n") for l in f if l.strip()]
    clients = [int(c) for c in args.clients.split(",")]

    cmd = [args.tfm, "translate", "--model", args.model, "--threads", str(args.threads)]
    subprocess.run(cmd, input="\n".join(lines[:64]) + "\n", capture_output=True, text=True,
                   check=True)  # warm the page cache
    t = time.perf_counter()
    ref = subprocess.run(cmd, input="\n".join(lines) + "\n", capture_output=True, text=True,
                         check=True).stdout.split("\n")[:len(lines)]
    base = len(lines) / (time.perf_counter() - t)
    print(f"{len(lines)} sentences, --threads {args.threads}")
    print("| mode | clients | sentences/s | vs tfm translate | p50 ms | p95 ms | p99 ms |")
    print("|---|---|---|---|---|---|---|")
    print(f"| `tfm translate` (one file) | – | {base:.0f} | 1.00 | – | – | – |")
    row = "| {} | {} | {:.0f} | {:.2f} | {:.1f} | {:.1f} | {:.1f} |"
    for delay in (args.delay_ms, 0):
        proc, port = start_server(args, delay)
        try:
            post(port, lines[0])  # warm up
            name = f"serve, delay {delay} ms" if delay else "serve, delay 0"
            best = 0.0
            for c in clients:
                rate, lat, out = closed_loop(port, lines, c)
                if out != ref:
                    diff = sum(a != b for a, b in zip(out, ref))
                    print(f"serve_load: {diff} translations differ from tfm translate's",
                          file=sys.stderr)
                best = max(best, rate)
                print(row.format(name + " (closed)", c, rate, rate / base,
                                 1e3 * percentile(lat, 50), 1e3 * percentile(lat, 95),
                                 1e3 * percentile(lat, 99)), flush=True)
            target = args.open_fraction * best
            rate, lat = open_loop(port, lines, target)
            print(row.format(name + f" (open, {target:.0f}/s Poisson)", "–", rate, rate / base,
                             1e3 * percentile(lat, 50), 1e3 * percentile(lat, 95),
                             1e3 * percentile(lat, 99)), flush=True)
        finally:
            proc.terminate()
            proc.wait(60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
