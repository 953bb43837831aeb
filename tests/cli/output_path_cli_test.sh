#!/usr/bin/env bash
# One rule for every output path (docs/failure.md, "Output paths"; tfm::check_output_path): an
# output is never an input (by inode), never inside a model directory in use, never a file of a
# model directory, and a directory output is written only where nothing, an empty directory or a
# directory of its kind is. Each refusal leaves what was there untouched. FIFOs and plain files
# stand in for devices (no real device node is touched).
# Usage: output_path_cli_test.sh TFM_BINARY
set -u
tfm=$1
source "$(dirname "$0")/lib.sh"
export OMP_WAIT_POLICY=passive

tiny_model
train() { "$tfm" "${TRAIN[@]}" --model "$@"; }  # train DIR [flags...]

# expect_refused WANT CMD...: CMD exits non-zero naming WANT on stderr.
expect_refused() {
  local want=$1
  shift
  if "$@" >"$tmp/.out" 2>"$tmp/.err" </dev/null; then
    bad "expected a refusal: $*"
  elif ! grep -qF -- "$want" "$tmp/.err"; then
    bad "$*: stderr lacks '$want': $(cat "$tmp/.err")"
  else
    ok
  fi
}
# same SNAPSHOT PATH: PATH is what SNAPSHOT holds (a copy taken before).
same() { diff -r "$1" "$2" >"$tmp/.diff" 2>&1 && ok || bad "$2 was changed: $(head -3 "$tmp/.diff")"; }
snap() { rm -rf "$tmp/snap_$1"; cp -a "$2" "$tmp/snap_$1"; }

# tfm average --out: a file, a FIFO, a directory of other files, an input, a directory holding one.
echo hello >"$tmp/file.txt"
snap file "$tmp/file.txt"
expect_refused "is a regular file, not a model directory" "$tfm" average --out "$tmp/file.txt" "$tmp/m" "$tmp/m"
same "$tmp/snap_file" "$tmp/file.txt"
mkfifo "$tmp/fifo"
expect_refused "is a FIFO, not a model directory" "$tfm" average --out "$tmp/fifo" "$tmp/m" "$tmp/m"
[[ -p $tmp/fifo ]] && ok || bad "average replaced a FIFO"
mkdir -p "$tmp/mine/sub" && echo data >"$tmp/mine/a.txt" && echo more >"$tmp/mine/sub/b.txt"
snap mine "$tmp/mine"
expect_refused "holds a.txt, sub, which are not part of a model directory" "$tfm" average --out "$tmp/mine" "$tmp/m" "$tmp/m"
same "$tmp/snap_mine" "$tmp/mine"
snap m "$tmp/m"
mkdir -p "$tmp/up" && cp -a "$tmp/m" "$tmp/up/m"
expect_refused "so it is a training run's directory" \
  "$tfm" average --out "$tmp/m" "$tmp/up/m" "$tmp/up/m"
same "$tmp/snap_m" "$tmp/m"
expect_refused "holds the model directory $tmp/up/m that this command uses" "$tfm" average --out "$tmp/up" "$tmp/up/m" "$tmp/up/m"
same "$tmp/snap_m" "$tmp/up/m"
# What it may write: nothing there, an empty directory, an earlier average.
"$tfm" average --out "$tmp/avg" "$tmp/m" "$tmp/m" >/dev/null 2>"$tmp/err" && ok || bad "average: $(cat "$tmp/err")"
mkdir "$tmp/empty"
"$tfm" average --out "$tmp/empty" "$tmp/m" "$tmp/m" >/dev/null 2>"$tmp/err" && ok || bad "average into an empty directory: $(cat "$tmp/err")"
"$tfm" average --out "$tmp/avg" "$tmp/m" "$tmp/avg" >/dev/null 2>&1 && bad "averaged into one of its inputs" || ok
"$tfm" average --out "$tmp/avg" "$tmp/m" "$tmp/m" >/dev/null 2>"$tmp/err" && ok || bad "average over an average: $(cat "$tmp/err")"
[[ -f $tmp/avg/model.safetensors && -f $tmp/avg/vocab.model ]] && ok || bad "no average written"

# tfm translate --output: a file of the model in use, of another model, the standard output on
# one, and stdout appending to the input.
for f in model.safetensors vocab.model config.json; do
  expect_refused "is inside the model directory $tmp/m that this command uses" \
    "$tfm" translate --model "$tmp/m" --threads 1 --input "$tmp/src.txt" --output "$tmp/m/$f"
done
expect_refused "would replace config.json of the tfm model directory" \
  "$tfm" translate --model "$tmp/avg" --threads 1 --input "$tmp/src.txt" --output "$tmp/m/config.json"
expect_refused "would replace vocab.model of the tfm model directory" \
  "$tfm" translate --model "$tmp/avg" --threads 1 --input "$tmp/src.txt" --output "$tmp/./m/vocab.model"
same "$tmp/snap_m" "$tmp/m"
expect_refused "inside the model directory" sh -c '"$0" translate --model "$1" --threads 1 --input "$2" >"$1/out.txt"' \
  "$tfm" "$tmp/m" "$tmp/src.txt"
rm -f "$tmp/m/out.txt"  # the shell made it, empty, before tfm refused it
cp "$tmp/src.txt" "$tmp/in.txt"
expect_refused "is the input file $tmp/in.txt" sh -c '"$0" translate --model "$1" --threads 1 --input "$2" >>"$2"' \
  "$tfm" "$tmp/m" "$tmp/in.txt"
cmp -s "$tmp/in.txt" "$tmp/src.txt" && ok || bad "translate >> its input changed it"
cp "$tmp/trg.txt" "$tmp/prefix.txt"
expect_refused "is the input file $tmp/prefix.txt" "$tfm" translate --model "$tmp/m" --threads 1 \
  --input "$tmp/src.txt" --target-prefix "$tmp/prefix.txt" --output "$tmp/prefix.txt"
cmp -s "$tmp/prefix.txt" "$tmp/trg.txt" && ok || bad "translate --output damaged its --target-prefix"
# A FIFO or a plain new file is a fine --output.
"$tfm" translate --model "$tmp/m" --threads 1 --input "$tmp/src.txt" --output "$tmp/hyp.txt" 2>"$tmp/err" &&
  [[ $(wc -l <"$tmp/hyp.txt") -eq 5 ]] && ok || bad "translate --output: $(cat "$tmp/err")"
cat "$tmp/fifo" >"$tmp/fifo.out" &
"$tfm" translate --model "$tmp/m" --threads 1 --input "$tmp/src.txt" --output "$tmp/fifo" 2>"$tmp/err" || bad "translate into a FIFO: $(cat "$tmp/err")"
wait
[[ $(wc -l <"$tmp/fifo.out") -eq 5 ]] && ok || bad "the FIFO did not get 5 lines"

# score and eval print to stdout: never appending to what they read.
cp "$tmp/src.txt" "$tmp/s.txt"
expect_refused "score: standard output ($tmp/s.txt) is the input file $tmp/s.txt" \
  sh -c '"$0" score --model "$1" --threads 1 --src "$2" --trg "$3" >>"$2"' "$tfm" "$tmp/m" "$tmp/s.txt" "$tmp/trg.txt"
cmp -s "$tmp/s.txt" "$tmp/src.txt" && ok || bad "score >> its input changed it"
cp "$tmp/trg.txt" "$tmp/h.txt"
expect_refused "eval: standard output ($tmp/h.txt) is the input file $tmp/h.txt" \
  sh -c '"$0" eval --ref "$1" --hyp "$2" >>"$2"' "$tfm" "$tmp/trg.txt" "$tmp/h.txt"
cmp -s "$tmp/h.txt" "$tmp/trg.txt" && ok || bad "eval >> its input changed it"

# tfm vocab: --out naming its input, a model's vocabulary, a FIFO.
cp "$tmp/train.de" "$tmp/X.model"
expect_refused "vocab: --out $tmp/X.model is the input file $tmp/X.model" \
  "$tfm" vocab --input "$tmp/X.model" --size 30 --out "$tmp/X"
cmp -s "$tmp/X.model" "$tmp/train.de" && ok || bad "vocab overwrote its input"
expect_refused "would replace vocab.model of the tfm model directory" \
  "$tfm" vocab --input "$tmp/train.de" --size 30 --out "$tmp/m/vocab"
same "$tmp/snap_m" "$tmp/m"
mkfifo "$tmp/vf.vocab"
expect_refused "is a FIFO, not a file tfm replaces" "$tfm" vocab --input "$tmp/train.de" --size 30 --out "$tmp/vf"
[[ -p $tmp/vf.vocab && ! -e $tmp/vf.model ]] && ok || bad "vocab replaced a FIFO or wrote half its pair"

# prepare-ding and prepare-bible: an input among the files they write; a FIFO there.
mkdir -p "$tmp/corpus"
printf 'Haus {n} :: house\nBaum {m} :: tree\nKatze {f} :: cat\nHund {m} :: dog\n' >"$tmp/corpus/train.de"
snap corpus "$tmp/corpus"
expect_refused "prepare-ding: --out $tmp/corpus/train.de is the input file" \
  "$tfm" prepare-ding --input "$tmp/corpus/train.de" --out "$tmp/corpus" --valid 1 --test 1
same "$tmp/snap_corpus" "$tmp/corpus"
mkdir -p "$tmp/ding" && mkfifo "$tmp/ding/valid.en"
expect_refused "is a FIFO, not a file tfm replaces" \
  "$tfm" prepare-ding --input "$tmp/corpus/train.de" --out "$tmp/ding" --valid 1 --test 1
printf '$$$Genesis 1:1\nEn el principio.\n' >"$tmp/corpus/train.es"
printf '$$$Genesis 1:1\nIn the beginning.\n' >"$tmp/en.imp"
expect_refused "prepare-bible: --out $tmp/corpus/train.es is the input file" "$tfm" prepare-bible \
  --src "$tmp/corpus/train.es" --trg "$tmp/en.imp" --src-lang es --trg-lang en --out "$tmp/corpus"

# tfm train --model: another program's config.json, a directory of other files, a vocabulary of
# the other kind, an input among the run's files. Nothing there changes.
mkdir -p "$tmp/theirs" && echo '{"architectures": ["Bert"]}' >"$tmp/theirs/config.json"
snap theirs "$tmp/theirs"
expect_refused "holds a config.json that is not a tfm model's" train "$tmp/theirs" --vocab "$tmp/voc.model"
same "$tmp/snap_theirs" "$tmp/theirs"
mkdir -p "$tmp/notes" && echo notes >"$tmp/notes/notes.txt"
expect_refused "holds notes.txt, which is not part of a training run's directory" train "$tmp/notes" --vocab "$tmp/voc.model"
[[ $(ls -A "$tmp/notes") == notes.txt ]] && ok || bad "a refused run wrote into $tmp/notes: $(ls -A "$tmp/notes")"
"$tfm" vocab --input "$tmp/train.de" "$tmp/train.en" --size 45 --out "$tmp/voc45" >/dev/null
mkdir -p "$tmp/shadow" && cp "$tmp/voc45.model" "$tmp/shadow/vocab.model"
expect_refused "holds vocab.model from a run with a joint vocabulary" \
  train "$tmp/shadow" --vocab-src "$tmp/voc.model" --vocab-trg "$tmp/voc.model"
[[ $(ls -A "$tmp/shadow") == vocab.model ]] && ok || bad "a refused run wrote into $tmp/shadow: $(ls -A "$tmp/shadow")"
mkdir -p "$tmp/inside" && cp "$tmp/voc.model" "$tmp/inside/vocab.model"
expect_refused "holds $tmp/inside/vocab.model, which this command reads and a training run there writes" \
  train "$tmp/inside" --vocab "$tmp/inside/vocab.model"
# What it may train in: a new directory, an empty one, one holding only a run's names (a
# vocabulary put there), its own run (resumed).
mkdir -p "$tmp/fresh"
train "$tmp/fresh" --vocab "$tmp/voc.model" >/dev/null 2>"$tmp/err" && ok || bad "train into an empty directory: $(cat "$tmp/err")"
mkdir -p "$tmp/prepared" && cp "$tmp/voc.model" "$tmp/prepared/vocab.model"
train "$tmp/prepared" --vocab "$tmp/voc.model" >/dev/null 2>"$tmp/err" && ok || bad "train beside its vocabulary: $(cat "$tmp/err")"
echo "notes" >"$tmp/fresh/NOTES"
train "$tmp/fresh" --vocab "$tmp/voc.model" --max-updates 3 >/dev/null 2>"$tmp/err" && ok ||
  bad "resuming a run with a file of the user's in it: $(cat "$tmp/err")"

finish output_path_cli
