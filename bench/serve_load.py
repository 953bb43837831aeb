#!/usr/bin/env python3
"""Load test of `tfm serve` on loopback: throughput and latency against `tfm translate`.

    bench/serve_load.py --tfm build/tfm --model DIR --input FILE [--threads 2]
                        [--clients 1,8,64] [--delay-ms 5] [--open-fraction 0.7] [--repeat 3]
                        [--generator build/bench/serve_load | python]

Each repeat runs, in this order:
1. `tfm translate --input FILE` (one process, the whole file in batches): the reference rate.
2. For --max-batch-delay-ms D (dynamic batching waits for company) and 0 (batches only what is
   already queued), a server with the same thread count, and for each client count a closed loop:
   every client sends one sentence per request, the next as soon as the last is answered, until
   every line of FILE was sent once. Then an open loop: Poisson arrivals at --open-fraction of the
   rate the closed loop reached with the most clients, latency counted from the scheduled
   arrival (so a backlog shows).
After the last repeat tfm translate runs once more, and a row's ratio in a repeat is its rate over
the geometric mean of the tfm translate rates just before and just after that repeat (so a load
that comes and goes on a shared machine disturbs the ratio less). Every answer is compared with
tfm translate's line. Prints a markdown table of medians over the repeats: sentences/s, that
ratio (median, and the range),
p50/p95/p99 latency, the CPU that the server and the load generator each used per sentence (so a
generator that takes the server's cores shows), and the CPU ratio: tfm translate's CPU per
sentence over the server's and the generator's together (another process on the machine
disturbs it less than the rates), and the other load: the cores that processes other than these
used during the run (from /proc/stat), to tell a quiet run from a disturbed one.

The generator is bench/serve_load.cpp (built as build/bench/serve_load with the benchmarks): one
epoll thread, keep-alive connections, ~0.03 ms of CPU a request. `--generator python` uses this
script's own threads instead (http.client, one connection a request, ~0.4 ms of CPU a request),
which on a 2-core machine takes much of the CPU the server needs. Every server runs on a port the
kernel picks. Standard library only.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import http.client
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = min(len(xs) - 1, max(0, int(round(q / 100 * (len(xs) - 1)))))
    return xs[k]


TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int) -> float:
    """User + system CPU seconds of a process (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def machine_busy() -> float:
    """CPU seconds that every process on the machine has used (all cores), from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / TICK


def children_cpu() -> float:
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def self_cpu() -> float:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def start_server(args, delay_ms: int, log):
    # The access log goes to a file, not a pipe: no reader thread here takes CPU from the server.
    proc = subprocess.Popen(
        [args.tfm, "serve", "--model", args.model, "--port", "0", "--threads", str(args.threads),
         "--max-batch-delay-ms", str(delay_ms), "--max-queue", "512", "--timeout-ms", "600000"],
        stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.time() + 60
    while time.time() < deadline:
        with open(log.name, encoding="utf-8", errors="replace") as f:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", f.read())
        if m:
            return proc, int(m.group(1))
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    proc.kill()
    sys.exit("serve_load: the server did not start; its log: " + open(log.name).read()[-2000:])


# --- the Python generator (--generator python) -----------------------------------------------

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


def py_closed_loop(port: int, lines: list[str], clients: int):
    next_i = 0
    lock = threading.Lock()
    latencies = [0.0] * len(lines)
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
            latencies[i] = time.perf_counter() - t

    t0 = time.perf_counter()
    with cf.ThreadPoolExecutor(clients) as ex:
        for f in [ex.submit(client) for _ in range(clients)]:
            f.result()
    return time.perf_counter() - t0, latencies, outputs


def py_open_loop(port: int, lines: list[str], rate: float, seed: int = 1):
    rng = random.Random(seed)
    latencies = [0.0] * len(lines)
    outputs = [None] * len(lines)
    t0 = time.perf_counter()
    arrivals, t = [], 0.0
    for _ in lines:
        t += rng.expovariate(rate)
        arrivals.append(t)

    def one(i: int):
        outputs[i] = post(port, lines[i])
        latencies[i] = time.perf_counter() - (t0 + arrivals[i])

    with cf.ThreadPoolExecutor(512) as ex:
        futures = []
        for i, at in enumerate(arrivals):
            wait = t0 + at - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            futures.append(ex.submit(one, i))
        for f in futures:
            f.result()
    return time.perf_counter() - t0, latencies, outputs


def run_python(port, lines, ref, clients=None, rate=None):
    c0 = self_cpu()
    if clients:
        seconds, lat, out = py_closed_loop(port, lines, clients)
    else:
        seconds, lat, out = py_open_loop(port, lines, rate)
    mismatches = sum(a != b for a, b in zip(out, ref))
    return {"rate": len(lines) / seconds, "p50_ms": 1e3 * percentile(lat, 50),
            "p95_ms": 1e3 * percentile(lat, 95), "p99_ms": 1e3 * percentile(lat, 99),
            "mismatches": mismatches, "errors": 0, "client_cpu_s": self_cpu() - c0}


# --- the C++ generator ------------------------------------------------------------------------

def run_cpp(args, port, input_path, ref_path, clients=None, rate=None):
    cmd = [args.generator, "--port", str(port), "--input", input_path, "--expect", ref_path]
    cmd += ["--clients", str(clients)] if clients else ["--rate", f"{rate:.3f}"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode not in (0, 1) or not p.stdout.strip():
        sys.exit(f"serve_load: {' '.join(cmd)} failed ({p.returncode}): {p.stderr[-2000:]}")
    if p.stderr:
        print(p.stderr, file=sys.stderr, end="")
    return json.loads(p.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tfm", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--input", required=True, help="one sentence a line")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--clients", default="1,8,64")
    ap.add_argument("--delay-ms", type=int, default=5)
    ap.add_argument("--open-fraction", type=float, default=0.7,
                    help="open-loop rate as a fraction of the best closed-loop rate (0: no open loop)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--generator", default=None,
                    help="the C++ generator (default: bench/serve_load next to --tfm), or python")
    ap.add_argument("--json", help="also write every run's figures here")
    args = ap.parse_args()
    if args.generator is None:
        args.generator = os.path.join(os.path.dirname(os.path.abspath(args.tfm)), "bench",
                                      "serve_load")
    if args.generator != "python" and not os.access(args.generator, os.X_OK):
        sys.exit(f"serve_load: no generator at {args.generator}: build it "
                 "(cmake --build build --target serve_load) or pass --generator python")
    with open(args.input, encoding="utf-8") as f:
        lines = [l.rstrip("\n") for l in f if l.strip()]
    clients = [int(c) for c in args.clients.split(",")]
    tmp = tempfile.mkdtemp(prefix="serve_load.")
    input_path, ref_path = os.path.join(tmp, "input"), os.path.join(tmp, "ref")
    with open(input_path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")

    cmd = [args.tfm, "translate", "--model", args.model, "--threads", str(args.threads)]
    subprocess.run(cmd, input="\n".join(lines[:64]) + "\n", capture_output=True, text=True,
                   check=True)  # warm the page cache
    runs: list[dict] = []  # every measurement: key, repeat, figures

    def record(key, rep, fig, base):
        fig = dict(fig, key=key, repeat=rep, ratio=fig["rate"] / base)  # final ratio: below
        runs.append(fig)
        if fig["mismatches"] or fig["errors"]:
            print(f"serve_load: {key}: {fig['mismatches']} translations differ from tfm "
                  f"translate's, {fig['errors']} requests failed", file=sys.stderr)
        print(f"  [{rep}] {key}: {fig['rate']:.0f}/s ({fig['ratio']:.2f}), p50 "
              f"{fig.get('p50_ms', 0):.1f} ms, server {fig['server_cpu_s']:.2f} s CPU, "
              f"generator {fig['client_cpu_s']:.2f} s CPU, others {fig['other_cores']:.2f} cores",
              file=sys.stderr, flush=True)

    ref = None

    def reference(rep):
        nonlocal ref
        c0, m0 = children_cpu(), machine_busy()
        t = time.perf_counter()
        p = subprocess.run(cmd + ["--input", input_path], capture_output=True, text=True,
                           check=True)
        seconds = time.perf_counter() - t
        cpu = children_cpu() - c0
        other = (machine_busy() - m0 - cpu) / seconds
        base = len(lines) / seconds
        out = p.stdout.split("\n")[:len(lines)]
        if ref is None:
            ref = out
            with open(ref_path, "w", encoding="utf-8") as f:
                f.write("\n".join(ref) + "\n")
        elif out != ref:
            print("serve_load: tfm translate gave different output on a repeat", file=sys.stderr)
        record("translate", rep, {"rate": base, "mismatches": 0, "errors": 0, "client_cpu_s": 0.0,
                                  "server_cpu_s": cpu, "other_cores": other}, base)
        return base

    for rep in range(args.repeat):
        base = reference(rep)
        for delay in (args.delay_ms, 0):
            with open(os.path.join(tmp, f"log.{rep}.{delay}"), "w") as log:
                proc, port = start_server(args, delay, log)
                try:
                    if args.generator == "python":
                        measure = lambda **kw: run_python(port, lines, ref, **kw)
                    else:
                        measure = lambda **kw: run_cpp(args, port, input_path, ref_path, **kw)
                    run_python(port, lines[:8], ref[:8], clients=1)  # warm up
                    best = 0.0
                    def measured(**kw):
                        s0, m0, t = proc_cpu(proc.pid), machine_busy(), time.perf_counter()
                        fig = measure(**kw)
                        fig["server_cpu_s"] = proc_cpu(proc.pid) - s0
                        fig["other_cores"] = (machine_busy() - m0 - fig["server_cpu_s"] -
                                              fig["client_cpu_s"]) / (time.perf_counter() - t)
                        return fig

                    for c in clients:
                        fig = measured(clients=c)
                        best = max(best, fig["rate"])
                        record(f"delay {delay} closed {c}", rep, fig, base)
                    if args.open_fraction > 0:
                        fig = measured(rate=args.open_fraction * best)
                        fig["offered"] = args.open_fraction * best
                        record(f"delay {delay} open", rep, fig, base)
                finally:
                    proc.terminate()
                    proc.wait(60)

    reference(args.repeat)  # the bracket after the last repeat
    bases = [r["rate"] for r in runs if r["key"] == "translate"]
    for r in runs:
        if r["key"] != "translate":
            r["ratio"] = r["rate"] / (bases[r["repeat"]] * bases[r["repeat"] + 1]) ** 0.5
    if args.json:
        with open(args.json, "w") as f:
            json.dump(runs, f, indent=1)
    med = lambda key, field: statistics.median(r[field] for r in runs if r["key"] == key)
    rng = lambda key: [r["ratio"] for r in runs if r["key"] == key]
    gen = "C++ generator" if args.generator != "python" else "Python generator"
    print(f"{len(lines)} sentences, --threads {args.threads}, {gen}, median of {args.repeat} "
          f"repeats")
    print("| mode | clients | sentences/s | vs `tfm translate` (range) | p50 ms | p95 ms | p99 ms "
          "| server CPU ms/sent. | generator CPU ms/sent. | CPU ratio | other load (cores) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    n = len(lines)
    base_cpu = med('translate', 'server_cpu_s')
    print(f"| `tfm translate` (one file) | – | {med('translate', 'rate'):.0f} | 1.00 | – | – | – "
          f"| {1e3 * base_cpu / n:.2f} | – | 1.00 | {med('translate', 'other_cores'):.2f} |")
    for delay in (args.delay_ms, 0):
        name = f"serve, delay {delay} ms" if delay else "serve, delay 0"
        keys = [(f"delay {delay} closed {c}", f"{name} (closed)", str(c)) for c in clients]
        if args.open_fraction > 0:
            key = f"delay {delay} open"
            keys.append((key, f"{name} (open, {med(key, 'offered'):.0f}/s Poisson)", "–"))
        for key, label, c in keys:
            r = rng(key)
            print(f"| {label} | {c} | {med(key, 'rate'):.0f} | {med(key, 'ratio'):.2f} "
                  f"({min(r):.2f}–{max(r):.2f}) | {med(key, 'p50_ms'):.1f} | "
                  f"{med(key, 'p95_ms'):.1f} | {med(key, 'p99_ms'):.1f} | "
                  f"{1e3 * med(key, 'server_cpu_s') / n:.2f} | "
                  f"{1e3 * med(key, 'client_cpu_s') / n:.2f} | "
                  f"{base_cpu / (med(key, 'server_cpu_s') + med(key, 'client_cpu_s')):.2f} | "
                  f"{med(key, 'other_cores'):.2f} |",
                  flush=True)
    bad = sum(r["mismatches"] + r["errors"] for r in runs)
    if bad:
        print(f"serve_load: {bad} answers were wrong or failed", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
