#!/usr/bin/env bash
# tfm against PyTorch on whole models, side by side in one run: for each preset and mode, rounds
# of `tfm bench` then bench/compare_pytorch.py for the seeds' model (seed004) and
# nn.Transformer (torch-nn: nn.MultiheadAttention, i.e. scaled_dot_product_attention in torch
# 2.x), alternating so that load changes hit every side alike; then one table of medians over
# the rounds and ratios (tfm / PyTorch tokens/s: > 1 means tfm is faster). MFU is useful GEMM
# FLOP/s over tfm's dnnl_sgemm ceiling (median over its runs), for every side.
# PyTorch is the index's torch 2.x from .venv/ (scripts/setup_venv.sh; --python names another
# interpreter). PyTorch's decoding re-runs the decoder over the prefix and takes minutes at
# `base`, so it runs --torch-decode-repeat times (default 1) without warm-up; everything else
# --repeat times after one warm-up. Both sides run under the same OMP_WAIT_POLICY
# (--wait-policy, default passive: on a machine shared with other jobs, spinning OpenMP threads
# wait for a descheduled partner at every barrier and both sides lose 3-4x; "default" leaves
# the variable unset).
# --precisions adds rows for tfm at bf16 (training: mixed precision; decoding: bf16 linear
# layers) and int8 (decoding only). Each bf16 row is compared with both PyTorch models in fp32
# and under torch.autocast(bf16), PyTorch's own mixed precision (like for like); int8 has no
# PyTorch counterpart here. --compile adds nn.Transformer's training step through
# torch.compile (fp32 and bf16).
#
#   bench/compare.sh [--build-dir build] [--python .venv/bin/python] [--threads 2] [--rounds 3]
#                    [--repeat 3] [--torch-decode-repeat 1] [--wait-policy passive|active|default]
#                    [--presets "small base"] [--modes "train greedy beam"]
#                    [--precisions "fp32 bf16"] [--compile] [--keep DIR]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="$here/../build"
threads=2 rounds=3 repeat=3 torch_decode_repeat=1 wait_policy=passive
presets="small base" modes="train greedy beam" precisions="fp32 bf16" keep="" compile=0
py="$here/../.venv/bin/python"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build="$2"; shift 2 ;;
    --python) py="$2"; shift 2 ;;
    --compile) compile=1; shift ;;
    --threads) threads="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --torch-decode-repeat) torch_decode_repeat="$2"; shift 2 ;;
    --wait-policy) wait_policy="$2"; shift 2 ;;
    --presets) presets="$2"; shift 2 ;;
    --modes) modes="$2"; shift 2 ;;
    --precisions) precisions="$2"; shift 2 ;;
    --keep) keep="$2"; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "compare.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
tfm="$build/tfm"
[[ -x "$tfm" ]] || { echo "compare.sh: $tfm not found; build first (scripts/build.sh)" >&2; exit 1; }
"$py" -c "import torch" 2>/dev/null ||
  { echo "compare.sh: $py lacks torch: run scripts/setup_venv.sh (or pass --python)" >&2; exit 1; }

out="${keep:-$(mktemp -d)}"
mkdir -p "$out"
results="$out/results.jsonl"
: > "$results"
export OMP_NUM_THREADS="$threads"
case "$wait_policy" in
  passive|active) export OMP_WAIT_POLICY="$wait_policy" ;;
  default) unset OMP_WAIT_POLICY ;;
  *) echo "compare.sh: --wait-policy must be passive, active or default" >&2; exit 2 ;;
esac
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $threads threads, $rounds rounds x $repeat repeats" \
     "(PyTorch decoding: $torch_decode_repeat), OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-unset};" \
     "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for preset in $presets; do
  for mode in $modes; do
    for ((r = 1; r <= rounds; ++r)); do
      echo "# $preset $mode round $r/$rounds" >&2
      torch_runs=(--repeat "$repeat" --warmup 1)
      [[ $mode == train ]] || torch_runs=(--repeat "$torch_decode_repeat" --warmup 0)
      for precision in $precisions; do
        [[ $mode == train && $precision == int8 ]] && continue
        "$tfm" bench --preset "$preset" --mode "$mode" --threads "$threads" --repeat "$repeat" \
            --precision "$precision" --json | tail -n 1 | sed 's/^{/{"side":"tfm",/' >> "$results"
        # PyTorch: both models, in fp32 with the fp32 rows and under autocast with the bf16 ones;
        # nn.Transformer's training step also through torch.compile when asked.
        sides=()
        [[ $precision == fp32 || $precision == bf16 ]] && sides=(seed004 torch-nn)
        [[ $mode == train && $compile == 1 && ${#sides[@]} -gt 0 ]] && sides+=(torch-nn+compile)
        for side in "${sides[@]}"; do
          extra=()
          [[ $side == *+compile ]] && extra=(--compile)
          "$py" "$here/compare_pytorch.py" --model "${side%+compile}" --preset "$preset" \
              --mode "$mode" --threads "$threads" --precision "$precision" "${torch_runs[@]}" \
              "${extra[@]}" --json | tail -n 1 | sed "s/^{/{\"side\":\"$side\",/" >> "$results"
        done
      done
    done
  done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg); raw results: $results" >&2

"$py" - "$results" <<'PY'
import collections, json, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line)
    rows[(r["preset"], r["mode"], r.get("precision", "fp32"), r["side"])].append(r)
med = lambda rs, k: statistics.median(r[k] for r in rs)
order = lambda k: (k[0], ["train", "greedy", "beam"].index(k[1]), ["fp32", "bf16", "int8"].index(k[2]))
keys = sorted({(p, m, q) for p, m, q, side in rows if side == "tfm"}, key=order)
names = {"seed004": "seeds' model", "torch-nn": "nn.Transformer (SDPA)",
         "torch-nn+compile": "nn.Transformer, torch.compile"}
torch_version = next((r["torch"] for rs in rows.values() for r in rs if "torch" in r), "?")
print(f"| preset | mode | tfm precision | tfm tokens/s | MFU tfm | PyTorch {torch_version} side | "
      "its precision | its tokens/s | its MFU | **tfm / it** |")
print("|---|---|---|---|---|---|---|---|---|---|")
for preset, mode, prec in keys:
    t = rows[(preset, mode, prec, "tfm")]
    ceiling = med(t, "sgemm_gflops")
    tt = med(t, "tokens_per_second")
    mfu = lambda rs: f"{100 * med(rs, 'gflops') / ceiling:.1f} %"
    peers = [(side, q) for side in names for q in ("fp32", "bf16")
             if (q == "fp32" or prec == "bf16") and rows.get((preset, mode, q, side))]
    if not peers:
        print(f"| {preset} | {mode} | {prec} | {tt:.0f} | {mfu(t)} | – | – | – | – | – |")
    for side, q in peers:
        rs = rows[(preset, mode, q, side)]
        tp = med(rs, "tokens_per_second")
        q_name = "autocast bf16" if q == "bf16" else "fp32"
        print(f"| {preset} | {mode} | {prec} | {tt:.0f} | {mfu(t)} | {names[side]} | {q_name} | "
              f"{tp:.0f} | {mfu(rs)} | **{tt / tp:.2f}x** |")
t_all = [r for (p, m, q, side), rs in rows.items() if side == "tfm" for r in rs]
if t_all:
    print(f"\ndnnl_sgemm ceiling (median of tfm's runs): {med(t_all, 'sgemm_gflops'):.1f} GFLOP/s; "
          f"load average over the runs: {min(r['load_average_1m'] for r in t_all):.2f}"
          f"-{max(r['load_average_1m'] for r in t_all):.2f}")
    b = [r for r in t_all if r.get("bf16_gemm_gflops")]
    if b:
        print(f"bf16 GEMM ceiling (median of tfm's bf16 runs): {med(b, 'bf16_gemm_gflops'):.1f} GFLOP/s; "
              "MFU above is over the fp32 sgemm ceiling for every row, as the issue defines it")
PY
