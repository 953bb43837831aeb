#!/usr/bin/env bash
# Two or more tfm binaries on the same `tfm bench` workloads, interleaved (every binary once per
# configuration per round), for ROUNDS rounds; prints the median tokens/s of each. The way to
# compare builds (before/after a change, portable/native) on a shared, noisy machine: the
# binaries see the same load, and the median of the rounds is the figure.
#
#   bench/ab.sh 5 "--preset small --mode greedy;--preset small --mode train --repeat 3" \
#     /tmp/tfm-before build/tfm
#
# Env: THREADS (2). Every run gets --threads $THREADS --no-ceiling.
set -euo pipefail
[[ $# -ge 3 ]] || { sed -n 2,10p "$0" >&2; exit 2; }
rounds=$1
IFS=';' read -ra configs <<<"$2"
shift 2
threads=${THREADS:-2}
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
for r in $(seq 1 "$rounds"); do
  for c in "${configs[@]}"; do
    for b in "$@"; do
      # shellcheck disable=SC2086 # a configuration is a list of flags
      t=$("$b" bench $c --threads "$threads" --no-ceiling --json | tail -n 1)
      printf '%s\t%s\t%s\n' "$c" "$b" "$t" >>"$raw"
    done
  done
  echo "round $r done" >&2
done
/usr/bin/python3 - "$raw" <<'PY'
import collections, json, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    c, b, j = line.rstrip("\n").split("\t")
    runs[(c, b)].append(json.loads(j)["tokens_per_second"])
for (c, b), v in runs.items():
    print("%-45s %-28s median %9.1f  runs %s" % (c, b, statistics.median(v),
                                                  " ".join("%.0f" % x for x in sorted(v))))
PY
