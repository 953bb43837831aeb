#!/usr/bin/env python3
"""Engine ops against PyTorch, same machine, same run, same thread count.

Runs tfm's Google Benchmark binaries (build/bench/bench_{linear,attention,layer_norm}) for the
cases below, times the same computation in PyTorch (Debian's python3-torch), and prints one table
of medians and ratios (PyTorch time / tfm time: > 1 means tfm is faster).

    /usr/bin/python3 bench/compare_ops.py [--build-dir build] [--threads 2] [--repetitions 5]
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

# (label, tfm binary, tfm benchmark name, torch case)
CASES = [
    ("linear+bias 2048x512 . 512x2048", "bench_linear", "BM_linear/bias/M:2048/N:2048/K:512", ("linear", 2048, 512, 2048, None)),
    ("linear+bias 32x512 . 512x2048", "bench_linear", "BM_linear/bias/M:32/N:2048/K:512", ("linear", 32, 512, 2048, None)),
    ("linear+bias+relu 2048x512 . 512x2048", "bench_linear", "BM_linear/bias_relu/M:2048/N:2048/K:512", ("linear", 2048, 512, 2048, "relu")),
    ("linear+bias+gelu 2048x512 . 512x2048", "bench_linear", "BM_linear/bias_gelu/M:2048/N:2048/K:512", ("linear", 2048, 512, 2048, "gelu")),
    ("attention fwd B64 H8 T=S=32 Dh64", "bench_attention", "BM_fused_forward/B:64/H:8/T:32/S:32/Dh:64", ("attn", 64, 8, 32, 32, 64, False)),
    ("attention fwd+bwd B64 H8 T=S=32 Dh64", "bench_attention", "BM_fused_forward_backward/B:64/H:8/T:32/S:32/Dh:64", ("attn", 64, 8, 32, 32, 64, True)),
    ("attention fwd B4 H8 T=S=512 Dh64", "bench_attention", "BM_fused_forward/B:4/H:8/T:512/S:512/Dh:64", ("attn", 4, 8, 512, 512, 64, False)),
    ("attention fwd+bwd B4 H8 T=S=512 Dh64", "bench_attention", "BM_fused_forward_backward/B:4/H:8/T:512/S:512/Dh:64", ("attn", 4, 8, 512, 512, 64, True)),
    ("attention decode B128 H8 T=1 S=32", "bench_attention", "BM_fused_forward/B:128/H:8/T:1/S:32/Dh:64", ("attn", 128, 8, 1, 32, 64, False)),
    ("layer_norm fwd 2048x512", "bench_layer_norm", "BM_LayerNormForward/2048/512", ("ln", 2048, 512, False)),
    ("layer_norm fwd+bwd 2048x512", "bench_layer_norm", "BM_LayerNormForwardBackward/2048/512", ("ln", 2048, 512, True)),
    ("layer_norm fwd 4096x1024", "bench_layer_norm", "BM_LayerNormForward/4096/1024", ("ln", 4096, 1024, False)),
    ("cross entropy (ls 0.1) fwd 2048x8000", "bench_layer_norm", "BM_CrossEntropyForward/2048/8000", ("ce", 2048, 8000, False)),
    ("cross entropy (ls 0.1) fwd+bwd 2048x8000", "bench_layer_norm", "BM_CrossEntropyForwardBackward/2048/8000", ("ce", 2048, 8000, True)),
]


def torch_case(case):
    """A closure running one iteration of `case` in PyTorch."""
    kind = case[0]
    g = torch.Generator().manual_seed(0)
    rand = lambda *s: torch.rand(*s, generator=g) * 2 - 1
    if kind == "linear":
        _, m, k, n, act = case
        x, w, b = rand(m, k), rand(n, k), rand(n)
        f = {None: lambda z: z, "relu": F.relu, "gelu": F.gelu}[act]
        return lambda: f(F.linear(x, w, b))
    if kind == "attn":
        _, B, H, T, S, Dh, bwd = case
        C = H * Dh
        q, k, v = (rand(B, L, C).requires_grad_(bwd) for L in (T, S, S))
        dy = rand(B, T, C)

        def run():
            # What nn.MultiheadAttention does in torch 1.13 (no fused SDPA on the CPU there).
            qh = q.view(B, T, H, Dh).transpose(1, 2)
            kh = k.view(B, S, H, Dh).transpose(1, 2)
            vh = v.view(B, S, H, Dh).transpose(1, 2)
            p = torch.softmax(qh @ kh.transpose(-1, -2) * Dh ** -0.5, dim=-1)
            y = (p @ vh).transpose(1, 2).reshape(B, T, C)
            if bwd:
                y.backward(dy)
            return y
        return run
    if kind == "ln":
        _, n, c, bwd = case
        x = (rand(n, c) * 2).requires_grad_(bwd)
        w, b = (rand(c) * 0.5 + 1).requires_grad_(bwd), rand(c).requires_grad_(bwd)
        dy = rand(n, c)

        def run():
            y = F.layer_norm(x, (c,), w, b, 1e-5)
            if bwd:
                y.backward(dy)
        return run
    if kind == "ce":
        _, n, v, bwd = case
        logits = (rand(n, v) * 8).requires_grad_(bwd)
        t = torch.randint(0, v, (n,), generator=g)

        def run():
            loss = F.cross_entropy(logits, t, label_smoothing=0.1)
            if bwd:
                loss.backward()
        return run
    raise ValueError(kind)


def time_torch(fn, repetitions, min_time=0.5):
    """Median over repetitions of the mean time per call (seconds), like Google Benchmark."""
    grad = torch.enable_grad()
    with grad:
        for _ in range(3):
            fn()
        means = []
        for _ in range(repetitions):
            n, start = 0, time.perf_counter()
            while True:
                fn()
                n += 1
                elapsed = time.perf_counter() - start
                if elapsed >= min_time and n >= 3:
                    break
            means.append(elapsed / n)
    return statistics.median(means)


def time_tfm(build_dir, binary, names, threads, repetitions):
    """{benchmark name: median real time in seconds} from one run of a tfm benchmark binary."""
    path = os.path.join(build_dir, "bench", binary)
    pattern = "^(" + "|".join(names) + ")$"
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), TFM_THREADS=str(threads))
    out = subprocess.run([path, "--benchmark_filter=" + pattern, "--benchmark_format=json",
                          f"--benchmark_repetitions={repetitions}",
                          "--benchmark_report_aggregates_only=true"],
                         check=True, capture_output=True, text=True, env=env).stdout
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    result = {}
    for b in json.loads(out)["benchmarks"]:
        # With repetitions the median aggregate; with a single run, the run itself.
        if b.get("aggregate_name") == "median" or (repetitions == 1 and b["run_type"] == "iteration"):
            result[b["run_name"]] = b["real_time"] * scale[b["time_unit"]]
    return result


def blas_in_use():
    """The library behind libblas.so.3, which Debian's torch (BLAS_INFO=generic) calls."""
    path = os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
    if "/blas/" in path:
        sys.stderr.write("warning: libblas.so.3 is the reference BLAS: PyTorch's GEMMs will be "
                         "very slow. Install libopenblas0-openmp (scripts/setup.sh does).\n")
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repetitions", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    tfm = {}
    for binary in sorted({c[1] for c in CASES}):
        names = [c[2] for c in CASES if c[1] == binary]
        tfm.update(time_tfm(args.build_dir, binary, [n + "(/real_time)?" for n in names],
                            args.threads, args.repetitions))
    print(f"# torch {torch.__version__} (BLAS: {blas_in_use()}), {args.threads} threads, "
          f"medians of {args.repetitions}")
    print(f"| case | tfm | PyTorch | PyTorch / tfm |")
    print(f"|---|---|---|---|")
    ratios = []
    for label, binary, name, case in CASES:
        t_tfm = next((v for k, v in tfm.items() if k == name or k == name + "/real_time"), None)
        t_torch = time_torch(torch_case(case), args.repetitions)
        if t_tfm is None:
            print(f"| {label} | missing | {t_torch * 1e3:.3f} ms | |")
            continue
        ratios.append(t_torch / t_tfm)
        print(f"| {label} | {t_tfm * 1e3:.3f} ms | {t_torch * 1e3:.3f} ms | {t_torch / t_tfm:.2f}x |",
              flush=True)
    if ratios:
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"\ngeometric mean of PyTorch / tfm over {len(ratios)} cases: {geo:.2f}x")


if __name__ == "__main__":
    sys.exit(main())
