// The one validator of the translation options (include/tfm/translator.h): each option's bad
// values are refused with a tfm::InvalidArgument that names the option through the caller's
// speller, good values pass, and the library's own calls use the field names.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "tfm/translator.h"

namespace tfm {
namespace {

ModelInfo model() {
  ModelInfo m;
  m.trg_vocab_size = 40;  // 38 tokens it can generate
  m.src_vocab_size = 40;
  m.max_length = 100;
  return m;
}

// A speller no front end uses, so a message can only have it from the speller.
std::string angled(std::string_view field) {
  return "<" + std::string(field) + ">";
}

// The message of the InvalidArgument that `options` raise ("" when they pass).
std::string refusal(const TranslationOptions& options, const ModelInfo& m = model(),
                    const TranslationLimits& limits = {}) {
  try {
    validate_translation_options(options, m, angled, limits);
  } catch (const InvalidArgument& e) {
    return e.message();
  }
  return "";
}

TEST(TranslationOptions, DefaultsAndEverySearchPass) {
  EXPECT_EQ(refusal({}), "");
  EXPECT_EQ(refusal({.search = Search::beam, .beam_size = 38, .num_hypotheses = 38}), "");
  EXPECT_EQ(refusal({.search = Search::beam, .beam_size = 1}), "");  // a beam of 1
  EXPECT_EQ(refusal({.search = Search::sampling, .sampling_topk = 40, .sampling_topp = 1.0}), "");
  EXPECT_EQ(refusal({.min_decoding_length = 100}), "");
}

TEST(TranslationOptions, EachBadValueIsNamedThroughTheSpeller) {
  const struct {
    TranslationOptions options;
    std::string message;
  } cases[] = {
      {{.beam_size = 0}, "<beam_size> must be at least 1 (got 0)"},
      {{.search = Search::beam, .beam_size = 39},
       "<beam_size> 39 is larger than the model's target vocabulary (38 tokens it can generate)"},
      {{.beam_size = 4}, "<beam_size> 4 needs <search=beam>"},
      {{.search = Search::sampling, .beam_size = 2},
       "<search=sampling> needs <beam_size> 1 (got 2)"},
      {{.search = Search::beam, .beam_size = 2, .num_hypotheses = 3},
       "<num_hypotheses> 3 exceeds <beam_size> 2"},
      {{.num_hypotheses = 0}, "<num_hypotheses> must be at least 1 (got 0)"},
      {{.length_penalty = -1}, "<length_penalty> must be in [0, 10] (got -1)"},
      {{.length_penalty = std::nan("")}, "<length_penalty> must be a finite number (got nan)"},
      {{.max_length_factor = 1e30}, "<max_length_factor> must be in [0, 1000] (got 1e+30)"},
      {{.max_length_extra = -1}, "<max_length_extra> must be between 0 and 1000000 (got -1)"},
      {{.max_decoding_length = 0}, "<max_decoding_length> must be between 1 and"},
      {{.min_decoding_length = 101}, "<min_decoding_length> must be between 0 and 100 (got 101)"},
      {{.sampling_temperature = -0.5}, "<sampling_temperature> must be in [0, 1e+06] (got -0.5)"},
      {{.sampling_topk = 41}, "<sampling_topk> must be between 0 and 40 (got 41)"},
      {{.sampling_topp = 0}, "<sampling_topp> must be in (0, 1] (got 0)"},
  };
  for (const auto& c : cases) {
    const std::string got = refusal(c.options);
    EXPECT_EQ(got.rfind(c.message, 0), 0u) << "want '" << c.message << "', got '" << got << "'";
  }
  ModelInfo lm = model();
  lm.decoder_only = true;
  EXPECT_EQ(refusal({.return_attention = true}, lm),
            "<return_attention>: a decoder-only model has no cross-attention to return");
  EXPECT_EQ(refusal({.return_attention = true}), "");
}

TEST(TranslationOptions, CapsOfAServiceAreChecked) {
  const TranslationOptions wide{.search = Search::beam, .beam_size = 8};
  EXPECT_EQ(refusal(wide, model(), {.max_beam_size = 8}), "");
  EXPECT_EQ(refusal(wide, model(), {.max_beam_size = 4}),
            "<beam_size> must be at most 4 here (got 8)");
}

TEST(TranslationOptions, TheLibrarySpellsFieldNames) {
  try {
    validate_translation_options({.search = Search::sampling, .beam_size = 2}, model());
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.message(), "search sampling needs beam_size 1 (got 2)");
  }
}

TEST(TranslatorOptions, EachBadValueIsNamedThroughTheSpeller) {
  auto refused = [](const TranslatorOptions& o) {
    try {
      validate_translator_options(o, angled);
    } catch (const InvalidArgument& e) {
      return e.message();
    }
    return std::string();
  };
  EXPECT_EQ(refused({}), "");
  EXPECT_NE(refused({.intra_threads = -1}).find("<intra_threads> must be at least 0"),
            std::string::npos);
  EXPECT_NE(refused({.intra_threads = 1 << 20}).find("is more than the"), std::string::npos);
  EXPECT_EQ(refused({.inter_threads = 0}), "<inter_threads> must be between 1 and 1024 (got 0)");
  EXPECT_NE(refused({.max_batch_size = 0}).find("<max_batch_size> must be between 1 and"),
            std::string::npos);
  EXPECT_NE(refused({.max_batch_tokens = -1}).find("<max_batch_tokens> must be between 0 and"),
            std::string::npos);
  EXPECT_EQ(refused({.compute_type = ComputeType::int8}), "");
}

TEST(StreamOptions, ReadAheadIsNamedThroughTheSpeller) {
  EXPECT_THROW(validate_stream_options({.read_ahead = 0}), InvalidArgument);
  try {
    validate_stream_options({.read_ahead = 0}, angled);
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.message().rfind("<read_ahead> must be between 1 and", 0), 0u) << e.message();
  }
}

TEST(Search, NamesAndTheUsualSpellings) {
  for (Search s : {Search::greedy, Search::beam, Search::sampling})
    EXPECT_EQ(parse_search(search_name(s)), s);
  EXPECT_THROW(parse_search("nucleus"), InvalidArgument);
  EXPECT_EQ(search_for(1, false), Search::greedy);
  EXPECT_EQ(search_for(4, false), Search::beam);
  EXPECT_EQ(search_for(1, true), Search::sampling);
  EXPECT_EQ(search_for(4, true), Search::sampling);  // and the validator refuses its beam of 4
}

}  // namespace
}  // namespace tfm
