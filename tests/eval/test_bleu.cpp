// Corpus BLEU and the 13a tokenizer against values derived by hand (arithmetic in the comments)
// and one regression value from tools/bleu_reference.py.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "support/test_util.h"
#include "tfm/eval/bleu.h"
#include "tfm/eval/tokenizer_13a.h"

namespace tfm::eval {
namespace {

BleuScore bleu1(const std::vector<std::string>& hyps, const std::vector<std::string>& refs) {
  return corpus_bleu(hyps, {refs});
}

TEST(Tokenizer13a, PunctuationAndNumbers) {
  EXPECT_EQ(tokenize_13a("Hello, world."), "Hello , world .");
  // A period or comma between digits stays: numbers are one token.
  EXPECT_EQ(tokenize_13a("3.5"), "3.5");
  EXPECT_EQ(tokenize_13a("1,000"), "1,000");
  EXPECT_EQ(tokenize_13a("$3.50"), "$ 3.50");
  // A trailing period after a digit is split: the line is padded with spaces first, so "5." is
  // followed by a non-digit.
  EXPECT_EQ(tokenize_13a("5."), "5 .");
  EXPECT_EQ(tokenize_13a(".start"), ". start");
  EXPECT_EQ(tokenize_13a("e.g."), "e . g .");
  EXPECT_EQ(tokenize_13a("a..b"), "a . . b");
  // 13a only splits a dash after a digit; "a-b" stays one token (mteval-v13a / sacreBLEU).
  EXPECT_EQ(tokenize_13a("a-b"), "a-b");
  EXPECT_EQ(tokenize_13a("3-4"), "3 - 4");
  EXPECT_EQ(tokenize_13a("1.5-2"), "1.5 - 2");
  // The apostrophe is not in the punctuation class.
  EXPECT_EQ(tokenize_13a("don't (approx.)"), "don't ( approx . )");
}

TEST(Tokenizer13a, QuotesEntitiesAndWhitespace) {
  EXPECT_EQ(tokenize_13a("He said \"no\"."), "He said \" no \" .");
  EXPECT_EQ(tokenize_13a("&quot;Hi&quot; &amp; &lt;b&gt;"), "\" Hi \" & < b >");
  // Unescaping runs &quot; &amp; &lt; &gt; in order: "&amp;lt;" becomes "&lt;" then "<",
  // while "&amp;quot;" stops at "&quot;" because &quot; was already done (and ";" is padded).
  EXPECT_EQ(tokenize_13a("&amp;lt;"), "<");
  EXPECT_EQ(tokenize_13a("&amp;quot;"), "& quot ;");
  EXPECT_EQ(tokenize_13a("x<skipped>y"), "xy");
  // "-\n" joins a hyphenated line break before "\n" becomes a space (only reachable through the
  // API: lines read from files never contain "\n").
  EXPECT_EQ(tokenize_13a("co-\nop\nnext"), "coop next");
  // Python's str.split() whitespace includes tab and U+00A0 (no-break space); U+00E9 is kept.
  EXPECT_EQ(tokenize_13a("  a \t b\xc2\xa0"
                         "caf\xc3\xa9 "),
            "a b caf\xc3\xa9");
}

TEST(Bleu, PerfectMatchIs100) {
  // Every precision is 100% and c == r, so BP = 1 and BLEU = 100.
  const BleuScore s = bleu1({"The cat sat on the mat.", "Hello, world!"},
                            {"The cat sat on the mat.", "Hello, world!"});
  EXPECT_DOUBLE_EQ(s.score, 100.0);
  for (double p : s.precisions) EXPECT_DOUBLE_EQ(p, 100.0);
  EXPECT_DOUBLE_EQ(s.bp, 1.0);
  EXPECT_EQ(s.stats.hyp_len, 11);  // 7 + 4 tokens
  EXPECT_EQ(s.stats.ref_len, 11);
  EXPECT_EQ(s.format(),
            "BLEU = 100.00 100.0/100.0/100.0/100.0 (BP = 1.000 ratio = 1.000 hyp_len = 11 "
            "ref_len = 11)");
  EXPECT_EQ(s.signature(),
            "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.x-compatible (tfm)");
}

TEST(Bleu, EmptyHypothesisIsZero) {
  // c = 0 < r = 2: BP = 0; no matches at all: sacreBLEU returns 0 with zero precisions.
  const BleuScore s = bleu1({""}, {"the cat"});
  EXPECT_EQ(s.score, 0.0);
  EXPECT_EQ(s.bp, 0.0);
  EXPECT_EQ(s.stats.hyp_len, 0);
  EXPECT_EQ(s.stats.ref_len, 2);
  for (double p : s.precisions) EXPECT_EQ(p, 0.0);
}

TEST(Bleu, BrevityPenalty) {
  // hyp "the cat sat on the" (c = 5) vs ref "the cat sat on the mat" (r = 6).
  // Every hypothesis n-gram is in the reference: 1-grams 5/5 (the x2 clipped by the x2 in the
  // ref), 2-grams 4/4, 3-grams 3/3, 4-grams 2/2, so all precisions are 100.
  // BP = exp(1 - 6/5) = exp(-0.2) = 0.8187307531; BLEU = 100 * BP.
  const BleuScore s = bleu1({"the cat sat on the"}, {"the cat sat on the mat"});
  EXPECT_EQ(s.stats.correct, (std::array<int64_t, 4>{5, 4, 3, 2}));
  EXPECT_EQ(s.stats.total, (std::array<int64_t, 4>{5, 4, 3, 2}));
  EXPECT_NEAR(s.bp, 0.8187307530779818, 1e-15);
  EXPECT_NEAR(s.score, 81.87307530779818, 1e-12);
  EXPECT_NEAR(s.ratio, 5.0 / 6.0, 1e-15);
  EXPECT_EQ(s.format(),
            "BLEU = 81.87 100.0/100.0/100.0/100.0 (BP = 0.819 ratio = 0.833 hyp_len = 5 "
            "ref_len = 6)");
}

TEST(Bleu, ExpSmoothingOfZeroFourGramMatches) {
  // hyp "the cat sat down" vs ref "the cat sat up", c = r = 4, BP = 1.
  // 1-grams: the cat sat match, down not: 3/4 = 75%.
  // 2-grams: "the cat", "cat sat" match, "sat down" not: 2/3 = 66.67%.
  // 3-grams: "the cat sat" matches, "cat sat down" not: 1/2 = 50%.
  // 4-grams: 0/1 -> exp smoothing: smooth = 2, p4 = 100 / (2 * 1) = 50%.
  // BLEU = (75 * 200/3 * 50 * 50)^(1/4) = 12,500,000^(1/4) = 59.4603557501...
  const BleuScore s = bleu1({"the cat sat down"}, {"the cat sat up"});
  EXPECT_NEAR(s.precisions[0], 75.0, 1e-12);
  EXPECT_NEAR(s.precisions[1], 200.0 / 3.0, 1e-12);
  EXPECT_NEAR(s.precisions[2], 50.0, 1e-12);
  EXPECT_NEAR(s.precisions[3], 50.0, 1e-12);
  EXPECT_NEAR(s.score, std::pow(12500000.0, 0.25), 1e-10);
  EXPECT_NEAR(s.score, 59.46035575013605, 1e-10);
}

TEST(Bleu, ExpSmoothingDoublesPerZeroOrder) {
  // hyp "the cat x y" vs ref "the cat sat on": 1-grams 2/4 = 50%, 2-grams 1/3 = 33.33%,
  // 3-grams 0/2 -> smooth 2: 100 / (2 * 2) = 25%, 4-grams 0/1 -> smooth 4: 100 / (4 * 1) = 25%.
  // BLEU = (50 * 100/3 * 25 * 25)^(1/4) = 1,041,666.67^(1/4) = 31.9472...
  const BleuScore s = bleu1({"the cat x y"}, {"the cat sat on"});
  EXPECT_NEAR(s.precisions[2], 25.0, 1e-12);
  EXPECT_NEAR(s.precisions[3], 25.0, 1e-12);
  EXPECT_NEAR(s.score, std::pow(50.0 * (100.0 / 3.0) * 25.0 * 25.0, 0.25), 1e-10);
}

TEST(Bleu, ClippingIsPerSentenceAcrossTheCorpus) {
  // line 1: hyp "a a a a" vs ref "a b c d": "a" appears 4 times but the ref has one: 1 match.
  // line 2: hyp "a b c d" vs ref "a a a a": only "a" matches: 1 match.
  // Corpus 1-grams: 2/8 = 25% (pooling counts over the corpus would wrongly give 5/8).
  // No 2-, 3- or 4-gram matches: totals 6, 4, 2 (3 + 3, 2 + 2, 1 + 1), so exp smoothing gives
  // p2 = 100/(2*6) = 8.333%, p3 = 100/(4*4) = 6.25%, p4 = 100/(8*2) = 6.25%. c = r = 8, BP = 1.
  const BleuScore s = bleu1({"a a a a", "a b c d"}, {"a b c d", "a a a a"});
  EXPECT_EQ(s.stats.correct, (std::array<int64_t, 4>{2, 0, 0, 0}));
  EXPECT_EQ(s.stats.total, (std::array<int64_t, 4>{8, 6, 4, 2}));
  EXPECT_NEAR(s.precisions[0], 25.0, 1e-12);
  EXPECT_NEAR(s.precisions[1], 100.0 / 12.0, 1e-12);
  EXPECT_NEAR(s.precisions[2], 6.25, 1e-12);
  EXPECT_NEAR(s.precisions[3], 6.25, 1e-12);
  EXPECT_NEAR(s.score, std::pow(25.0 * (100.0 / 12.0) * 6.25 * 6.25, 0.25), 1e-10);
}

TEST(Bleu, NoHigherOrderNgramsGivesZero) {
  // Every line shorter than 4 tokens: the 4-gram total is 0, sacreBLEU stops there, leaves
  // p4 = 0, and log(0) is taken as -9999999999, so BLEU = 0 although 1-3 grams all match.
  const BleuScore s = bleu1({"a b c"}, {"a b c"});
  EXPECT_NEAR(s.precisions[0], 100.0, 1e-12);
  EXPECT_EQ(s.precisions[3], 0.0);
  EXPECT_EQ(s.score, 0.0);
}

TEST(Bleu, MultipleReferencesClosestLengthTiesToShorter) {
  // hyp "a b c" (3) vs refs "a b" (2) and "a b c d" (4): both 1 away, the shorter wins: r = 2.
  // Reference counts merge by maximum, so every hyp 1-, 2-, 3-gram matches.
  const BleuScore s = corpus_bleu({"a b c"}, {{"a b"}, {"a b c d"}});
  EXPECT_EQ(s.stats.ref_len, 2);
  EXPECT_EQ(s.stats.correct, (std::array<int64_t, 4>{3, 2, 1, 0}));
  EXPECT_EQ(s.nrefs, 2);
  // An empty reference is skipped for that sentence, as sacreBLEU does: nrefs becomes "var".
  const BleuScore v = corpus_bleu({"a b c d", "x"}, {{"a b c d", "x"}, {"a b c d", ""}});
  EXPECT_EQ(v.nrefs, -1);
  EXPECT_NE(v.signature().find("nrefs:var|"), std::string::npos);
}

TEST(Bleu, UnicodeWhitespaceSplitsTokens) {
  // U+00A0 and U+3000 are whitespace to Python's str.split(), so both lines are "a b c d".
  const BleuScore s = bleu1({"a\xc2\xa0"
                             "b\xe3\x80\x80"
                             "c d"},
                            {"a b c d"});
  EXPECT_DOUBLE_EQ(s.score, 100.0);
}

TEST(Bleu, InvalidUtf8IsComparedAsBytes) {
  const BleuScore s = bleu1({"\xff\xfe x y z"}, {"\xff\xfe x y z"});
  EXPECT_DOUBLE_EQ(s.score, 100.0);
}

TEST(Bleu, RegressionAgainstReferenceScript) {
  // The number comes from tools/bleu_reference.py (standard-library Python implementing
  // sacreBLEU's published algorithm) run on this corpus:
  //   BLEU = 49.73 82.9/56.7/48.0/42.9 (BP = 0.892 ratio = 0.897 hyp_len = 35 ref_len = 39)
  //   BLEU_exact = 49.72752712940335
  const std::vector<std::string> refs = {
      "The cat sat on the mat.",
      "Hello, world! It costs $3.50 (approx.).",
      "A quick-brown fox jumps over 1,000 lazy dogs",
      "\"Quoted\" text &amp; more &quot;here&quot;.",
      "short",
  };
  const std::vector<std::string> hyps = {
      "The cat sat on a mat.",
      "Hello world! It costs 3.50 dollars.",
      "A quick brown fox jumped over 1,000 dogs",
      "\"Quoted\" text & more \"here\".",
      "short one",
  };
  const BleuScore s = bleu1(hyps, refs);
  EXPECT_NEAR(s.score, 49.72752712940335, 1e-9);
  EXPECT_EQ(s.stats.hyp_len, 35);
  EXPECT_EQ(s.stats.ref_len, 39);
  EXPECT_EQ(
      s.format(),
      "BLEU = 49.73 82.9/56.7/48.0/42.9 (BP = 0.892 ratio = 0.897 hyp_len = 35 ref_len = 39)");
}

TEST(Bleu, Errors) {
  EXPECT_TFM_ERROR(bleu1({"a"}, {"a", "b"}), "1 hypotheses but reference stream 1 has 2 lines");
  // sacreBLEU raises on an empty reference sentence; so do we, naming the line.
  EXPECT_TFM_ERROR(bleu1({"a", "b"}, {"a", "  "}), "reference line 2 is empty");
}

}  // namespace
}  // namespace tfm::eval
