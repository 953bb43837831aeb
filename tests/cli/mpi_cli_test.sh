#!/usr/bin/env bash
# Data-parallel `tfm train` under mpirun (docs/distributed.md): 2 ranks × update-freq 1 against
# 1 process × update-freq 2 (weights within a stated tolerance, losses and validation perplexity
# to the printed digits), reproducibility for a given rank count, exact resume after SIGKILL of
# the whole job, SIGKILL of one rank ending the job (bounded time), a stopped rank named by the
# abort, a stop request (SIGUSR1 to mpirun, SIGTERM to the ranks) saving a checkpoint with exit
# status 0, and resuming with another rank count; rank 0 alone writes TensorBoard events.
# Usage: mpi_cli_test.sh TFM_BINARY MPI_ENABLED(ON|OFF) [--only=faults]
set -u
tfm=$1
source "$(dirname "$0")/lib.sh"
if [[ ${2:-OFF} != ON ]]; then
  echo "mpi_cli: SKIPPED: tfm was built without MPI (scripts/setup.sh installs Open MPI)"
  exit 0
fi
if ! command -v mpirun >/dev/null; then
  echo "mpi_cli: SKIPPED: no mpirun (scripts/setup.sh installs openmpi-bin)"
  exit 0
fi
py=/usr/bin/python3
# Root in CI; ranks on one 2-core machine (oversubscribed when ranks × threads > cores); no
# shared-memory single-copy (ptrace is not allowed in every container).
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2
  --mca btl_vader_single_copy_mechanism none)
export TFM_COLLECTIVE_TIMEOUT=60

toy_corpus 17 240
head -n 40 "$tmp/train.de" >"$tmp/valid.de"
head -n 40 "$tmp/train.en" >"$tmp/valid.en"
"$tfm" vocab --input "$tmp/train.de" "$tmp/train.en" --size 40 --out "$tmp/voc" >/dev/null ||
  bad "tfm vocab failed"

# args DIR MAX_UPDATES UPDATE_FREQ [flags...]: `tfm train`'s arguments every run shares, in A.
args() {
  local dir=$1 max=$2 freq=$3
  shift 3
  A=(train --model "$dir" --train-src "$tmp/train.de" --train-trg "$tmp/train.en"
    --valid-src "$tmp/valid.de" --valid-trg "$tmp/valid.en" --vocab "$tmp/voc.model"
    --preset tiny --batch-tokens 150 --lr 3e-3 --warmup 10 --dropout 0.1 --seed 5 --threads 1
    --save-every 10 --valid-every 25 --log-every 1 --keep-last 0 --update-freq "$freq"
    --max-updates "$max" "$@")
}
train() { args "$@"; "$tfm" "${A[@]}"; }
train2() { args "$@"; "${mpi[@]}" "$tfm" "${A[@]}"; }
# rank_pids DIR: the pids of the ranks training DIR, as "pid rank" lines.
rank_pids() {
  local pid
  for pid in $(pgrep -f -- "^$tfm train --model $1 "); do
    echo "$pid $(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')"
  done
}
# wait_update DIR N: until DIR's log has update N (at most 30 s).
wait_update() {
  for _ in $(seq 1 600); do
    grep -q "| update $2 |" "$1/train.log" 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}
# ended JOB SECONDS: whether the background job ended within SECONDS (killed otherwise).
ended() {
  local i
  for ((i = 0; i < $2 * 10; ++i)); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
  return 1
}

# faults: a stop request saves a checkpoint and ends the job with status 0, under mpirun (SIGUSR1,
# which it forwards) and as srun or a scheduler delivers SIGTERM (to the ranks); a stopped rank
# is named by the abort. (Open MPI's mpirun turns a SIGTERM or SIGINT of its own into a kill of
# the job and exit status 1 whatever the ranks do: docs/distributed.md, "Stopping a run".)
faults() {
  local job status victim rank start sig
  for sig in USR1 TERM; do
    train2 "$tmp/stop_$sig" 100000 1 --save-every 0 >"$tmp/stop_$sig.out" 2>"$tmp/stop_$sig.err" &
    job=$!
    wait_update "$tmp/stop_$sig" 3 || bad "SIG$sig run: no update 3: $(tail -3 "$tmp/stop_$sig.err")"
    if [[ $sig == USR1 ]]; then
      pkill -USR1 -f -- "^mpirun .* --model $tmp/stop_$sig " || bad "no mpirun to signal"
    else
      for victim in $(rank_pids "$tmp/stop_$sig" | cut -d' ' -f1); do kill -TERM "$victim"; done
    fi
    ended "$job" 60 || { bad "SIG$sig: the job still runs 60 s later"; kill -KILL "$job"; }
    wait "$job"
    status=$?
    [[ $status == 0 ]] && ok || bad "SIG$sig: exit status $status: $(tail -5 "$tmp/stop_$sig.err")"
    grep -q "interrupted: checkpoint saved" "$tmp/stop_$sig.err" && ok ||
      bad "SIG$sig: no 'checkpoint saved': $(tail -5 "$tmp/stop_$sig.err")"
    [[ -n $(updates_in_state "$tmp/stop_$sig") ]] && ok || bad "SIG$sig: no checkpoint"
  done

  # A stopped rank (SIGSTOP): the others' collective times out, and the abort names it.
  TFM_COLLECTIVE_TIMEOUT=4 train2 "$tmp/s" 100000 1 --save-every 0 >/dev/null 2>"$tmp/s.err" &
  job=$!
  wait_update "$tmp/s" 3 || bad "SIGSTOP run: no update 3"
  read -r victim rank <<<"$(rank_pids "$tmp/s" | tail -1)"
  start=$SECONDS
  [[ -n $victim ]] && kill -STOP "$victim"
  ended "$job" 40 || { bad "the job still runs 40 s after a rank stopped"; kill -KILL "$job"; }
  [[ -n $victim ]] && kill -CONT "$victim" 2>/dev/null
  wait "$job"
  status=$?
  [[ $status -ne 0 ]] && ok || bad "the job exited 0 after a rank stopped"
  grep -q "no answer from rank $rank for 4 s" "$tmp/s.err" && ok ||
    bad "the abort does not name rank $rank: $(grep -i 'error' "$tmp/s.err" | head -3)"
  echo "mpi_cli: job ended $((SECONDS - start)) s after SIGSTOP of rank $rank: $(grep -m1 'no answer' "$tmp/s.err")"
  for _ in $(seq 1 100); do pgrep -f -- "--model $tmp/s " >/dev/null || break; sleep 0.1; done
}
if [[ ${3:-} == --only=faults ]]; then
  faults
  finish mpi_cli
  exit
fi
valid_ppl() { sed -n 's/^valid | update \([0-9]*\) | .* | ppl \([0-9.]*\) .*/\1 \2/p' "$1"; }
# max |a - b| / max |b| over the tensors of two model.safetensors, but the attention key biases:
# softmax ignores them (they add the same q·b to a row's every score), so their gradient is zero
# but for rounding noise, which Adam's normalised steps turn into a drift of their own for any
# change in summation order; the outputs do not depend on them.
weight_diff() {
  "$py" - "$1" "$2" <<'EOF'
import json, struct, sys
import numpy as np
def load(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    return {k: np.frombuffer(data[v["data_offsets"][0]:v["data_offsets"][1]], dtype=np.float32)
            for k, v in header.items() if k != "__metadata__"}
a, b = load(sys.argv[1]), load(sys.argv[2])
assert a.keys() == b.keys()
print(max(float(np.abs(a[k] - b[k]).max() / max(np.abs(b[k]).max(), 1e-30))
          for k in a if not k.endswith("k_proj.bias")))
EOF
}

# 1 process × 2 batches an update, and 2 ranks × 1: the same batches, dropout masks and
# normalisation; only the order of the gradient sums differs (docs/distributed.md).
train "$tmp/one" 50 2 >/dev/null 2>"$tmp/one.err" || bad "1-process run failed: $(tail -3 "$tmp/one.err")"
if train2 "$tmp/two" 50 1 --tensorboard "$tmp/two_tb" >"$tmp/two.out" 2>"$tmp/two.err"; then
  ok
else
  bad "2-rank run failed: $(tail -5 "$tmp/two.err")"
fi
# Rank 0 alone writes TensorBoard events: one file, holding what train.log says.
"$py" "$(dirname "$0")/check_tfevents.py" own "$tmp/two_tb" "$tmp/two/train.log" 1 >"$tmp/tb.check" 2>&1 &&
  ok || bad "2-rank TensorBoard events: $(cat "$tmp/tb.check")"
grep -q "data-parallel: 2 processes" "$tmp/two/train.log" && ok || bad "the log does not say 2 processes"
[[ $(grep -c "^model: " "$tmp/two.out") == 1 ]] && ok || bad "not one final line: $(cat "$tmp/two.out")"
[[ $(losses "$tmp/two/train.log" | wc -l) == 50 ]] && ok || bad "2-rank log lacks 50 updates"
# Losses are printed to 4 decimals; every one agrees.
[[ "$(losses "$tmp/one/train.log")" == "$(losses "$tmp/two/train.log")" ]] && ok ||
  bad "logged losses differ: $(diff <(losses "$tmp/one/train.log") <(losses "$tmp/two/train.log") | head -4)"
[[ -n "$(valid_ppl "$tmp/two/train.log")" && "$(valid_ppl "$tmp/one/train.log")" == "$(valid_ppl "$tmp/two/train.log")" ]] &&
  ok || bad "validation perplexity differs: $(valid_ppl "$tmp/one/train.log") vs $(valid_ppl "$tmp/two/train.log")"
d=$(weight_diff "$tmp/one/model.safetensors" "$tmp/two/model.safetensors")
echo "mpi_cli: 2 ranks vs 1 process after 50 updates: max relative weight difference $d"
awk -v d="$d" 'BEGIN { exit !(d < 1e-5) }' && ok || bad "weights differ by $d (tolerance 1e-5)"

# The reduction order is fixed: the same 2-rank run again gives the same bits.
train2 "$tmp/two_b" 50 1 >/dev/null 2>&1 || bad "second 2-rank run failed"
cmp -s "$tmp/two/model.safetensors" "$tmp/two_b/model.safetensors" && ok ||
  bad "two 2-rank runs differ"

# The gradient sum overlaps the backward pass in buckets of whole slots; how the buffer is cut
# and what is overlapped changes no bit. Buckets of ~2 KB (many), overlapped and not.
overlapped() { sed -n 's/.* | allreduce [0-9.]* ms\/update, \([0-9]*\)\/\([0-9]*\) buckets overlapped.*/\1 \2/p' "$1" | tail -1; }
TFM_BUCKET_MB=0.002 train2 "$tmp/small_buckets" 50 1 >/dev/null 2>&1 || bad "small-bucket run failed"
cmp -s "$tmp/two/model.safetensors" "$tmp/small_buckets/model.safetensors" && ok ||
  bad "small gradient buckets change the weights"
read -r early total <<<"$(overlapped "$tmp/small_buckets/train.log")"
# Every parameter gets its final gradient inside the pass (the shared embedding, used first,
# last of all), so every bucket is posted by the backward pass, none by finish().
[[ -n ${total:-} && $total -gt 5 && $early == "$total" ]] && ok ||
  bad "expected all of many buckets posted during the backward pass, got '${early:-}/${total:-}'"
TFM_BUCKET_MB=0.002 TFM_GRAD_OVERLAP=0 train2 "$tmp/no_overlap" 50 1 >/dev/null 2>&1 ||
  bad "run without overlap failed"
cmp -s "$tmp/two/model.safetensors" "$tmp/no_overlap/model.safetensors" && ok ||
  bad "TFM_GRAD_OVERLAP=0 changes the weights"
read -r early total <<<"$(overlapped "$tmp/no_overlap/train.log")"
[[ ${early:-x} == 0 && ${total:-0} -gt 5 ]] && ok || bad "TFM_GRAD_OVERLAP=0 still overlapped '${early:-}/${total:-}'"

# SIGKILL of the whole job mid-run, then the same command: the straight run's weights.
train2 "$tmp/k" 50 1 >/dev/null 2>&1 &
job=$!
for _ in $(seq 1 600); do
  grep -q "| update 23 |" "$tmp/k/train.log" 2>/dev/null && break
  sleep 0.05
done
pkill -KILL -f -- "--model $tmp/k " ; kill -KILL "$job" 2>/dev/null
wait "$job" 2>/dev/null
for _ in $(seq 1 100); do pgrep -f -- "--model $tmp/k " >/dev/null || break; sleep 0.1; done
saved=$(updates_in_state "$tmp/k")
[[ -n $saved && $saved -lt 50 ]] && ok || bad "the killed job saved update '$saved'"
train2 "$tmp/k" 50 1 >/dev/null 2>"$tmp/k.err" || bad "resume after SIGKILL failed: $(tail -5 "$tmp/k.err")"
cmp -s "$tmp/two/model.safetensors" "$tmp/k/model.safetensors" && ok ||
  bad "SIGKILL at update ${saved:-?} + resume: weights differ from the straight 2-rank run"

# SIGKILL of one rank: the job ends, with a message naming it, in bounded time.
train2 "$tmp/r" 100000 1 --save-every 0 >/dev/null 2>"$tmp/r.err" &
job=$!
for _ in $(seq 1 600); do
  grep -q "| update 3 |" "$tmp/r/train.log" 2>/dev/null && break
  sleep 0.05
done
victim=$(pgrep -f -- "^$tfm train --model $tmp/r " | tail -1)
start=$SECONDS
[[ -n $victim ]] && kill -KILL "$victim"
for _ in $(seq 1 300); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$job" 2>/dev/null; then
  bad "the job still runs 30 s after one rank was killed"
  pkill -KILL -f -- "--model $tmp/r "; kill -KILL "$job"
else
  ok
fi
wait "$job" 2>/dev/null
status=$?
[[ $status -ne 0 ]] && ok || bad "the job exited 0 after a rank was killed"
grep -qiE "rank [0-9]|signal 9|killed" "$tmp/r.err" && ok || bad "no message naming the rank: $(tail -5 "$tmp/r.err")"
echo "mpi_cli: job ended $((SECONDS - start)) s after SIGKILL of rank pid $victim"
for _ in $(seq 1 100); do pgrep -f -- "--model $tmp/r " >/dev/null || break; sleep 0.1; done

faults

# Another rank count on resume works, goes on in the same batch stream, and says so.
cp -r "$tmp/two" "$tmp/w"
train "$tmp/w" 54 2 >/dev/null 2>"$tmp/w.err" || bad "1-process resume of a 2-rank run failed: $(tail -3 "$tmp/w.err")"
grep -q "the run so far trained in 2 process(es), this one in 1" "$tmp/w.err" && ok ||
  bad "no note on the process count: $(grep note "$tmp/w.err")"
[[ $(updates_in_state "$tmp/w") == 54 ]] && ok || bad "resume with 1 process did not reach 54"

finish mpi_cli
