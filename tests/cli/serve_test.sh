#!/usr/bin/env bash
# The tfm serve tests (docs/serve.md): a tiny model and a decoder-only one trained here (seconds),
# then one of the Python scripts beside this one, each on servers it starts on free loopback
# ports (Python's standard library is the client; serve_lib.py is shared):
#   serve_cli_test.py      the API against tfm translate/generate, errors, metrics, the drain
#   serve_hostile_test.py  bombs, slow clients, pipelining, half-closes, signals, framing
#   serve_soak_test.py     all of that at once for a bounded time, /health and memory watched
#   serve_page_test.py     the translate page in Debian's chromium (skips, 77, without it)
#   serve_libretranslate_test.py  the real libretranslatepy client (skips, 77, without it)
# Usage: serve_test.sh TFM_BINARY [SCRIPT] (default serve_cli_test.py)
set -u
tfm=$1
script=${2:-serve_cli_test.py}
source "$(dirname "$0")/lib.sh"

# A toy word-for-word corpus (awk's srand with a seed: deterministic) and its vocabulary.
toy_corpus 7 120
"$tfm" vocab --input "$tmp/train.de" "$tmp/train.en" --size 40 --out "$tmp/voc" >/dev/null ||
  bad "tfm vocab failed"
"$tfm" train --model "$tmp/m" --train-src "$tmp/train.de" --train-trg "$tmp/train.en" \
  --vocab "$tmp/voc.model" --preset tiny --batch-tokens 200 --max-updates 3 --log-every 1 \
  --save-every 0 --valid-every 0 --keep-last 0 --threads 1 --seed 4 >/dev/null 2>"$tmp/err" ||
  bad "train failed: $(cat "$tmp/err")"
[[ -s "$tmp/m/model.safetensors" ]] || { finish serve; exit 1; }
# A decoder-only model of the target side, for POST /v1/generate and the page's prompt box.
"$tfm" train --decoder-only --model "$tmp/lm" --train-trg "$tmp/train.en" \
  --vocab "$tmp/voc.model" --preset tiny --batch-tokens 200 --max-updates 20 --lr 3e-3 \
  --warmup 5 --log-every 10 --save-every 0 --valid-every 0 --keep-last 0 --threads 1 --seed 4 \
  >/dev/null 2>"$tmp/err" || bad "decoder-only train failed: $(cat "$tmp/err")"

if [[ "$script" == serve_cli_test.py ]]; then
  # Bad flags fail before serving: a model without a vocabulary, an address that is not local,
  # a language without its pair, an origin that is not one.
  mkdir -p "$tmp/novocab" && cp "$tmp/m/config.json" "$tmp/m/model.safetensors" "$tmp/novocab/"
  expect_error "has no SentencePiece vocabulary" serve --model "$tmp/novocab" --port 0
  expect_error "cannot listen on 192.0.2.1:" serve --model "$tmp/m" --host 192.0.2.1 --port 0
  expect_error "--source-lang and --target-lang go together" serve --model "$tmp/m" --port 0 \
    --source-lang de
  expect_error "--cors 'example.test' is not an origin" serve --model "$tmp/m" --port 0 \
    --cors example.test
  expect_error "--read-timeout-ms must be between 1 and" serve --model "$tmp/m" --port 0 \
    --read-timeout-ms 0
fi

python=${PYTHON:-python3}
timeout 280 "$python" "$(dirname "$0")/$script" "$tfm" "$tmp/m" "$tmp/train.de" "$tmp" "$tmp/lm"
rc=$?
if [[ $rc -eq 77 ]]; then
  finish "${script%.py}"
  exit 77
fi
[[ $rc -eq 0 ]] && ok || bad "$script failed (exit $rc)"
finish "${script%.py}"
