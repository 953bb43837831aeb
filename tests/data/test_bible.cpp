// The Bible corpus reader: IMP files (sword_imp.h), modules (bible_module.h), the alignment of
// two modules (bible_align.h) and the split by books (bible_split.h), on small IMP texts written
// here in the shape `mod2imp` gives the Debian modules.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/test_util.h"
#include "tfm/data/bible_align.h"
#include "tfm/data/bible_module.h"
#include "tfm/data/bible_split.h"
#include "tfm/data/sword_imp.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;
using tfm::testing::error_of;

BibleModule module_of(const std::string& imp, const std::string& name = "m.imp") {
  std::istringstream in(imp);
  return parse_bible_module(in, name);
}

std::string texts(const std::vector<BibleVerse>& verses) {
  std::string out;
  for (const BibleVerse& v : verses) out += v.key.str() + "=" + v.text + "|";
  return out;
}

// ---- IMP files ----

TEST(SwordImp, EntriesKeysAndLines) {
  std::istringstream in(
      "\xEF\xBB\xBF$$$[ Module Heading ]\r\n"
      "\n"
      "$$$Genesis 1:1\r\n"
      "<w>In</w> the beginning\n"
      "$$$Revelation of John 22:21\n"
      "grace\n"
      "and more\n"
      "\n");
  ImpStats stats;
  const std::vector<ImpEntry> e = parse_imp(in, "x.imp", stats);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].key, "[ Module Heading ]");
  EXPECT_EQ(e[0].text, "");
  EXPECT_EQ(e[1].key, "Genesis 1:1");
  EXPECT_EQ(e[1].text, "<w>In</w> the beginning");
  EXPECT_EQ(e[1].line, 3);
  EXPECT_EQ(e[2].text, "grace\nand more");
  EXPECT_EQ(e[2].line, 5);
  EXPECT_EQ(stats.lines, 8);
  EXPECT_EQ(stats.entries, 3);
}

TEST(SwordImp, MalformedFilesAreErrorsWithTheLine) {
  auto parse = [](const std::string& s) {
    return error_of([&] {
      std::istringstream in(s);
      ImpStats stats;
      parse_imp(in, "bad.imp", stats);
    });
  };
  EXPECT_NE(parse("\nGenesis 1:1 In the beginning\n$$$Genesis 1:1\n")
                .find("bad.imp:2: text before "
                      "the first '$$$KEY'"),
            std::string::npos);
  EXPECT_NE(parse("$$$Genesis 1:1\nx\n$$$  \ny\n").find("bad.imp:3: a '$$$' line without a key"),
            std::string::npos);
  EXPECT_EQ(parse(""), "");
}

TEST(SwordImp, VerseKeys) {
  EXPECT_EQ(*parse_verse_key("Genesis 1:1"), (VerseKey{"Genesis", 1, 1}));
  EXPECT_EQ(*parse_verse_key("Esther (Greek) 10:3"), (VerseKey{"Esther (Greek)", 10, 3}));
  EXPECT_EQ(*parse_verse_key("Revelation of John 22:21 "),
            (VerseKey{"Revelation of John", 22, 21}));
  EXPECT_EQ(*parse_verse_key("Psalms 0:0"), (VerseKey{"Psalms", 0, 0}));
  EXPECT_EQ(parse_verse_key("[ Testament 2 Heading ]"), std::nullopt);
  EXPECT_EQ(parse_verse_key("Genesis 1:1").value().str(), "Genesis 1:1");
  for (const char* bad :
       {"Genesis", "Genesis 1", "Genesis a:1", "Genesis 1:", "1:1", "Genesis 1:-1", "abbr: Gen"}) {
    EXPECT_NE(error_of([&] { parse_verse_key(bad); }).find("is not a Bible verse"),
              std::string::npos)
        << bad;
  }
}

// ---- Modules ----

TEST(BibleModule, VersesWithoutHeadingsAndPrefaces) {
  const BibleModule m = module_of(
      "$$$[ Module Heading ]\n"
      "\n"
      "$$$Genesis 0:0\n"
      "<div sID=\"a\" type=\"book\"/><title type=\"main\">Genesis</title>\n"
      "$$$Genesis 1:0\n"
      "<chapter n=\"1\" sID=\"Gen.1\"/>\n"
      "$$$Genesis 1:1\n"
      "In <w>the beginning</w>, God<note>Elohim</note><w>created</w>\n"
      "the heavens.\n"
      "$$$Genesis 1:2\n"
      "<note>only a note</note>\n"
      "$$$Exodus 1:1\n"
      "Now these are the names\n");
  EXPECT_EQ(texts(m.verses),
            "Genesis 1:1=In the beginning, God created the heavens.|Genesis 1:2=|"
            "Exodus 1:1=Now these are the names|");
  EXPECT_EQ(m.verses[0].line, 7);
  EXPECT_EQ(m.books, (std::vector<std::string>{"Genesis", "Exodus"}));
  EXPECT_EQ(m.stats.headings, 1);
  EXPECT_EQ(m.stats.prefaces, 2);
  EXPECT_EQ(m.stats.verses, 3);
  EXPECT_EQ(m.stats.empty, 1);
  EXPECT_EQ(m.stats.markup.removed.at("note"), 2);
  EXPECT_FALSE(m.stats.drop_caps);
}

TEST(BibleModule, ErrorsNameTheFileTheLineAndTheVerse) {
  EXPECT_NE(error_of([] {
              module_of("$$$Genesis 1:1\na\n$$$Genesis 1\nb\n", "es.imp");
            }).find("es.imp:3: the key 'Genesis 1' is not a Bible verse"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              module_of("$$$Genesis 1:1\na\n$$$Genesis 1:1\nb\n", "es.imp");
            }).find("es.imp:3: Genesis 1:1 occurs twice (also at line 1)"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              module_of("$$$Genesis 1:1\na\n$$$Genesis 1:2\nGod<note>x\n", "es.imp");
            }).find("es.imp:3 (Genesis 1:2): <note> is not closed"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              module_of("$$$[ Module Heading ]\n$$$Genesis 0:0\nx\n", "es.imp");
            }).find("es.imp holds no verses"),
            std::string::npos);
  EXPECT_NE(error_of([] { read_bible_module("/nonexistent/es.imp"); }).find("mod2imp"),
            std::string::npos);
}

// A module that prints drop caps: each chapter's first word in capitals.
const char kDropCaps[] =
    "$$$Genesis 1:1\nEN el principio crió Dios los cielos.\n"
    "$$$Genesis 1:2\nY la tierra estaba desordenada, y Jehová vió.\n"
    "$$$Genesis 2:1\nY FUERON acabados los cielos.\n"
    "$$$Genesis 3:1\nEMPERO la serpiente era astuta, y Jehová habló.\n"
    "$$$Genesis 4:1\nY CONOCIÓ Adam á su mujer; y fueron.\n"
    "$$$Genesis 5:1\nY JEHOVÁ dijo á Noé: Entra.\n"
    "$$$Psalms 51:1\nSalmo de David. TEN piedad de mí, oh Dios.\n"
    "$$$Psalms 51:2\nY dijo: YO SOY EL QUE SOY.\n"
    "$$$Psalms 52:1\nSalmo de David. ¡OH Jehová, cuánto!\n";

TEST(BibleModule, DropCapsAreWrittenAsTheRestOfTheText) {
  const BibleModule m = module_of(kDropCaps);
  EXPECT_TRUE(m.stats.drop_caps);
  EXPECT_EQ(m.stats.drop_caps_restored, 7);
  EXPECT_EQ(m.verses[0].text, "En el principio crió Dios los cielos.");  // starts the verse
  EXPECT_EQ(m.verses[2].text, "Y fueron acabados los cielos.");          // lower inside
  EXPECT_EQ(m.verses[3].text, "Empero la serpiente era astuta, y Jehová habló.");
  EXPECT_EQ(m.verses[4].text, "Y conoció Adam á su mujer; y fueron.");
  EXPECT_EQ(m.verses[5].text, "Y Jehová dijo á Noé: Entra.");  // a name: capitalised inside
  EXPECT_EQ(m.verses[6].text, "Salmo de David. Ten piedad de mí, oh Dios.");  // after a title
  EXPECT_EQ(m.verses[7].text, "Y dijo: YO SOY EL QUE SOY.");  // not a chapter's first verse
  EXPECT_EQ(m.verses[8].text, "Salmo de David. ¡Oh Jehová, cuánto!");  // after an opening mark
}

TEST(BibleModule, NoDropCapsWhenFewChaptersStartWithCapitals) {
  std::vector<BibleVerse> v(3);
  const char* texts[3] = {"ALEPH Blessed are those", "In my distress", "I will lift up my eyes"};
  for (int i = 0; i < 3; ++i) {
    v[i].key = VerseKey{"Psalms", 119 + i, 1};
    v[i].text = texts[i];
  }
  EXPECT_EQ(restore_drop_caps(v), 0);
  EXPECT_EQ(v[0].text, "ALEPH Blessed are those");
}

// ---- Alignment ----

// Verse texts of given lengths: "x" repeated, so only the lengths differ.
std::string of_length(int n, char c = 'x') {
  return std::string(static_cast<size_t>(n), c);
}

TEST(BibleAlign, SameNumberingKeepsMatchingChapters) {
  const std::vector<int64_t> src = {50, 120, 80, 200, 60, 150, 90, 40};
  std::vector<int64_t> trg;
  for (int64_t l : src) trg.push_back(l * 11 / 10);
  EXPECT_EQ(same_numbering(src, trg, 1.1, 2.5), std::vector<bool>(8, true));
}

TEST(BibleAlign, SameNumberingDropsAShiftedChapter) {
  // The target numbers from one verse later (Numbers 13 of the Reina-Valera against the WEB):
  // its verse i is the source's verse i + 1; the first source verse and the last target verse
  // have no partner.
  const std::vector<int64_t> src = {70, 50, 120, 80, 200, 60, 150, 90, 40, 130};
  std::vector<int64_t> trg;
  for (size_t i = 1; i < src.size(); ++i) trg.push_back(src[i]);
  trg.push_back(100);
  EXPECT_EQ(same_numbering(src, trg, 1.0, 2.5), std::vector<bool>(10, false));
  // A shift in the second half only: the first half stays.
  std::vector<int64_t> half = src;
  for (size_t i = 5; i + 1 < src.size(); ++i) half[i] = src[i + 1];
  half.back() = 100;
  EXPECT_EQ(same_numbering(src, half, 1.0, 2.5),
            (std::vector<bool>{true, true, true, true, true, false, false, false, false, false}));
}

TEST(BibleAlign, SameNumberingDropsAPairOfImpossibleLengths) {
  // Romans 14:23: the WEB's verse holds the doxology the Reina-Valera has at 16:25-27.
  const std::vector<int64_t> src = {90, 110, 116, 80};
  const std::vector<int64_t> trg = {92, 108, 520, 83};
  EXPECT_EQ(same_numbering(src, trg, 1.0, 2.5), (std::vector<bool>{true, true, false, true}));
  EXPECT_NE(error_of([] {
              same_numbering({1, 2}, {1}, 1.0, 1.0);
            }).find("2 source and 1 target"),
            std::string::npos);
}

TEST(BibleAlign, PairsByKeyAndCountsWhatItDrops) {
  const BibleModule es = module_of(
      "$$$Genesis 1:1\nEn el principio\n"
      "$$$Genesis 1:2\nY la tierra\n"
      "$$$Genesis 1:3\n<note>x</note>\n"
      "$$$Genesis 1:4\nY vió Dios\n"
      "$$$Matthew 1:1\nLibro de la generación\n",
      "es.imp");
  const BibleModule en = module_of(
      "$$$Genesis 1:1\nIn the beginning\n"
      "$$$Genesis 1:3\nGod said\n"
      "$$$Genesis 1:4\nGod saw\n"
      "$$$Tobit 1:1\nThe book of the words of Tobit\n"
      "$$$Tobit 1:2\nwho in the days\n"
      "$$$Matthew 1:1\nThe book of the genealogy\n",
      "en.imp");
  BibleAlignStats stats;
  const std::vector<BiblePair> pairs =
      align_bibles(es, en, BibleAlignOptions{.check_numbering = false}, stats);
  ASSERT_EQ(pairs.size(), 3u);
  EXPECT_EQ(pairs[0].key.str(), "Genesis 1:1");
  EXPECT_EQ(pairs[0].src, "En el principio");
  EXPECT_EQ(pairs[0].trg, "In the beginning");
  EXPECT_EQ(pairs[1].key.str(), "Genesis 1:4");
  EXPECT_EQ(pairs[1].trg, "God saw");
  EXPECT_EQ(pairs[2].key.str(), "Matthew 1:1");
  EXPECT_EQ(stats.only_src, 1);  // Genesis 1:2
  EXPECT_EQ(stats.only_trg, 2);  // Tobit
  EXPECT_EQ(stats.empty, 1);     // Genesis 1:3
  EXPECT_EQ(stats.pairs, 3);
  EXPECT_EQ(stats.books_only_trg, std::vector<std::string>{"Tobit"});
  EXPECT_TRUE(stats.books_only_src.empty());

  const BibleModule other = module_of("$$$Tobit 1:1\nx\n");
  EXPECT_NE(error_of([&] { align_bibles(es, other, {}, stats); }).find("same versification"),
            std::string::npos);
}

TEST(BibleAlign, TheNumberingCheckDropsAShiftedChapterOfTwoModules) {
  // Five chapters numbered alike (lengths a few characters apart, as translations are), then one
  // whose target verses come one number early from its fifth verse on.
  const int lengths[8] = {80, 55, 130, 95, 190, 65, 170, 85};
  std::string es, en;
  for (int c = 1; c <= 6; ++c) {
    for (int v = 0; v < 8; ++v) {
      const std::string key = "$$$Numbers " + std::to_string(c) + ":" + std::to_string(v + 1);
      const int l = lengths[(v + c) % 8];
      es += key + "\n" + of_length(l, 'e') + "\n";
      const bool shifted = c == 6 && v >= 4;
      const int trg =
          !shifted ? l + (v * 7 + c) % 7 - 3 : (v + 1 < 8 ? lengths[(v + 1 + c) % 8] : 120);
      en += key + "\n" + of_length(trg, 'n') + "\n";
    }
  }
  BibleAlignStats stats;
  const std::vector<BiblePair> pairs = align_bibles(module_of(es), module_of(en), {}, stats);
  EXPECT_EQ(pairs.size(), 44u);
  for (const BiblePair& p : pairs) {
    EXPECT_TRUE(p.key.chapter < 6 || p.key.verse <= 4) << p.key.str();
  }
  EXPECT_EQ(stats.renumbered, 4);
  EXPECT_EQ(stats.renumbered_chapters, std::vector<std::string>{"Numbers 6 (4 of 8)"});
  EXPECT_NEAR(stats.length_ratio, 1.0, 0.05);
  BibleAlignStats unchecked;
  EXPECT_EQ(
      align_bibles(module_of(es), module_of(en), {.check_numbering = false}, unchecked).size(),
      48u);
}

// ---- Split and files ----

std::vector<BiblePair> pairs_of(const std::vector<std::string>& books) {
  std::vector<BiblePair> out;
  for (const std::string& b : books) {
    for (int v = 1; v <= 2; ++v) {
      BiblePair p;
      p.key = VerseKey{b, 1, v};
      p.src = b + " es " + std::to_string(v);
      p.trg = b + " en " + std::to_string(v);
      out.push_back(std::move(p));
    }
  }
  return out;
}

TEST(BibleSplit, WholeBooksGoToTestAndValid) {
  const std::vector<BiblePair> pairs =
      pairs_of({"Genesis", "Ruth", "Joel", "Amos", "Mark", "Philippians", "James"});
  const BibleSplit split = split_bible_by_books(pairs, {});  // Mark, Amos / Ruth, Joel, ...
  auto keys = [](const std::vector<BiblePair>& ps) {
    std::string s;
    for (const BiblePair& p : ps) s += p.key.str() + ";";
    return s;
  };
  EXPECT_EQ(keys(split.train), "Genesis 1:1;Genesis 1:2;");
  EXPECT_EQ(keys(split.test), "Amos 1:1;Amos 1:2;Mark 1:1;Mark 1:2;");
  EXPECT_EQ(keys(split.valid),
            "Ruth 1:1;Ruth 1:2;Joel 1:1;Joel 1:2;Philippians 1:1;Philippians 1:2;James 1:1;James "
            "1:2;");
}

TEST(BibleSplit, BadBookListsAreErrors) {
  const std::vector<BiblePair> pairs = pairs_of({"Genesis", "Mark", "Ruth"});
  auto split = [&](std::vector<std::string> test, std::vector<std::string> valid) {
    return error_of([&] { split_bible_by_books(pairs, {test, valid}); });
  };
  EXPECT_NE(split({"Marc"}, {"Ruth"})
                .find("no verse of a book 'Marc' is in both modules; the "
                      "books are: Genesis, Mark, Ruth"),
            std::string::npos);
  EXPECT_NE(split({"Mark"}, {"Mark"}).find("Mark is both a test book and a valid book"),
            std::string::npos);
  EXPECT_NE(split({"Mark", "Mark"}, {"Ruth"}).find("names Mark twice"), std::string::npos);
  EXPECT_NE(split({"Mark"}, {}).find("at least one book each"), std::string::npos);
  EXPECT_NE(split({"Mark", "Genesis"}, {"Ruth"}).find("no book is left for training"),
            std::string::npos);
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(BibleSplit, WritesLinesAndKeys) {
  const fs::path dir = fs::temp_directory_path() / ("tfm_bible_" + std::to_string(getpid()));
  const BibleSplit split =
      split_bible_by_books(pairs_of({"Genesis", "Mark", "Ruth"}), {{"Mark"}, {"Ruth"}});
  write_bible_split(split, dir.string(), "es", "en");
  EXPECT_EQ(slurp(dir / "train.es"), "Genesis es 1\nGenesis es 2\n");
  EXPECT_EQ(slurp(dir / "train.en"), "Genesis en 1\nGenesis en 2\n");
  EXPECT_EQ(slurp(dir / "test.keys"), "Mark 1:1\nMark 1:2\n");
  EXPECT_EQ(slurp(dir / "valid.en"), "Ruth en 1\nRuth en 2\n");
  EXPECT_NE(error_of([&] {
              write_bible_split(split, dir.string(), "en", "en");
            }).find("two different non-empty names"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              write_bible_split(split, dir.string(), "keys", "en");
            }).find("other than 'keys'"),
            std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tfm
