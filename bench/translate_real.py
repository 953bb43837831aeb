#!/usr/bin/python3
"""Real-text translation benchmark: tfm against CTranslate2 on a trained model and a real file.

  /usr/bin/python3 bench/translate_real.py --model MODEL_DIR --input SRC_FILE \\
      [--beam-size 1 4] [--precision fp32 int8] [--rounds 3] [--threads 2] [--no-ct2]

For each (precision, beam) it runs, alternating, `tfm translate --profile` and the
CTranslate2 peer (../shared/peers/ctranslate2/translate_ct2.py on the model converted by
convert_tfm.py; build it first with ../shared/peers/ctranslate2/build.sh) on the same file,
`rounds` times each, and prints the medians:

  * tfm's whole command (process start to exit: model load, SentencePiece, I/O and search) and
    its search alone (the command less load, SentencePiece and I/O, from its profile);
  * CTranslate2's search (its translate_batch calls; load and SentencePiece outside);
  * ratio = CTranslate2 search / tfm whole command (the issue's measure: tfm counted with
    everything, the peer with its search only), and search / search;
  * peak RSS of each process; lines identical between the two outputs (equal in fp32 when both
    compute the same function);
  * tfm's phase profile of its median run (thread-seconds by phase: encoder, decoder GEMMs,
    attention, vocabulary projection, log-softmax, top-k, KV-cache reorder, search bookkeeping,
    idle threads, SentencePiece, I/O).

CTranslate2 runs under OMP_WAIT_POLICY=active by default (--ct2-wait-policy): its fastest
here (greedy, 1000 lines: active 3.77 s, unset 4.42 s, passive 9.72 s); tfm under the
environment as it is. Several --tfm binaries are measured in turn each round (A/B of builds).

Env: TFM (default build/tfm), CT2_ROOT (default /tmp/ct2), CT2_PEER (default
../shared/peers/ctranslate2). Medians of `rounds`; the machine should be idle.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run_measured(cmd, env=None, stdout=subprocess.DEVNULL):
    """Runs cmd; returns (wall seconds, peak RSS MB of that child, stderr text)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=stdout, stderr=subprocess.PIPE, text=True)
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit("failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), err))
    return wall, usage.ru_maxrss / 1024.0, err


# phase, thread-seconds, share, and for a phase with linear layers their GFLOP/s a thread.
PROFILE_ROW = re.compile(r"^(.*?)\s+([0-9.]+)\s+([0-9.]+)%(?:\s+([0-9.]+) \([0-9.]+ TFLOP\))?$")


def parse_profile(err):
    rows, search_s, tokens = [], None, None
    for line in err.splitlines():
        m = PROFILE_ROW.match(line.strip())
        if m and not line.startswith("phase"):
            rate = float(m.group(4)) if m.group(4) else None
            rows.append((m.group(1), float(m.group(2)), float(m.group(3)), rate))
        m = re.match(r"^search:\s+([0-9.]+) s", line)
        if m:
            search_s = float(m.group(1))
        m = re.match(r"^\d+ sentences, (\d+) tokens", line)
        if m:
            tokens = int(m.group(1))
    if search_s is None or tokens is None:
        sys.exit("no profile in tfm's output:\n" + err)
    return rows, search_s, tokens


def same_lines(a, b):
    with open(a, encoding="utf-8", errors="surrogateescape") as f:
        x = f.read().splitlines()
    with open(b, encoding="utf-8", errors="surrogateescape") as f:
        y = f.read().splitlines()
    return sum(p == q for p, q in zip(x, y)), max(len(x), len(y))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--beam-size", type=int, nargs="+", default=[4])
    ap.add_argument("--precision", nargs="+", default=["fp32"], help="fp32, int8 (CTranslate2 float32 / int8)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--no-ct2", action="store_true", help="tfm alone (no CTranslate2 build needed)")
    ap.add_argument("--ct2-wait-policy", default="active", choices=["active", "passive", "default"],
                    help="OMP_WAIT_POLICY of the CTranslate2 runs (default active: its fastest here; "
                    "tfm runs under the environment as it is)")
    ap.add_argument("--tfm", nargs="+", help="tfm binaries, measured in turn each round (before/after "
                    "builds; default: $TFM or build/tfm); lines identical to the first's are reported")
    ap.add_argument("--tfm-args", default="", help="extra flags for tfm translate (quoted)")
    ap.add_argument("--work", default=None, help="directory for outputs (default: a temporary one)")
    a = ap.parse_args()

    tfms = a.tfm or [os.environ.get("TFM", os.path.join(ROOT, "build", "tfm"))]
    profiled = {t: "--profile" in subprocess.run([t, "translate", "--help"], capture_output=True, text=True).stdout
                for t in tfms}
    ct2_root = os.environ.get("CT2_ROOT", "/tmp/ct2")
    peer = os.environ.get("CT2_PEER", os.path.join(ROOT, "..", "shared", "peers", "ctranslate2"))
    work = a.work or tempfile.mkdtemp(prefix="translate_real.")
    os.makedirs(work, exist_ok=True)
    with open(a.input, encoding="utf-8", errors="surrogateescape") as f:
        n_lines = sum(1 for _ in f)

    env = dict(os.environ)
    ct2_models = {}
    if not a.no_ct2:
        src = os.path.join(ct2_root, "src", "python")
        lib = os.path.join(ct2_root, "install", "lib")
        if not os.path.isdir(src):
            sys.exit("no CTranslate2 build in %s: run ../shared/peers/ctranslate2/build.sh, or pass --no-ct2" % ct2_root)
        env["PYTHONPATH"] = src + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        if a.ct2_wait_policy == "default":
            env.pop("OMP_WAIT_POLICY", None)
        else:
            env["OMP_WAIT_POLICY"] = a.ct2_wait_policy
        for prec in a.precision:
            out = os.path.join(work, "ct2-" + prec)
            cmd = ["/usr/bin/python3", os.path.join(peer, "convert_tfm.py"), "--model", a.model, "--out", out, "--force"]
            if prec == "int8":
                cmd += ["--quantization", "int8"]
            if os.path.exists(os.path.join(a.model, "vocab.model")):  # tfm's name; the peer knows vocab.spm
                cmd += ["--vocab", os.path.join(a.model, "vocab.model")]
            elif os.path.exists(os.path.join(a.model, "vocab.src.model")):
                cmd += ["--vocab-src", os.path.join(a.model, "vocab.src.model"),
                        "--vocab-trg", os.path.join(a.model, "vocab.trg.model")]
            subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
            ct2_models[prec] = out

    print("# tfm vs CTranslate2 on real text: %s (%d lines), model %s, %d threads, batch %d, %d rounds"
          % (a.input, n_lines, a.model, a.threads, a.batch_size, a.rounds))
    print("# CTranslate2 under OMP_WAIT_POLICY=%s; tfm under %s; load average before: %.2f"
          % (a.ct2_wait_policy, os.environ.get("OMP_WAIT_POLICY", "default"), os.getloadavg()[0]))
    results = []
    for prec in a.precision:
        for beam in a.beam_size:
            tag = "%s-beam%d" % (prec, beam)
            ct2_out = os.path.join(work, "ct2-%s.txt" % tag)
            ct2_cmd = ["/usr/bin/python3", os.path.join(peer, "translate_ct2.py"), "--model", ct2_models.get(prec, ""),
                       "--input", a.input, "--output", ct2_out, "--beam-size", str(beam), "--threads", str(a.threads),
                       "--batch-size", str(a.batch_size), "--compute-type", "float32" if prec == "fp32" else prec, "--json"]
            runs = [[] for _ in tfms]
            peer_runs = []
            for _ in range(a.rounds):  # every engine once a round, so they see the same load
                for i, tfm in enumerate(tfms):
                    out = os.path.join(work, "tfm%d-%s.txt" % (i, tag))
                    cmd = [tfm, "translate", "--model", a.model, "--input", a.input, "--output", out,
                           "--precision", prec, "--beam-size", str(beam), "--threads", str(a.threads),
                           "--batch-size", str(a.batch_size)] + (["--profile"] if profiled[tfm] else []) + a.tfm_args.split()
                    wall, rss, err = run_measured(cmd)
                    # A build from before --profile: its whole command only (search = command).
                    rows, search_s, tokens = parse_profile(err) if profiled[tfm] else ([], wall, 0)
                    runs[i].append(dict(wall=wall, rss=rss, rows=rows, search=search_s, tokens=tokens, out=out))
                if not a.no_ct2:
                    wall, rss, err = run_measured(ct2_cmd, env=env)
                    stats = json.loads(err.strip().splitlines()[-1])
                    peer_runs.append(dict(wall=wall, rss=rss, search=stats["search_s"], load=stats["load_s"],
                                          tokens=stats["generated_tokens"]))
            for i, tfm in enumerate(tfms):
                rs = runs[i]
                med = sorted(rs, key=lambda r: r["wall"])[len(rs) // 2]
                r = dict(tag=tag, tfm=tfm, wall=statistics.median(x["wall"] for x in rs),
                         walls=[x["wall"] for x in rs],
                         search=statistics.median(x["search"] for x in rs), tokens=med["tokens"] or runs[0][0]["tokens"],
                         rss=max(x["rss"] for x in rs), rows=med["rows"])
                if i > 0:
                    r["same_as_first"] = same_lines(rs[0]["out"], runs[0][0]["out"])
                if peer_runs:
                    r["ct2_search"] = statistics.median(x["search"] for x in peer_runs)
                    r["ct2_searches"] = [x["search"] for x in peer_runs]
                    r["ct2_wall"] = statistics.median(x["wall"] for x in peer_runs)
                    r["ct2_rss"] = max(x["rss"] for x in peer_runs)
                    r["ct2_tokens"] = peer_runs[0]["tokens"]
                    r["same"] = same_lines(rs[0]["out"], ct2_out)
                results.append(r)
                print("%s %s: tfm command %s s, search %.2f s%s" % (
                    tag, tfm, " ".join("%.2f" % w for w in r["walls"]), r["search"],
                    ("; CT2 search " + " ".join("%.2f" % w for w in r["ct2_searches"]) + " s") if peer_runs else ""),
                    flush=True)

    print()
    multi = len(tfms) > 1
    label = lambda r: r["tag"] + (" " + r["tfm"] if multi else "")
    if a.no_ct2:
        print("| workload | tfm command s | tfm search s | search tok/s | peak RSS MB |%s" % (" same as first |" if multi else ""))
        print("|---|---|---|---|---|%s" % ("---|" if multi else ""))
        for r in results:
            same = " %d / %d |" % r["same_as_first"] if "same_as_first" in r else (" – |" if multi else "")
            print("| %s | %.2f | %.2f | %.0f | %.0f |%s" % (label(r), r["wall"], r["search"], r["tokens"] / r["search"], r["rss"], same))
    else:
        print("| workload | tfm command s | tfm search s | CT2 search s | CT2 search / tfm command | search / search | lines identical to CT2's%s | peak RSS MB tfm / CT2 |"
              % (" (to the first tfm's)" if multi else ""))
        print("|---|---|---|---|---|---|---|---|")
        for r in results:
            same = "%d / %d" % r["same"]
            if "same_as_first" in r:
                same += " (%d)" % r["same_as_first"][0]
            print("| %s | %.2f | %.2f | %.2f | **%.2f×** | %.2f× | %s | %.0f / %.0f |" % (
                label(r), r["wall"], r["search"], r["ct2_search"], r["ct2_search"] / r["wall"],
                r["ct2_search"] / r["search"], same, r["rss"], r["ct2_rss"]))
    for r in results:
        print("\n%s: tfm's profile (median run, thread-seconds; %d tokens)" % (label(r), r["tokens"]))
        print("| phase | thread-s | share of threads × wall | linear layers: GFLOP/s a thread |")
        print("|---|---|---|---|")
        for name, s, share, rate in r["rows"]:
            print("| %s | %.3f | %.1f %% | %s |" % (name, s, share, "%.1f" % rate if rate else ""))
    print("\n# load average after: %.2f; outputs in %s" % (os.getloadavg()[0], work))


if __name__ == "__main__":
    main()
