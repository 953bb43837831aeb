#!/usr/bin/env python3
"""The Python binding's overhead: tfm.Translator.translate_batch against the C++ command.

    VENV/bin/python bench/compare_python.py --tfm PREFIX/bin/tfm [--model DIR] [--lines 512]
                                            [--batch-size 32] [--threads 1] [--repeat 7]

Run it with the interpreter of a virtual environment where the package is installed (see
docs/python.md). Without --model it trains the tests' tiny model (tfm vocab + tfm train --preset
tiny) in a temporary directory: a tiny model is the worst case for the binding, whose cost per
sentence does not grow with the model. The same input (the toy corpus' sentences, repeated to
--lines) is translated, greedy and with beam 4, at --batch-size sentences a batch:

  cli        `tfm translate --input F --output G` minus `tfm translate` of an empty input (the
             process start and the model load), medians of --repeat runs each;
  file       Translator.translate_file in this process (the command's own code path, no
             process start);
  batch      Translator.translate_batch(list of str) in this process.

overhead = batch / cli - 1 and batch / file - 1. The outputs are checked to be the same text.
Prints a markdown table. The machine is shared: compare runs of the same session only.
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

import tfm

DE = "haus baum hund katze kind mann frau sieht spielt der".split()
EN = "house tree dog cat child man woman sees plays the".split()


def corpus(n: int, seed: int = 7) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    de, en = [], []
    for _ in range(n):
        k = [rng.randrange(10) for _ in range(rng.randint(2, 5))]
        de.append(" ".join(DE[i] for i in k))
        en.append(" ".join(EN[i] for i in k))
    return de, en


def train_tiny(tfm_bin: str, d: str) -> str:
    de, en = corpus(100)
    for name, lines in (("train.de", de), ("train.en", en)):
        with open(os.path.join(d, name), "w") as f:
            f.write("\n".join(lines) + "\n")
    j = lambda x: os.path.join(d, x)  # noqa: E731
    subprocess.run([tfm_bin, "vocab", "--input", j("train.de"), j("train.en"), "--size", "36",
                    "--out", j("voc")], check=True, capture_output=True)
    subprocess.run([tfm_bin, "train", "--model", j("m"), "--train-src", j("train.de"),
                    "--train-trg", j("train.en"), "--vocab", j("voc.model"), "--preset", "tiny",
                    "--batch-tokens", "200", "--max-updates", "20", "--save-every", "0",
                    "--valid-every", "0", "--keep-last", "0", "--threads", "1", "--seed", "3"],
                   check=True, capture_output=True)
    return j("m")


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tfm", required=True, help="the tfm command (of the same install)")
    p.add_argument("--model", help="model directory (default: train the tiny test model)")
    p.add_argument("--input", help="input file (default: the toy corpus)")
    p.add_argument("--lines", type=int, default=512)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--precision", default="fp32")
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args()

    with tempfile.TemporaryDirectory() as d:
        model = args.model or train_tiny(args.tfm, d)
        if args.input:
            with open(args.input) as f:
                lines = f.read().splitlines()[:args.lines]
        else:
            lines = (corpus(100)[0] * (args.lines // 100 + 1))[:args.lines]
        src, out, empty = (os.path.join(d, x) for x in ("in.txt", "out.txt", "empty.txt"))
        with open(src, "w") as f:
            f.write("\n".join(lines) + "\n")
        open(empty, "w").close()
        t = tfm.Translator(model, compute_type=args.precision, intra_threads=args.threads,
                           max_batch_size=args.batch_size)
        print(f"model {model}: d_model {t.model_info.d_model}, "
              f"{t.model_info.encoder_layers}+{t.model_info.decoder_layers} layers; "
              f"{len(lines)} lines, batch {args.batch_size}, {args.threads} thread(s), "
              f"{t.compute_type}, median of {args.repeat}\n")
        print("| search | cli (s) | file (s) | batch (s) | batch/cli - 1 | batch/file - 1 |")
        print("|---|---|---|---|---|---|")
        for beam in (1, 4):
            cli = [args.tfm, "translate", "--model", model, "--precision", args.precision,
                   "--threads", str(args.threads), "--batch-size", str(args.batch_size),
                   "--beam-size", str(beam)]
            run = lambda f, o: subprocess.run(cli + ["--input", f, "--output", o],  # noqa: E731
                                              check=True)
            t_cli = (timed(lambda: run(src, out), args.repeat)
                     - timed(lambda: run(empty, empty + ".out"), args.repeat))
            with open(out) as f:
                want = f.read().splitlines()
            t_file = timed(lambda: t.translate_file(src, out, beam_size=beam), args.repeat)
            results = []
            t_batch = timed(lambda: results.append(t.translate_batch(lines, beam_size=beam)),
                            args.repeat)
            got = [r.hypotheses[0] if r.hypotheses else "" for r in results[-1]]
            if got != want:
                print(f"beam {beam}: translate_batch differs from tfm translate", file=sys.stderr)
                return 1
            print(f"| {'greedy' if beam == 1 else f'beam {beam}'} | {t_cli:.3f} | {t_file:.3f} "
                  f"| {t_batch:.3f} | {t_batch / t_cli - 1:+.1%} | {t_batch / t_file - 1:+.1%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
