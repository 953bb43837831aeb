#!/usr/bin/env bash
# Multi30k German→English with the `small` preset: vocabulary, training, then BLEU/chrF on
# test_2016_flickr with greedy and beam-4 decoding at each precision, and translation speed.
# The figures in docs/history/performance.md ("Multi30k") come from this script.
#
# Usage: scripts/recipes/multi30k.sh [DATA_DIR [WORK_DIR]]
#   DATA_DIR holds train.{de,en}, val.{de,en}, test_2016_flickr.{de,en} (default ../shared/data/multi30k)
#   WORK_DIR receives the vocabulary, the model and the outputs (default work/multi30k)
# Environment: TFM (binary, default build/tfm), THREADS (default 2), MINUTES (training budget,
# default 105), EVAL_ONLY=1 (skip training: evaluate WORK_DIR/model).
# Re-running resumes training (tfm train resumes from WORK_DIR/model/train_state).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
data=${1:-$root/../shared/data/multi30k}
work=${2:-$root/work/multi30k}
tfm=${TFM:-$root/build/tfm}
threads=${THREADS:-2}
minutes=${MINUTES:-105}
for f in train.de train.en val.de val.en test_2016_flickr.de test_2016_flickr.en; do
  [[ -r $data/$f ]] || { echo "multi30k: missing $data/$f" >&2; exit 1; }
done
[[ -x $tfm ]] || { echo "multi30k: no $tfm; run scripts/build.sh" >&2; exit 1; }
mkdir -p "$work"
# Passive OpenMP waiting: on a machine shared with other work, spinning threads lose their core
# and every barrier stalls (measured: 4× slower training under load); idle, it costs little.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

if [[ ! -s $work/vocab.model ]]; then
  "$tfm" vocab --input "$data/train.de" "$data/train.en" --size 8000 --out "$work/vocab"
fi
if [[ ${EVAL_ONLY:-0} != 1 ]]; then
  "$tfm" train --model "$work/model" --train-src "$data/train.de" --train-trg "$data/train.en" \
    --valid-src "$data/val.de" --valid-trg "$data/val.en" --vocab "$work/vocab.model" \
    --preset small --lr 1e-3 --lr-schedule inverse_sqrt --warmup 1000 --clip-norm 1.0 \
    --batch-tokens 4096 --max-epochs 60 --max-minutes "$minutes" --valid-every 500 \
    --save-every 500 --keep-last 6 --valid-bleu --log-every 100 --threads "$threads" --seed 1
fi

# The last checkpoints averaged, beside the best one.
mapfile -t last < <(ls -d "$work/model/checkpoints/update-"* | sort -t- -k2 -n | tail -5)
"$tfm" average --out "$work/model/avg" "${last[@]}" >/dev/null

test_src=$data/test_2016_flickr.de test_ref=$data/test_2016_flickr.en
result() {  # result NAME MODEL FLAGS...: translate the test set, time it, score it
  local name=$1 model=$2
  shift 2
  local start end
  start=$(date +%s.%N)
  "$tfm" translate --model "$model" --threads "$threads" --batch-size 32 "$@" \
    --input "$test_src" --output "$work/$name.hyp"
  end=$(date +%s.%N)
  local toks secs
  # Generated tokens: the output's SentencePiece pieces plus one EOS a line.
  toks=$(($(spm_encode --model "$work/vocab.model" <"$work/$name.hyp" | wc -w) + $(wc -l <"$work/$name.hyp")))
  secs=$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')
  printf '%-16s %s | %s | %.1f s, %s tokens/s\n' "$name" \
    "$("$tfm" eval --ref "$test_ref" --hyp "$work/$name.hyp" --metrics bleu | head -1)" \
    "$("$tfm" eval --ref "$test_ref" --hyp "$work/$name.hyp" --metrics chrf | head -1)" \
    "$secs" "$(awk -v t="$toks" -v s="$secs" 'BEGIN { printf "%.0f", t / s }')"
}
for m in best avg; do
  result "$m.greedy" "$work/model/$m"
  result "$m.beam4" "$work/model/$m" --beam-size 4 --length-penalty 0.6
done
for p in bf16 int8; do
  result "best.greedy.$p" "$work/model/best" --precision "$p"
  result "best.beam4.$p" "$work/model/best" --beam-size 4 --length-penalty 0.6 --precision "$p"
done
