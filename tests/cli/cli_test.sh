#!/usr/bin/env bash
# End-to-end checks of the tfm command line: outputs, exit codes, stderr vs stdout.
# Usage: cli_test.sh TFM_BINARY FIXTURES_DIR
set -u
tfm=$1
fx=$2
source "$(dirname "$0")/lib.sh"

# info: the config and parameter counts.
if "$tfm" info --model "$fx/seed004" >"$tmp/info" 2>"$tmp/err"; then
  grep -q '"norm": "post"' "$tmp/info" && grep -q '"embed_norm": true' "$tmp/info" &&
    grep -Eq '^parameters.total [1-9][0-9]*$' "$tmp/info" && ok || bad "info output: $(cat "$tmp/info")"
else
  bad "info failed: $(cat "$tmp/err")"
fi

# score --ids on converted PyTorch checkpoints: the numbers PyTorch computed. seed004 twice: its
# layout's source framing [BOS] x [EOS], and the same checkpoint converted with --no-source-eos.
for layout in seed004 seed004-no-source-eos seed000 torch-nn; do
  d=$fx/convert/$layout
  if "$tfm" score --model "$d" --src "$d/src.ids" --trg "$d/trg.ids" --ids >"$tmp/s" 2>"$tmp/err"; then
    if paste "$tmp/s" "$d/expected_scores.txt" | awk '
        { d = $1 - $2; if (d < 0) d = -d; s = ($2 < 0 ? -$2 : $2); if (s < 1) s = 1;
          if (d > 1e-5 * s) { print "line " NR ": " $1 " vs " $2; bad = 1 } n++ }
        END { exit bad || n == 0 }'; then ok; else bad "score $layout differs from PyTorch"; fi
    [[ $(wc -l <"$tmp/s") -eq $(wc -l <"$d/expected_scores.txt") ]] && ok || bad "score $layout line count"
  else
    bad "score $layout failed: $(cat "$tmp/err")"
  fi
done

# Errors: non-zero exit, one clear message on stderr, nothing on stdout.
d=$fx/convert/seed004
expect_error "does not exist" info --model "$tmp/nowhere"
printf '1 2 999999\n3\n3\n3\n3\n' >"$tmp/big.ids"
expect_error "big.ids:1: token id 999999 is outside the vocabulary" \
  score --model "$d" --src "$tmp/big.ids" --trg "$d/trg.ids" --ids
printf '3 x 4\n' >"$tmp/word.ids"
expect_error '"x" is not a token id' score --model "$d" --src "$tmp/word.ids" --trg "$tmp/word.ids" --ids
head -n 1 "$d/src.ids" >"$tmp/one.ids"
expect_error "has 1 lines but" score --model "$d" --src "$tmp/one.ids" --trg "$d/trg.ids" --ids
expect_error "no SentencePiece vocabulary" score --model "$d" --src "$d/src.ids" --trg "$d/trg.ids"
mkdir -p "$tmp/broken" && cp "$d/config.json" "$tmp/broken/" && head -c 100 "$d/model.safetensors" >"$tmp/broken/model.safetensors"
expect_error "model.safetensors" info --model "$tmp/broken"
expect_error "required" score --model "$d"
if "$tfm" --bogus-flag >/dev/null 2>&1; then bad "unknown flag accepted"; else ok; fi

finish
