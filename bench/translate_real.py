#!/usr/bin/python3
"""Real-text translation benchmark: tfm against CTranslate2 on a trained model and a real file.

  .venv/bin/python bench/translate_real.py --model MODEL_DIR --input SRC_FILE [--ref REF_FILE] \
      [--beam-size 1 4] [--precision fp32 int8 bf16] [--threads 1 2] [--isa native avx2] \
      [--rounds 3] [--no-ct2]

The peer is the `ctranslate2` package from the Python index (scripts/setup_venv.sh installs it
into .venv/; --ct2-python names another interpreter), run by bench/ctranslate2/translate_ct2.py
on the model converted by bench/ctranslate2/convert_tfm.py (the same function: every tfm
ModelConfig option). --ct2-root DIR runs a CTranslate2 built from source there instead
(../shared/peers/ctranslate2/build.sh; Debian's /usr/bin/python3).

For each (CPU level, threads, precision, beam) it runs, alternating, `tfm translate --profile`
and the peer on the same file, `rounds` times each, and prints the medians:

  * tfm's whole command (process start to exit: model load, SentencePiece, I/O and search) and
    its search alone (the command less load, SentencePiece and I/O, from its profile);
  * CTranslate2's search (its translate_batch calls; load and SentencePiece outside);
  * ratio = CTranslate2 search / tfm whole command (tfm counted with everything, the peer with
    its search only), and search / search;
  * peak RSS of each process; lines identical between the two outputs (equal in fp32 when both
    compute the same function); BLEU of each output against --ref (tfm eval, sacreBLEU's);
  * tfm's phase profile of its median run (thread-seconds by phase).

Precisions map to CTranslate2 compute types by --ct2-map (default fp32=float32, int8=int8,
bf16=float32: CTranslate2 has no bfloat16 on the CPU). CPU levels: `native` is the machine's
own; `avx2` forces both engines to AVX2 + FMA (TFM_CPU_ISA=avx2 ONEDNN_MAX_CPU_ISA=AVX2 for
tfm; CT2_FORCE_CPU_ISA=AVX2, MKL_ENABLE_INSTRUCTIONS=AVX2 and ONEDNN_MAX_CPU_ISA=AVX2 for
CTranslate2, whose GEMMs are Intel MKL's).

CTranslate2 runs under OMP_WAIT_POLICY=active by default (--ct2-wait-policy): its fastest on
these machines; tfm under the environment as it is. Several --tfm binaries are measured in turn
each round (A/B of builds).

Env: TFM (default build/tfm). Medians of `rounds`; the machine should be idle.
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


ISA_ENV = {  # what forces each engine to a CPU level
    "native": ({}, {}),
    "avx2": ({"TFM_CPU_ISA": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
             {"CT2_FORCE_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}),
}


def bleu(tfm, ref, hyp):
    out = subprocess.run([tfm, "eval", "--ref", ref, "--hyp", hyp, "--metrics", "bleu"],
                         capture_output=True, text=True, check=True).stdout
    m = re.search(r"BLEU[^=]*=\s*([0-9.]+)", out) or re.search(r"([0-9]+\.[0-9]+)", out)
    return float(m.group(1))


def ct2_setup(a, model, precisions):
    """The peer's interpreter, environment and converted models ({precision: dir})."""
    env = dict(os.environ)
    if a.ct2_root:  # a source build: its Python module and library
        python = "/usr/bin/python3"
        src, lib = os.path.join(a.ct2_root, "src", "python"), os.path.join(a.ct2_root, "install", "lib")
        if not os.path.isdir(src):
            sys.exit("no CTranslate2 build in %s" % a.ct2_root)
        env["PYTHONPATH"] = src + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    else:
        python = a.ct2_python
        if not os.path.exists(python):
            sys.exit("%s not found: run scripts/setup_venv.sh (or pass --ct2-python / --no-ct2)" % python)
    if a.ct2_wait_policy == "default":
        env.pop("OMP_WAIT_POLICY", None)
    else:
        env["OMP_WAIT_POLICY"] = a.ct2_wait_policy
    version = subprocess.run([python, "-c", "import ctranslate2; print(ctranslate2.__version__)"], env=env,
                             capture_output=True, text=True, check=True).stdout.strip()
    models = {}
    for prec in precisions:  # weights as stored by the converter; compute type chosen at load
        out = os.path.join(a.work, "ct2-model")
        if not models:
            cmd = [python, os.path.join(HERE, "ctranslate2", "convert_tfm.py"), "--model", model, "--out", out,
                   "--force"]
            subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        models[prec] = out
    return python, env, version, models


def run_cell(a, tfms, profiled, peer, prec, beam, threads, isa):
    """One (precision, beam, threads, CPU level): rounds of every engine; returns result rows."""
    tag = "%s %s-beam%d %dt" % (isa, prec, beam, threads)
    name = tag.replace(" ", "-")
    tfm_env, ct2_env_extra = ISA_ENV[isa]
    ct2_out = os.path.join(a.work, "ct2-%s.txt" % name)
    runs, peer_runs = [[] for _ in tfms], []
    if peer:
        python, env, _, models = peer
        ct2_type = a.ct2_types[prec]
        ct2_cmd = [python, os.path.join(HERE, "ctranslate2", "translate_ct2.py"), "--model", models[prec],
                   "--input", a.input, "--output", ct2_out, "--beam-size", str(beam), "--threads", str(threads),
                   "--batch-size", str(a.ct2_batch_size or a.batch_size), "--compute-type", ct2_type, "--json"]
        ct2_env = dict(env, **ct2_env_extra)
    for _ in range(a.rounds):  # every engine once a round, so they see the same load
        for i, tfm in enumerate(tfms):
            out = os.path.join(a.work, "tfm%d-%s.txt" % (i, name))
            cmd = [tfm, "translate", "--model", a.model, "--input", a.input, "--output", out,
                   "--precision", prec, "--beam-size", str(beam), "--threads", str(threads),
                   "--batch-size", str(a.tfm_batch_size or a.batch_size)] + (["--profile"] if profiled[tfm] else []) + a.tfm_args.split()
            wall, rss, err = run_measured(cmd, env=dict(os.environ, **tfm_env))
            # A build from before --profile: its whole command only (search = command).
            rows, search_s, tokens = parse_profile(err) if profiled[tfm] else ([], wall, 0)
            runs[i].append(dict(wall=wall, rss=rss, rows=rows, search=search_s, tokens=tokens, out=out))
        if peer:
            wall, rss, err = run_measured(ct2_cmd, env=ct2_env)
            stats = json.loads(err.strip().splitlines()[-1])
            peer_runs.append(dict(wall=wall, rss=rss, search=stats["search_s"], tokens=stats["generated_tokens"]))
    results = []
    for i, tfm in enumerate(tfms):
        rs = runs[i]
        med = sorted(rs, key=lambda r: r["wall"])[len(rs) // 2]
        r = dict(tag=tag, tfm=tfm, wall=statistics.median(x["wall"] for x in rs), walls=[x["wall"] for x in rs],
                 search=statistics.median(x["search"] for x in rs), tokens=med["tokens"] or runs[0][0]["tokens"],
                 rss=max(x["rss"] for x in rs), rows=med["rows"])
        if a.ref:
            r["bleu"] = bleu(tfms[0], a.ref, rs[0]["out"])
        if i > 0:
            r["same_as_first"] = same_lines(rs[0]["out"], runs[0][0]["out"])
        if peer_runs:
            r["ct2_type"] = a.ct2_types[prec]
            r["ct2_search"] = statistics.median(x["search"] for x in peer_runs)
            r["ct2_searches"] = [x["search"] for x in peer_runs]
            r["ct2_rss"] = max(x["rss"] for x in peer_runs)
            r["same"] = same_lines(rs[0]["out"], ct2_out)
            if a.ref:
                r["ct2_bleu"] = bleu(tfms[0], a.ref, ct2_out)
        results.append(r)
        print("%s %s: tfm command %s s, search %.2f s%s" % (
            tag, tfm, " ".join("%.2f" % w for w in r["walls"]), r["search"],
            ("; CT2 search " + " ".join("%.2f" % w for w in r["ct2_searches"]) + " s") if peer_runs else ""),
            flush=True)
    return results


def print_tables(a, results, multi, peer_version):
    label = lambda r: r["tag"] + (" " + r["tfm"] if multi else "")
    fmt_bleu = lambda r, k: ("%.2f" % r[k]) if k in r else "–"
    if a.no_ct2:
        print("| workload | tfm command s | tfm search s | search tok/s | peak RSS MB | BLEU |%s"
              % (" same as first |" if multi else ""))
        print("|---|---|---|---|---|---|%s" % ("---|" if multi else ""))
        for r in results:
            same = " %d / %d |" % r["same_as_first"] if "same_as_first" in r else (" – |" if multi else "")
            print("| %s | %.2f | %.2f | %.0f | %.0f | %s |%s" % (label(r), r["wall"], r["search"],
                  r["tokens"] / r["search"], r["rss"], fmt_bleu(r, "bleu"), same))
    else:
        print("| workload (CPU level, tfm precision, search, threads) | CTranslate2 %s compute type | tfm command s "
              "| tfm search s | CT2 search s | CT2 search / tfm command | search / search | lines identical%s "
              "| BLEU tfm / CT2 | peak RSS MB tfm / CT2 |" % (peer_version, " (to the first tfm's)" if multi else ""))
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in results:
            same = "%d / %d" % r["same"]
            if "same_as_first" in r:
                same += " (%d)" % r["same_as_first"][0]
            print("| %s | %s | %.2f | %.2f | %.2f | **%.2f×** | %.2f× | %s | %s / %s | %.0f / %.0f |" % (
                label(r), r["ct2_type"], r["wall"], r["search"], r["ct2_search"], r["ct2_search"] / r["wall"],
                r["ct2_search"] / r["search"], same, fmt_bleu(r, "bleu"), fmt_bleu(r, "ct2_bleu"), r["rss"],
                r["ct2_rss"]))
    for r in results:
        print("\n%s: tfm's profile (median run, thread-seconds; %d tokens)" % (label(r), r["tokens"]))
        print("| phase | thread-s | share of threads × wall | linear layers: GFLOP/s a thread |")
        print("|---|---|---|---|")
        for name, s, share, rate in r["rows"]:
            print("| %s | %.3f | %.1f %% | %s |" % (name, s, share, "%.1f" % rate if rate else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--ref", help="reference translations: BLEU of each output (tfm eval)")
    ap.add_argument("--beam-size", type=int, nargs="+", default=[4])
    ap.add_argument("--precision", nargs="+", default=["fp32"], help="tfm precisions: fp32, int8, bf16")
    ap.add_argument("--ct2-map", nargs="*", default=[], metavar="PREC=TYPE",
                    help="CTranslate2 compute type per tfm precision (default fp32=float32 int8=int8 bf16=float32)")
    ap.add_argument("--threads", type=int, nargs="+", default=[2])
    ap.add_argument("--isa", nargs="+", default=["native"], choices=sorted(ISA_ENV))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=32, help="sentences a batch, both engines")
    ap.add_argument("--tfm-batch-size", type=int, help="tfm's batch instead (its fastest: 64)")
    ap.add_argument("--ct2-batch-size", type=int, help="CTranslate2's batch instead")
    ap.add_argument("--no-ct2", action="store_true", help="tfm alone")
    ap.add_argument("--ct2-python", default=os.path.join(ROOT, ".venv", "bin", "python"),
                    help="interpreter with the index's ctranslate2 (default .venv/bin/python)")
    ap.add_argument("--ct2-root", help="a CTranslate2 source build instead (../shared/peers/ctranslate2)")
    ap.add_argument("--ct2-wait-policy", default="active", choices=["active", "passive", "default"],
                    help="OMP_WAIT_POLICY of the CTranslate2 runs (default active: its fastest here; "
                    "tfm runs under the environment as it is)")
    ap.add_argument("--tfm", nargs="+", help="tfm binaries, measured in turn each round (before/after "
                    "builds; default: $TFM or build/tfm); lines identical to the first's are reported")
    ap.add_argument("--tfm-args", default="", help="extra flags for tfm translate (quoted)")
    ap.add_argument("--work", default=None, help="directory for outputs (default: a temporary one)")
    a = ap.parse_args()
    a.ct2_types = {"fp32": "float32", "int8": "int8", "bf16": "float32"}
    a.ct2_types.update(dict(kv.split("=", 1) for kv in a.ct2_map))

    tfms = a.tfm or [os.environ.get("TFM", os.path.join(ROOT, "build", "tfm"))]
    profiled = {t: "--profile" in subprocess.run([t, "translate", "--help"], capture_output=True, text=True).stdout
                for t in tfms}
    a.work = a.work or tempfile.mkdtemp(prefix="translate_real.")
    os.makedirs(a.work, exist_ok=True)
    with open(a.input, encoding="utf-8", errors="surrogateescape") as f:
        n_lines = sum(1 for _ in f)
    peer = None if a.no_ct2 else ct2_setup(a, a.model, a.precision)
    peer_version = peer[2] if peer else ""

    print("# tfm vs CTranslate2 %s on real text: %s (%d lines), model %s, batch tfm %d / CT2 %d, "
          "%d rounds" % (peer_version or "(none)", a.input, n_lines, a.model,
                         a.tfm_batch_size or a.batch_size, a.ct2_batch_size or a.batch_size, a.rounds))
    print("# CTranslate2 under OMP_WAIT_POLICY=%s; tfm under %s; load average before: %.2f"
          % (a.ct2_wait_policy, os.environ.get("OMP_WAIT_POLICY", "default"), os.getloadavg()[0]))
    results = []
    for isa in a.isa:
        for threads in a.threads:
            for prec in a.precision:
                for beam in a.beam_size:
                    results += run_cell(a, tfms, profiled, peer, prec, beam, threads, isa)
    print()
    print_tables(a, results, len(tfms) > 1, peer_version)
    print("\n# load average after: %.2f; outputs in %s" % (os.getloadavg()[0], a.work))


if __name__ == "__main__":
    main()
