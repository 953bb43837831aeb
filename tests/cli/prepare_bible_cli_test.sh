#!/usr/bin/env bash
# End-to-end checks of `tfm prepare-bible`: the files it writes from two small IMP exports, their
# agreement with its report, the split by books, errors with their line, and (when Debian's
# sword-text-sparv, sword-text-web and libsword-utils are installed) the figures on the real
# modules that docs/cli.md quotes.
# Usage: prepare_bible_cli_test.sh TFM_BINARY
set -u
tfm=$1
source "$(dirname "$0")/lib.sh"

# Two modules as mod2imp prints them: Genesis (train), Ruth (valid), Mark (test); the English one
# has a book the Spanish lacks, a footnote between two words, a heading, a speaker and a verse the
# Spanish leaves out.
cat >"$tmp/es.imp" <<'IMP'
$$$[ Module Heading ]

$$$Genesis 0:0
<div canonical="true" osisID="Gen" sID="gen2" type="book"/> <title level="1" type="main">Génesis</title>
$$$Genesis 1:1
<w lemma="strong:H7225">EN el principio</w> <w lemma="strong:H1254">crió</w> <w lemma="strong:H0430">Dios</w> los cielos.
$$$Genesis 1:2
<w>Y la tierra</w> <w>estaba</w><transChange type="added">desordenada</transChange><w>y vacía</w>.
$$$Ruth 1:1
Y ACONTECIÓ en los días que gobernaban los jueces.
$$$Mark 1:1
<w>Principio</w> del evangelio de Jesucristo.
$$$Mark 1:2
Como está escrito en Isaías el profeta.
IMP
cat >"$tmp/en.imp" <<'IMP'
$$$[ Module Heading ]

$$$Genesis 1:1
<w lemma="strong:H0430">In</w> the beginning, <w>God</w><note placement="foot"><reference type="annotateRef">1:1 </reference>Elohim</note><w>created</w> the heavens.
$$$Genesis 1:2
<title>The earth</title><w>The earth</w> was formless and empty.
$$$Ruth 1:1
<speaker>Narrator</speaker> In the days when the judges judged.
$$$Tobit 1:1
The book of the words of Tobit.
$$$Mark 1:1
The beginning of the Good News of Jesus Christ.
$$$Mark 1:2
As it is written in the prophets.
$$$Mark 1:3
The voice of one crying in the wilderness.
IMP

run_small() {
  "$tfm" prepare-bible --src "$tmp/es.imp" --trg "$tmp/en.imp" --src-lang es --trg-lang en \
    --test-books Mark --valid-books Ruth "$@"
}
if run_small --out "$tmp/out" >"$tmp/log" 2>"$tmp/err"; then
  for s in train valid test; do
    for l in es en keys; do [[ -f $tmp/out/$s.$l ]] && ok || bad "missing $s.$l"; done
  done
  [[ $(cat "$tmp/out/train.en") == $'In the beginning, God created the heavens.\nThe earth was formless and empty.' ]] &&
    ok || bad "train.en: $(cat "$tmp/out/train.en")"
  [[ $(cat "$tmp/out/train.es") == $'En el principio crió Dios los cielos.\nY la tierra estaba desordenada y vacía.' ]] &&
    ok || bad "train.es: $(cat "$tmp/out/train.es")"
  [[ $(cat "$tmp/out/train.keys") == $'Genesis 1:1\nGenesis 1:2' ]] && ok || bad "train.keys"
  [[ $(cat "$tmp/out/valid.en") == "In the days when the judges judged." ]] && ok ||
    bad "valid.en: $(cat "$tmp/out/valid.en")"
  [[ $(cat "$tmp/out/test.keys") == $'Mark 1:1\nMark 1:2' ]] && ok || bad "test.keys"
  grep -qF "pairs: 5; dropped: 0 source verses and 2 target verses whose key the other module lacks" \
    "$tmp/log" && ok || bad "alignment summary: $(cat "$tmp/log")"
  grep -qF "books in the target only: Tobit" "$tmp/log" && ok || bad "Tobit not reported"
  grep -qF "split by books: train 2, valid 1, test 2" "$tmp/log" && ok || bad "split: $(cat "$tmp/log")"
  grep -qF "drop caps: 2 chapter-initial words re-cased" "$tmp/log" && ok ||
    bad "drop caps: $(cat "$tmp/log")"
  # The same inputs, the same files.
  run_small --out "$tmp/out2" >/dev/null 2>&1
  diff -r "$tmp/out" "$tmp/out2" >/dev/null && ok || bad "a second run wrote other files"
else
  bad "prepare-bible failed: $(cat "$tmp/err")"
fi

expect_error "no verse of a book 'Amos' is in both modules; the books are: Genesis, Ruth, Mark" \
  prepare-bible --src "$tmp/es.imp" --trg "$tmp/en.imp" --src-lang es --trg-lang en --out "$tmp/x"
expect_error "mod2imp MODULE > FILE" prepare-bible --src "$tmp/nonexistent.imp" \
  --trg "$tmp/en.imp" --src-lang es --trg-lang en --out "$tmp/x"
printf '$$$Genesis 1:1\nIn the beginning\n$$$Genesis 1:2\nGod<note>a note never closed\n' >"$tmp/bad.imp"
expect_error "bad.imp:3 (Genesis 1:2): <note> is not closed" prepare-bible --src "$tmp/bad.imp" \
  --trg "$tmp/en.imp" --src-lang es --trg-lang en --out "$tmp/x"
printf 'Genesis 1:1 In the beginning\n' >"$tmp/plain.txt"
expect_error "plain.txt:1: text before the first '\$\$\$KEY' line" prepare-bible \
  --src "$tmp/plain.txt" --trg "$tmp/en.imp" --src-lang es --trg-lang en --out "$tmp/x"
[[ ! -e $tmp/x ]] && ok || bad "a failed run created its output directory"

# The real modules, when installed: the figures docs/cli.md quotes.
if command -v mod2imp >/dev/null && mod2imp spaRV1909eb 2>/dev/null | head -c 1 | grep -q . &&
  mod2imp engWEB2015eb 2>/dev/null | head -c 1 | grep -q .; then
  mod2imp spaRV1909eb >"$tmp/sparv.imp"
  mod2imp engWEB2015eb >"$tmp/web.imp"
  if "$tfm" prepare-bible --src "$tmp/sparv.imp" --trg "$tmp/web.imp" --src-lang es \
    --trg-lang en --out "$tmp/bible" >"$tmp/log" 2>"$tmp/err"; then
    n=$(cat "$tmp"/bible/{train,valid,test}.es | wc -l)
    ((n > 30500 && n < 31100)) && ok || bad "real modules: $n pairs"
    [[ $(wc -l <"$tmp/bible/test.es") -eq $(grep -cE '^(Mark|Amos) ' "$tmp/bible/test.keys") ]] &&
      ok || bad "real test split holds other books"
    grep -qE '^(Mark|Amos|Ruth|Joel|Philippians|James) ' "$tmp/bible/train.keys" &&
      bad "a held-out book in train" || ok
    grep -qE '[<>]|&[a-z]+;' "$tmp"/bible/*.es "$tmp"/bible/*.en && bad "markup left" || ok
    [[ $(head -1 "$tmp/bible/train.en") == "In the beginning, God created the heavens and the earth." ]] &&
      ok || bad "Genesis 1:1: $(head -1 "$tmp/bible/train.en")"
    [[ $(head -1 "$tmp/bible/train.es") == "En el principio crió Dios los cielos y la tierra." ]] &&
      ok || bad "Genesis 1:1 es: $(head -1 "$tmp/bible/train.es")"
    grep -qF "Glossary" "$tmp/bible/train.en" && bad "the WEB glossary is in a verse" || ok
    grep -qF "Numbers 13 (33 of 33)" "$tmp/log" && ok || bad "Numbers 13 not dropped: $(cat "$tmp/log")"
  else
    bad "prepare-bible on the real modules failed: $(cat "$tmp/err")"
  fi
fi

finish "prepare-bible cli"
