#!/usr/bin/env bash
# The quick start's figures after 15, 30 and 60 minutes of training (docs/benchmarks.md, "Quick
# start"): runs scripts/quickstart.sh (its default corpus, or the --corpus given) for 15 minutes,
# then trains the same model on to 30 and 60 minutes (a re-run resumes; each stage adds one
# validation and checkpoint that an unbroken run would not make). After each stage it records
# the wall time of the stage, the updates, the best validation perplexity and its update, and
# the test BLEU / chrF2 of best/ (what the quick start translates), of the last checkpoint, and
# of the mean of the last 3 checkpoints (tfm average; the checkpoints are 250 updates apart),
# all translated as the quick start does (beam 4, --normalize). A table goes to stdout and to
# WORKDIR/budgets.md. Run it on a quiet machine, `tfm` built (about 70 minutes).
# Usage: bench/quickstart_budgets.sh WORKDIR [--corpus ding | --corpus SRC TRG]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
workdir=${1:?usage: bench/quickstart_budgets.sh WORKDIR [--corpus ...]}
shift
tfm=${BUILD_DIR:-$root/build}/tfm
[[ -x $tfm ]] || { echo "quickstart_budgets: build tfm first ($tfm)" >&2; exit 2; }
[[ -e $workdir ]] && { echo "quickstart_budgets: $workdir exists; give a new directory" >&2; exit 2; }
mkdir -p "$workdir"
workdir=$(cd "$workdir" && pwd)
table=$workdir/budgets.md

# The source and reference of the test split, whatever the corpus.
test_files() {
  local d=$workdir/data
  for sl in es de src; do
    if [[ -s $d/test.$sl ]]; then
      case $sl in es) echo "$d/test.es $d/test.en" ;; de) echo "$d/test.de $d/test.en" ;;
        src) echo "$d/test.src $d/test.trg" ;; esac
      return
    fi
  done
}

# score MODEL_DIR NAME: "BLEU / chrF2" of MODEL_DIR on the test split.
score() {
  local model=$1 name=$2 src ref
  read -r src ref <<<"$(test_files)"
  "$tfm" translate --model "$model" --beam-size 4 --normalize --input "$src" \
    --output "$workdir/$name.hyp" 2>/dev/null
  "$tfm" eval --ref "$ref" --hyp "$workdir/$name.hyp" --metrics bleu,chrf >"$workdir/$name.scores"
  awk '($1 == "BLEU" || $1 == "chrF2") && $2 == "=" { printf "%s%s", (n++ ? " / " : ""), $3 }' "$workdir/$name.scores"
}

{
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "before: $(uptime)"
  echo "commit: $(git -C "$root" rev-parse --short HEAD)"
  echo
  echo "| minutes | stage wall time | updates | best valid ppl (update) | BLEU / chrF2 best/ | last checkpoint | mean of last 3 |"
  echo "|---|---|---|---|---|---|---|"
} | tee "$table"

total=0
for minutes in 15 15 30; do
  total=$((total + minutes))
  rm -f "$workdir/model/.quickstart_trained"
  start=$SECONDS
  "$root/scripts/quickstart.sh" --workdir "$workdir" --minutes "$minutes" "$@" \
    >"$workdir/stage$total.log" 2>&1
  wall=$((SECONDS - start))
  log=$workdir/model/train.log
  updates=$(sed -n 's/^epoch [0-9]* | update \([0-9]*\) .*/\1/p; s/^valid | update \([0-9]*\) .*/\1/p' "$log" | tail -1)
  best=$(sed -n 's/.*best ppl \([0-9.]*\) (update \([0-9]*\)).*/\1 (\2)/p' "$log" | tail -1)
  mapfile -t ckpts < <(ls -d "$workdir"/model/checkpoints/update-* | sort -t- -k2 -n | tail -3)
  "$tfm" average --out "$workdir/avg$total" "${ckpts[@]}" >/dev/null
  best_score=$(score "$workdir/model/best" "best$total")
  last_score=$(score "$workdir/model" "last$total")
  avg_score=$(score "$workdir/avg$total" "avg$total")
  echo "| $total | $((wall / 60)) min $((wall % 60)) s | $updates | $best | $best_score | $last_score | $avg_score |" |
    tee -a "$table"
done
echo "after: $(uptime)" | tee -a "$table"
