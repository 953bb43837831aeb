#!/usr/bin/env bash
# tfm against PyTorch on whole models, side by side in one run: for each preset and mode, rounds
# of `tfm bench` then bench/compare_pytorch.py for the seeds' model (seed004) and
# nn.Transformer (torch-nn), alternating so that load changes hit all three alike; then one
# table of medians over the rounds and ratios (tfm / PyTorch tokens/s: > 1 means tfm is faster).
# MFU is useful GEMM FLOP/s over tfm's dnnl_sgemm ceiling (median over its runs), for all three.
# PyTorch's decoding re-runs the decoder over the prefix and takes minutes at `base`, so it runs
# --torch-decode-repeat times (default 1) without warm-up; everything else --repeat times after
# one warm-up. Both sides run under the same OMP_WAIT_POLICY (--wait-policy, default passive:
# on a machine shared with other jobs, spinning OpenMP threads wait for a descheduled partner
# at every barrier and both sides lose 3-4x; "default" leaves the variable unset).
#
#   bench/compare.sh [--build-dir build] [--threads 2] [--rounds 3] [--repeat 3]
#                    [--torch-decode-repeat 1] [--wait-policy passive|active|default]
#                    [--presets "small base"] [--modes "train greedy beam"] [--keep DIR]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="$here/../build"
threads=2 rounds=3 repeat=3 torch_decode_repeat=1 wait_policy=passive
presets="small base" modes="train greedy beam" keep=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --torch-decode-repeat) torch_decode_repeat="$2"; shift 2 ;;
    --wait-policy) wait_policy="$2"; shift 2 ;;
    --presets) presets="$2"; shift 2 ;;
    --modes) modes="$2"; shift 2 ;;
    --keep) keep="$2"; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "compare.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
tfm="$build/tfm"
[[ -x "$tfm" ]] || { echo "compare.sh: $tfm not found; build first (scripts/build.sh)" >&2; exit 1; }
py=/usr/bin/python3
"$py" -c "import torch" 2>/dev/null || { echo "compare.sh: $py lacks torch (python3-torch)" >&2; exit 1; }
case "$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3)" in
  */blas/*) echo "compare.sh: warning: reference BLAS behind libblas.so.3; PyTorch will be very" \
                 "slow (scripts/setup.sh installs libopenblas0-openmp)" >&2 ;;
esac

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
      "$tfm" bench --preset "$preset" --mode "$mode" --threads "$threads" --repeat "$repeat" \
          --json | tail -n 1 | sed 's/^{/{"side":"tfm",/' >> "$results"
      torch_runs=(--repeat "$repeat" --warmup 1)
      [[ $mode == train ]] || torch_runs=(--repeat "$torch_decode_repeat" --warmup 0)
      for model in seed004 torch-nn; do
        "$py" "$here/compare_pytorch.py" --model "$model" --preset "$preset" --mode "$mode" \
            --threads "$threads" "${torch_runs[@]}" --json | tail -n 1 \
            | sed "s/^{/{\"side\":\"$model\",/" >> "$results"
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
    rows[(r["preset"], r["mode"], r["side"])].append(r)
med = lambda rs, k: statistics.median(r[k] for r in rs)
keys = sorted({(p, m) for p, m, _ in rows}, key=lambda k: (k[0], ["train", "greedy", "beam"].index(k[1])))
print("| preset | mode | tfm tokens/s | seed004 tokens/s | nn.Transformer tokens/s "
      "| tfm / seed004 | tfm / nn.Transformer | MFU tfm | MFU seed004 | MFU nn.Transformer |")
print("|---|---|---|---|---|---|---|---|---|---|")
for preset, mode in keys:
    t, s, n = (rows.get((preset, mode, side), []) for side in ("tfm", "seed004", "torch-nn"))
    if not (t and s and n):
        continue
    ceiling = med(t, "sgemm_gflops")
    tt, ts, tn = med(t, "tokens_per_second"), med(s, "tokens_per_second"), med(n, "tokens_per_second")
    print(f"| {preset} | {mode} | {tt:.0f} | {ts:.0f} | {tn:.0f} | **{tt / ts:.2f}x** | "
          f"{tt / tn:.2f}x | {100 * med(t, 'gflops') / ceiling:.1f} % | "
          f"{100 * med(s, 'gflops') / ceiling:.1f} % | {100 * med(n, 'gflops') / ceiling:.1f} % |")
t_all = [r for (p, m, side), rs in rows.items() if side == "tfm" for r in rs]
if t_all:
    print(f"\ndnnl_sgemm ceiling (median of tfm's runs): {med(t_all, 'sgemm_gflops'):.1f} GFLOP/s; "
          f"load average over the runs: {min(r['load_average_1m'] for r in t_all):.2f}"
          f"-{max(r['load_average_1m'] for r in t_all):.2f}")
PY
