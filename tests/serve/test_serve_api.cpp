// The server's JSON layer (serve/api.h): a request's bad option is a 400 whose message names it as
// the JSON spells it ('n_best', 'sampling.topp'), from the library's one validator; the JSON
// layer itself checks only types.
#include <gtest/gtest.h>

#include <string>

#include "tfm/serve/api.h"

namespace tfm::serve {
namespace {

ModelInfo model() {
  ModelInfo m;
  m.trg_vocab_size = 1000;
  m.src_vocab_size = 1000;
  m.max_length = 100;
  return m;
}

// The status and message of the HttpError that `body` raises (0 and "" when it passes).
std::pair<int, std::string> refusal(const std::string& body) {
  try {
    validate_request(parse_translate_request(body, 8), model());
  } catch (const HttpError& e) {
    return {e.status(), e.what()};
  }
  return {0, ""};
}

TEST(ServeApi, BadOptionsAreNamedAsTheJsonSpellsThem) {
  const std::pair<std::string, std::string> cases[] = {
      {R"({"text": "a", "beam_size": 0})", "'beam_size' must be at least 1 (got 0)"},
      {R"({"text": "a", "beam_size": 65})", "'beam_size' must be at most 64 here (got 65)"},
      {R"({"text": "a", "beam_size": 2, "n_best": 3})", "'n_best' 3 exceeds 'beam_size' 2"},
      {R"({"text": "a", "beam_size": 2, "sampling": {}})",
       "'sampling' needs 'beam_size' 1 (got 2)"},
      {R"({"text": "a", "sampling": {"topp": 0}})", "'sampling.topp' must be in (0, 1] (got 0)"},
      {R"({"text": "a", "sampling": {"topk": 1001}})",
       "'sampling.topk' must be between 0 and 1000 (got 1001)"},
      {R"({"text": "a", "sampling": {"temperature": -1}})",
       "'sampling.temperature' must be in [0, 1e+06] (got -1)"},
      {R"({"text": "a", "max_length": 0})", "'max_length' must be between 1 and"},
      {R"({"text": "a", "min_length": 101})", "'min_length' must be between 0 and 100 (got 101)"},
      {R"({"text": "a", "length_penalty": 11})", "'length_penalty' must be in [0, 10] (got 11)"},
  };
  for (const auto& [body, message] : cases) {
    const auto [status, got] = refusal(body);
    EXPECT_EQ(status, 400) << body;
    EXPECT_EQ(got.rfind(message, 0), 0u)
        << body << ": want '" << message << "', got '" << got << "'";
  }
}

TEST(ServeApi, TheJsonLayerChecksTypesAndTheSearchFollowsTheRequest) {
  EXPECT_EQ(refusal(R"({"text": "a", "beam_size": "4"})").second,
            "'beam_size' must be an integer (got string)");
  EXPECT_EQ(refusal(R"({"text": "a", "sampling": {"seed": -1}})").second,
            "'seed' must be a non-negative integer (got a negative one)");
  EXPECT_EQ(refusal(R"({"text": "a", "sampling": 3})").second,
            "'sampling' must be an object (got number)");
  EXPECT_EQ(parse_translate_request(R"({"text": "a"})", 8).options.search, Search::greedy);
  EXPECT_EQ(parse_translate_request(R"({"text": "a", "beam_size": 3})", 8).options.search,
            Search::beam);
  const TranslateRequest s =
      parse_translate_request(R"({"text": "a", "sampling": {"topk": 5, "seed": 7}})", 8);
  EXPECT_EQ(s.options.search, Search::sampling);
  EXPECT_EQ(s.options.sampling_topk, 5);
  EXPECT_EQ(s.options.seed, 7u);
  EXPECT_EQ(refusal(R"({"text": ["a", "b"], "beam_size": 4, "n_best": 4})").first, 0);
}

}  // namespace
}  // namespace tfm::serve
