#include "tfm/data/ding.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "support/test_util.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;

// A small dictionary in the Ding format with the edge cases the real file has (and a few it does
// not: CRLF, invalid UTF-8, unbalanced lines, malformed lines).
const char kDing[] =
    "# Version :: devel\n"                                                    // 1 comment
    "Haus {n} | Häuser {pl} :: house | houses\n"                              // 2
    "Abbau {m} (Druck; Vakuum) :: decay (pressure; vacuum)\n"                 // 3
    "Auto {n}; Wagen {m} :: car; automobile\r\n"                              // 4 CRLF
    "Apfel {m}; Apfelbaum {m}; Äpfel {pl} :: apple\n"                         // 5
    "Baum {m} | Bäume {pl} | Baumkrone {f} :: tree | trees\n"                 // 6 unbalanced
    "{f} [ugs.] :: something\n"                                               // 7 empty de
    "Zeug {n} :: (stuff) [coll.]\n"                                           // 8 empty en
    "Geschäftsbedingungen {pl} /AGB/ :: terms and conditions /T&C/\n"         // 9
    "Das ist (nicht) gut. [ugs.] :: That is (not) good .\n"                   // 10
    "Ich habe keine Zeit. :: I have no time.\n"                               // 11
    "Fehler ((x) [y) z :: error ]w\n"                                         // 12 odd
    "no separator here\n"                                                     // 13 malformed
    "Haus {n} :: house\n"                                                     // 14 duplicate
    "Größe {f} \xff :: size\n"                                                // 15 bad UTF-8
    "<Variante> Farbe {f} <Farbe> :: colour [Br.]; color [Am.]\n"             // 16
    "a :: b :: c\n"                                                           // 17 malformed
    "   \n"                                                                   // 18 blank
    "Kasse {f} (Theater | Kino) | Kassen {pl} :: box office | box offices\n"  // 19
    "und/oder; Abk. /u.o./ :: and/or\n";                                      // 20

TEST(Ding, ExtractsTheHandDerivedPairs) {
  std::istringstream in(kDing);
  DingStats stats;
  const std::vector<DingPair> pairs = parse_ding(in, stats);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"Haus", "house"},
      {"Häuser", "houses"},
      {"Abbau", "decay"},
      {"Auto", "car"},  // equal synonym counts pair by index
      {"Wagen", "automobile"},
      {"Apfel", "apple"},  // unequal counts: first synonyms only
      {"Baum", "tree"},    // unbalanced ' | ': first sub-entries only
      {"Geschäftsbedingungen", "terms and conditions"},
      {"Das ist gut.", "That is good."},
      {"Ich habe keine Zeit.", "I have no time."},
      {"Fehler y z", "error w"},  // inner (x) and the stray brackets go, the words stay
      {"Größe \xEF\xBF\xBD", "size"},
      {"Farbe", "colour"},
      {"Kasse", "box office"},  // ' | ' inside brackets does not split
      {"Kassen", "box offices"},
      {"und/oder", "and/or"},
  };
  ASSERT_EQ(pairs.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(pairs[i].de, want[i].first) << "pair " << i;
    EXPECT_EQ(pairs[i].en, want[i].second) << "pair " << i;
  }
  const std::vector<int64_t> lines = {2, 2, 3, 4, 4, 5, 6, 9, 10, 11, 12, 15, 16, 19, 19, 20};
  for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(pairs[i].line, lines[i]) << "pair " << i;

  EXPECT_EQ(stats.lines, 20);
  EXPECT_EQ(stats.comments, 2);
  EXPECT_EQ(stats.malformed, 2);
  EXPECT_EQ(stats.unbalanced, 1);
  EXPECT_EQ(stats.unbalanced_dropped, 2);
  // 16 entry lines: 14 give one sub-entry (unbalanced line 6 included), lines 2 and 19 two each.
  EXPECT_EQ(stats.sub_entries, 18);
  EXPECT_EQ(stats.empty, 2);
  EXPECT_EQ(stats.empty_synonyms, 2);     // "{f} [ugs.]" (line 7), "(stuff) [coll.]" (line 8)
  EXPECT_EQ(stats.unpaired_synonyms, 4);  // Apfelbaum, Äpfel (5); color (16); Abk. (20)
  EXPECT_EQ(stats.pairs_extracted, 17);
  EXPECT_EQ(stats.duplicates, 1);
  EXPECT_EQ(stats.pairs, 16);
  EXPECT_EQ(stats.utf8_repaired_lines, 1);
  EXPECT_EQ(stats.utf8_replaced_sequences, 1);
  EXPECT_EQ(stats.lines - stats.comments - stats.malformed, 16);  // the entry lines
}

TEST(Ding, CleansAnnotations) {
  EXPECT_EQ(clean_ding_text("  to   take (sth.)  off {vt} "), "to take off");
  EXPECT_EQ(clean_ding_text("[a (b] c) d"), "a d");  // "(b] c)" matched; '[' stray
  EXPECT_EQ(clean_ding_text("Wort {n} , Satz"), "Wort, Satz");
  EXPECT_EQ(clean_ding_text("{f} [Am.] (x) <y> /Z/"), "");
  EXPECT_EQ(clean_ding_text("a/b /c d/"), "a/b /c d/");  // a space inside: not an abbreviation
  EXPECT_EQ(clean_ding_text("x /geb./, y"), "x, y");
  EXPECT_EQ(clean_ding_text("a < b"), "a b");  // an unmatched bracket alone goes
}

TEST(Ding, SentenceRule) {
  EXPECT_TRUE(is_ding_sentence("Ich habe keine Zeit."));
  EXPECT_TRUE(is_ding_sentence("Wo ist der Bahnhof?"));
  EXPECT_TRUE(is_ding_sentence("Das ist ja toll!"));
  EXPECT_FALSE(is_ding_sentence("Das ist gut."));  // 3 words
  EXPECT_FALSE(is_ding_sentence("jdm. etw. geben wollen"));
  EXPECT_FALSE(is_ding_sentence(""));
}

TEST(Ding, MissingFileNamesThePackage) {
  DingStats stats;
  const std::string e = testing::error_of([&] { read_ding("/nonexistent/de-en", stats); });
  EXPECT_NE(e.find("/nonexistent/de-en"), std::string::npos) << e;
  EXPECT_NE(e.find("apt-get install trans-de-en"), std::string::npos) << e;
}

// 600 German phrases (every third with two translations) and 150 sentences.
std::vector<DingPair> synthetic_pairs() {
  std::vector<DingPair> pairs;
  for (int i = 0; i < 750; ++i) {
    const std::string de =
        i % 5 == 4 ? "Satz Nummer " + std::to_string(i) + " ist hier." : "Wort" + std::to_string(i);
    pairs.push_back({de, "word" + std::to_string(i), i + 1});
    if (i % 3 == 0) pairs.push_back({de, "other" + std::to_string(i), i + 1});
  }
  return pairs;
}

TEST(Ding, SplitIsDisjointSizedAndComplete) {
  const std::vector<DingPair> pairs = synthetic_pairs();
  DingSplitOptions o;
  o.valid = 50;
  o.test = 40;
  const DingSplit s = split_ding(pairs, o);
  EXPECT_EQ(s.valid.size(), 50u);
  EXPECT_EQ(s.test.size(), 40u);
  EXPECT_EQ(s.valid_sentences, 40);  // 0.8 * 50
  EXPECT_EQ(s.test_sentences, 32);
  EXPECT_EQ(s.train.size() + s.valid.size() + s.test.size() +
                static_cast<size_t>(s.held_out_extra_dropped),
            pairs.size());
  std::map<std::string, int> split_of;
  auto mark = [&](const std::vector<DingPair>& v, int id) {
    for (const DingPair& p : v) {
      auto [it, added] = split_of.emplace(p.de, id);
      EXPECT_EQ(it->second, id) << p.de << " is in two splits";
    }
  };
  mark(s.train, 0);
  mark(s.valid, 1);
  mark(s.test, 2);
  int sentences = 0;
  for (const DingPair& p : s.valid) sentences += is_ding_sentence(p.de);
  EXPECT_EQ(sentences, 40);
  // One reference per held-out German text.
  std::set<std::string> valid_de;
  for (const DingPair& p : s.valid) EXPECT_TRUE(valid_de.insert(p.de).second) << p.de;
  // Train keeps file order.
  for (size_t i = 1; i < s.train.size(); ++i) EXPECT_LE(s.train[i - 1].line, s.train[i].line);
}

TEST(Ding, SplitIsDeterministicAndSeeded) {
  const std::vector<DingPair> pairs = synthetic_pairs();
  DingSplitOptions o;
  o.valid = 30;
  o.test = 30;
  const DingSplit a = split_ding(pairs, o), b = split_ding(pairs, o);
  auto des = [](const std::vector<DingPair>& v) {
    std::vector<std::string> out;
    for (const DingPair& p : v) out.push_back(p.de + "\t" + p.en);
    return out;
  };
  EXPECT_EQ(des(a.valid), des(b.valid));
  EXPECT_EQ(des(a.test), des(b.test));
  EXPECT_EQ(des(a.train), des(b.train));
  // The split depends on the German text, not the file order: reversing the input keeps it.
  std::vector<DingPair> reversed(pairs.rbegin(), pairs.rend());
  const DingSplit r = split_ding(reversed, o);
  std::set<std::string> va, vr;
  for (const DingPair& p : a.valid) va.insert(p.de);
  for (const DingPair& p : r.valid) vr.insert(p.de);
  EXPECT_EQ(va, vr);
  o.seed = 1;
  const DingSplit c = split_ding(pairs, o);
  EXPECT_NE(des(a.valid), des(c.valid));
}

TEST(Ding, SplitFallsBackWhenAPoolIsShort) {
  std::vector<DingPair> pairs;
  for (int i = 0; i < 20; ++i) pairs.push_back({"Wort" + std::to_string(i), "w", i + 1});
  DingSplitOptions o;
  o.valid = 5;
  o.test = 30;  // more than is left: test gets the 15 remaining, train nothing
  const DingSplit s = split_ding(pairs, o);
  EXPECT_EQ(s.valid.size(), 5u);
  EXPECT_EQ(s.valid_sentences, 0);
  EXPECT_EQ(s.test.size(), 15u);
  EXPECT_TRUE(s.train.empty());
}

TEST(Ding, WritesTheSplitFiles) {
  const fs::path dir = fs::temp_directory_path() / ("tfm_ding_" + std::to_string(::getpid()));
  std::istringstream in(kDing);
  DingStats stats;
  const std::vector<DingPair> pairs = parse_ding(in, stats);
  DingSplitOptions o;
  o.valid = 2;
  o.test = 2;
  const DingSplit s = split_ding(pairs, o);
  write_ding_split(s, (dir / "out").string());
  auto read = [&](const std::string& name) {
    std::ifstream f(dir / "out" / name);
    std::vector<std::string> lines;
    for (std::string l; std::getline(f, l);) lines.push_back(l);
    return lines;
  };
  const std::vector<std::string> de = read("valid.de"), en = read("valid.en");
  ASSERT_EQ(de.size(), 2u);
  ASSERT_EQ(en.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(de[i], s.valid[i].de);
    EXPECT_EQ(en[i], s.valid[i].en);
  }
  EXPECT_EQ(read("train.de").size(), s.train.size());
  EXPECT_EQ(read("test.en").size(), 2u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tfm
