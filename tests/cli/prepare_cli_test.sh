#!/usr/bin/env bash
# End-to-end checks of `tfm prepare-ding`: the files it writes from a small dictionary, their
# agreement with its report, split disjointness, reproducibility, errors, and (when the Debian
# package trans-de-en is installed) the figures on the real dictionary.
# Usage: prepare_cli_test.sh TFM_BINARY
set -u
tfm=$1
source "$(dirname "$0")/lib.sh"

# 10 entries: 4 phrase entries giving 6 pairs, 5 sentences, 1 that cleans to nothing.
cat >"$tmp/dict" <<'DICT'
# a comment :: with separator
Haus {n} | Häuser {pl} :: house | houses
Auto {n}; Wagen {m} :: car; automobile
Baum {m} [bot.] :: tree
Katze {f} (Tier) :: cat (animal)
{f} [ugs.] :: nothing left
Ich habe keine Zeit. :: I have no time.
Wo ist der Bahnhof? :: Where is the station?
Das ist ja toll! :: That is great!
Er kommt morgen früh. :: He is coming tomorrow morning.
Sie liest gern Bücher. :: She likes reading books.
DICT

if "$tfm" prepare-ding --input "$tmp/dict" --out "$tmp/out" --valid 2 --test 2 >"$tmp/log" 2>"$tmp/err"; then
  for s in train valid test; do
    for l in de en; do [[ -f $tmp/out/$s.$l ]] && ok || bad "missing $s.$l"; done
    [[ $(wc -l <"$tmp/out/$s.de") -eq $(wc -l <"$tmp/out/$s.en") ]] && ok || bad "$s.de/.en differ in length"
  done
  # 11 unique pairs: Haus/house, Häuser/houses, Auto/car, Wagen/automobile, Baum, Katze, 5 sentences.
  total=$(cat "$tmp"/out/{train,valid,test}.de | wc -l)
  [[ $total -eq 11 ]] && ok || bad "expected 11 pairs in all, got $total"
  [[ $(wc -l <"$tmp/out/valid.de") -eq 2 && $(wc -l <"$tmp/out/test.de") -eq 2 ]] && ok ||
    bad "valid/test sizes: $(wc -l <"$tmp/out/valid.de") $(wc -l <"$tmp/out/test.de")"
  # --sentence-share 0.8 of 2 = 2: valid and test are all sentences.
  grep -qvE '[.!?]$' "$tmp/out/valid.de" "$tmp/out/test.de" && bad "a phrase in valid/test" || ok
  # No German text in two splits.
  dups=$(cat "$tmp"/out/{train,valid,test}.de | sort | uniq -d)
  [[ -z $dups ]] && ok || bad "German in two splits: $dups"
  grep -qxF $'Katze' "$tmp/out/train.de" && ok || bad "Katze (Tier) not cleaned to Katze"
  paste -d'|' "$tmp/out/train.de" "$tmp/out/train.en" | grep -qxF 'Wagen|automobile' && ok ||
    bad "synonym pair Wagen|automobile missing"
  grep -qF "1 with a side empty" "$tmp/log" && ok || bad "empty skip not reported: $(cat "$tmp/log")"
  grep -qF "train 7, valid 2 (2 sentences), test 2 (2 sentences)" "$tmp/log" && ok ||
    bad "split summary: $(cat "$tmp/log")"
  # Reproducible; another seed, another split.
  "$tfm" prepare-ding --input "$tmp/dict" --out "$tmp/out2" --valid 2 --test 2 >/dev/null 2>&1
  diff -r "$tmp/out" "$tmp/out2" >/dev/null && ok || bad "same seed, different files"
  # CRLF gives the same corpus.
  sed 's/$/\r/' "$tmp/dict" >"$tmp/dict_crlf"
  "$tfm" prepare-ding --input "$tmp/dict_crlf" --out "$tmp/out3" --valid 2 --test 2 >/dev/null 2>&1
  diff -r "$tmp/out" "$tmp/out3" >/dev/null && ok || bad "CRLF dictionary gives other files"
else
  bad "prepare-ding failed: $(cat "$tmp/err")"
fi

expect_error "apt-get install trans-de-en" prepare-ding --input "$tmp/nonexistent" --out "$tmp/x"
expect_error "$tmp/nonexistent" prepare-ding --input "$tmp/nonexistent" --out "$tmp/x"
[[ ! -e $tmp/x ]] && ok || bad "a failed run created its output directory"

# The real dictionary, when installed: the figures docs/cli.md quotes.
real=/usr/share/trans/de-en
if [[ -r $real ]]; then
  if "$tfm" prepare-ding --out "$tmp/ding" >"$tmp/log" 2>"$tmp/err"; then
    n=$(cat "$tmp"/ding/{train,valid,test}.de | wc -l)
    ((n > 380000 && n < 450000)) && ok || bad "real dictionary: $n pairs"
    [[ $(wc -l <"$tmp/ding/test.de") -eq 1000 ]] && ok || bad "real test size"
    s=$(grep -cE '[.!?]$' "$tmp/ding/test.de")
    ((s >= 800)) && ok || bad "real test: only $s sentences"
    # Duplicates within train are fine (several translations); across splits they are not.
    cross=$(sort -u "$tmp/ding/train.de" | cat - "$tmp/ding/valid.de" "$tmp/ding/test.de" | sort | uniq -d | wc -l)
    [[ $cross -eq 0 ]] && ok || bad "real dictionary: $cross German texts in two splits"
    grep -qE '\{|\}|\[|\]' "$tmp"/ding/{train,valid,test}.{de,en} && bad "annotations left" || ok
  else
    bad "prepare-ding on $real failed: $(cat "$tmp/err")"
  fi
fi

finish "prepare-ding cli"
