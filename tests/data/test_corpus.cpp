#include "tfm/data/corpus.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/test_util.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;

// A scratch directory per test, removed afterwards.
class CorpusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tfm_corpus_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& bytes) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  fs::path dir_;
};

std::vector<TextPair> read_all(CorpusReader& r) {
  std::vector<TextPair> out;
  for (TextPair p; r.next(p);) out.push_back(p);
  return out;
}

// Ids of a whitespace-split sentence: one id per word, so lengths are easy to control.
Ids words(const std::string& s) {
  Ids ids;
  std::istringstream in(s);
  for (std::string w; in >> w;) ids.push_back(static_cast<int32_t>(w.size()));
  return ids;
}

TEST(Utf8, ValidTextUnchanged) {
  const std::string s = "plain ascii, Grüße, 日本語, \xF0\x9F\x98\x80 emoji";
  int64_t n = -1;
  EXPECT_EQ(repair_utf8(s, &n), s);
  EXPECT_EQ(n, 0);
}

TEST(Utf8, InvalidSequencesBecomeReplacementCharacters) {
  const std::string fffd = "\xEF\xBF\xBD";
  struct Case {
    std::string in, out;
    int64_t count;
  };
  const std::vector<Case> cases = {
      {"a\xFF"
       "b",
       "a" + fffd + "b", 1},         // never-valid byte
      {"\x80\x80", fffd + fffd, 2},  // stray continuation bytes
      {"x\xC3", "x" + fffd, 1},      // truncated at the end
      {"\xE2\x82"
       "z",
       fffd + "z", 1},                                     // truncated 3-byte: one maximal subpart
      {"\xC0\xAF", fffd + fffd, 2},                        // overlong '/': C0 never valid
      {"\xE0\x80\xAF", fffd + fffd + fffd, 3},             // overlong 3-byte form
      {"\xED\xA0\x80", fffd + fffd + fffd, 3},             // UTF-16 surrogate D800
      {"\xF4\x90\x80\x80", fffd + fffd + fffd + fffd, 4},  // above U+10FFFF
      {"\xF0\x9F\x98"
       "!",
       fffd + "!", 1},  // 4-byte cut short
      {"\xC3\xA9\xFE\xC3\xA9", "\xC3\xA9" + fffd + "\xC3\xA9", 1},
  };
  for (const Case& c : cases) {
    int64_t n = -1;
    EXPECT_EQ(repair_utf8(c.in, &n), c.out) << "input bytes of length " << c.in.size();
    EXPECT_EQ(n, c.count) << c.out;
  }
}

TEST_F(CorpusTest, ParallelFilesCrlfAndRepairedUtf8) {
  const auto src = write("a.de",
                         "Hallo Welt\r\nbad \xFF byte\r\nGr\xC3\xBC\xC3\x9F"
                         "e\n");
  const auto trg = write("a.en", "hello world\r\nbad byte\nregards");  // no final newline
  CorpusReader r = CorpusReader::parallel(src, trg);
  const auto pairs = read_all(r);
  ASSERT_EQ(pairs.size(), 3u);
  EXPECT_EQ(pairs[0].src, "Hallo Welt");
  EXPECT_EQ(pairs[0].trg, "hello world");
  EXPECT_EQ(pairs[1].src, "bad \xEF\xBF\xBD byte");
  EXPECT_EQ(pairs[2].src,
            "Gr\xC3\xBC\xC3\x9F"
            "e");
  EXPECT_EQ(pairs[2].trg, "regards");
  EXPECT_EQ(pairs[2].line, 3);
  EXPECT_EQ(r.stats().pairs_read, 3);
  EXPECT_EQ(r.stats().pairs_kept, 3);
  EXPECT_EQ(r.stats().utf8_repaired_lines, 1);
  EXPECT_EQ(r.stats().utf8_replaced_sequences, 1);
  EXPECT_NE(r.stats().summary().find("repaired invalid UTF-8 in 1 lines"), std::string::npos)
      << r.stats().summary();
  // Where: the first repaired line, as FILE:LINE (a count alone left the user to search).
  EXPECT_EQ(r.stats().first_repaired, src + ":2");
  EXPECT_NE(r.stats().summary().find("first repaired line: " + src + ":2"), std::string::npos)
      << r.stats().summary();
}

TEST_F(CorpusTest, EmptyPairsSkippedAndCounted) {
  const auto src = write("e.de", "eins\n\ndrei\nvier\n\r\n");
  const auto trg = write("e.en", "one\ntwo\nthree\n\nfive\n");
  CorpusReader r = CorpusReader::parallel(src, trg);
  const auto pairs = read_all(r);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].trg, "one");
  EXPECT_EQ(pairs[1].trg, "three");
  EXPECT_EQ(pairs[1].line, 3);
  EXPECT_EQ(r.stats().pairs_read, 5);
  EXPECT_EQ(r.stats().skipped_empty, 3);
  EXPECT_EQ(r.stats().pairs_kept + r.stats().skipped(), r.stats().pairs_read);
  EXPECT_NE(r.stats().summary().find("3 empty"), std::string::npos) << r.stats().summary();
}

TEST_F(CorpusTest, LineCountMismatchNamesBothFilesAndTheLine) {
  const auto src = write("long.de", "a\nb\nc\n");
  const auto trg = write("short.en", "a\nb\n");
  CorpusReader r = CorpusReader::parallel(src, trg);
  TextPair p;
  EXPECT_TRUE(r.next(p));
  EXPECT_TRUE(r.next(p));
  const std::string err = testing::error_of([&] { r.next(p); });
  EXPECT_NE(err.find(src), std::string::npos) << err;
  EXPECT_NE(err.find(trg), std::string::npos) << err;
  EXPECT_NE(err.find("short.en ends after line 2"), std::string::npos) << err;

  CorpusReader r2 = CorpusReader::parallel(trg, src);  // the other way round
  EXPECT_TFM_ERROR(read_all(r2), "short.en ends after line 2 but " + src + " has a line 3");
}

TEST_F(CorpusTest, MissingFileIsAnError) {
  const auto trg = write("x.en", "a\n");
  EXPECT_TFM_ERROR(CorpusReader::parallel((dir_ / "nope.de").string(), trg), "nope.de");
  EXPECT_TFM_ERROR(CorpusReader::tsv((dir_ / "nope.tsv").string()), "nope.tsv");
}

TEST_F(CorpusTest, TsvMalformedLinesAreCountedSkips) {
  const auto path =
      write("c.tsv", "Haus\thouse\r\nno tab here\n\na\tb\tc\nBaum\ttree\n\tempty source\n");
  CorpusReader r = CorpusReader::tsv(path);
  const auto pairs = read_all(r);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].src, "Haus");
  EXPECT_EQ(pairs[0].trg, "house");  // CR stripped
  EXPECT_EQ(pairs[1].src, "Baum");
  EXPECT_EQ(pairs[1].line, 5);
  const CorpusStats& s = r.stats();
  EXPECT_EQ(s.pairs_read, 6);
  EXPECT_EQ(s.skipped_malformed, 2);  // no tab; two tabs
  EXPECT_EQ(s.skipped_empty, 2);      // blank line; empty source
  EXPECT_EQ(s.pairs_kept, 2);
  EXPECT_EQ(s.first_malformed, path + ":2");
  EXPECT_NE(s.summary().find("first malformed line: " + path + ":2"), std::string::npos)
      << s.summary();
  EXPECT_EQ(s.first_repaired, "");
}

TEST(Filter, LengthAndRatio) {
  FilterOptions o;
  o.max_length = 4;
  o.max_ratio = 2.0;
  CorpusStats s;
  s.pairs_kept = 5;  // as the reader would have counted them
  EXPECT_EQ(filter_pair({1, 2}, {1, 2, 3, 4}, o, &s), SkipReason::none);  // ratio 2: kept
  EXPECT_EQ(filter_pair({1}, {1, 2, 3}, o, &s), SkipReason::ratio);       // 3 > 2
  EXPECT_EQ(filter_pair({1, 2, 3, 4, 5}, {1, 2, 3, 4}, o, &s), SkipReason::too_long);
  EXPECT_EQ(filter_pair({}, {1}, o, &s), SkipReason::empty);
  EXPECT_EQ(filter_pair({1, 2, 3, 4}, {1, 2, 3, 4}, o, &s), SkipReason::none);  // at the limit
  EXPECT_EQ(s.skipped_ratio, 1);
  EXPECT_EQ(s.skipped_too_long, 1);
  EXPECT_EQ(s.skipped_empty, 1);
  EXPECT_EQ(s.pairs_kept, 2);
  // Limits of 0 switch the checks off.
  EXPECT_EQ(filter_pair({1}, Ids(100, 1), FilterOptions{0, 0.0}), SkipReason::none);
  // The default ratio is 3.
  EXPECT_EQ(filter_pair({1}, {1, 2, 3}, FilterOptions{}), SkipReason::none);
  EXPECT_EQ(filter_pair({1}, {1, 2, 3, 4}, FilterOptions{}), SkipReason::ratio);
}

TEST_F(CorpusTest, ReadExamplesEncodesFiltersAndCounts) {
  const auto src = write("f.de", "a b\na b c d e f\nx\n   \nk l m\n");
  const auto trg = write("f.en", "a b c\na b\nx y z w\ny\nk l m\n");
  CorpusReader r = CorpusReader::parallel(src, trg);
  FilterOptions o;
  o.max_length = 5;
  std::vector<std::string> kept;
  const auto ex = read_examples(r, words, words, o, &kept);
  ASSERT_EQ(ex.size(), 2u);
  EXPECT_EQ(kept, (std::vector<std::string>{"a b c", "k l m"}));
  EXPECT_EQ(ex[0].src.size(), 2u);
  EXPECT_EQ(ex[0].trg.size(), 3u);
  EXPECT_EQ(ex[1].src.size(), 3u);
  const CorpusStats& s = r.stats();
  EXPECT_EQ(s.pairs_read, 5);
  EXPECT_EQ(s.skipped_too_long, 1);  // 6 source words
  EXPECT_EQ(s.skipped_ratio, 1);     // 1 vs 4
  EXPECT_EQ(s.skipped_empty, 1);     // "   " encodes to nothing
  EXPECT_EQ(s.pairs_kept, 2);
  EXPECT_EQ(s.pairs_kept + s.skipped(), s.pairs_read);
  EXPECT_NE(s.summary().find("1 too long, 1 length-ratio outliers"), std::string::npos)
      << s.summary();
}

// 200k lines are read one pair at a time: the reader holds the current line only, so reading
// the file is a count, not a load. (Memory is not measured; the API makes per-line storage
// impossible to need, and the count shows every line came through.)
TEST_F(CorpusTest, StreamsALargeFile) {
  const int64_t n = 200000;
  const std::string src = (dir_ / "big.de").string(), trg = (dir_ / "big.en").string();
  {
    std::ofstream s(src, std::ios::binary), t(trg, std::ios::binary);
    for (int64_t i = 0; i < n; ++i) {
      s << "quelle " << i << "\n";
      t << "target " << i << (i % 2 ? "\r\n" : "\n");
    }
  }
  CorpusReader r = CorpusReader::parallel(src, trg);
  int64_t count = 0, digits = 0;
  for (TextPair p; r.next(p);) {
    ++count;
    if (p.trg == "target " + std::to_string(p.line - 1)) ++digits;
  }
  EXPECT_EQ(count, n);
  EXPECT_EQ(digits, n);
  EXPECT_EQ(r.stats().pairs_kept, n);
}

}  // namespace
}  // namespace tfm
