#!/usr/bin/env bash
# tfm train --tensorboard DIR: a short run, a run whose last updates are lost (back to its
# checkpoint) and the run that resumes it write one event file each, and a reader finds every scalar of
# train.log at every logged update, once (the lost run's updates past its checkpoint dropped
# by the resumed run's SessionLog START), with the logged values.
# Usage: tensorboard_cli_test.sh TFM_BINARY own|tensorboard
#   own: tests/cli/check_tfevents.py's own decoder (python3's standard library).
#   tensorboard: TensorBoard's EventAccumulator, from the Python of $TFM_VENV or of the
#   repository's .venv (scripts/setup_venv.sh); skipped (exit 77) where neither has tensorboard.
set -u
tfm=$1
reader=$2
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

python=python3
if [[ $reader == tensorboard ]]; then
  python=${TFM_VENV:-$here/../../.venv}/bin/python
  if ! "$python" -c "import tensorboard" 2>/dev/null; then
    echo "tensorboard_cli: SKIPPED: no Python with tensorboard at $python (scripts/setup_venv.sh)"
    exit 77
  fi
fi

toy_corpus 11 160
head -n 20 "$tmp/train.de" >"$tmp/valid.de"
head -n 20 "$tmp/train.en" >"$tmp/valid.en"
"$tfm" vocab --input "$tmp/train.de" "$tmp/train.en" --size 40 --out "$tmp/voc" >/dev/null ||
  bad "tfm vocab failed"
train() {
  "$tfm" train --model "$tmp/m" --train-src "$tmp/train.de" --train-trg "$tmp/train.en" \
    --valid-src "$tmp/valid.de" --valid-trg "$tmp/valid.en" --valid-bleu --valid-every 3 \
    --vocab "$tmp/voc.model" --preset tiny --batch-tokens 300 --lr 3e-3 --warmup 10 --seed 3 \
    --threads 1 --save-every 4 --log-every 1 --keep-last 0 --tensorboard "$tmp/tb" "$@"
}
train --max-updates 4 >/dev/null 2>"$tmp/err" || bad "run to 4 failed: $(cat "$tmp/err")"
grep -q "TensorBoard events: $tmp/tb/events.out.tfevents." "$tmp/m/train.log" && ok ||
  bad "train.log does not name the event file"
# A run that goes on to update 8 and is then lost back to its checkpoint at 4 (as a run killed
# just before its second checkpoint is: its updates 5-8 are in train.log and in its event file,
# the state is update 4's), then resumed.
cp -r "$tmp/m/train_state" "$tmp/state4"
train --max-updates 8 >/dev/null 2>"$tmp/err" || bad "run to 8 failed: $(cat "$tmp/err")"
rm -rf "$tmp/m/train_state" && cp -r "$tmp/state4" "$tmp/m/train_state"
train --max-updates 12 >/dev/null 2>"$tmp/err" || bad "resumed run failed: $(cat "$tmp/err")"
grep -q "resuming from update 4" "$tmp/m/train.log" && ok || bad "no resume from update 4"

if "$python" "$here/check_tfevents.py" "$reader" "$tmp/tb" "$tmp/m/train.log" 3 >"$tmp/check" 2>&1; then
  ok
else
  bad "event files against train.log ($reader reader): $(cat "$tmp/check")"
fi
cat "$tmp/check"

# The option in a config file, and a file where the directory should be.
printf 'tensorboard: %s\n' "$tmp/tb2" >"$tmp/cfg.yaml"
"$tfm" train --model "$tmp/m2" --train-src "$tmp/train.de" --train-trg "$tmp/train.en" \
  --vocab "$tmp/voc.model" --preset tiny --batch-tokens 300 --threads 1 --log-every 1 \
  --max-updates 2 --config "$tmp/cfg.yaml" >/dev/null 2>&1 &&
  ls "$tmp/tb2" | grep -q tfevents && ok || bad "--config tensorboard: no event file"
touch "$tmp/afile"
expect_error "--tensorboard $tmp/afile is a file, not a directory" train --model "$tmp/m3" \
  --train-src "$tmp/train.de" --train-trg "$tmp/train.en" --vocab "$tmp/voc.model" \
  --tensorboard "$tmp/afile"
[[ ! -e $tmp/m3 ]] && ok || bad "a refused --tensorboard left $tmp/m3 behind"

finish "tensorboard_cli ($reader)"
