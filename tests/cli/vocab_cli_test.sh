#!/usr/bin/env bash
# End-to-end checks of `tfm vocab`: the files it writes, the fixed special ids, joint vocabularies,
# and errors (non-zero exit, message on stderr, nothing on stdout).
# Usage: vocab_cli_test.sh TFM_BINARY
set -u
tfm=$1
source "$(dirname "$0")/lib.sh"

# A tiny corpus of words built from a few syllables (deterministic: awk's srand with a seed).
make_corpus() {  # make_corpus FILE SEED syllables...
  local out=$1 seed=$2
  shift 2
  awk -v seed="$seed" -v syl="$*" 'BEGIN {
    srand(seed); n = split(syl, s, " ");
    for (i = 0; i < 300; i++) {
      line = ""; nw = 3 + int(rand() * 6);
      for (w = 0; w < nw; w++) {
        word = ""; np = 1 + int(rand() * 3);
        for (p = 0; p < np; p++) word = word s[1 + int(rand() * n)];
        line = line (w ? " " : "") word
      }
      print line
    } }' >"$out"
}
make_corpus "$tmp/de.txt" 1 haus ber ge ung schaft ein der die über grün stra ße kind er lich wald
make_corpus "$tmp/en.txt" 2 house the ing tion over green street child ren ly forest s a play ed

# A unigram vocabulary: both files, the requested size, the fixed specials first.
if "$tfm" vocab --input "$tmp/de.txt" --size 120 --out "$tmp/out/de" >"$tmp/log" 2>"$tmp/err"; then
  [[ -s "$tmp/out/de.model" && -s "$tmp/out/de.vocab" ]] && ok || bad "no de.model/de.vocab"
  [[ $(wc -l <"$tmp/out/de.vocab") -eq 120 ]] && ok || bad "de.vocab has $(wc -l <"$tmp/out/de.vocab") lines, want 120"
  [[ $(head -n 4 "$tmp/out/de.vocab" | cut -f1 | tr '\n' ' ') == "<pad> <s> </s> <unk> " ]] &&
    ok || bad "special pieces: $(head -n 4 "$tmp/out/de.vocab" | cut -f1 | tr '\n' ' ')"
  grep -q "from 300 sentences" "$tmp/log" && ok || bad "summary: $(cat "$tmp/log")"
  [[ ! -s "$tmp/err" ]] && ok || bad "vocab wrote to stderr: $(cat "$tmp/err")"
else
  bad "vocab failed: $(cat "$tmp/err")"
fi

# A joint BPE vocabulary over two inputs, with every option given.
if "$tfm" vocab --input "$tmp/de.txt" "$tmp/en.txt" --size 200 --out "$tmp/joint" \
  --model-type bpe --character-coverage 1.0 --max-sentences 500 --seed 3 >"$tmp/log" 2>"$tmp/err"; then
  [[ -s "$tmp/joint.model" && $(wc -l <"$tmp/joint.vocab") -eq 200 ]] && ok || bad "joint vocab files"
  grep -q "from 600 sentences (a sample of 500)" "$tmp/log" && ok || bad "joint summary: $(cat "$tmp/log")"
  grep -q $'^▁house' "$tmp/joint.vocab" && grep -q $'^▁haus' "$tmp/joint.vocab" && ok ||
    bad "joint vocab lacks pieces of one input"
else
  bad "joint vocab failed: $(cat "$tmp/err")"
fi

expect_error "nowhere.txt does not exist" vocab --input "$tmp/nowhere.txt" --size 100 --out "$tmp/x"
expect_error "SentencePiece training failed" vocab --input "$tmp/de.txt" --size 50000 --out "$tmp/x"
expect_error "--size 50000" vocab --input "$tmp/de.txt" --size 50000 --out "$tmp/x"
expect_error "too small" vocab --input "$tmp/de.txt" --size 2 --out "$tmp/x"
expect_error "model-type" vocab --input "$tmp/de.txt" --size 100 --out "$tmp/x" --model-type word
expect_error "required" vocab --input "$tmp/de.txt" --out "$tmp/x"
[[ ! -e "$tmp/x.model" ]] && ok || bad "a failed run left x.model behind"

finish
