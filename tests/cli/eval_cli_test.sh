#!/usr/bin/env bash
# End-to-end checks of `tfm eval`: output lines, --metrics, multiple references, and errors
# (non-zero exit, message on stderr, nothing on stdout).
# Usage: eval_cli_test.sh TFM_BINARY
set -u
tfm=$1
source "$(dirname "$0")/lib.sh"

printf 'the cat sat on the mat\nHello, world!\n' >"$tmp/ref"
cp "$tmp/ref" "$tmp/hyp_same"
# Hand-derived (see tests/eval/test_bleu.cpp BrevityPenalty): all precisions 100,
# BP = exp(1 - 6/5) = 0.819, BLEU = 81.87.
printf 'the cat sat on the mat\n' >"$tmp/ref_bp"
printf 'the cat sat on the\n' >"$tmp/hyp_bp"

# Perfect match: BLEU 100 and chrF 100, then one signature line per metric.
if "$tfm" eval --ref "$tmp/ref" --hyp "$tmp/hyp_same" >"$tmp/out" 2>"$tmp/err"; then
  expected='BLEU = 100.00 100.0/100.0/100.0/100.0 (BP = 1.000 ratio = 1.000 hyp_len = 10 ref_len = 10)
chrF2 = 100.00
BLEU signature: nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.x-compatible (tfm)
chrF2 signature: nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.x-compatible (tfm)'
  [[ $(cat "$tmp/out") == "$expected" ]] && ok || bad "perfect match output: $(cat "$tmp/out")"
  [[ ! -s "$tmp/err" ]] && ok || bad "perfect match wrote to stderr: $(cat "$tmp/err")"
else
  bad "eval failed: $(cat "$tmp/err")"
fi

# Brevity penalty, BLEU only.
if "$tfm" eval --ref "$tmp/ref_bp" --hyp "$tmp/hyp_bp" --metrics bleu >"$tmp/out" 2>"$tmp/err"; then
  expected='BLEU = 81.87 100.0/100.0/100.0/100.0 (BP = 0.819 ratio = 0.833 hyp_len = 5 ref_len = 6)
BLEU signature: nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.x-compatible (tfm)'
  [[ $(cat "$tmp/out") == "$expected" ]] && ok || bad "--metrics bleu output: $(cat "$tmp/out")"
else
  bad "eval --metrics bleu failed: $(cat "$tmp/err")"
fi

# chrF only; a file without a final newline still has its last line.
printf 'ab' >"$tmp/hyp_ab"
printf 'abc\n' >"$tmp/ref_abc"
if "$tfm" eval --ref "$tmp/ref_abc" --hyp "$tmp/hyp_ab" --metrics chrf >"$tmp/out" 2>"$tmp/err"; then
  # Hand-derived in tests/eval/test_chrf.cpp: 7/11 = 63.64%.
  [[ $(head -n 1 "$tmp/out") == 'chrF2 = 63.64' && $(wc -l <"$tmp/out") -eq 2 ]] && ok ||
    bad "--metrics chrf output: $(cat "$tmp/out")"
else
  bad "eval --metrics chrf failed: $(cat "$tmp/err")"
fi

# Two reference files: the signature says nrefs:2; the best reference gives 100.
printf 'something else entirely\nxyz\n' >"$tmp/ref2"
if "$tfm" eval --ref "$tmp/ref2" --ref "$tmp/ref" --hyp "$tmp/hyp_same" >"$tmp/out" 2>"$tmp/err"; then
  grep -q '^BLEU = 100.00 ' "$tmp/out" && grep -q '^chrF2 = 100.00$' "$tmp/out" &&
    grep -q '^BLEU signature: nrefs:2|' "$tmp/out" && ok || bad "two references: $(cat "$tmp/out")"
else
  bad "eval with two references failed: $(cat "$tmp/err")"
fi

# CRLF line ends: the '\r' is whitespace to both metrics, as in sacreBLEU (which rstrips).
sed 's/$/\r/' "$tmp/ref" >"$tmp/ref_crlf"
"$tfm" eval --ref "$tmp/ref_crlf" --hyp "$tmp/hyp_same" >"$tmp/out" 2>"$tmp/err" &&
  grep -q '^BLEU = 100.00 ' "$tmp/out" && grep -q '^chrF2 = 100.00$' "$tmp/out" &&
  ok || bad "CRLF reference: $(cat "$tmp/out" "$tmp/err")"

# Invalid UTF-8 is not an error.
printf '\xff\xfe abc\n' >"$tmp/bin"
"$tfm" eval --ref "$tmp/bin" --hyp "$tmp/bin" >"$tmp/out" 2>"$tmp/err" && grep -q '^chrF2 = 100.00$' "$tmp/out" &&
  ok || bad "invalid UTF-8: $(cat "$tmp/out" "$tmp/err")"

printf 'one line\n' >"$tmp/one"
# Mismatched line counts name both files and both counts.
expect_error "$tmp/one has 1 lines but $tmp/hyp_same has 2" eval --ref "$tmp/one" --hyp "$tmp/hyp_same"
expect_error "$tmp/ref has 2 lines but $tmp/one has 1" eval --ref "$tmp/ref" --hyp "$tmp/one"
printf 'a\n\n' >"$tmp/ref_empty"
expect_error "reference line 2 is empty" eval --ref "$tmp/ref_empty" --hyp "$tmp/hyp_same"
expect_error "cannot open" eval --ref "$tmp/nowhere" --hyp "$tmp/hyp_same"
expect_error "bleu" eval --ref "$tmp/ref" --hyp "$tmp/hyp_same" --metrics bleu,ter
expect_error "required" eval --hyp "$tmp/hyp_same"

finish
