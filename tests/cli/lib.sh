# Shared by the CLI shell tests (source it after setting tfm=PATH): a scratch directory, pass/fail
# counting, and the checks every subcommand's errors must pass.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() {
  echo "FAIL: $*"
  fail=$((fail + 1))
}

# expect_status STATUS SUBSTRING INPUT ARGS...: `tfm ARGS` with INPUT on stdin must exit with
# STATUS ("nonzero": any but 0), say SUBSTRING (a fixed string) on stderr, and write nothing to
# stdout.
expect_status() {
  local want_status=$1 want=$2 input=$3
  shift 3
  printf '%s\n' "$input" | "$tfm" "$@" >"$tmp/.stdout" 2>"$tmp/.stderr"
  local status=$?
  if [[ $status -eq 0 || ($want_status != nonzero && $status -ne $want_status) ]]; then
    bad "tfm $*: exit status $status, want $want_status (stdout: $(cat "$tmp/.stdout"); stderr: $(cat "$tmp/.stderr"))"
  elif ! grep -qF -- "$want" "$tmp/.stderr"; then
    bad "tfm $*: stderr lacks '$want': $(cat "$tmp/.stderr")"
  elif [[ -s "$tmp/.stdout" ]]; then
    bad "tfm $*: wrote to stdout on error"
  else
    ok
  fi
}

# expect_error_input SUBSTRING INPUT ARGS...: `tfm ARGS` with INPUT on stdin must fail (any
# non-zero status), with SUBSTRING on stderr and nothing on stdout.
expect_error_input() {
  expect_status nonzero "$@"
}

# expect_error SUBSTRING ARGS...: the same with empty stdin.
expect_error() {
  local want=$1
  shift
  expect_error_input "$want" "" "$@"
}

# toy_corpus SEED LINES: a deterministic word-for-word German/English corpus (awk's srand) in
# $tmp/train.de and $tmp/train.en, 2-6 words a line from 13 word pairs: what the CLI tests train
# their tiny models on.
toy_corpus() {
  awk -v seed="$1" -v lines="$2" -v out="$tmp" 'BEGIN {
    srand(seed);
    split("haus baum hund katze kind mann frau sieht spielt läuft der die das", de, " ");
    split("house tree dog cat child man woman sees plays runs the the the", en, " ");
    for (i = 0; i < lines; i++) {
      n = 2 + int(rand() * 5); s = ""; t = "";
      for (w = 0; w < n; w++) { k = 1 + int(rand() * 13); s = s (w ? " " : "") de[k]; t = t (w ? " " : "") en[k] }
      print s > (out "/train.de"); print t > (out "/train.en")
    } }'
}

# tiny_model: the toy corpus (toy_corpus 7 120), its 40-piece vocabulary $tmp/voc.model, a model
# $tmp/m trained for two updates of the tiny preset with it, and the first five lines of each side
# in $tmp/src.txt and $tmp/trg.txt. TRAIN holds that run's `tfm train` arguments but --model and
# --vocab: "$tfm" "${TRAIN[@]}" --model DIR --vocab V [flags...].
tiny_model() {
  toy_corpus 7 120
  "$tfm" vocab --input "$tmp/train.de" "$tmp/train.en" --size 40 --out "$tmp/voc" >/dev/null ||
    bad "tfm vocab failed"
  TRAIN=(train --train-src "$tmp/train.de" --train-trg "$tmp/train.en" --preset tiny
    --batch-tokens 200 --max-updates 2 --valid-every 0 --threads 1 --seed 4)
  "$tfm" "${TRAIN[@]}" --model "$tmp/m" --vocab "$tmp/voc.model" >/dev/null 2>"$tmp/err" ||
    bad "train failed: $(cat "$tmp/err")"
  head -5 "$tmp/train.de" >"$tmp/src.txt"
  head -5 "$tmp/train.en" >"$tmp/trg.txt"
}

# losses TRAIN_LOG: "update loss" pairs, one per update (duplicates from redone updates merged).
losses() { sed -n 's/^epoch [0-9]* | update \([0-9]*\) .* | loss \([0-9.]*\) .*/\1 \2/p' "$1" | sort -un; }
# updates_in_state DIR: the update count of DIR's training state.
updates_in_state() { sed -n 's/^  "updates": \([0-9]*\),\{0,1\}$/\1/p' "$1/train_state/state.json"; }

# finish [NAME]: prints the tally; the script's exit status.
finish() {
  echo "${1:+$1: }$pass passed, $fail failed"
  [[ $fail -eq 0 ]]
}
