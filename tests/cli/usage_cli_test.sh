#!/usr/bin/env bash
# What the command line says to a mistyped command: the unknown command or flag named, with the
# closest one the command knows; exit status 2 for every usage error (unknown or missing flags,
# bad values, also those the library's validators refuse); the short flags; a model file given
# for its directory; --device cuda without a usable GPU said in plain words.
# Usage: usage_cli_test.sh TFM_BINARY FIXTURES_DIR
set -u
tfm=$1
fx=$2
source "$(dirname "$0")/lib.sh"
d=$fx/convert/seed004

# expect_usage STATUS SUBSTRING ARGS...: `tfm ARGS` exits STATUS, says SUBSTRING on stderr and
# nothing on stdout.
expect_usage() {
  local status=$1 want=$2
  shift 2
  expect_status "$status" "$want" "" "$@"
}

expect_usage 2 "unknown command 'tranlsate'; did you mean 'translate'?" tranlsate --model "$d"
expect_usage 2 "unknown command 'serv'; did you mean 'serve'?" serv
expect_usage 2 "unknown command 'frobnicate' (the commands: " frobnicate
expect_usage 2 "a command is required" # no command at all
expect_usage 2 "tfm translate: unknown flag '--beam'; did you mean --beam-size?" \
  translate --beam 4 --model "$d"
expect_usage 2 "tfm translate: unknown flag '--beam'; did you mean --beam-size?" \
  translate --model "$d" --beam=4
expect_usage 2 "tfm translate: unknown flag '--modle'; did you mean --model?" translate --modle "$d"
# Too many flags begin so: no guess.
expect_usage 2 "tfm train: unknown flag '--max' (tfm train --help lists its flags)" train --model "$tmp/m" --max 3
expect_usage 2 "tfm score: unknown flag '--n-best'" score --model "$d" --trg x --n-best 2
expect_usage 2 "tfm: unknown flag '--verison'; did you mean --version?" --verison
expect_usage 2 "tfm translate: --model is required" translate
expect_usage 2 "tfm translate: The following argument was not expected: stray" \
  translate --model "$d" stray
expect_usage 2 "tfm train: --precision: int4 not in" train --model "$tmp/m" --precision int4
expect_usage 2 "Could not convert" translate --model "$d" --beam-size four
# Values the library's validators refuse are usage errors as well.
expect_usage 2 "--beam-size must be at least 1 (got 0)" translate --model "$d" --beam-size 0 --ids
expect_usage 2 "unknown compute type 'fp8'" translate --model "$d" --precision fp8 --ids
printf 'bogus_option: 1\n' >"$tmp/cfg.yaml"
printf 'max_update: 1\n' >"$tmp/cfg2.yaml"
expect_usage 2 "unknown option \"bogus-option\" (see tfm train --help)" train --model "$tmp/m" --config "$tmp/cfg.yaml"
expect_usage 2 "unknown option \"max-update\"; did you mean \"max-updates\"?" \
  train --model "$tmp/m" --config "$tmp/cfg2.yaml"
# Help and the version: stdout, status 0.
"$tfm" --help >"$tmp/out" 2>&1 && grep -q "Subcommands:" "$tmp/out" && ok || bad "tfm --help"
"$tfm" translate -h >"$tmp/out" 2>&1 && grep -q -- "-b,--beam-size" "$tmp/out" && ok ||
  bad "tfm translate -h lacks -b,--beam-size: $(cat "$tmp/out")"

# Short flags: -m, -i, -o, -b as --model, --input, --output, --beam-size.
"$tfm" translate --model "$d" --ids --beam-size 2 --input "$d/src.ids" --output "$tmp/long" 2>"$tmp/err" ||
  bad "long flags: $(cat "$tmp/err")"
"$tfm" translate -m "$d" --ids -b 2 -i "$d/src.ids" -o "$tmp/short" 2>"$tmp/err" ||
  bad "short flags: $(cat "$tmp/err")"
[[ -s $tmp/long ]] && cmp -s "$tmp/long" "$tmp/short" && ok || bad "short flags translate otherwise"
"$tfm" info -m "$d" >"$tmp/info" 2>&1 && grep -q "parameters.total" "$tmp/info" && ok ||
  bad "info -m: $(cat "$tmp/info")"

# A model's file given for its directory.
expect_usage 2 "$d/model.safetensors is a file, not a model directory: give the directory that holds model.safetensors and config.json ($d)" \
  info --model "$d/model.safetensors"
expect_usage 2 "is a file, not a model directory" translate --model "$d/config.json" --ids
expect_usage 2 "is a file, not a model directory" train --model "$d/model.safetensors" \
  --train-tsv /dev/null --vocab /dev/null
expect_usage 1 "model directory $tmp/nowhere does not exist" info --model "$tmp/nowhere"

# --device cuda without a usable GPU: the reason in plain words, not the CUDA runtime's sentence.
if printf '3 4\n' | "$tfm" translate --model "$d" --ids --device cuda >/dev/null 2>"$tmp/err"; then
  echo "usage_cli: a GPU is usable here; the no-GPU message is checked where there is none"
else
  if grep -Eq "this build has no CUDA backend|no CUDA backend: libtfm_cuda.so not found \(looked in" "$tmp/err" ||
    grep -Eq "no NVIDIA driver is installed|finds no GPU|is older than the CUDA|could not start|stub|kernel module|busy" "$tmp/err"; then
    ok
  else
    bad "--device cuda without a GPU: $(cat "$tmp/err")"
  fi
  grep -q "is insufficient for CUDA runtime" "$tmp/err" && bad "the runtime's words: $(cat "$tmp/err")" || ok
fi

finish usage_cli
