#!/usr/bin/env bash
# tfm convert --from transformers, then tfm info / translate / generate on the converted models,
# against the committed fixtures of tools/make_hf_fixtures.py (Transformers' generate() outputs):
# the model's own search settings (its generation config) by default, flags over them, errors.
# Usage: convert_cli_test.sh TFM FIXTURES_DIR
set -uo pipefail
tfm=$1
fixtures=$2/hf
source "$(dirname "$0")/lib.sh"

# lines KEY FIELD FILE: reference.json's KEY list, one entry a line (FIELD of each, or the entry),
# ids space-separated.
lines() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
key, field, path = sys.argv[1:]
for x in json.load(open(path))[key]:
    print(" ".join(map(str, x[field] if field != "-" else x)))
PY
}

for name in marian_shared nllb bart mbart_cc25; do
  ref=$fixtures/$name/reference.json
  if "$tfm" convert --from transformers "$fixtures/$name/model" --out "$tmp/$name" >"$tmp/out" 2>&1 &&
    grep -q "^converted" "$tmp/out"; then ok; else bad "convert $name: $(cat "$tmp/out")"; fi
  lines sources - "$ref" >"$tmp/$name.src"
  lines beam tokens "$ref" >"$tmp/$name.beam"
  lines greedy tokens "$ref" >"$tmp/$name.greedy"
  # No search flag: the generation config's num_beams (4) and the rest of generate()'s settings.
  "$tfm" translate --model "$tmp/$name" --ids <"$tmp/$name.src" >"$tmp/$name.out" 2>"$tmp/err" &&
    cmp -s "$tmp/$name.out" "$tmp/$name.beam" && ok || bad "$name: beam 4 differs from generate(): $(cat "$tmp/err")"
  "$tfm" translate --model "$tmp/$name" --ids --beam-size 1 --input "$tmp/$name.src" \
    --output "$tmp/$name.out1" 2>"$tmp/err" && cmp -s "$tmp/$name.out1" "$tmp/$name.greedy" && ok ||
    bad "$name: greedy differs from generate(): $(cat "$tmp/err")"
done

"$tfm" info --model "$tmp/marian_shared" >"$tmp/info" 2>&1
for want in '"positions": "sinusoidal_marian"' '"activation": "silu"' "family marian" \
  "search_rule transformers" "tokenizer "; do
  grep -qF -- "$want" "$tmp/info" && ok || bad "tfm info lacks '$want': $(cat "$tmp/info")"
done

# GPT-2 through tfm generate: each prompt continued as generate() continues it.
ref=$fixtures/gpt2/reference.json
"$tfm" convert --from transformers "$fixtures/gpt2/model" --out "$tmp/gpt2" >/dev/null
lines sources - "$ref" >"$tmp/gpt2.src"
lines beam tokens "$ref" >"$tmp/gpt2.beam"
"$tfm" generate --model "$tmp/gpt2" --ids <"$tmp/gpt2.src" >"$tmp/gpt2.out" 2>"$tmp/err" &&
  cmp -s "$tmp/gpt2.out" "$tmp/gpt2.beam" && ok || bad "gpt2: generate differs: $(cat "$tmp/err")"

# --quantization: the precision the model runs in when --precision is not given.
"$tfm" convert --from transformers "$fixtures/bart/model" --out "$tmp/bart8" --quantization int8 \
  >/dev/null && "$tfm" info --model "$tmp/bart8" | grep -q "^compute_type int8" && ok ||
  bad "--quantization int8 not recorded"
"$tfm" translate --model "$tmp/bart8" --ids --profile <"$tmp/bart.src" >"$tmp/out" 2>"$tmp/err" &&
  [[ $(wc -l <"$tmp/out") -eq 20 ]] && ok || bad "int8 translate: $(cat "$tmp/err")"

# Errors, in the flags' and the converter's words.
expect_error "exists and is not empty" convert --from transformers "$fixtures/bart/model" \
  --out "$tmp/bart"
expect_error "not a directory" convert --from transformers "$tmp/none" --out "$tmp/x"
expect_error "no config.json" convert --from transformers "$tmp" --out "$tmp/x2"
expect_error_input "decodes greedily or by beam search" "4 5 6 0" translate \
  --model "$tmp/marian_shared" --ids --sampling-topk 5
expect_error_input "not a multilingual converted model" "4 5 6 0" translate \
  --model "$tmp/marian_shared" --ids --target-lang de
expect_error_input "--normalize: a converted model ranks as generate() does" "4 5 6 0" translate \
  --model "$tmp/marian_shared" --ids --normalize

echo "convert_cli: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
