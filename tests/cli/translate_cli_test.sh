#!/usr/bin/env bash
# End-to-end checks of `tfm translate --ids`: input order, empty lines, n-best format, agreement
# with `tfm score`, truncation warnings and errors.
# Usage: translate_cli_test.sh TFM_BINARY FIXTURES_DIR
set -u
tfm=$1
d=$2/convert/seed004
source "$(dirname "$0")/lib.sh"

# Input: the fixture sources with an empty line in the middle (7 lines, different lengths).
{ head -n 3 "$d/src.ids"; echo; tail -n +4 "$d/src.ids"; echo "5 6"; } >"$tmp/in"
n_in=$(wc -l <"$tmp/in")

# Order: batched + sorted by length == each line on its own.
if "$tfm" translate --model "$d" --ids --batch-size 2 <"$tmp/in" >"$tmp/out" 2>"$tmp/err"; then
  [[ $(wc -l <"$tmp/out") -eq $n_in ]] && ok || bad "line count $(wc -l <"$tmp/out") != $n_in"
  : >"$tmp/single"
  while IFS= read -r line; do
    printf '%s\n' "$line" | "$tfm" translate --model "$d" --ids >>"$tmp/single" 2>>"$tmp/err"
  done <"$tmp/in"
  cmp -s "$tmp/out" "$tmp/single" && ok || bad "batched output differs from one line at a time"
  [[ -z $(sed -n 4p "$tmp/out") ]] && ok || bad "empty input line gave '$(sed -n 4p "$tmp/out")'"
  [[ -n $(sed -n 3p "$tmp/out") && -n $(sed -n 5p "$tmp/out") ]] && ok || bad "non-empty lines empty"
else
  bad "translate failed: $(cat "$tmp/err")"
fi

# --input/--output files give the same as stdin/stdout.
if "$tfm" translate --model "$d" --ids --input "$tmp/in" --output "$tmp/out2" 2>"$tmp/err"; then
  cmp -s "$tmp/out" "$tmp/out2" && ok || bad "--input/--output differ from stdin/stdout"
else
  bad "translate --input/--output failed: $(cat "$tmp/err")"
fi

# --profile: the same output, and a phase table on stderr whose counts are the output's (sentences
# = input lines, tokens = ids written), phases and shares as numbers.
if "$tfm" translate --model "$d" --ids --beam-size 2 --profile <"$tmp/in" >"$tmp/pout" 2>"$tmp/perr"; then
  "$tfm" translate --model "$d" --ids --beam-size 2 <"$tmp/in" >"$tmp/pref" 2>/dev/null
  cmp -s "$tmp/pout" "$tmp/pref" && ok || bad "--profile changed the output"
  words=$(wc -w <"$tmp/pout")
  grep -q "^$n_in sentences, $words tokens generated" "$tmp/perr" && ok ||
    bad "--profile counts: $(grep sentences "$tmp/perr") (want $n_in sentences, $words tokens)"
  for phase in "encoder" "decoder: GEMMs" "vocabulary projection" "search:" "command:"; do
    grep -q "^$phase" "$tmp/perr" && ok || bad "--profile lacks '$phase': $(cat "$tmp/perr")"
  done
else
  bad "translate --profile failed: $(cat "$tmp/perr")"
fi

# n-best: 'index ||| ids ||| score', 3 per non-empty line, indices in input order, best first.
if "$tfm" translate --model "$d" --ids --beam-size 4 --n-best 3 <"$tmp/in" >"$tmp/nb" 2>"$tmp/err"; then
  grep -Evq '^[0-9]+ \|\|\| [0-9 ]* \|\|\| -?[0-9]+\.[0-9]+$' "$tmp/nb" &&
    bad "n-best format: $(grep -Ev '^[0-9]+ \|\|\| [0-9 ]* \|\|\| -?[0-9]+\.[0-9]+$' "$tmp/nb" | head -1)" || ok
  [[ $(wc -l <"$tmp/nb") -eq $(((n_in - 1) * 3)) ]] && ok || bad "n-best count $(wc -l <"$tmp/nb")"
  awk -F' \\|\\|\\| ' '
      { if ($1 < prev || ($1 == prev && $3 > score + 1e-9)) bad = 1; prev = $1; score = $3 }
      END { exit bad }' "$tmp/nb" && ok || bad "n-best not in index order / best first"
  cut -d'|' -f1 "$tmp/nb" | sort -un | tr -d ' ' | tr '\n' ' ' | grep -q '^0 1 2 4 5 6 ' && ok ||
    bad "n-best indices: $(cut -d'|' -f1 "$tmp/nb" | sort -un | tr '\n' ' ')"
  # The 1-best hypotheses' scores are the teacher-forced log-probabilities (length penalty 0).
  awk -F' \\|\\|\\| ' '!seen[$1]++ { print $1 " " $3 > "'"$tmp"'/best_score"; print $2 > "'"$tmp"'/best_trg" }' "$tmp/nb"
  awk '{ print $1 + 1 }' "$tmp/best_score" | while read -r n; do sed -n "${n}p" "$tmp/in"; done >"$tmp/best_src"
  if "$tfm" score --model "$d" --src "$tmp/best_src" --trg "$tmp/best_trg" --ids >"$tmp/sc" 2>"$tmp/err"; then
    paste -d' ' "$tmp/best_score" "$tmp/sc" | awk '
        { d = $2 - $3; if (d < 0) d = -d; if (d > 1e-4 * (1 + ($3 < 0 ? -$3 : $3))) bad = 1; n++ }
        END { exit bad || n == 0 }' && ok || bad "n-best scores differ from tfm score"
  else
    bad "score failed: $(cat "$tmp/err")"
  fi
else
  bad "translate --n-best failed: $(cat "$tmp/err")"
fi

# Streaming: more lines than one window (--batch-size x 8) give the same lines and n-best indices
# as a single window.
for _ in 1 2 3; do cat "$tmp/in"; done >"$tmp/in3"
w1=$("$tfm" translate --model "$d" --ids --batch-size 1 <"$tmp/in3" 2>&1)
w32=$("$tfm" translate --model "$d" --ids --batch-size 32 <"$tmp/in3" 2>&1)
[[ -n $w1 && $w1 == "$w32" && $(printf '%s\n' "$w1" | wc -l) -eq $((3 * n_in)) ]] && ok ||
  bad "windowed output differs from one window"
n1=$("$tfm" translate --model "$d" --ids --beam-size 2 --n-best 2 --batch-size 1 <"$tmp/in3" 2>&1)
n32=$("$tfm" translate --model "$d" --ids --beam-size 2 --n-best 2 --batch-size 32 <"$tmp/in3" 2>&1)
# Scores may differ in the last printed digit: batches of other sizes pad differently.
strip_scores() { sed 's/ ||| [^|]*$//'; }
[[ -n $n1 && $(strip_scores <<<"$n1") == "$(strip_scores <<<"$n32")" ]] && ok ||
  bad "windowed n-best differs from one window"

# Output arrives before EOF: a coprocess gets each line's translation while its input stays open.
first=$(head -n 1 "$d/src.ids")
second=$(sed -n 2p "$d/src.ids")
want1=$(printf '%s\n' "$first" | "$tfm" translate --model "$d" --ids 2>/dev/null)
want2=$(printf '%s\n' "$second" | "$tfm" translate --model "$d" --ids 2>/dev/null)
coproc TR { "$tfm" translate --model "$d" --ids 2>"$tmp/co_err"; }
tr_pid=$TR_PID  # bash unsets TR_PID once the coprocess ends
printf '%s\n' "$first" >&"${TR[1]}"
if IFS= read -r -t 30 got <&"${TR[0]}"; then
  [[ -n $want1 && $got == "$want1" ]] && ok || bad "streamed line 1: '$got' != '$want1'"
  printf '%s\n' "$second" >&"${TR[1]}"
  if IFS= read -r -t 30 got <&"${TR[0]}"; then
    [[ -n $want2 && $got == "$want2" ]] && ok || bad "streamed line 2: '$got' != '$want2'"
  else
    bad "no translation of line 2 before EOF"
  fi
else
  bad "no translation of line 1 before EOF: $(cat "$tmp/co_err")"
fi
eval "exec ${TR[1]}>&-"
wait "$tr_pid" && ok || bad "streaming translate failed: $(cat "$tmp/co_err")"

# Thread count: identical output (beam 4).
t1=$("$tfm" translate --model "$d" --ids --beam-size 4 --threads 1 <"$tmp/in" 2>/dev/null)
t2=$("$tfm" translate --model "$d" --ids --beam-size 4 --threads 2 <"$tmp/in" 2>/dev/null)
[[ -n $t1 && $t1 == "$t2" ]] && ok || bad "--threads 1 and 2 differ"

# Sampling: reproducible for a seed.
a=$("$tfm" translate --model "$d" --ids --sampling-topk 5 --seed 7 <"$tmp/in" 2>/dev/null)
b=$("$tfm" translate --model "$d" --ids --sampling-topk 5 --seed 7 --batch-size 1 <"$tmp/in" 2>/dev/null)
[[ -n $a && $a == "$b" ]] && ok || bad "sampling not reproducible across batch sizes"

# Too long: truncated with a warning on stderr, still one output line.
seq 3 70 | awk '{ printf "%d ", 3 + $1 % 20 } END { print "" }' >"$tmp/long"
if "$tfm" translate --model "$d" --ids <"$tmp/long" >"$tmp/out" 2>"$tmp/err"; then
  grep -q 'truncated' "$tmp/err" && ok || bad "no truncation warning: $(cat "$tmp/err")"
  [[ $(wc -l <"$tmp/out") -eq 1 ]] && ok || bad "long line output count"
else
  bad "long input crashed: $(cat "$tmp/err")"
fi

# Errors: non-zero exit, a clear message on stderr, nothing on stdout.
expect_error_input "token id 99 is outside the vocabulary" "3 4
5 99" translate --model "$d" --ids
expect_error_input '"x" is not a token id' "3 x" translate --model "$d" --ids
expect_error_input "exceeds --beam-size" "3" translate --model "$d" --ids --beam-size 2 --n-best 3
expect_error_input "needs --beam-size 1" "3" translate --model "$d" --ids --beam-size 2 --sampling-topk 3

# tfm generate: a decoder-only model continues each line (here ids); each output line starts with
# its prompt, an empty line starts from BOS, and the n-best scores are tfm score's log-probs of the
# whole lines (length penalty 0).
lm=$2/decoder_only_odd
printf '3 4\n\n7 8 9\n5\n' >"$tmp/prompts"
if "$tfm" generate --model "$lm" --ids --max-length 12 <"$tmp/prompts" >"$tmp/gen" 2>"$tmp/err"; then
  [[ $(wc -l <"$tmp/gen") -eq 4 ]] && ok || bad "generate: $(wc -l <"$tmp/gen") lines for 4 prompts"
  paste -d'|' "$tmp/prompts" "$tmp/gen" | awk -F'|' '
    { n = split($1, p, " "); m = split($2, g, " ")
      if (m + 1 > 12) bad = 1
      longer += m > n
      for (i = 1; i <= n; ++i) if (p[i] != g[i]) bad = 1 }
    END { exit bad || longer < 3 }' && ok ||
    bad "generate: lines are not prompt + continuation: $(cat "$tmp/gen")"
  "$tfm" generate --model "$lm" --ids --max-length 12 --batch-size 1 <"$tmp/prompts" >"$tmp/gen1" 2>/dev/null
  cmp -s "$tmp/gen" "$tmp/gen1" && ok || bad "generate: --batch-size 1 differs"
else
  bad "generate failed: $(cat "$tmp/err")"
fi
if "$tfm" generate --model "$lm" --ids --max-length 12 --beam-size 3 --n-best 2 <"$tmp/prompts" >"$tmp/gnb" 2>"$tmp/err"; then
  [[ $(wc -l <"$tmp/gnb") -eq 8 ]] && ok || bad "generate --n-best 2: $(wc -l <"$tmp/gnb") lines"
  awk -F' \\|\\|\\| ' '{ print $2 }' "$tmp/gnb" >"$tmp/gnb_trg"
  if "$tfm" score --model "$lm" --trg "$tmp/gnb_trg" --ids >"$tmp/gsc" 2>"$tmp/err"; then
    awk -F' \\|\\|\\| ' '{ print $3 }' "$tmp/gnb" | paste -d' ' - "$tmp/gsc" | awk '
      { d = $1 - $2; if (d < 0) d = -d; if (d > 1e-4 * (1 + ($2 < 0 ? -$2 : $2))) bad = 1; ++n }
      END { exit bad || n != 8 }' && ok || bad "generate n-best scores differ from tfm score"
  else
    bad "score of generated lines failed: $(cat "$tmp/err")"
  fi
else
  bad "generate --n-best failed: $(cat "$tmp/err")"
fi
expect_error_input "is an encoder-decoder model; tfm translate" "3" generate --model "$d" --ids
expect_error_input "is a decoder-only model; tfm generate" "3" translate --model "$lm" --ids
expect_error_input "<stdin>:2: token id 2 is the model's EOS" "3
4 2" generate --model "$lm" --ids

finish "translate cli"
