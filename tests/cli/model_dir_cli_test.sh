#!/usr/bin/env bash
# A model directory laid out as docs/cli.md describes ("A model directory"): config.json,
# model.safetensors and vocab.model, or vocab.src.model + vocab.trg.model, put together by hand,
# translates and scores text; tfm train and tfm average write those names; the legacy .spm names
# are still read; and a model's source framing (source_bos / source_eos in config.json) is
# honoured by training.
# Usage: model_dir_cli_test.sh TFM_BINARY
set -u
tfm=$1
source "$(dirname "$0")/lib.sh"

# A toy word-for-word corpus (deterministic: awk's srand with a seed) and its joint vocabulary.
toy_corpus 5 120
"$tfm" vocab --input "$tmp/train.de" "$tmp/train.en" --size 40 --out "$tmp/voc" >/dev/null ||
  bad "tfm vocab failed"
[[ -s "$tmp/voc.model" ]] && ok || bad "tfm vocab wrote no voc.model"

train() {  # train DIR [flags...]: a few updates of the tiny preset
  local dir=$1
  shift
  "$tfm" train --model "$dir" --train-src "$tmp/train.de" --train-trg "$tmp/train.en" \
    --preset tiny --batch-tokens 200 --max-updates 3 --log-every 1 --save-every 0 \
    --valid-every 0 --keep-last 0 --threads 1 --seed 4 "$@"
}
first_loss() { sed -n 's/^epoch [0-9]* | update 1 .* | loss \([0-9.]*\) .*/\1/p' "$1/train.log" | head -1; }

# tfm train copies the vocabulary in as vocab.model (and as vocab.src.model + vocab.trg.model).
train "$tmp/m" --vocab "$tmp/voc.model" >/dev/null 2>"$tmp/err" || bad "train failed: $(cat "$tmp/err")"
cmp -s "$tmp/voc.model" "$tmp/m/vocab.model" && ok || bad "train: no vocab.model in the model directory"
ls "$tmp/m" | grep -q '\.spm$' && bad "train wrote a .spm vocabulary: $(ls "$tmp/m")" || ok
train "$tmp/m2" --vocab-src "$tmp/voc.model" --vocab-trg "$tmp/voc.model" >/dev/null 2>"$tmp/err" ||
  bad "train with two vocabularies failed: $(cat "$tmp/err")"
[[ -s "$tmp/m2/vocab.src.model" && -s "$tmp/m2/vocab.trg.model" ]] && ok ||
  bad "train: no vocab.src.model + vocab.trg.model: $(ls "$tmp/m2")"

# The documented layout, made by hand: the model files plus the SentencePiece model as vocab.model.
printf 'der hund sieht die katze\nhaus\n' >"$tmp/src.txt"
printf 'the dog sees the cat\nhouse\n' >"$tmp/trg.txt"
layout() {  # layout DIR VOCAB_NAME...: config.json + model.safetensors + voc.model under each name
  local dir=$1
  shift
  mkdir -p "$dir" && cp "$tmp/m/config.json" "$tmp/m/model.safetensors" "$dir/"
  for name in "$@"; do cp "$tmp/voc.model" "$dir/$name"; done
}
layout "$tmp/joint" vocab.model
if "$tfm" translate --model "$tmp/joint" --threads 1 <"$tmp/src.txt" >"$tmp/joint.out" 2>"$tmp/err"; then
  [[ $(wc -l <"$tmp/joint.out") -eq 2 ]] && ok || bad "translate (vocab.model): $(cat "$tmp/joint.out")"
else
  bad "translate with vocab.model failed: $(cat "$tmp/err")"
fi
"$tfm" translate --model "$tmp/m" --threads 1 <"$tmp/src.txt" >"$tmp/m.out" 2>/dev/null
cmp -s "$tmp/joint.out" "$tmp/m.out" && ok || bad "hand-made directory translates differently"
if "$tfm" score --model "$tmp/joint" --src "$tmp/src.txt" --trg "$tmp/trg.txt" --threads 1 \
  >"$tmp/joint.sc" 2>"$tmp/err"; then
  grep -Eq '^-[0-9.]+(e[-+][0-9]+)?$' "$tmp/joint.sc" && [[ $(wc -l <"$tmp/joint.sc") -eq 2 ]] && ok ||
    bad "score (vocab.model): $(cat "$tmp/joint.sc")"
else
  bad "score with vocab.model failed: $(cat "$tmp/err")"
fi

# One model per side, and the names tfm train wrote before (.spm): the same translations.
for names in "vocab.src.model vocab.trg.model" "vocab.spm" "vocab.src.spm vocab.trg.spm"; do
  d="$tmp/layout_${names// /_}"
  layout "$d" $names
  if "$tfm" translate --model "$d" --threads 1 <"$tmp/src.txt" >"$d.out" 2>"$tmp/err"; then
    cmp -s "$d.out" "$tmp/joint.out" && ok || bad "$names: translations differ from vocab.model's"
  else
    bad "translate with $names failed: $(cat "$tmp/err")"
  fi
  "$tfm" score --model "$d" --src "$tmp/src.txt" --trg "$tmp/trg.txt" --threads 1 >"$d.sc" 2>/dev/null
  cmp -s "$d.sc" "$tmp/joint.sc" && ok || bad "$names: scores differ from vocab.model's"
done

# Errors: half of a per-side pair, and no vocabulary at all (--ids still works there).
layout "$tmp/half" vocab.src.model
expect_error "has $tmp/half/vocab.src.model but no vocab.trg.model" translate --model "$tmp/half"
layout "$tmp/none"
expect_error "no SentencePiece vocabulary in $tmp/none (vocab.model, or vocab.src.model + vocab.trg.model)" \
  translate --model "$tmp/none"
expect_error "(vocab.model, or vocab.src.model + vocab.trg.model); use --ids" \
  score --model "$tmp/none" --src "$tmp/src.txt" --trg "$tmp/trg.txt"
printf '5 6\n' | "$tfm" translate --model "$tmp/none" --ids --threads 1 >/dev/null 2>&1 && ok ||
  bad "translate --ids needs no vocabulary"

# A resumed run checks the vocabulary against the legacy name too.
train "$tmp/old" --vocab "$tmp/voc.model" >/dev/null 2>&1
mv "$tmp/old/vocab.model" "$tmp/old/vocab.spm"
"$tfm" vocab --input "$tmp/train.de" "$tmp/train.en" --size 36 --out "$tmp/other" >/dev/null 2>&1
expect_error "vocab.spm differs from" train --model "$tmp/old" --train-src "$tmp/train.de" \
  --train-trg "$tmp/train.en" --vocab "$tmp/other.model" --preset tiny --max-updates 4 --threads 1

# tfm average copies vocab.model along.
"$tfm" average --out "$tmp/avg" "$tmp/m" "$tmp/m" >/dev/null 2>"$tmp/err" || bad "average failed: $(cat "$tmp/err")"
cmp -s "$tmp/avg/vocab.model" "$tmp/voc.model" && ok || bad "average: vocab.model not copied"

# Training honours the source framing of --model-config: source_bos on, source_eos off gives
# the same initial weights (same seed) other sources, so another first loss, and the framing is
# saved in the model's config.
sed -e 's/"source_bos": false/"source_bos": true/' -e 's/"source_eos": true/"source_eos": false/' \
  "$tmp/m/config.json" >"$tmp/framed.json"
grep -q '"source_bos": true' "$tmp/framed.json" && ok || bad "config.json lacks source_bos"
train "$tmp/f" --vocab "$tmp/voc.model" --model-config "$tmp/framed.json" >/dev/null 2>"$tmp/err" ||
  bad "train with a framed config failed: $(cat "$tmp/err")"
grep -q '"source_bos": true' "$tmp/f/config.json" && grep -q '"source_eos": false' "$tmp/f/config.json" &&
  ok || bad "trained model's config lost the framing: $(grep source_ "$tmp/f/config.json")"
train "$tmp/u" --vocab "$tmp/voc.model" --model-config "$tmp/m/config.json" >/dev/null 2>&1
a=$(first_loss "$tmp/u") b=$(first_loss "$tmp/f")
[[ -n "$a" && -n "$b" && "$a" != "$b" ]] && ok || bad "first loss with and without the framing: '$a' '$b'"
[[ "$a" == "$(first_loss "$tmp/m")" ]] && ok || bad "--model-config of the same preset changed the loss"

finish model_dir_cli
