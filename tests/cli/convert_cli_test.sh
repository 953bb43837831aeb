#!/usr/bin/env bash
# tfm convert --from transformers, then tfm info / translate / generate on the converted models,
# against the committed fixtures of tools/make_hf_fixtures.py (Transformers' generate() outputs):
# the model's own search settings (its generation config) by default, flags over them, errors;
# text to text with a tokenizer (tools/make_hf_text_fixtures.py), and tfm serve with NLLB.
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
expect_error_input "--repetition-penalty: a converted model decodes by generate()'s rules" \
  "4 5 6 0" translate --model "$tmp/marian_shared" --ids --repetition-penalty 1.5
# --no-repeat-ngram-size over the generation config's: 1 leaves no token twice in a line (the
# default outputs repeat some).
repeats() { awk '{ split("", seen); for (i = 1; i <= NF; i++) if (seen[$i]++) { n++; break } }
                 END { print n + 0 }' "$1"; }
[[ $(repeats "$tmp/marian_shared.out") -gt 0 ]] && ok || bad "marian_shared's outputs repeat no token"
"$tfm" translate --model "$tmp/marian_shared" --ids --no-repeat-ngram-size 1 \
  <"$tmp/marian_shared.src" >"$tmp/norep" 2>"$tmp/err" && [[ $(repeats "$tmp/norep") -eq 0 ]] &&
  ok || bad "--no-repeat-ngram-size 1 repeats a token: $(cat "$tmp/err")"

# With a tokenizer (tools/make_hf_text_fixtures.py: model/ and a tokenizer fixture's files make
# the Transformers directory): text in, Transformers' batch_decode(generate(...)) text out, the
# languages by flag; then tfm serve with the NLLB model, the languages per request.
text=$2/hf_text
for name in marian nllb; do
  ref=$text/$name/reference.json
  hf=$tmp/${name}_hf
  mkdir -p "$hf" && cp "$text/$name/model/"* "$hf/"
  tok=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["tokenizer"])' "$ref")
  cp "$2/hf_tokenizers/$tok/"* "$hf/" && rm "$hf/reference.json"
  "$tfm" convert --from transformers "$hf" -o "$tmp/${name}_text" >/dev/null 2>"$tmp/err" &&
    [[ -f $tmp/${name}_text/tfm_tokenizer.json ]] && ok || bad "convert $name: $(cat "$tmp/err")"
  "$tfm" info --model "$tmp/${name}_text" >"$tmp/info" 2>&1
  grep -q "^tokenizer.source .*$name" "$tmp/info" && ok || bad "tfm info $name: $(cat "$tmp/info")"
  # Each case: its flags, its sources and Transformers' outputs, one a line.
  n=$(python3 - "$ref" "$tmp/$name.case" <<'PY'
import json, sys
ref, prefix = sys.argv[1:]
cases = json.load(open(ref, encoding="utf-8"))["cases"]
for i, c in enumerate(cases):
    flags = []
    if c["src_lang"]: flags += ["--source-lang", c["src_lang"]]
    if c["tgt_lang"]: flags += ["--target-lang", c["tgt_lang"]]
    if c["num_beams"]: flags += ["--beam-size", str(c["num_beams"])]
    for ext, lines in (("flags", flags), ("src", c["sources"]), ("want", c["outputs"])):
        with open(f"{prefix}{i}.{ext}", "w", encoding="utf-8") as f:
            f.write("".join(l + "\n" for l in lines))
print(len(cases))
PY
  )
  for ((i = 0; i < n; i++)); do
    mapfile -t flags <"$tmp/$name.case$i.flags"
    "$tfm" translate --model "$tmp/${name}_text" "${flags[@]}" -i "$tmp/$name.case$i.src" \
      -o "$tmp/$name.case$i.out" 2>"$tmp/err" && cmp -s "$tmp/$name.case$i.out" "$tmp/$name.case$i.want" &&
      ok || bad "$name text, ${flags[*]:-defaults}: differs from Transformers: $(cat "$tmp/err")
$(diff "$tmp/$name.case$i.out" "$tmp/$name.case$i.want" | head -6)"
  done
done
expect_error_input 'unknown language code "xxx_Latn"' "Ein Hund" translate --model "$tmp/nllb_text" \
  --source-lang xxx_Latn
python3 "$(dirname "$0")/convert_serve_test.py" "$tfm" "$tmp/nllb_text" "$text/nllb/reference.json" \
  && ok || bad "tfm serve with the converted NLLB model"

echo "convert_cli: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
