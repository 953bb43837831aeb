#!/usr/bin/env bash
# tfm plot: the curves drawn from train.log are train.log's values (check_plot.py maps each
# logged value through the axes the SVG declares and finds it drawn there), for one run with a
# stretch lost and made again (the lost run's lines past its checkpoint not drawn) and for two
# runs overlaid; and clear errors.
# Usage: plot_cli_test.sh TFM_BINARY
set -u
tfm=$1
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

toy_corpus 5 160
head -n 20 "$tmp/train.de" >"$tmp/valid.de"
head -n 20 "$tmp/train.en" >"$tmp/valid.en"
"$tfm" vocab --input "$tmp/train.de" "$tmp/train.en" --size 40 --out "$tmp/voc" >/dev/null ||
  bad "tfm vocab failed"
train() {
  local dir=$1
  shift
  "$tfm" train --model "$dir" --train-src "$tmp/train.de" --train-trg "$tmp/train.en" \
    --valid-src "$tmp/valid.de" --valid-trg "$tmp/valid.en" --valid-bleu --valid-every 3 \
    --vocab "$tmp/voc.model" --preset tiny --batch-tokens 300 --lr 3e-3 --warmup 10 \
    --threads 1 --save-every 4 --log-every 2 --keep-last 0 "$@"
}
train "$tmp/a" --max-updates 4 --seed 3 >/dev/null 2>&1 || bad "run a to 4 failed"
# Updates 5-8 logged, then lost back to the checkpoint at 4 (as by a kill), then made again.
cp -r "$tmp/a/train_state" "$tmp/state4"
train "$tmp/a" --max-updates 8 --seed 3 >/dev/null 2>&1 || bad "run a to 8 failed"
rm -rf "$tmp/a/train_state" && cp -r "$tmp/state4" "$tmp/a/train_state"
train "$tmp/a" --max-updates 14 --seed 3 >/dev/null 2>&1 || bad "run a resumed failed"
grep -q "resuming from update 4" "$tmp/a/train.log" && ok || bad "run a did not resume from 4"
[[ $(grep -c "^epoch [0-9]* | update 6 " "$tmp/a/train.log") -eq 2 ]] && ok ||
  bad "run a: update 6 not logged twice (lost, then made again)"
train "$tmp/b" --max-updates 10 --seed 4 --lr 1e-3 >/dev/null 2>&1 || bad "run b failed"

if "$tfm" plot "$tmp/a" -o "$tmp/a.svg" >"$tmp/out" 2>"$tmp/err"; then
  grep -q "^wrote $tmp/a.svg: 7 log windows and 6 validations of 1 run(s)$" "$tmp/out" && ok ||
    bad "plot's summary: $(cat "$tmp/out")"
  python3 "$here/check_plot.py" "$tmp/a.svg" "$tmp/a=$tmp/a/train.log" >"$tmp/check" 2>&1 && ok ||
    bad "one run: $(cat "$tmp/check")"
  cat "$tmp/check"
else
  bad "plot failed: $(cat "$tmp/err")"
fi
# Two runs overlaid, the log file named directly, to stdout; a curve for each tag.
if "$tfm" plot "$tmp/a/train.log" "$tmp/b" --title "a and b" -o - >"$tmp/ab.svg" 2>"$tmp/err"; then
  python3 "$here/check_plot.py" "$tmp/ab.svg" "$tmp/a/train.log=$tmp/a/train.log" \
    "$tmp/b=$tmp/b/train.log" >"$tmp/check" 2>&1 && ok || bad "two runs: $(cat "$tmp/check")"
  cat "$tmp/check"
  [[ $(grep -c 'class="panel"' "$tmp/ab.svg") -eq 7 ]] && ok || bad "not 7 panels"
  grep -q '>a and b</text>' "$tmp/ab.svg" && ok || bad "no title"
else
  bad "plot of two runs failed: $(cat "$tmp/err")"
fi

# Errors.
mkdir -p "$tmp/empty"
expect_error "plot: no train.log in $tmp/empty" plot "$tmp/empty" -o "$tmp/x.svg"
expect_error "holds no training log lines" plot "$tmp/train.de" -o "$tmp/x.svg"
expect_error "plot: $tmp/nowhere does not exist" plot "$tmp/nowhere"
[[ ! -e $tmp/x.svg ]] && ok || bad "a failed plot left a file"

finish plot_cli
