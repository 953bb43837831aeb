// "Did you mean": the closest known names to a mistyped one (core/suggest.h).
#include <gtest/gtest.h>

#include "tfm/core/suggest.h"

namespace tfm {
namespace {

using Names = std::vector<std::string>;

TEST(Suggest, TyposTranspositionsAndPrefixes) {
  const Names commands = {"info", "score", "eval", "translate", "generate", "train", "serve"};
  EXPECT_EQ(closest_names("tranlsate", commands), Names{"translate"});  // a swap is one edit
  EXPECT_EQ(closest_names("trian", commands), Names{"train"});
  EXPECT_EQ(closest_names("serv", commands), Names{"serve"});
  EXPECT_EQ(closest_names("frobnicate", commands), Names{});
  const Names flags = {"--model", "-m", "--beam-size", "--n-best", "--sampling-topk",
                       "--sampling-topp", "--max-updates", "--max-epochs", "--max-minutes",
                       "--max-length"};
  EXPECT_EQ(closest_names("--beam", flags), Names{"--beam-size"});  // the one it begins
  EXPECT_EQ(closest_names("--modle", flags), Names{"--model"});
  EXPECT_EQ(closest_names("--Beam_Size", flags), Names{"--beam-size"});  // case and '_'
  EXPECT_EQ(closest_names("--sampling-top", flags), (Names{"--sampling-topk", "--sampling-topp"}));
  EXPECT_EQ(closest_names("--max", flags), Names{});  // four begin so: no guess
  EXPECT_EQ(closest_names("-x", flags), Names{});     // too short to guess from
  EXPECT_EQ(closest_names("--", flags), Names{});
}

TEST(Suggest, OneOf) {
  EXPECT_EQ(one_of({"a"}, "'"), "'a'");
  EXPECT_EQ(one_of({"a", "b"}, ""), "a or b");
  EXPECT_EQ(one_of({"a", "b", "c"}, "\""), "\"a\", \"b\" or \"c\"");
}

}  // namespace
}  // namespace tfm
