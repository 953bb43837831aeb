#!/usr/bin/env bash
# Data-parallel training throughput on one machine (docs/distributed.md): `tfm train --preset
# small` for 1 process × 2 threads, 2 ranks × 1 thread and 2 ranks × 2 threads (oversubscribed
# on 2 cores), each the same number of updates of the same batches per update (update-freq 2 for
# the one process); prints the median source + target tokens/s of the log windows and the
# all-reduce wait per update, with the gradient sum overlapped with the backward pass (the
# default) and not (TFM_GRAD_OVERLAP=0): the fraction of the wait the overlap hides is 1 - the
# ratio of the two. Usage: bench/mpi_scaling.sh [BUILD_DIR] [UPDATES]
# Data: ../shared/data/multi30k when present (TFM_DATA overrides), else a toy corpus.
set -euo pipefail
build=${1:-build}
updates=${2:-60}
tfm=$(cd "$build" && pwd)/tfm
src=$(cd "$(dirname "$0")/.." && pwd)
data=${TFM_DATA:-$src/../shared/data/multi30k}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ -f $data/train.de ]]; then
  head -n 20000 "$data/train.de" >"$tmp/train.de"
  head -n 20000 "$data/train.en" >"$tmp/train.en"
else
  echo "no $data/train.de: a toy corpus (figures not comparable with docs/distributed.md)" >&2
  for i in $(seq 1 4000); do echo "ein hund läuft $i mal über das haus"; done >"$tmp/train.de"
  for i in $(seq 1 4000); do echo "a dog runs $i times over the house"; done >"$tmp/train.en"
fi
"$tfm" vocab --input "$tmp/train.de" "$tmp/train.en" --size 8000 --out "$tmp/voc" >/dev/null 2>&1
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none --mca
  btl_vader_single_copy_mechanism none -np 2)
run() {  # NAME LAUNCHER... -- FLAGS...
  local name=$1
  shift
  local launcher=()
  while [[ $1 != -- ]]; do launcher+=("$1"); shift; done
  shift
  "${launcher[@]}" "$tfm" train --model "$tmp/$name" --train-src "$tmp/train.de" \
    --train-trg "$tmp/train.en" --vocab "$tmp/voc.model" --preset small --batch-tokens 4096 \
    --max-updates "$updates" --log-every 4 --save-every 0 --valid-every 0 --keep-last 0 \
    --seed 1 "$@" >/dev/null 2>&1
  # The first window holds the warm-up; the median of the rest.
  local tok comm buckets
  tok=$(sed -n 's/.* | \([0-9.]*k*\) tok\/s | .*/\1/p' "$tmp/$name/train.log" | tail -n +2 |
        sed 's/k$/e3/' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  comm=$(sed -n 's/.* | allreduce \([0-9.]*\) ms\/update.*/\1/p' "$tmp/$name/train.log" |
         tail -n +2 | sort -g | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "-")}')
  buckets=$(sed -n 's/.* ms\/update, \([0-9]*\/[0-9]*\) buckets overlapped.*/\1/p' \
            "$tmp/$name/train.log" | tail -1)
  printf '| %s | %.0f | %s | %s |\n' "$name" "$tok" "$comm" "${buckets:--}"
}
echo "| run | tokens/s (median of windows) | all-reduce wait, ms/update | buckets posted in the backward pass |"
echo "|---|---|---|---|"
run "1x2threads" env -- --threads 2 --update-freq 2
run "2x1thread" "${mpi[@]}" -- --threads 1 --update-freq 1
run "2x1thread-no-overlap" env TFM_GRAD_OVERLAP=0 "${mpi[@]}" -- --threads 1 --update-freq 1
run "2x2threads" "${mpi[@]}" -- --threads 2 --update-freq 1
run "2x2threads-no-overlap" env TFM_GRAD_OVERLAP=0 "${mpi[@]}" -- --threads 2 --update-freq 1
