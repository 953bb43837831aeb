#!/usr/bin/env bash
# Nothing lost, nothing silently wrong (issue 15, docs/failure.md): write errors fail naming the
# path and the errno text; an output never destroys its input; tfm train refuses to start over a
# run it cannot resume and locks its directory; stale temporaries go; non-finite weights and a
# vocabulary that does not match the model are refused at load; bad values are refused with
# readable messages. The full-disk checks use a small tmpfs when run as root, and skip otherwise.
# Usage: failure_cli_test.sh TFM_BINARY
set -u
tfm=$1
source "$(dirname "$0")/lib.sh"

toy_corpus 7 120
"$tfm" vocab --input "$tmp/train.de" "$tmp/train.en" --size 40 --out "$tmp/voc" >/dev/null ||
  bad "tfm vocab failed"
"$tfm" vocab --input "$tmp/train.de" "$tmp/train.en" --size 45 --out "$tmp/voc45" >/dev/null ||
  bad "tfm vocab (45) failed"

train() {  # train DIR [flags...]: a few updates of the tiny preset
  local dir=$1
  shift
  ${EXEC:-} "$tfm" train --model "$dir" --train-src "$tmp/train.de" --train-trg "$tmp/train.en" \
    --vocab "$tmp/voc.model" --preset tiny --batch-tokens 200 --max-updates 3 --log-every 1 \
    --save-every 2 --valid-every 0 --keep-last 2 --threads 1 --seed 4 "$@"
}
train "$tmp/m" >/dev/null 2>"$tmp/err" || bad "train failed: $(cat "$tmp/err")"
head -20 "$tmp/train.de" >"$tmp/src.txt"
head -20 "$tmp/train.en" >"$tmp/trg.txt"

# expect_fail WANT CMD...: CMD (run as given, with stdin from /dev/null unless redirected by the
# caller) exits non-zero and says WANT on stderr.
expect_fail() {
  local want=$1
  shift
  if "$@" 2>"$tmp/.stderr"; then
    bad "expected failure: $*"
  elif ! grep -qF -- "$want" "$tmp/.stderr"; then
    bad "$*: stderr lacks '$want': $(cat "$tmp/.stderr")"
  else
    ok
  fi
}
nospace="No space left on device"

# 1. Write errors: stdout on /dev/full, for every command that prints, and --output /dev/full.
to_full() { "$tfm" "$@" <"$tmp/src.txt" >/dev/full; }
expect_fail "'<stdout>': $nospace" to_full translate --model "$tmp/m" --threads 1
expect_fail "'<stdout>': $nospace" to_full translate --model "$tmp/m" --threads 1 --beam-size 2 --n-best 2
expect_fail "'/dev/full': $nospace" "$tfm" translate --model "$tmp/m" --threads 1 \
  --input "$tmp/src.txt" --output /dev/full
expect_fail "'<stdout>': $nospace" to_full score --model "$tmp/m" --threads 1 --src "$tmp/src.txt" --trg "$tmp/trg.txt"
expect_fail "'<stdout>': $nospace" to_full eval --ref "$tmp/trg.txt" --hyp "$tmp/trg.txt"
expect_fail "'<stdout>': $nospace" to_full info --model "$tmp/m"
expect_fail "'<stdout>': $nospace" to_full vocab --input "$tmp/train.de" --size 30 --out "$tmp/vfull"
expect_fail "'<stdout>': $nospace" to_full average --out "$tmp/avgfull" "$tmp/m" "$tmp/m"

# 1-2. A full disk (a 256 KiB tmpfs, root only): the file outputs fail naming the path and the
# reason, and leave no half-written model or vocabulary and no temporary behind.
full=$tmp/full
if [[ $(id -u) -eq 0 ]] && mkdir -p "$full" && mount -t tmpfs -o size=256k tmpfs "$full" 2>/dev/null; then
  trap 'umount "$full" 2>/dev/null; rm -rf "$tmp"' EXIT
  fill() {  # leaves about $1 KiB free on the tmpfs
    rm -rf "${full:?}"/*
    dd if=/dev/zero of="$full/filler" bs=4k 2>/dev/null
    truncate -s "-$1K" "$full/filler"
  }
  fill 16
  expect_fail "'$full/out.txt': $nospace" "$tfm" translate --model "$tmp/m" --threads 1 --ids \
    --input <(for _ in $(seq 5000); do echo "5 6 7 8"; done) --output "$full/out.txt"
  fill 0
  "$tfm" info --model "$tmp/m" >"$full/info.txt" 2>"$tmp/.stderr" && bad "info to a full disk exited 0" ||
    { grep -qF "$nospace" "$tmp/.stderr" && ok || bad "info to a full disk: $(cat "$tmp/.stderr")"; }
  fill 8
  expect_fail "$nospace" "$tfm" vocab --input "$tmp/train.de" --size 30 --out "$full/v"
  [[ ! -e "$full/v.model" && ! -e "$full/v.vocab" ]] && ok || bad "vocab left files on a full disk: $(ls -a "$full")"
  fill 64
  expect_fail "$nospace" "$tfm" average --out "$full/avg" "$tmp/m" "$tmp/m"
  [[ ! -e "$full/avg" ]] && ok || bad "average left a partial directory: $(ls -R "$full")"
  ls -a "$full" | grep -q '\.tmp\.' && bad "temporaries left on the full disk: $(ls -a "$full")" || ok
  # A copy of the model with best/ and checkpoints/ written on a disk that fills up mid-run.
  rm -rf "${full:?}"/*
  fill 120
  train "$full/t" --max-updates 50 --valid-src "$tmp/src.txt" --valid-trg "$tmp/trg.txt" \
    --valid-every 1 >/dev/null 2>"$tmp/.stderr" && bad "training onto a full disk exited 0" ||
    { grep -qF "$nospace" "$tmp/.stderr" && ok || bad "train on a full disk: $(tail -2 "$tmp/.stderr")"; }
  for d in "$full/t/best" "$full/t"/checkpoints/update-*; do
    [[ -d "$d" ]] || continue
    [[ -s "$d/model.safetensors" && -s "$d/config.json" ]] && cmp -s "$d/vocab.model" "$tmp/voc.model" && ok ||
      bad "$d is incomplete after a full disk: $(ls -l "$d")"
  done
  umount "$full" && trap 'rm -rf "$tmp"' EXIT
else
  echo "failure_cli_test: not root or no tmpfs mount: the full-disk checks are skipped"
fi

# 5. --output naming the input (by inode: the same path, another spelling, a hard link, stdin).
cp "$tmp/src.txt" "$tmp/in.txt"
ln "$tmp/in.txt" "$tmp/in_link.txt"
for out in "$tmp/in.txt" "$tmp/./in.txt" "$tmp/in_link.txt"; do
  expect_fail "is the input file" "$tfm" translate --model "$tmp/m" --threads 1 --input "$tmp/in.txt" --output "$out"
done
expect_fail "is the input file (standard input)" sh -c '"$0" translate --model "$1" --threads 1 --output "$2" <"$2"' \
  "$tfm" "$tmp/m" "$tmp/in.txt"
cmp -s "$tmp/in.txt" "$tmp/src.txt" && ok || bad "translate --output damaged its input"

# 3. A model or checkpoints without a train state: refused, and --overwrite starts over.
cp -r "$tmp/m" "$tmp/nostate"
rm -rf "$tmp/nostate/train_state"
cp "$tmp/nostate/model.safetensors" "$tmp/before.safetensors"
expect_fail "no training state to resume" train "$tmp/nostate" --max-updates 2
expect_fail "--overwrite" train "$tmp/nostate" --max-updates 2
cmp -s "$tmp/nostate/model.safetensors" "$tmp/before.safetensors" && ok || bad "refused run changed the model"
train "$tmp/nostate" --max-updates 2 --overwrite >/dev/null 2>"$tmp/err" && ok || bad "--overwrite failed: $(cat "$tmp/err")"
[[ -e "$tmp/nostate/train_state/state.safetensors" && ! -e "$tmp/nostate/checkpoints/update-3" ]] && ok ||
  bad "--overwrite: old checkpoints kept: $(ls "$tmp/nostate/checkpoints")"
# A train state that cannot be read says --overwrite too.
cp -r "$tmp/m" "$tmp/badstate"
echo garbage >"$tmp/badstate/train_state/state.safetensors"
expect_fail "--overwrite" train "$tmp/badstate" --max-updates 4

# A run killed while writing its first state leaves only a temporary in train_state/: the same
# command starts again (nothing to lose), it is not refused.
mkdir -p "$tmp/firstkill/train_state"
head -c 1000 /dev/zero >"$tmp/firstkill/train_state/.state.safetensors.tmp.99999.0"
train "$tmp/firstkill" --max-updates 1 >/dev/null 2>"$tmp/err" && ok ||
  bad "a run killed in its first checkpoint cannot start again: $(cat "$tmp/err")"

# 8. Temporaries of a killed run are removed when the next run starts.
cp -r "$tmp/m" "$tmp/stale"
head -c 1000 /dev/zero >"$tmp/stale/train_state/.state.safetensors.tmp.99999.0"
head -c 1000 /dev/zero >"$tmp/stale/.model.safetensors.tmp.99999.1"
mkdir -p "$tmp/stale/checkpoints/.update-9.tmp.99999.2" "$tmp/stale/.best.tmp.99999.3"
train "$tmp/stale" --max-updates 4 >/dev/null 2>"$tmp/err" || bad "resume with stale temporaries failed: $(cat "$tmp/err")"
find "$tmp/stale" -name '*.tmp.*' | grep -q . && bad "stale temporaries left: $(find "$tmp/stale" -name '*.tmp.*')" || ok
grep -q "removed 4 temporary file(s)" "$tmp/err" && ok || bad "no note of the removed temporaries: $(cat "$tmp/err")"

# 4. One run a directory: a second one is refused and names the first's pid.
EXEC=exec train "$tmp/locked" --max-updates 100000 --save-every 0 >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 500); do
  [[ "$(cat "$tmp/locked/.tfm.lock" 2>/dev/null)" == "$pid" ]] && break
  sleep 0.02
done
expect_fail "in use by another tfm process (pid $pid)" train "$tmp/locked" --max-updates 5
kill -TERM "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
train "$tmp/locked" --max-updates 1 >/dev/null 2>"$tmp/err" && ok || bad "lock not released: $(cat "$tmp/err")"

# 6. Non-finite weights are refused at load, naming the tensor.
corrupt() {  # corrupt DIR VALUE: the first float of the first tensor (in file order) := VALUE
  python3 - "$1/model.safetensors" "$2" <<'PY'
import json, struct, sys
path, value = sys.argv[1], float(sys.argv[2])
data = bytearray(open(path, 'rb').read())
n = struct.unpack('<Q', data[:8])[0]
header = json.loads(data[8:8 + n])
name, t = min(((k, v) for k, v in header.items() if k != '__metadata__'),
              key=lambda kv: kv[1]['data_offsets'][0])
off = 8 + n + t['data_offsets'][0]
data[off:off + 4] = struct.pack('<f', value)
open(path, 'wb').write(data)
print(name)
PY
}
if command -v python3 >/dev/null; then
  for v in nan inf -inf; do
    cp -r "$tmp/m" "$tmp/nf_$v"
    name=$(corrupt "$tmp/nf_$v" "$v")
    expect_fail "tensor $name holds a non-finite value" "$tfm" translate --model "$tmp/nf_$v" --threads 1 --input "$tmp/src.txt"
    expect_fail "tensor $name holds a non-finite value" "$tfm" score --model "$tmp/nf_$v" --threads 1 --src "$tmp/src.txt" --trg "$tmp/trg.txt"
  done
  expect_fail "non-finite" "$tfm" info --model "$tmp/nf_nan"
  expect_fail "non-finite" "$tfm" average --out "$tmp/nf_avg" "$tmp/m" "$tmp/nf_nan"
else
  echo "failure_cli_test: no python3: the non-finite weight checks are skipped"
fi

# 7. A vocabulary that does not match the model, in every command that loads one.
# vocab_refused NAME VOCAB WANT: $tmp/m with VOCAB as its vocabulary, in $tmp/NAME, refused by
# translate, score, info and average with WANT.
vocab_refused() {
  cp -r "$tmp/m" "$tmp/$1"
  cp "$2" "$tmp/$1/vocab.model"
  expect_fail "$3" "$tfm" translate --model "$tmp/$1" --threads 1 --input "$tmp/src.txt"
  expect_fail "$3" "$tfm" score --model "$tmp/$1" --threads 1 --src "$tmp/src.txt" --trg "$tmp/trg.txt"
  expect_fail "$3" "$tfm" info --model "$tmp/$1"
  expect_fail "$3" "$tfm" average --out "$tmp/$1_avg" "$tmp/$1" "$tmp/m"
}
vocab_refused wrongvocab "$tmp/voc45.model" "has 45 pieces but the model"
expect_fail "has 45 pieces but the model" train "$tmp/wrongvocab" --vocab "$tmp/voc45.model" --max-updates 4
# A vocabulary of the same size and special ids but other pieces (words spelled backwards): the
# fingerprint the model recorded at training tells it apart (it translated into garbage before).
rev "$tmp/train.de" >"$tmp/rev.de" && rev "$tmp/train.en" >"$tmp/rev.en"
"$tfm" vocab --input "$tmp/rev.de" "$tmp/rev.en" --size 40 --out "$tmp/vocrev" >/dev/null ||
  bad "tfm vocab (reversed) failed"
vocab_refused swapped "$tmp/vocrev.model" \
  "swapped/vocab.model is not the source vocabulary the model in $tmp/swapped was trained with"
grep -q '"trg_vocab_fingerprint": "fnv1a64:' "$tmp/m/config.json" && ok ||
  bad "no vocabulary fingerprint in $tmp/m/config.json"
# --ids needs no vocabulary, so none is checked.
echo "5 6 7" | "$tfm" translate --model "$tmp/wrongvocab" --threads 1 --ids >/dev/null 2>&1 && ok ||
  bad "--ids with a mismatched vocabulary file failed"

# Values: finite, in range, readable.
t() { "$tfm" translate --model "$tmp/m" --threads 1 --input "$tmp/src.txt" "$@"; }
expect_fail "--beam-size must be at least 1 (got 0)" t --beam-size 0
expect_fail "--beam-size 100000 is larger than the model's target vocabulary" t --beam-size 100000
expect_fail "--max-length-factor must be in [0, 1000] (got 1e+30)" t --max-length-factor 1e30
expect_fail "--max-length-factor must be a finite number (got nan)" t --max-length-factor nan
expect_fail "--temperature must be a finite number (got inf)" t --temperature inf
expect_fail "--sampling-topp must be in (0, 1] (got 0)" t --sampling-topp 0
expect_fail "--length-penalty must be a finite number" t --length-penalty -inf
expect_fail "--batch-size must be between 1 and" t --batch-size 0
expect_fail "--n-best must be at least 1 (got 0)" t --n-best 0
expect_fail "hardware threads" "$tfm" translate --model "$tmp/m" --threads 100000 --input "$tmp/src.txt"
expect_fail "--batch-size must be between 1 and" "$tfm" score --model "$tmp/m" --src "$tmp/src.txt" --trg "$tmp/trg.txt" --batch-size 0
grep -h "1797693\|1.79769e+308" "$tmp/.stderr" && bad "a 300-digit range reached the user" || ok
expect_fail "--lr must be a finite number (got nan)" train "$tmp/v1" --lr nan
expect_fail "--label-smoothing must be in [0, 1) (got 1)" train "$tmp/v1" --label-smoothing 1
printf 'lr: nan\n' >"$tmp/nan.yaml"
expect_fail "--lr must be a finite number (got nan)" train "$tmp/v1" --config "$tmp/nan.yaml"
printf '{"clip_norm": "inf"}\n' >"$tmp/inf.json"
expect_fail "--clip-norm must be a finite number (got inf)" train "$tmp/v1" --config "$tmp/inf.json"
sed 's/"d_model": [0-9]*/"d_model": 1000000000/' "$tmp/m/config.json" >"$tmp/huge.json"
expect_fail "d_model 1000000000 is too large" train "$tmp/v1" --model-config "$tmp/huge.json"
[[ ! -e "$tmp/v1/model.safetensors" ]] && ok || bad "a refused value still trained"

# format_version, and no source location unless TFM_DEBUG is set.
cp -r "$tmp/m" "$tmp/v2"
sed -i 's/"format_version": 1/"format_version": 2/' "$tmp/v2/config.json"
expect_fail "format_version 2 is not supported" "$tfm" info --model "$tmp/v2"
grep -q '\.cpp:[0-9]' "$tmp/.stderr" && bad "a source location reached the user: $(cat "$tmp/.stderr")" || ok
TFM_DEBUG=1 "$tfm" info --model "$tmp/v2" 2>&1 >/dev/null | grep -q '\.cpp:[0-9]' && ok ||
  bad "TFM_DEBUG=1 shows no source location"

# Paths that are directories, and a FIFO read once.
expect_fail "is a directory" "$tfm" translate --model "$tmp/m" --threads 1 --input "$tmp"
expect_fail "is a directory" "$tfm" translate --model "$tmp/m" --threads 1 --input "$tmp/src.txt" --output "$tmp"
expect_fail "is a directory" "$tfm" eval --ref "$tmp" --hyp "$tmp/trg.txt"
expect_fail "is a directory" "$tfm" score --model "$tmp/m" --src "$tmp" --trg "$tmp/trg.txt"
expect_fail "is a directory" "$tfm" vocab --input "$tmp/train.de" --size 30 --out "$tmp"
"$tfm" vocab --input <(cat "$tmp/train.de") --size 30 --out "$tmp/vpipe" >/dev/null 2>"$tmp/err" &&
  [[ -s "$tmp/vpipe.model" ]] && ok || bad "vocab from a process substitution failed: $(cat "$tmp/err")"
expect_fail "is a directory" "$tfm" vocab --input "$tmp" --size 30 --out "$tmp/vdir"
"$tfm" eval --ref <(cat "$tmp/trg.txt") --hyp <(cat "$tmp/trg.txt") >/dev/null 2>"$tmp/err" && ok ||
  bad "eval from process substitutions failed: $(cat "$tmp/err")"
"$tfm" translate --model "$tmp/m" --threads 1 --input <(cat "$tmp/src.txt") >"$tmp/fifo.out" 2>"$tmp/err" &&
  [[ $(wc -l <"$tmp/fifo.out") -eq 20 ]] && ok || bad "translate from a pipe failed: $(cat "$tmp/err")"

# Over-long lines: score names file:line before scoring; a long validation pair is skipped and
# counted at start-up, not a failure at the first validation.
long=$(for _ in $(seq 300); do printf 'haus '; done)
printf '%s\nhaus\n' "$long" >"$tmp/long.de"
printf 'house\nhouse\n' >"$tmp/long.en"
expect_fail "long.de:1: " "$tfm" score --model "$tmp/m" --threads 1 --src "$tmp/long.de" --trg "$tmp/long.en"
train "$tmp/longvalid" --valid-src "$tmp/long.de" --valid-trg "$tmp/long.en" --valid-every 1 \
  --max-updates 2 >/dev/null 2>"$tmp/err" && ok || bad "a long validation pair failed training: $(cat "$tmp/err")"

# An empty corpus from prepare-ding is an error.
: >"$tmp/empty.dict"
expect_fail "holds no usable dictionary pairs" "$tfm" prepare-ding --input "$tmp/empty.dict" --out "$tmp/ding"

finish failure_cli
