#!/usr/bin/env bash
# End-to-end checks of `tfm bench`: the --json contract of docs/design.md (last stdout line one
# JSON object with tokens_per_second, peak_rss_mb, mode, preset, threads, device), token counts
# that follow from the shapes, and errors.
# Usage: bench_cli_test.sh TFM_BINARY
set -u
tfm=$1
source "$(dirname "$0")/lib.sh"

check_json() {  # MODE TOKENS [PRECISION]: runs a tiny bench and checks its JSON line
  local mode=$1 tokens=$2 precision=${3:-fp32}
  if "$tfm" bench --preset tiny --mode "$mode" --threads 1 --repeat 2 --warmup 0 --batch-size 3 \
      --seq-len 4 --vocab 40 --no-ceiling --precision "$precision" --json >"$tmp/out" 2>"$tmp/err"; then
    /usr/bin/python3 - "$mode" "$tokens" "$tmp/out" "$precision" <<'PY' && ok || bad "bench $mode $precision JSON: $(cat "$tmp/out")"
import json, sys
mode, tokens, path, precision = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
j = json.loads(open(path).read().splitlines()[-1])
for k in ("tokens_per_second", "peak_rss_mb", "mode", "preset", "threads", "device", "mfu",
          "gflops", "times_s", "median_s"):
    assert k in j, k
assert j["mode"] == mode and j["preset"] == "tiny" and j["threads"] == 1 and j["device"] == "cpu"
assert j["tokens_per_repeat"] == tokens, j["tokens_per_repeat"]
assert j["precision"] == precision, j["precision"]
assert len(j["times_s"]) == 2 and sorted(j["times_s"])[0] <= j["median_s"] <= sorted(j["times_s"])[1]
assert abs(j["tokens_per_second"] - tokens / j["median_s"]) <= 1e-9 * j["tokens_per_second"]
PY
  else
    bad "bench $mode failed: $(cat "$tmp/err")"
  fi
}
check_json train 24  # 3 sentences x 4 source + 4 target tokens
check_json greedy 12 # 3 sentences x exactly 4 generated tokens
check_json beam 12
check_json train 24 bf16 # mixed-precision training
check_json greedy 12 bf16
check_json beam 12 int8

# Without --json: a human summary, no JSON.
if "$tfm" bench --preset tiny --mode greedy --threads 1 --repeat 1 --warmup 0 --batch-size 2 \
    --seq-len 3 --vocab 40 --no-ceiling >"$tmp/out" 2>"$tmp/err"; then
  grep -q "tokens/s" "$tmp/out" && ! grep -q "^{" "$tmp/out" && ok || bad "summary: $(cat "$tmp/out")"
else
  bad "bench summary failed: $(cat "$tmp/err")"
fi

expect_error "unknown preset \"huge\"" bench --preset huge --repeat 1
expect_error "--mode" bench --preset tiny --mode sample
expect_error "--preset is required" bench --mode train
expect_error "int8 is an inference compute type; training takes fp32, bf16 or auto" bench --preset tiny --mode train --precision int8 \
  --repeat 1 --no-ceiling
expect_error "--precision" bench --preset tiny --mode greedy --precision fp16 --repeat 1
expect_error "vocabulary must exceed" bench --preset tiny --vocab 2 --repeat 1 --no-ceiling

finish bench_cli
