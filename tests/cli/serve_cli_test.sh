#!/usr/bin/env bash
# tfm serve end to end (docs/serve.md): a tiny model trained here (seconds), then
# serve_cli_test.py starts servers on free loopback ports and checks the translations against
# tfm translate under concurrent clients, the LibreTranslate form, every error status, the
# metrics, and the drain on SIGTERM. Python's standard library is the client (no curl needed).
# Usage: serve_cli_test.sh TFM_BINARY
set -u
tfm=$1
source "$(dirname "$0")/lib.sh"

# A toy word-for-word corpus (awk's srand with a seed: deterministic) and its vocabulary.
toy_corpus 7 120
"$tfm" vocab --input "$tmp/train.de" "$tmp/train.en" --size 40 --out "$tmp/voc" >/dev/null ||
  bad "tfm vocab failed"
"$tfm" train --model "$tmp/m" --train-src "$tmp/train.de" --train-trg "$tmp/train.en" \
  --vocab "$tmp/voc.model" --preset tiny --batch-tokens 200 --max-updates 3 --log-every 1 \
  --save-every 0 --valid-every 0 --keep-last 0 --threads 1 --seed 4 >/dev/null 2>"$tmp/err" ||
  bad "train failed: $(cat "$tmp/err")"
[[ -s "$tmp/m/model.safetensors" ]] || { finish serve_cli; exit 1; }
# A decoder-only model of the target side, for POST /v1/generate.
"$tfm" train --decoder-only --model "$tmp/lm" --train-trg "$tmp/train.en" \
  --vocab "$tmp/voc.model" --preset tiny --batch-tokens 200 --max-updates 20 --lr 3e-3 \
  --warmup 5 --log-every 10 --save-every 0 --valid-every 0 --keep-last 0 --threads 1 --seed 4 \
  >/dev/null 2>"$tmp/err" || bad "decoder-only train failed: $(cat "$tmp/err")"

# Bad flags fail before serving: a model without a vocabulary, an address that is not local.
mkdir -p "$tmp/novocab" && cp "$tmp/m/config.json" "$tmp/m/model.safetensors" "$tmp/novocab/"
expect_error "has no SentencePiece vocabulary" serve --model "$tmp/novocab" --port 0
expect_error "cannot listen on 192.0.2.1:" serve --model "$tmp/m" --host 192.0.2.1 --port 0

python=${PYTHON:-python3}
if timeout 280 "$python" "$(dirname "$0")/serve_cli_test.py" "$tfm" "$tmp/m" "$tmp/train.de" "$tmp" "$tmp/lm"; then
  ok
else
  bad "serve_cli_test.py failed"
fi
finish serve_cli
