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

# expect_error_input SUBSTRING INPUT ARGS...: `tfm ARGS` with INPUT on stdin must exit non-zero,
# say SUBSTRING (a fixed string) on stderr, and write nothing to stdout.
expect_error_input() {
  local want=$1 input=$2
  shift 2
  if printf '%s\n' "$input" | "$tfm" "$@" >"$tmp/.stdout" 2>"$tmp/.stderr"; then
    bad "expected failure: tfm $* (stdout: $(cat "$tmp/.stdout"))"
  elif ! grep -qF -- "$want" "$tmp/.stderr"; then
    bad "tfm $*: stderr lacks '$want': $(cat "$tmp/.stderr")"
  elif [[ -s "$tmp/.stdout" ]]; then
    bad "tfm $*: wrote to stdout on error"
  else
    ok
  fi
}

# expect_error SUBSTRING ARGS...: the same with empty stdin.
expect_error() {
  local want=$1
  shift
  expect_error_input "$want" "" "$@"
}

# finish [NAME]: prints the tally; the script's exit status.
finish() {
  echo "${1:+$1: }$pass passed, $fail failed"
  [[ $fail -eq 0 ]]
}
