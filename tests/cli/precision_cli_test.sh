#!/usr/bin/env bash
# End-to-end checks of `--precision` in `tfm score` and `tfm translate`: bad values are errors,
# bf16/int8 scores stay close to fp32 (and differ from it: the switch took effect), and translate
# and score agree with each other at the same precision.
# Usage: precision_cli_test.sh TFM_BINARY FIXTURES_DIR
set -u
tfm=$1
d=$2/convert/seed004
source "$(dirname "$0")/lib.sh"

expect_error "unknown compute type 'fp16' (expected fp32, bf16, int8 or auto)" \
  score --model "$d" --src "$d/src.ids" --trg "$d/trg.ids" --ids --precision fp16
expect_error_input "unknown compute type 'int4'" "5 6" translate --model "$d" --ids --precision int4

"$tfm" score --model "$d" --src "$d/src.ids" --trg "$d/trg.ids" --ids >"$tmp/fp32" 2>"$tmp/err" ||
  bad "score failed: $(cat "$tmp/err")"
"$tfm" score --model "$d" --src "$d/src.ids" --trg "$d/trg.ids" --ids --precision fp32 \
  >"$tmp/fp32b" 2>>"$tmp/err"
cmp -s "$tmp/fp32" "$tmp/fp32b" && ok || bad "--precision fp32 differs from the default"

for p in bf16 int8; do
  if "$tfm" score --model "$d" --src "$d/src.ids" --trg "$d/trg.ids" --ids --precision $p \
    >"$tmp/$p" 2>"$tmp/err"; then
    # A sentence's log-probability sums ~10 tokens' log-softmax; each moves by ~1e-3 here.
    paste -d' ' "$tmp/fp32" "$tmp/$p" | awk '
        { d = $1 - $2; if (d < 0) d = -d; if (d > 2e-3 * (1 + ($1 < 0 ? -$1 : $1))) bad = 1
          if (d > 0) moved = 1; n++ }
        END { exit bad || !moved || n != 5 }' && ok ||
      bad "$p scores too far from fp32 (or equal to it): $(paste -d' ' "$tmp/fp32" "$tmp/$p" | tr '\n' ',')"
  else
    bad "score --precision $p failed: $(cat "$tmp/err")"
  fi
  # translate's n-best scores are the teacher-forced log-probabilities at the same precision.
  if "$tfm" translate --model "$d" --ids --beam-size 2 --n-best 1 --precision $p \
    <"$d/src.ids" >"$tmp/nb" 2>"$tmp/err"; then
    awk -F' \\|\\|\\| ' '{ print $2 > "'"$tmp"'/hyp"; print $3 > "'"$tmp"'/hyp_score" }' "$tmp/nb"
    "$tfm" score --model "$d" --src "$d/src.ids" --trg "$tmp/hyp" --ids --precision $p \
      >"$tmp/rescored" 2>"$tmp/err" || bad "rescoring failed: $(cat "$tmp/err")"
    paste -d' ' "$tmp/hyp_score" "$tmp/rescored" | awk '
        { d = $1 - $2; if (d < 0) d = -d; if (d > 1e-4 * (1 + ($2 < 0 ? -$2 : $2))) bad = 1; n++ }
        END { exit bad || n != 5 }' && ok ||
      bad "$p: translate scores differ from score: $(paste -d' ' "$tmp/hyp_score" "$tmp/rescored" | tr '\n' ',')"
  else
    bad "translate --precision $p failed: $(cat "$tmp/err")"
  fi
done

# The CPU level (docs/architecture.md, "CPU levels"): --version reports it, TFM_CPU_ISA and
# ONEDNN_MAX_CPU_ISA lower it, never raise it, and a bad name is an error naming the choices.
level=$(env -u TFM_CPU_ISA -u ONEDNN_MAX_CPU_ISA "$tfm" --version | sed -n 's/^cpu: //p')
[[ "$level" =~ ^(avx2|avx512|avx512_vnni|avx512_bf16)$ ]] && ok || bad "--version level: '$level'"
v=$(TFM_CPU_ISA=avx2 "$tfm" --version)
[[ "$v" == *"cpu: avx2"* ]] && ok || bad "TFM_CPU_ISA=avx2: $v"
v=$(env -u TFM_CPU_ISA ONEDNN_MAX_CPU_ISA=AVX2 "$tfm" --version)
[[ "$v" == *"cpu: avx2"* ]] && ok || bad "ONEDNN_MAX_CPU_ISA=AVX2 does not lower tfm: $v"
if [[ "$level" != avx2 ]]; then
  [[ "$v" == *"(detected $level; ONEDNN_MAX_CPU_ISA)"* ]] && ok || bad "lowered level not said: $v"
fi
TFM_CPU_ISA=sse2 "$tfm" --version >/dev/null 2>"$tmp/err" && bad "TFM_CPU_ISA=sse2 accepted" ||
  { grep -qF "unknown CPU level 'sse2' (choose avx2, avx512, avx512_vnni or avx512_bf16)" "$tmp/err" &&
    ok || bad "sse2: $(cat "$tmp/err")"; }
if [[ "$level" != avx512_bf16 ]]; then
  TFM_CPU_ISA=avx512_bf16 "$tfm" --version >/dev/null 2>"$tmp/err" && bad "a level above the CPU's accepted" ||
    { grep -qF "asks for more than this CPU has ($level)" "$tmp/err" && ok ||
      bad "raising the level: $(cat "$tmp/err")"; }
fi

finish precision_cli
