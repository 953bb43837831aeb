#!/usr/bin/env bash
# End-to-end checks of `tfm train` and `tfm average`: exact resume after SIGKILL at any moment and
# after a kill in the middle of a checkpoint write (fault injection), SIGTERM saving cleanly,
# config files, and clear errors or counted skips for bad input.
# Usage: train_cli_test.sh TFM_BINARY
set -u
tfm=$1
source "$(dirname "$0")/lib.sh"

# A toy word-for-word translation corpus (deterministic: awk's srand with a seed).
awk 'BEGIN {
  srand(11);
  split("haus baum hund katze kind mann frau sieht spielt läuft der die das", de, " ");
  split("house tree dog cat child man woman sees plays runs the the the", en, " ");
  for (i = 0; i < 160; i++) {
    n = 2 + int(rand() * 6); s = ""; t = "";
    for (w = 0; w < n; w++) { k = 1 + int(rand() * 13); s = s (w ? " " : "") de[k]; t = t (w ? " " : "") en[k] }
    print s > "'"$tmp"'/train.de"; print t > "'"$tmp"'/train.en"
  } }'
"$tfm" vocab --input "$tmp/train.de" "$tmp/train.en" --size 40 --out "$tmp/voc" >/dev/null ||
  bad "tfm vocab failed"

# train DIR MAX_UPDATES [extra flags...]: the one command every resume repeats. With EXEC=exec
# in the background, $! is tfm itself (not a subshell), so signals reach it.
train() {
  local dir=$1 max=$2
  shift 2
  ${EXEC:-} "$tfm" train --model "$dir" --train-src "$tmp/train.de" --train-trg "$tmp/train.en" \
    --vocab "$tmp/voc.model" --preset tiny --batch-tokens 300 --lr 3e-3 --warmup 10 \
    --dropout 0.1 --seed 3 --threads 1 --save-every 4 --log-every 1 --keep-last 0 \
    ${max:+--max-updates "$max"} "$@"
}

# The reference: 24 updates straight.
train "$tmp/a" 24 >/dev/null 2>"$tmp/a.err" || bad "straight run failed: $(cat "$tmp/a.err")"
[[ $(losses "$tmp/a/train.log" | wc -l) -eq 24 ]] && ok || bad "expected 24 logged updates"

# Stopped at 10 (not a multiple of --save-every), resumed to 24: identical weights and losses.
train "$tmp/b" 10 >/dev/null 2>&1 && train "$tmp/b" 24 >/dev/null 2>"$tmp/b.err" ||
  bad "stop/resume run failed: $(cat "$tmp/b.err")"
grep -q "resuming from update 10" "$tmp/b.err" && ok || bad "no resume message: $(cat "$tmp/b.err")"
cmp -s "$tmp/a/model.safetensors" "$tmp/b/model.safetensors" && ok ||
  bad "stop at 10 + resume: weights differ from the straight run"
[[ "$(losses "$tmp/a/train.log")" == "$(losses "$tmp/b/train.log")" ]] && ok ||
  bad "stop at 10 + resume: logged losses differ"

# SIGKILL as soon as the first checkpoint exists, then the same command again.
EXEC=exec train "$tmp/c" 24 >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 400); do
  [[ -e "$tmp/c/train_state/state.json" ]] && break
  sleep 0.02
done
kill -KILL "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
train "$tmp/c" 24 >/dev/null 2>"$tmp/c.err" || bad "resume after SIGKILL failed: $(cat "$tmp/c.err")"
cmp -s "$tmp/a/model.safetensors" "$tmp/c/model.safetensors" && ok ||
  bad "SIGKILL + resume: weights differ from the straight run"
[[ "$(losses "$tmp/a/train.log")" == "$(losses "$tmp/c/train.log")" ]] && ok ||
  bad "SIGKILL + resume: logged losses differ"

# Fault injection: killed in the middle of writing the second checkpoint's state file, then in
# the middle of its model.safetensors. The previous checkpoint stays loadable and the resumed
# run ends where the straight one did.
train "$tmp/d" 4 >/dev/null 2>&1 || bad "run to 4 failed"
size() { stat -c %s "$1"; }
cfg=$(size "$tmp/d/train_config.json")
state=$(size "$tmp/d/train_state/state.safetensors")
sjson=$(size "$tmp/d/train_state/state.json")
TFM_FAULT_KILL_AFTER_BYTES=$((cfg + state / 2)) train "$tmp/d" 24 >/dev/null 2>&1
[[ $? -eq 137 ]] && ok || bad "fault injection did not kill the run"
[[ $(updates_in_state "$tmp/d") == 4 ]] && ok || bad "state after a torn write is not update 4"
"$tfm" info --model "$tmp/d" >/dev/null 2>&1 && ok || bad "model unloadable after a torn state write"
model=$(size "$tmp/d/model.safetensors")
TFM_FAULT_KILL_AFTER_BYTES=$((cfg + state + sjson + model / 2)) train "$tmp/d" 24 >/dev/null 2>&1
[[ $? -eq 137 ]] && ok || bad "fault injection (model write) did not kill the run"
[[ $(updates_in_state "$tmp/d") == 8 ]] && ok || bad "state is not update 8 after the model write kill"
"$tfm" info --model "$tmp/d" >/dev/null 2>&1 && ok || bad "model unloadable after a torn model write"
train "$tmp/d" 24 >/dev/null 2>"$tmp/d.err" || bad "resume after fault injection: $(cat "$tmp/d.err")"
cmp -s "$tmp/a/model.safetensors" "$tmp/d/model.safetensors" && ok ||
  bad "fault injection + resume: weights differ from the straight run"

# SIGTERM: saves a checkpoint at the update it stopped at and exits with status 0.
EXEC=exec train "$tmp/e" 100000 --save-every 100000 >/dev/null 2>"$tmp/e.err" &
pid=$!
for _ in $(seq 1 500); do
  grep -q "| update 3 |" "$tmp/e/train.log" 2>/dev/null && break
  sleep 0.02
done
kill -TERM "$pid"
wait "$pid"
status=$?
[[ $status -eq 0 ]] && ok || bad "SIGTERM: exit status $status"
grep -q "interrupted: checkpoint saved" "$tmp/e.err" && ok || bad "SIGTERM: no message: $(tail -2 "$tmp/e.err")"
last=$(losses "$tmp/e/train.log" | tail -1 | cut -d' ' -f1)
[[ -n "$last" && $(updates_in_state "$tmp/e") == "$last" ]] && ok ||
  bad "SIGTERM: state holds update $(updates_in_state "$tmp/e"), last logged $last"

# bf16 mixed precision: it says so, learns like fp32 (final logged loss within 10 %, not equal:
# the GEMMs really ran in bf16), resumes exactly, and the saved weights are f32 as always.
train "$tmp/p" 24 --precision bf16 >/dev/null 2>"$tmp/p.err" || bad "bf16 run failed: $(cat "$tmp/p.err")"
grep -q "training GEMMs in bf16" "$tmp/p.err" && ok || bad "bf16 run does not say so"
last_a=$(losses "$tmp/a/train.log" | tail -1 | cut -d' ' -f2)
last_p=$(losses "$tmp/p/train.log" | tail -1 | cut -d' ' -f2)
awk -v a="$last_a" -v p="$last_p" 'BEGIN { exit !(p != a && (p - a) / a < 0.1 && (a - p) / a < 0.1) }' &&
  ok || bad "bf16 final loss $last_p vs fp32 $last_a"
train "$tmp/q" 10 --precision bf16 >/dev/null 2>&1 && train "$tmp/q" 24 --precision bf16 >/dev/null 2>&1 ||
  bad "bf16 stop/resume failed"
cmp -s "$tmp/p/model.safetensors" "$tmp/q/model.safetensors" && ok ||
  bad "bf16 stop at 10 + resume: weights differ from the straight run"
# Resuming in another precision works and says that the continuation differs.
train "$tmp/q" 26 --precision fp32 >/dev/null 2>"$tmp/q.err" || bad "fp32 resume of a bf16 run failed"
grep -q "the run so far trained in bf16, this one in fp32" "$tmp/q.err" && ok ||
  bad "no note on the precision change: $(cat "$tmp/q.err")"
! grep -q "precision" "$tmp/b.err" && ok || bad "a same-precision resume mentions precision"
header=$(head -c 8192 "$tmp/p/model.safetensors" | tr -c '[:print:]' ' ')
[[ $header == *'"F32"'* && $header != *BF16* ]] && ok || bad "bf16 run: checkpoint not all F32"

# A YAML config file supplies options; the command line overrides it.
printf 'max-updates: 3\nlog_every: 1\n' >"$tmp/cfg.yaml"
train "$tmp/f" "" --config "$tmp/cfg.yaml" >/dev/null 2>&1 || bad "config run failed"
[[ $(updates_in_state "$tmp/f") == 3 ]] && ok || bad "config max-updates not applied"
"$tfm" train --model "$tmp/g" --train-src "$tmp/train.de" --train-trg "$tmp/train.en" \
  --vocab "$tmp/voc.model" --preset tiny --threads 1 --config "$tmp/cfg.yaml" --max-updates 2 \
  >/dev/null 2>&1 || bad "config + flag run failed"
[[ $(updates_in_state "$tmp/g") == 2 ]] && ok || bad "the command line did not override the config"
grep -q '"max-updates": 2,' "$tmp/g/train_config.json" && ok || bad "effective config not saved"
# The record is a config file: read back, it is the same run (the same record, so no refusal),
# continued to its own max-updates by a resume.
"$tfm" train --model "$tmp/g" --config "$tmp/g/train_config.json" --max-updates 3 >/dev/null \
  2>"$tmp/g.err" && [[ $(updates_in_state "$tmp/g") == 3 ]] && ok ||
  bad "train_config.json as --config: $(tail -3 "$tmp/g.err")"

# Checkpoint averaging: the mean of a model with itself is the model; vocabularies come along.
"$tfm" average --out "$tmp/avg" "$tmp/a" "$tmp/a" >/dev/null || bad "average failed"
cmp -s "$tmp/a/model.safetensors" "$tmp/avg/model.safetensors" && ok || bad "average(x, x) != x"
[[ -s "$tmp/avg/vocab.model" ]] && ok || bad "average: vocabulary not copied"
printf 'der hund sieht die katze\n\nhaus\n' | "$tfm" translate --model "$tmp/a" --threads 1 >"$tmp/tr.out"
[[ $(wc -l <"$tmp/tr.out") -eq 3 ]] && ok || bad "translate with a trained model: $(cat "$tmp/tr.out")"

# Bad input: counted skips for empty, over-long and invalid UTF-8 lines.
{ cat "$tmp/train.de"; echo; printf 'haus %.0s' $(seq 1 60); echo; printf 'haus \xff baum\n'; } >"$tmp/bad.de"
{ cat "$tmp/train.en"; echo "house"; echo "house"; echo "house tree"; } >"$tmp/bad.en"
"$tfm" train --model "$tmp/h" --train-src "$tmp/bad.de" --train-trg "$tmp/bad.en" \
  --vocab "$tmp/voc.model" --preset tiny --threads 1 --max-updates 1 --max-length 40 --max-ratio 0 \
  >/dev/null 2>"$tmp/h.err" || bad "training on a dirty corpus failed: $(cat "$tmp/h.err")"
grep -q "read 163 pairs, kept 161; skipped: 1 empty, 0 malformed, 1 too long" "$tmp/h.err" && ok ||
  bad "dirty corpus summary: $(grep read "$tmp/h.err")"
grep -q "repaired invalid UTF-8 in 1 lines" "$tmp/h.err" && ok || bad "UTF-8 repair not reported"
grep -qF "first repaired line: $tmp/bad.de:163" "$tmp/h.err" && ok ||
  bad "the repaired line's place not reported: $(grep read "$tmp/h.err")"

# Errors: non-zero exit, a message naming the problem, nothing on stdout.
head -5 "$tmp/train.en" >"$tmp/short.en"
base=(train --train-src "$tmp/train.de" --vocab "$tmp/voc.model" --preset tiny --threads 1)
expect_error "short.en" "${base[@]}" --model "$tmp/x1" --train-trg "$tmp/short.en"
expect_error "missing.en" "${base[@]}" --model "$tmp/x2" --train-trg "$tmp/missing.en"
touch "$tmp/afile"
expect_error "cannot create model directory" "${base[@]}" --model "$tmp/afile/m" \
  --train-trg "$tmp/train.en"
cp -r "$tmp/a" "$tmp/corrupt"
truncate -s 100 "$tmp/corrupt/train_state/state.safetensors"
expect_error "cannot resume from" "${base[@]}" --model "$tmp/corrupt" --train-trg "$tmp/train.en"
expect_error "--device cuda" "${base[@]}" --model "$tmp/x3" --train-trg "$tmp/train.en" --device cuda
expect_error "precision" "${base[@]}" --model "$tmp/x8" --train-trg "$tmp/train.en" --precision int8
printf 'no-such-option: 1\n' >"$tmp/badcfg.yaml"
expect_error "unknown option \"no-such-option\"" "${base[@]}" --model "$tmp/x4" \
  --train-trg "$tmp/train.en" --config "$tmp/badcfg.yaml"
# A list for an option of one value is refused, not cut to its last entry.
printf 'max-updates: [1, 2]\n' >"$tmp/listcfg.yaml"
expect_error "option \"max-updates\" takes one value, and the file gives a list of 2" "${base[@]}" \
  --model "$tmp/x9" --train-trg "$tmp/train.en" --config "$tmp/listcfg.yaml"
[[ ! -e $tmp/x9 ]] && ok || bad "a refused config left $tmp/x9"
printf '{"lr": [0.1, 0.2]}\n' >"$tmp/listcfg.json"
# (--max-updates 1: a tfm that took the list's last entry ends instead of training on.)
expect_error "option \"lr\" takes one value" "${base[@]}" --model "$tmp/x9" \
  --train-trg "$tmp/train.en" --config "$tmp/listcfg.json" --max-updates 1
expect_error "lr-schedule" "${base[@]}" --model "$tmp/x5" --train-trg "$tmp/train.en" \
  --lr-schedule cosine
expect_error "x7-missing does not exist" average --out "$tmp/x6" "$tmp/a" "$tmp/x7-missing"

# A decoder-only model (a language model) on target text alone, also from a config file, then
# tfm generate with it: each output line continues its prompt. Resumed runs are bit for bit.
lm() {
  "$tfm" train --decoder-only --model "$1" --train-trg "$tmp/train.en" --vocab "$tmp/voc.model" \
    --preset tiny --batch-tokens 300 --lr 3e-3 --warmup 10 --seed 3 --threads 1 --save-every 4 \
    --log-every 1 --keep-last 0 --max-updates "$2"
}
if lm "$tmp/lm" 12 >/dev/null 2>"$tmp/lm.err" && lm "$tmp/lm2" 5 >/dev/null 2>&1 &&
  lm "$tmp/lm2" 12 >/dev/null 2>"$tmp/lm2.err"; then
  grep -q '"decoder_only": true' "$tmp/lm/config.json" && ok || bad "LM config: $(cat "$tmp/lm/config.json")"
  cmp -s "$tmp/lm/model.safetensors" "$tmp/lm2/model.safetensors" && ok ||
    bad "LM stopped at 5 and resumed to 12 differs from 12 straight"
  if printf 'the dog\nhouse\n' | "$tfm" generate --model "$tmp/lm" --max-length 12 >"$tmp/lm.out" 2>"$tmp/lm.err"; then
    [[ $(wc -l <"$tmp/lm.out") -eq 2 && $(sed -n 1p "$tmp/lm.out") == "the dog"* &&
      $(sed -n 2p "$tmp/lm.out") == "house"* ]] && ok || bad "generate with the LM: $(cat "$tmp/lm.out")"
  else
    bad "generate with the trained LM failed: $(cat "$tmp/lm.err")"
  fi
else
  bad "decoder-only training failed: $(cat "$tmp/lm.err" "$tmp/lm2.err" 2>/dev/null)"
fi
lmbase=(train --decoder-only --train-trg "$tmp/train.en" --vocab "$tmp/voc.model" --preset tiny --threads 1)
expect_error "a decoder-only model trains on --train-trg alone" "${lmbase[@]}" --model "$tmp/x9" \
  --train-src "$tmp/train.de"
expect_error "a decoder-only model has no sources to translate" "${lmbase[@]}" --model "$tmp/x10" \
  --valid-trg "$tmp/train.en" --valid-bleu
expect_error "is a decoder-only model; tfm generate" translate --model "$tmp/lm"

finish train_cli
