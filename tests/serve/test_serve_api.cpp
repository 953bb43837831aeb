// The server's JSON layer (serve/api.h): a request's bad option is a 400 whose message names it as
// the JSON spells it ('n_best', 'sampling.topp'), from the library's one validator; the JSON
// layer itself checks only types.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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

// Each body is a 400 whose message starts with its text.
template <size_t N>
void expect_400s(const std::pair<std::string, std::string> (&cases)[N]) {
  for (const auto& [body, message] : cases) {
    const auto [status, got] = refusal(body);
    EXPECT_EQ(status, 400) << body;
    EXPECT_EQ(got.rfind(message, 0), 0u)
        << body << ": want '" << message << "', got '" << got << "'";
  }
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
      {R"({"text": "a", "repetition_penalty": 0})",
       "'repetition_penalty' must be in (0, 1000] (got 0)"},
      {R"({"text": "a", "no_repeat_ngram_size": -2})", "'no_repeat_ngram_size' must be between"},
  };
  expect_400s(cases);
}

TEST(ServeApi, TheJsonLayerChecksTypesAndTheSearchFollowsTheRequest) {
  EXPECT_EQ(refusal(R"({"text": "a", "beam_size": "4"})").second,
            "'beam_size' must be an integer (got string)");
  EXPECT_EQ(refusal(R"({"text": "a", "sampling": {"seed": -1}})").second,
            "'sampling.seed' must be a non-negative integer (got a negative one)");
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
  const TranslateRequest rep = parse_translate_request(
      R"({"text": "a", "repetition_penalty": 1.5, "no_repeat_ngram_size": 3})", 8);
  EXPECT_EQ(rep.options.repetition_penalty, 1.5);
  EXPECT_EQ(rep.options.no_repeat_ngram_size, 3);
  EXPECT_EQ(parse_translate_request(R"({"text": "a"})", 8).options.no_repeat_ngram_size, -1);
}

TEST(ServeApi, UnknownFieldsAndUnrepresentableNumbersNameTheField) {
  const std::pair<std::string, std::string> cases[] = {
      {R"({"text": "a", "beam": 4})", "unknown field 'beam' (did you mean 'beam_size'?)"},
      {R"({"text": "a", "nbest": 4})", "unknown field 'nbest' (did you mean 'n_best'?)"},
      {R"({"text": "a", "sampling": {"top_k": 4}})",
       "unknown field 'sampling.top_k' (did you mean 'sampling.topk'?)"},
      {R"({"text": "a", "zzz": 1})", "unknown field 'zzz' (the fields are text, target_prefix,"},
      // LibreTranslate's request sent to the other route: which route takes it.
      {R"({"q": "a", "target": "en"})",
       "unknown field 'q' (LibreTranslate's: POST /translate takes it; POST /v1/translate takes "
       "'text')"},
      {R"({"text": "a", "length_penalty": 1e999})",
       "'length_penalty' is out of the range of a double: '1e999'"},
      {R"({"text": "a", "sampling": {"topp": -1e400}})",
       "'sampling.topp' is out of the range of a double: '-1e400'"},
      {R"({"text": ["a", 1e999]})", "'text' is out of the range of a double"},
      {R"({"text": "a")", "malformed JSON: parse error at line 1, column 13"},
      {std::string(40, '[') + std::string(40, ']'), "the JSON is nested deeper than 32 levels"},
      // A field twice: which was meant? (The parser alone keeps the last.)
      {R"({"text": "a", "beam_size": 1, "beam_size": 4})", "'beam_size' is given twice"},
      {R"({"text": "a", "sampling": {"topk": 1, "topk": 2}})", "'sampling.topk' is given twice"},
  };
  expect_400s(cases);
  // The same key in two objects is not a repeat.
  EXPECT_EQ(refusal(R"({"text": "a", "sampling": {"seed": 1}, "n_best": 1})").first, 0);
}

TEST(ServeApi, AttentionIsAHypothesisRowsWithTheirLabels) {
  TranslateRequest r = parse_translate_request(R"({"text": ["a"], "return_attention": true})", 8);
  TranslationResult res;
  TranslationHypothesis h;
  h.text = "x y";
  h.ids = {5, 6};
  h.attention = {{0.25f, 0.75f}, {1.0f / 3, 2.0f / 3}};
  res.hypotheses.push_back(h);
  const std::string out =
      translate_response(r, {res}, 100, "translations", {{{"▁a", "</s>"}, {{"▁x", "▁y"}}}});
  EXPECT_EQ(out, R"({"attention":[{"source_tokens":["▁a","</s>"],"target_tokens":["▁x","▁y"],)"
                 R"("weights":[[0.25,0.75],[0.333333,0.666667]]}],"translations":["x y"]})");
}

TEST(ServeApi, LibreTranslateRequestsAndLanguages) {
  const LibreRequest j = parse_libre_json(
      R"({"q": ["a", "b"], "source": "de", "target": "en", "alternatives": 2, "api_key": "k"})", 8);
  EXPECT_EQ(j.q, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(j.alternatives, 2);
  EXPECT_EQ(j.api_key, "k");
  const LibreRequest f =
      parse_libre_form({{"q", "a"}, {"q", "b"}, {"q", "a"}, {"target", "en"}}, 8);
  EXPECT_EQ(f.q, (std::vector<std::string>{"a", "b", "a"}));
  EXPECT_FALSE(f.single);
  EXPECT_THROW(parse_libre_form({{"q", "a"}, {"traget", "en"}}, 8), HttpError);
  EXPECT_THROW(parse_libre_form({{"q", "a"}, {"q", "b"}}, 1), HttpError);
  try {  // only q repeats: two targets would leave the server to guess
    parse_libre_form({{"q", "a"}, {"target", "en"}, {"target", "fr"}}, 8);
    ADD_FAILURE() << "a form with two targets was taken";
  } catch (const HttpError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_STREQ(e.what(), "'target' is given twice (only 'q' may repeat)");
  }
  EXPECT_THROW(parse_libre_json(R"({"q": "a", "target": "en", "target": "fr"})", 8), HttpError);
  try {  // /v1/translate's request sent to LibreTranslate's route
    parse_libre_json(R"({"text": "a"})", 8);
    ADD_FAILURE() << "'text' was taken by LibreTranslate's route";
  } catch (const HttpError& e) {
    EXPECT_STREQ(e.what(),
                 "unknown field 'text' (POST /v1/translate's: LibreTranslate's POST /translate "
                 "takes 'q')");
  }
  EXPECT_EQ(libre_response(j, {{"A", "A2", "A3"}, {"B"}}),
            R"({"alternatives":[["A2","A3"],[]],"translatedText":["A","B"]})");
  EXPECT_EQ(languages_response({{"de", "en"}, {"de", "fr"}, {"xx_Latn", "en"}}),
            R"([{"code":"de","name":"German","targets":["en","fr"]},)"
            R"({"code":"xx_Latn","name":"xx_Latn","targets":["en"]}])");
}

TEST(ServeApi, FrontendSettingsAsLibreTranslateWritesThem) {
  const auto settings = [](const std::vector<LanguagePair>& pairs, bool key) {
    return nlohmann::json::parse(frontend_settings_response(pairs, key, 300));
  };
  const auto known = settings({{"de", "en"}, {"de", "fr"}}, true);
  EXPECT_EQ(known["language"]["source"], (nlohmann::json{{"code", "de"}, {"name", "German"}}));
  EXPECT_EQ(known["language"]["target"], (nlohmann::json{{"code", "en"}, {"name", "English"}}));
  EXPECT_EQ(known["apiKeys"], true);
  EXPECT_EQ(known["keyRequired"], true);
  EXPECT_EQ(known["frontendTimeout"], 300);
  EXPECT_EQ(known["charLimit"], -1);
  EXPECT_EQ(known["filesTranslation"], false);
  EXPECT_EQ(known["supportedFilesFormat"], nlohmann::json::array());
  // No pair known: any source ("auto"), no target to preselect.
  const auto unknown = settings({}, false);
  EXPECT_EQ(unknown["language"]["source"],
            (nlohmann::json{{"code", "auto"}, {"name", "Auto Detect"}}));
  EXPECT_EQ(unknown["language"]["target"]["code"], "");
  EXPECT_EQ(unknown["keyRequired"], false);
}

}  // namespace
}  // namespace tfm::serve
