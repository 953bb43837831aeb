// Corpus chrF against values derived by hand (arithmetic in the comments) and one regression
// value from tools/bleu_reference.py.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/test_util.h"
#include "tfm/eval/chrf.h"

namespace tfm::eval {
namespace {

ChrfScore chrf1(const std::vector<std::string>& hyps, const std::vector<std::string>& refs) {
  return corpus_chrf(hyps, {refs});
}

TEST(Chrf, PerfectMatchIs100) {
  const ChrfScore s = chrf1({"The cat sat on the mat.", "x"}, {"The cat sat on the mat.", "x"});
  EXPECT_DOUBLE_EQ(s.score, 100.0);
  EXPECT_EQ(s.format(), "chrF2 = 100.00");
  EXPECT_EQ(s.signature(),
            "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.x-compatible (tfm)");
}

TEST(Chrf, EmptyHypothesisIsZero) {
  // No hypothesis n-grams at any order: no effective order, score 0.
  EXPECT_EQ(chrf1({""}, {"abc"}).score, 0.0);
}

TEST(Chrf, WhitespaceIsRemoved) {
  // "a b  c" and "abc" are the same character sequence once whitespace is dropped.
  EXPECT_DOUBLE_EQ(chrf1({"a b  c"}, {"abc"}).score, 100.0);
}

TEST(Chrf, HandComputedPrecisionAndRecall) {
  // hyp "ab" vs ref "abc":
  //   order 1: hyp {a, b} = 2, ref {a, b, c} = 3, match 2: P = 1, R = 2/3
  //   order 2: hyp {ab} = 1, ref {ab, bc} = 2, match 1:    P = 1, R = 1/2
  //   order 3: hyp has no 3-gram (n_hyp = 0): not an effective order; orders 4-6: no ref n-grams.
  // avg P = 1, avg R = (2/3 + 1/2) / 2 = 7/12.
  // F2 = (1 + 4) P R / (4 P + R) = (35/12) / (55/12) = 7/11 = 63.6363...%.
  const ChrfScore s = chrf1({"ab"}, {"abc"});
  EXPECT_EQ(s.stats.hyp[0], 2);
  EXPECT_EQ(s.stats.ref[0], 3);
  EXPECT_EQ(s.stats.match[0], 2);
  EXPECT_EQ(s.stats.hyp[2], 0);
  EXPECT_EQ(s.stats.ref[2], 1);
  EXPECT_NEAR(s.score, 700.0 / 11.0, 1e-10);
}

TEST(Chrf, EqualPrecisionAndRecall) {
  // hyp "ab c" -> "abc" vs ref "abd":
  //   order 1: 3, 3, match {a, b} = 2: P = R = 2/3; order 2: 2, 2, match {ab} = 1: P = R = 1/2;
  //   order 3: 1, 1, match 0: P = R = 0 (still an effective order); orders 4-6: none.
  // avg P = avg R = (2/3 + 1/2 + 0) / 3 = 7/18, and F2 of equal P and R is P: 38.888...%.
  EXPECT_NEAR(chrf1({"ab c"}, {"abd"}).score, 700.0 / 18.0, 1e-10);
}

TEST(Chrf, StatisticsAreSummedOverTheCorpus) {
  // line 1 "ab" vs "abc": (hyp, ref, match) per order: (2,3,2) (1,2,1) (0,1,0)
  // line 2 "abc" vs "abc":                             (3,3,3) (2,2,2) (1,1,1)
  // sums: (5,6,5) (3,4,3) (1,2,1): P = 1, 1, 1; R = 5/6, 3/4, 1/2.
  // avg P = 1, avg R = (10/12 + 9/12 + 6/12) / 3 = 25/36.
  // F2 = 5 * 25/36 / (4 + 25/36) = 125/169 = 73.96...% (the mean of the sentence scores,
  // (63.64 + 100) / 2 = 81.8, would be wrong).
  EXPECT_NEAR(chrf1({"ab", "abc"}, {"abc", "abc"}).score, 12500.0 / 169.0, 1e-10);
}

TEST(Chrf, HypothesisNgramsWithoutReferenceNgramsAreNotCounted) {
  // sacreBLEU counts a sentence's hypothesis n-grams of order n as 0 when its reference has no
  // n-grams of that order. line 1 "abcd" vs "abc": (hyp, ref, match) per order:
  //   (4,3,3) (3,2,2) (2,1,1) and order 4: (1,0,0) becomes (0,0,0).
  // line 2 "abcd" vs "abcd": (4,4,4) (3,3,3) (2,2,2) (1,1,1).
  // sums: (8,7,7) (6,5,5) (4,3,3) (1,1,1): P = 7/8, 5/6, 3/4, 1; R = 1 for every order.
  // avg P = (21 + 20 + 18 + 24) / 24 / 4 = 83/96, avg R = 1.
  // F2 = 5 * 83/96 / (4 * 83/96 + 1) = 415/428 = 96.96...% (counting the 4-gram would give
  // order-4 P = 1/2 and 355/380 = 93.42%).
  const ChrfScore s = chrf1({"abcd", "abcd"}, {"abc", "abcd"});
  EXPECT_EQ(s.stats.hyp[3], 1);
  EXPECT_NEAR(s.score, 41500.0 / 428.0, 1e-10);
}

TEST(Chrf, CharactersAreCodePointsNotBytes) {
  // hyp "\u00e9a" vs ref "\u00e9b" (U+00E9 is two bytes in UTF-8):
  //   order 1: {é, a} vs {é, b}: P = R = 1/2; order 2: {éa} vs {éb}: P = R = 0.
  // avg P = avg R = 1/4 -> F2 = 25%. Over bytes it would be (2/3 + 1/2 + 0) / 3 = 38.9%.
  EXPECT_NEAR(chrf1({"\xc3\xa9"
                     "a"},
                    {"\xc3\xa9"
                     "b"})
                  .score,
              25.0, 1e-10);
  // Invalid UTF-8 is not an error; its bytes are compared.
  EXPECT_DOUBLE_EQ(chrf1({"\xff\xfe"}, {"\xff\xfe"}).score, 100.0);
}

TEST(Chrf, MultipleReferencesUseTheBestPerSentence) {
  const ChrfScore s = corpus_chrf({"abc"}, {{"xyz"}, {"abc"}});
  EXPECT_DOUBLE_EQ(s.score, 100.0);
  EXPECT_EQ(s.nrefs, 2);
}

TEST(Chrf, RegressionAgainstReferenceScript) {
  // From tools/bleu_reference.py on the same corpus as the BLEU regression test:
  //   chrF2_exact = 53.693885719352366
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
  EXPECT_NEAR(chrf1(hyps, refs).score, 53.693885719352366, 1e-9);
}

TEST(Chrf, Errors) {
  EXPECT_TFM_ERROR(chrf1({"a", "b"}, {"a"}), "2 hypotheses but reference stream 1 has 1 lines");
  EXPECT_TFM_ERROR(chrf1({"a"}, {""}), "reference line 1 is empty");
}

}  // namespace
}  // namespace tfm::eval
