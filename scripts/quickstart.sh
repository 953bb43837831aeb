#!/usr/bin/env bash
# From nothing to a Spanish->English model: installs what is missing, builds tfm, turns two Bibles
# from Debian's SWORD modules (Reina-Valera 1909, World English Bible) into a corpus of aligned
# verses, trains a vocabulary and a small model for --minutes, translates the held-out books
# (Mark, Amos) and scores them. Each step is skipped when its output exists, so a re-run reuses
# the work and an interrupted training resumes.
# Usage: scripts/quickstart.sh [--minutes M] [--corpus ding | --corpus SRC TRG] [--workdir DIR]
#   --minutes M       training time in minutes (default 15)
#   --corpus ding     German->English from the Ding dictionary (trans-de-en) instead
#   --corpus SRC TRG  your own parallel files instead: the last 1000 lines become the test split,
#                     the 1000 before them the validation split
#   --workdir DIR     where everything goes (default work/quickstart; one corpus a directory)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
minutes=15
corpus=bible
corpus_src=
corpus_trg=
workdir=work/quickstart
while [[ $# -gt 0 ]]; do
  case $1 in
    --minutes) minutes=${2:?--minutes needs a number}; shift 2 ;;
    --corpus)
      if [[ ${2:-} == ding || ${2:-} == bible ]]; then
        corpus=$2; shift 2
      else
        corpus=files
        corpus_src=${2:?--corpus needs ding, or SRC TRG}; corpus_trg=${3:?--corpus needs ding, or SRC TRG}
        shift 3
      fi ;;
    --workdir) workdir=${2:?--workdir needs a directory}; shift 2 ;;
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "quickstart: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
[[ $minutes =~ ^[0-9]+$ && $minutes -gt 0 ]] || { echo "quickstart: --minutes must be a positive integer, got '$minutes'" >&2; exit 2; }
if [[ $corpus == files ]]; then
  for f in "$corpus_src" "$corpus_trg"; do
    [[ -r $f ]] || { echo "quickstart: cannot read corpus file $f" >&2; exit 2; }
  done
  corpus_src=$(realpath "$corpus_src")
  corpus_trg=$(realpath "$corpus_trg")
fi
# The languages name the corpus files.
case $corpus in
  bible) sl=es tl=en ;;
  ding) sl=de tl=en ;;
  files) sl=src tl=trg ;;
esac
mkdir -p "$workdir"
workdir=$(cd "$workdir" && pwd)
# A work directory holds one corpus: another one would reuse the wrong files.
corpus_id=$corpus
[[ $corpus == files ]] && corpus_id="files $corpus_src $corpus_trg"
if [[ -f $workdir/corpus && $(cat "$workdir/corpus") != "$corpus_id" ]]; then
  echo "quickstart: $workdir holds a run on '$(cat "$workdir/corpus")'; use another --workdir for '$corpus_id'" >&2
  exit 2
fi
# Earlier versions of this script wrote German/English files without saying which corpus.
if [[ ! -f $workdir/corpus && -e $workdir/data/test.de && $corpus != ding ]]; then
  echo "quickstart: $workdir holds an earlier quick start's German->English run; use another --workdir (or --corpus ding there)" >&2
  exit 2
fi
echo "$corpus_id" >"$workdir/corpus"
build_dir=${BUILD_DIR:-$root/build}
tfm=$build_dir/tfm
data=$workdir/data
model=$workdir/model

# Progress and failure messages: every step says what it does; a failure names the step and a fix.
step_name=
step_fix=
# Each line starts with the time since the start (minutes:seconds).
elapsed() { printf '%d:%02d' $((SECONDS / 60)) $((SECONDS % 60)); }
step() {
  step_name=$1
  step_fix=$2
  echo "==> [$(elapsed)] $step_name" >&2
}
skip() { echo "==> [$(elapsed)] $1: done already ($2), skipping" >&2; }
on_error() {
  local rc=$?
  echo "quickstart: step '$step_name' failed (exit $rc)." >&2
  [[ -n $step_fix ]] && echo "quickstart: to fix: $step_fix" >&2
  echo "quickstart: re-run the same command afterwards; finished steps are skipped." >&2
  exit "$rc"
}
trap on_error ERR
as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi; }
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

# 1. System packages (compiler, oneDNN, SentencePiece, ...), and the corpus's Debian packages.
if [[ -x $tfm ]]; then
  skip "setup" "$tfm exists"
else
  step "setup: install build dependencies" "run scripts/setup.sh by hand and read its errors (it needs apt-get and root or sudo)"
  TFM_SETUP_SKIP_TORCH=1 "$root/scripts/setup.sh"
fi
ding=/usr/share/trans/de-en
bible_packages=(sword-text-sparv sword-text-web libsword-utils)
if [[ $corpus == ding && ! -r $ding ]]; then
  step "setup: install the Ding dictionary (trans-de-en)" "sudo apt-get update && sudo apt-get install trans-de-en, or train on your own files with --corpus SRC TRG"
  as_root apt-get install -y trans-de-en
elif [[ $corpus == bible ]]; then
  missing=()
  for p in "${bible_packages[@]}"; do installed "$p" || missing+=("$p"); done
  if [[ ${#missing[@]} -gt 0 ]]; then
    step "setup: install the Bible modules and mod2imp (${missing[*]})" "sudo apt-get update && sudo apt-get install ${bible_packages[*]}, or train on your own files with --corpus SRC TRG"
    as_root apt-get install -y "${missing[@]}"
  fi
fi

# 2. Release build.
if [[ -x $tfm ]]; then
  skip "build" "$tfm exists"
else
  step "build: Release build of tfm" "look at the compiler errors above; scripts/setup.sh installs the dependencies; rm -rf $build_dir for a clean build"
  TARGET=tfm BUILD_DIR=$build_dir "$root/scripts/build.sh" Release >&2
fi
for sub in train prepare-bible; do
  if ! "$tfm" --help 2>/dev/null | grep -qE "^ +$sub( |$)"; then
    echo "quickstart: $tfm has no '$sub' subcommand: update the sources and rebuild (rm $tfm; re-run)" >&2
    exit 1
  fi
done

# 3. Corpus: train/valid/test.{$sl,$tl}.
if [[ -s $data/test.$sl && -s $data/test.$tl && -s $data/train.$sl ]]; then
  skip "corpus" "$data/test.$sl exists"
elif [[ $corpus == files ]]; then
  step "corpus: split $corpus_src + $corpus_trg" "the two files must have the same number of lines, more than 3000"
  n=$(wc -l <"$corpus_src")
  [[ $n -eq $(wc -l <"$corpus_trg") ]] || { echo "quickstart: $corpus_src has $n lines, $corpus_trg $(wc -l <"$corpus_trg")" >&2; false; }
  [[ $n -gt 3000 ]] || { echo "quickstart: $corpus_src has only $n lines" >&2; false; }
  mkdir -p "$data"
  for pair in "$sl:$corpus_src" "$tl:$corpus_trg"; do
    l=${pair%%:*} f=${pair#*:}
    head -n $((n - 2000)) "$f" >"$data/train.$l.tmp"
    sed -n "$((n - 1999)),$((n - 1000))p" "$f" >"$data/valid.$l.tmp"
    tail -n 1000 "$f" >"$data/test.$l.tmp"
  done
  for f in "$data"/*.tmp; do mv "$f" "${f%.tmp}"; done
elif [[ $corpus == ding ]]; then
  step "corpus: tfm prepare-ding" "check that $ding is readable (apt-get install trans-de-en)"
  "$tfm" prepare-ding --input "$ding" --out "$data" >&2
else
  step "corpus: mod2imp spaRV1909eb, engWEB2015eb; tfm prepare-bible" "check that 'mod2imp spaRV1909eb | head' prints verses (apt-get install ${bible_packages[*]})"
  mkdir -p "$data"
  for m in spaRV1909eb engWEB2015eb; do
    mod2imp "$m" >"$data/$m.imp.tmp"
    [[ -s $data/$m.imp.tmp ]] || { echo "quickstart: mod2imp $m printed nothing: is the module installed?" >&2; false; }
    mv "$data/$m.imp.tmp" "$data/$m.imp"
  done
  "$tfm" prepare-bible --src "$data/spaRV1909eb.imp" --trg "$data/engWEB2015eb.imp" \
    --src-lang es --trg-lang en --out "$data" >&2
fi

# The Ding training split is 95 % dictionary entries, its valid/test splits mostly sentences: the
# training input repeats each full-sentence pair (German ends in . ! ? and has >= 4 words) 12 times
# and each multi-word phrase twice, single words once, so a budget of minutes sees the sentences
# often enough to learn sentence structure and still sees the whole dictionary
# (docs/history/performance.md, "Quick start", has the runs behind these weights). The Bible and your own
# corpus are used as they are.
train_src=$data/train.$sl train_trg=$data/train.$tl
if [[ $corpus == ding ]]; then
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
  step "vocab: 8000 pieces" "a small corpus may not support 8000 pieces: run $tfm vocab --input $data/train.$sl $data/train.$tl --size N --out $workdir/vocab with the N SentencePiece allows, then re-run"
  "$tfm" vocab --input "$data/train.$sl" "$data/train.$tl" --size 8000 --max-sentences 200000 \
    --out "$workdir/vocab" >&2
fi

# 5. Training (resumes from $model/train_state when interrupted). The learning rate falls
# linearly to zero over the minutes given: on the Bible corpus, 3500 updates of a 4500-update
# linear schedule gave test BLEU 27.2 where inverse-sqrt gave 25.7 (docs/benchmarks.md). auto
# precision trains in bf16 only where it is faster than fp32 (AMD's AVX512-BF16, or AMX).
if [[ -f $model/.quickstart_trained ]]; then
  skip "train" "$model/.quickstart_trained exists; delete it to train on"
else
  step "train: preset quick for $minutes minutes" "see the trainer's message above; a re-run resumes from the last checkpoint"
  "$tfm" train --model "$model" --train-src "$train_src" --train-trg "$train_trg" \
    --valid-src "$data/valid.$sl" --valid-trg "$data/valid.$tl" --vocab "$workdir/vocab.model" \
    --preset quick --precision auto --max-minutes "$minutes" --lr 2e-3 --lr-schedule linear --warmup 400 \
    --batch-tokens 2048 --clip-norm 1.0 \
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
  "$tfm" translate --model "$best" --beam-size 4 --normalize --input "$data/test.$sl" --output "$hyp.tmp"
  mv "$hyp.tmp" "$hyp"
fi

# 7. Scores.
step "eval: BLEU and chrF on the test split" "$hyp and $data/test.$tl must have the same number of lines"
"$tfm" eval --ref "$data/test.$tl" --hyp "$hyp" --metrics bleu,chrf | tee "$workdir/test.scores"

# 8. A look at real output: 8 test sentences, spread over the split.
echo
if [[ $corpus == bible ]]; then
  echo "Examples (held-out verse: Spanish / model / World English Bible):"
  paste "$data/test.keys" "$data/test.$sl" "$hyp" "$data/test.$tl" |
    awk -F'\t' -v n="$(wc -l <"$hyp")" 'NR % int(n / 8) == 1 && c < 8 { print; c++ }' |
    while IFS=$'\t' read -r key src mt ref; do
      printf '  %s\n  ES:  %s\n  MT:  %s\n  REF: %s\n\n' "$key" "$src" "$mt" "$ref"
    done
else
  echo "Examples (source / model / reference):"
  paste "$data/test.$sl" "$hyp" "$data/test.$tl" |
    awk -F'\t' 'n < 8 && $1 ~ /[.!?]$/ && split($1, w, " ") >= 4 { print; n++ }' |
    while IFS=$'\t' read -r src mt ref; do
      printf '  %s:  %s\n  MT:  %s\n  REF: %s\n\n' "${sl^^}" "$src" "$mt" "$ref"
    done
fi

trap - ERR
echo "Model: $best"
echo "Translate with:"
case $corpus in
  bible) echo "  echo 'El pastor guarda sus ovejas en el campo.' | $tfm translate --model $best --beam-size 4 --normalize" ;;
  ding) echo "  echo 'Ich habe heute keine Zeit.' | $tfm translate --model $best --beam-size 4 --normalize" ;;
  files) echo "  head -3 $data/test.$sl | $tfm translate --model $best --beam-size 4 --normalize" ;;
esac
echo
echo "What this is: a demonstration of $minutes minutes of training on $(nproc) cores."
case $corpus in
  bible)
    echo "It learnt from $(wc -l <"$data/train.$sl") verses of two Bibles, the Reina-Valera of 1909 and the"
    echo "World English Bible, and was tested on books it never saw (Mark, Amos): a Bible-register"
    echo "model. It translates Spanish that reads like that Bible (its 1909 spelling, 'fué', 'á', its"
    echo "vocabulary of kings, prophets and sheep) into the WEB's English ('Jehová' becomes"
    echo "'Yahweh'); it is not a general translator: news, chat or technical Spanish are words and"
    echo "registers it has hardly or never seen. docs/benchmarks.md, \"Quick start\", has what 15"
    echo "minutes gave on a 2-core machine." ;;
  ding)
    echo "It has seen the dictionary's 18k example sentences a few times each: it gets the topic and"
    echo "many words of a sentence right, not yet its grammar. Measured on a 2-core AMD Zen 4"
    echo "(docs/history/performance.md, \"Quick start\"): test BLEU about 7.8 after 15 minutes (5900 updates);"
    echo "trained on, 8.1 after 8500 updates and 8.6 after 12700 (about 22 and 32 minutes there)." ;;
  files)
    echo "It learnt from $(wc -l <"$data/train.$sl") lines of your corpus; more data and more minutes are"
    echo "what a better model needs." ;;
esac
echo "To train on: rm $model/.quickstart_trained, then re-run with --minutes N (the"
echo "training resumes where it stopped)."
echo "For a model that translates well:"
echo "  - scripts/recipes/multi30k.sh DATA_DIR: Multi30k (29k image-caption pairs), test BLEU 39.7"
echo "    after about an hour on the same 2 cores;"
echo "  - your own parallel text: scripts/quickstart.sh --corpus SRC TRG --minutes 240 (more data"
echo "    and more minutes are what a better model needs)."
echo "Done in $(elapsed) (minutes:seconds)."
