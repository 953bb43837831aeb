#!/usr/bin/env bash
# From nothing to a German->English model: installs what is missing, builds tfm, turns the Ding
# dictionary into a corpus, trains a vocabulary and a small model for --minutes, translates the
# test split and scores it. Each step is skipped when its output exists, so a re-run reuses the
# work and an interrupted training resumes.
# Usage: scripts/quickstart.sh [--minutes M] [--corpus SRC TRG] [--workdir DIR]
#   --minutes M       training time in minutes (default 15)
#   --corpus SRC TRG  your own parallel files instead of Ding: the last 1000 lines become the test
#                     split, the 1000 before them the validation split
#   --workdir DIR     where everything goes (default work/quickstart)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
minutes=15
corpus_src=
corpus_trg=
workdir=work/quickstart
while [[ $# -gt 0 ]]; do
  case $1 in
    --minutes) minutes=${2:?--minutes needs a number}; shift 2 ;;
    --corpus) corpus_src=${2:?--corpus needs SRC TRG}; corpus_trg=${3:?--corpus needs SRC TRG}; shift 3 ;;
    --workdir) workdir=${2:?--workdir needs a directory}; shift 2 ;;
    -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "quickstart: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
[[ $minutes =~ ^[0-9]+$ && $minutes -gt 0 ]] || { echo "quickstart: --minutes must be a positive integer, got '$minutes'" >&2; exit 2; }
if [[ -n $corpus_src ]]; then
  for f in "$corpus_src" "$corpus_trg"; do
    [[ -r $f ]] || { echo "quickstart: cannot read corpus file $f" >&2; exit 2; }
  done
  corpus_src=$(realpath "$corpus_src")
  corpus_trg=$(realpath "$corpus_trg")
fi
mkdir -p "$workdir"
workdir=$(cd "$workdir" && pwd)
build_dir=${BUILD_DIR:-$root/build}
tfm=$build_dir/tfm
data=$workdir/data
model=$workdir/model

# Progress and failure messages: every step says what it does; a failure names the step and a fix.
step_name=
step_fix=
step() {
  step_name=$1
  step_fix=$2
  echo "==> $step_name" >&2
}
skip() { echo "==> $1: done already ($2), skipping" >&2; }
on_error() {
  local rc=$?
  echo "quickstart: step '$step_name' failed (exit $rc)." >&2
  [[ -n $step_fix ]] && echo "quickstart: to fix: $step_fix" >&2
  echo "quickstart: re-run the same command afterwards; finished steps are skipped." >&2
  exit "$rc"
}
trap on_error ERR
as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi; }

# 1. System packages (compiler, oneDNN, SentencePiece, ...), and the Ding dictionary.
if [[ -x $tfm ]]; then
  skip "setup" "$tfm exists"
else
  step "setup: install build dependencies" "run scripts/setup.sh by hand and read its errors (it needs apt-get and root or sudo)"
  TFM_SETUP_SKIP_TORCH=1 "$root/scripts/setup.sh"
fi
ding=/usr/share/trans/de-en
if [[ -z $corpus_src && ! -r $ding ]]; then
  step "setup: install the Ding dictionary (trans-de-en)" "sudo apt-get update && sudo apt-get install trans-de-en, or train on your own files with --corpus SRC TRG"
  as_root apt-get install -y trans-de-en
fi

# 2. Release build.
if [[ -x $tfm ]]; then
  skip "build" "$tfm exists"
else
  step "build: Release build of tfm" "look at the compiler errors above; scripts/setup.sh installs the dependencies; rm -rf $build_dir for a clean build"
  TARGET=tfm BUILD_DIR=$build_dir "$root/scripts/build.sh" Release >&2
fi

# 3. Corpus: train/valid/test.{de,en}.
if [[ -s $data/test.de && -s $data/test.en && -s $data/train.de ]]; then
  skip "corpus" "$data/test.de exists"
elif [[ -n $corpus_src ]]; then
  step "corpus: split $corpus_src + $corpus_trg" "the two files must have the same number of lines, more than 3000"
  n=$(wc -l <"$corpus_src")
  [[ $n -eq $(wc -l <"$corpus_trg") ]] || { echo "quickstart: $corpus_src has $n lines, $corpus_trg $(wc -l <"$corpus_trg")" >&2; false; }
  [[ $n -gt 3000 ]] || { echo "quickstart: $corpus_src has only $n lines" >&2; false; }
  mkdir -p "$data"
  for pair in "de:$corpus_src" "en:$corpus_trg"; do
    l=${pair%%:*} f=${pair#*:}
    head -n $((n - 2000)) "$f" >"$data/train.$l.tmp"
    sed -n "$((n - 1999)),$((n - 1000))p" "$f" >"$data/valid.$l.tmp"
    tail -n 1000 "$f" >"$data/test.$l.tmp"
  done
  for f in "$data"/*.tmp; do mv "$f" "${f%.tmp}"; done
else
  step "corpus: tfm prepare-ding" "check that $ding is readable (apt-get install trans-de-en)"
  "$tfm" prepare-ding --input "$ding" --out "$data" >&2
fi

# The Ding training split is 95 % dictionary entries, its valid/test splits mostly sentences: the
# training input repeats each full-sentence pair (German ends in . ! ? and has >= 4 words) 12 times
# and each multi-word phrase twice, single words once, so a budget of minutes sees the sentences
# often enough to learn sentence structure and still sees the whole dictionary
# (docs/history/performance.md, "Quick start", has the runs behind these weights). Your own corpus
# (--corpus) is used as it is.
train_src=$data/train.de train_trg=$data/train.en
if [[ -z $corpus_src ]]; then
  train_src=$data/train_weighted.de train_trg=$data/train_weighted.en
  if [[ ! -s $train_trg ]]; then
    step "corpus: weighted training mix (sentences x12, phrases x2, words x1)" "check that $data/train.de and train.en exist"
    paste "$data/train.de" "$data/train.en" |
      awk -F'\t' '{ n = split($1, w, " "); r = 1
                    if ($1 ~ /[.!?]$/ && n >= 4) r = 12; else if (n >= 2) r = 2
                    for (i = 0; i < r; i++) print }' >"$data/train_weighted.tsv.tmp"
    cut -f1 "$data/train_weighted.tsv.tmp" >"$train_src.tmp"
    cut -f2 "$data/train_weighted.tsv.tmp" >"$train_trg.tmp"
    mv "$train_src.tmp" "$train_src" && mv "$train_trg.tmp" "$train_trg"
    rm -f "$data/train_weighted.tsv.tmp"
  fi
fi

# 4. A joint SentencePiece vocabulary.
if [[ -s $workdir/vocab.model ]]; then
  skip "vocab" "$workdir/vocab.model exists"
else
  step "vocab: 8000 pieces" "a small corpus may not support 8000 pieces: run $tfm vocab --input $data/train.de $data/train.en --size N --out $workdir/vocab with the N SentencePiece allows, then re-run"
  "$tfm" vocab --input "$data/train.de" "$data/train.en" --size 8000 --max-sentences 200000 \
    --out "$workdir/vocab" >&2
fi

# 5. Training (resumes from $model/train_state when interrupted).
if [[ -f $model/.quickstart_trained ]]; then
  skip "train" "$model/.quickstart_trained exists; delete it to train on"
else
  step "train: preset quick for $minutes minutes" "see the trainer's message above; a re-run resumes from the last checkpoint"
  if ! "$tfm" --help 2>/dev/null | grep -qE "^ +train( |$)"; then
    echo "quickstart: $tfm has no 'train' subcommand: update the sources and rebuild (rm $tfm; re-run)" >&2
    false
  fi
  "$tfm" train --model "$model" --train-src "$train_src" --train-trg "$train_trg" \
    --valid-src "$data/valid.de" --valid-trg "$data/valid.en" --vocab "$workdir/vocab.model" \
    --preset quick --precision auto --max-minutes "$minutes" --lr 2e-3 --warmup 400 --batch-tokens 2048 --clip-norm 1.0 \
    --save-every 250 --valid-every 500 --log-every 50 >&2
  touch "$model/.quickstart_trained"
fi
best=$model
[[ -f $model/best/model.safetensors ]] && best=$model/best

# 6. Translate the test split (again when the model is newer than the translation).
hyp=$workdir/test.hyp
if [[ -s $hyp && $hyp -nt $best/model.safetensors ]]; then
  skip "translate" "$hyp is newer than the model"
else
  # Hypotheses ranked by log-probability per token: raw log-probabilities favour short ones, and
  # a 15-minute model's are too short (brevity penalty 0.77 instead of 0.90; +0.6 BLEU).
  step "translate: test split, beam 4" "check the model directory $best (tfm info --model $best)"
  "$tfm" translate --model "$best" --beam-size 4 --normalize --input "$data/test.de" --output "$hyp.tmp"
  mv "$hyp.tmp" "$hyp"
fi

# 7. Scores.
step "eval: BLEU and chrF on the test split" "$hyp and $data/test.en must have the same number of lines"
"$tfm" eval --ref "$data/test.en" --hyp "$hyp" --metrics bleu,chrf | tee "$workdir/test.scores"

# 8. A look at real output: 8 full German sentences of the test split.
echo
echo "Examples (source / model / reference):"
paste "$data/test.de" "$hyp" "$data/test.en" |
  awk -F'\t' 'n < 8 && $1 ~ /[.!?]$/ && split($1, w, " ") >= 4 { print; n++ }' |
  while IFS=$'\t' read -r de mt en; do
    printf '  DE:  %s\n  MT:  %s\n  REF: %s\n\n' "$de" "$mt" "$en"
  done

trap - ERR
echo "Model: $best"
echo "Translate with:"
echo "  echo 'Ich habe heute keine Zeit.' | $tfm translate --model $best --beam-size 4 --normalize"
echo
echo "What this is: a demonstration of $minutes minutes of training on $(nproc) cores. It has seen the"
echo "dictionary's 18k example sentences a few times each: it gets the topic and many words of a"
echo "sentence right, not yet its grammar. Measured on a 2-core AMD Zen 4 (docs/history/performance.md,"
echo "\"Quick start\"): test BLEU about 7.8 after 15 minutes (5900 updates); trained on, 8.1 after"
echo "8500 updates and 8.6 after 12700 (about 22 and 32 minutes there), where it starts to overfit"
echo "the dictionary's sentences (9.2 for the last checkpoint at 16900); 240 minutes not measured."
echo "To train on: rm $model/.quickstart_trained, then re-run with --minutes N (the"
echo "training resumes where it stopped)."
echo "For a model that translates well:"
echo "  - scripts/recipes/multi30k.sh DATA_DIR: Multi30k (29k image-caption pairs), test BLEU 39.7"
echo "    after about an hour on the same 2 cores;"
echo "  - your own parallel text: scripts/quickstart.sh --corpus SRC TRG --minutes 240 (more data"
echo "    and more minutes are what a better model needs)."
