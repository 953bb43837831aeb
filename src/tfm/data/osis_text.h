// The text of one verse of an OSIS Bible module (the raw entry text `mod2imp` prints for a SWORD
// module in OSIS markup; sword_imp.h): the words a reader of the printed verse reads as the verse,
// without notes, headings or markup.
//
// What each element's text is (decided on the elements that occur in Debian's sword-text-sparv
// and sword-text-web; docs/cli.md, "tfm prepare-bible", says the same for users):
//   - verse text, the tags themselves removed: `w` (a word or phrase with its Strong's number),
//     `transChange` (words the translator added, printed in italics), `q` (a quotation; the
//     quotation marks are in the text), `l` `lg` `lb` (poetry lines, groups, line breaks), `list`
//     `item`, `p`, `divineName`, `name`, `hi`, `foreign`, `seg`, `abbr`, `mentioned`,
//     `inscription`, `salute`, `signed`, `closer`, `reference` outside notes, `table` `row`
//     `cell`, and `title canonical="true"` (a Psalm's superscription, verse 1 of the Hebrew and
//     Spanish numbering: "A Psalm by David, when he fled from Absalom his son.");
//   - not verse text, removed with everything inside: `note` (footnotes and cross-references,
//     with their `reference`, `catchWord`, `rdg`), `title` without canonical="true" (section
//     headings, book titles), `speaker` (the Song of Solomon's "Beloved", "Lover"), `head`,
//     `figure`, and a `div` of a non-scripture type (introduction, glossary, front, back,
//     colophon, preface, titlePage, ...), in container form or as a milestone pair
//     (`<div sID="x" type="glossary"/>` ... `<div eID="x" type="glossary"/>`: the World English
//     Bible's glossary sits in the entry of Revelation 22:21);
//   - empty markers: `milestone`, `chapter`, `verse`, `div` of other types (`x-p` paragraphs,
//     book, the `x-preverse` milestones around a Psalm's superscription), `lb`, `pb`, `cb`;
//   - any other element: its text is kept, and it is counted in OsisStats::unknown so a caller can
//     say so.
// Spacing: whitespace runs become one space, the ends are trimmed. Every tag except the inline
// ones (`transChange`, `divineName`, `name`, `hi`, `foreign`, `seg`, `abbr`, `mentioned`,
// `reference`, `rdg`, `catchWord`, `a`, `index`) is a word boundary: where removing it joins two
// characters, a space goes between them unless the first opens (“ ‘ ( [ ¿ ¡ « or a dash) or the
// second closes (. , ; : ! ? ) ] ” ’ » … or a dash). So a note between two words leaves a space
// ("God</w><note>…</note><w>created" is "God created", where `diatheke -f plain` prints
// "Godcreated"), and so does a `w` element next to added words ("allí</w><transChange>también"
// is "allí también").
// Entities: &amp; &lt; &gt; &quot; &apos; and numeric ones; `<!-- -->` comments are skipped.
//
// Errors (tfm::Error, the position as the character offset in the entry; the caller adds the
// file, line and key): an unterminated or malformed tag, an unknown entity, an end tag that closes
// another element than the innermost one, and a removed element (note, heading, ...) that the
// entry does not both open and close. An end tag of a kept element whose start is not in the
// entry is fine: SWORD splits a list or a poem that spans verses between their entries.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace tfm {

struct OsisStats {
  std::map<std::string, int64_t> elements;  // start and empty tags seen, by element name
  std::map<std::string, int64_t> removed;   // elements removed with their text, by name
  std::map<std::string, int64_t> unknown;   // elements not in the table above (text kept)
};

// The verse text of `osis` (valid UTF-8), counting what it saw into `stats`.
std::string osis_verse_text(std::string_view osis, OsisStats& stats);

}  // namespace tfm
