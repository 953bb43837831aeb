#!/usr/bin/env bash
# docs/cli.md cannot drift from the binary: every subcommand `tfm --help` lists needs a
# `## tfm <name>` section, and every flag `tfm <name> --help` lists must appear in that section.
# Subcommands documented but not (yet) in the binary are not checked.
# Usage: cli_doc_test.sh TFM_BINARY DOCS_CLI_MD
set -u
tfm=$1
doc=$2
source "$(dirname "$0")/lib.sh"

[[ -r $doc ]] || { echo "FAIL: cannot read $doc"; exit 1; }
if ! "$tfm" --help >"$tmp/help" 2>&1; then
  echo "FAIL: tfm --help failed: $(cat "$tmp/help")"
  exit 1
fi
# CLI11 lists subcommands under "Subcommands:", one "  name  description" a line.
subs=$(awk '/^[A-Za-z].*:$/ { in_subs = ($0 == "Subcommands:"); next }
            in_subs && /^  [a-z]/ { print $1 }' "$tmp/help")
[[ -n $subs ]] && ok || bad "no subcommands found in tfm --help: $(cat "$tmp/help")"

for sub in $subs; do
  # The section: from "## tfm SUB" to the next "## " heading.
  awk -v h="## tfm $sub" '$0 == h { on = 1; next } /^## / { on = 0 } on' "$doc" >"$tmp/section"
  if ! grep -qxF "## tfm $sub" "$doc"; then
    bad "docs/cli.md has no '## tfm $sub' section"
    continue
  fi
  ok
  if ! "$tfm" "$sub" --help >"$tmp/sub_help" 2>&1; then
    bad "tfm $sub --help failed: $(cat "$tmp/sub_help")"
    continue
  fi
  # Flags are the option names that start a help line ("  -h,--help", "  --model TEXT ...").
  flags=$(grep -oE '^ +(-[A-Za-z], ?)?--[A-Za-z0-9][A-Za-z0-9-]*' "$tmp/sub_help" |
            grep -oE -- '--[A-Za-z0-9][A-Za-z0-9-]*' | grep -vx -- '--help' | sort -u)
  [[ -n $flags ]] && ok || bad "tfm $sub --help lists no flags: $(cat "$tmp/sub_help")"
  for flag in $flags; do
    if grep -qE -- "${flag}([^A-Za-z0-9-]|\$)" "$tmp/section"; then
      ok
    else
      bad "docs/cli.md section 'tfm $sub' does not mention $flag"
    fi
  done
  # Every section shows an example command.
  grep -qE "^tfm $sub( |\$)" "$tmp/section" && ok || bad "section 'tfm $sub' has no example"
done

finish "cli doc"
