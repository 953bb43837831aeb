#!/usr/bin/env python3
"""Model load time and peak RSS of `tfm translate`, per model and precision, for one or more tfm
binaries side by side (e.g. a build before a change and one after), in the same run.

  bench/load_memory.py --tfm before=/tmp/before/build/tfm --tfm after=build/tfm \
      --model small=/tmp/models/small --model base=/tmp/models/base --input test.de --repeats 5

Load time: wall time of translating one empty line (load, bind, nothing decoded), median of the
repeats. Peak RSS: ru_maxrss of translating --input (greedy, batch 32), the median of the repeats.
Both from os.wait4 of each child, so nothing but the Python standard library is needed.
"""
import argparse
import os
import statistics
import subprocess
import time


def run(cmd, stdin_path):
    with open(stdin_path, "rb") as fin, open(os.devnull, "wb") as fout:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdin=fin, stdout=fout, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        err = p.stderr.read().decode(errors="replace")
        p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {err.strip()}")
    return wall, usage.ru_maxrss / 1024.0  # MiB


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tfm", action="append", required=True, help="NAME=PATH of a tfm binary")
    ap.add_argument("--model", action="append", required=True, help="NAME=DIR")
    ap.add_argument("--input", required=True, help="source text for the RSS runs")
    ap.add_argument("--precisions", default="fp32,bf16,int8")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    empty = "/tmp/tfm_load_memory_empty.txt"
    with open(empty, "w") as f:
        f.write("\n")
    bins = [b.split("=", 1) for b in a.tfm]
    print("| model | precision | " + " | ".join(f"{n} load s | {n} peak RSS MiB" for n, _ in bins) + " |")
    print("|---|---|" + "---|---|" * len(bins))
    for mname, mdir in (m.split("=", 1) for m in a.model):
        for prec in a.precisions.split(","):
            loads = {n: [] for n, _ in bins}
            rss = {n: [] for n, _ in bins}
            # Interleaved repeats: the binaries see the same machine load.
            for _ in range(a.repeats):
                for name, path in bins:
                    base = [path, "translate", "--model", mdir, "--precision", prec,
                            "--threads", str(a.threads)]
                    loads[name].append(run(base, empty)[0])
                    rss[name].append(run(base, a.input)[1])
            cells = [f"{statistics.median(loads[n]):.3f} | {statistics.median(rss[n]):.1f}"
                     for n, _ in bins]
            print(f"| {mname} | {prec} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
