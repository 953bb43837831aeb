// A Hugging Face directory's tokenizer_config.json as Transformers 5 reads it, for the import
// (data/hf_tokenizer_import.h): the tokenizer class, the named special tokens (a string or an
// AddedToken object each), added_tokens_decoder, the extra special tokens, and the few settings
// that change ids or text; plus the language-code lists that Transformers' classes carry.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tfm/data/added_tokens.h"

namespace tfm {

struct HfTokenizerConfig {
  std::string dir;
  nlohmann::json raw = nlohmann::json::object();  // tokenizer_config.json ({} when absent)
  std::string tokenizer_class;                    // without a "Fast" suffix

  // A named special token ("bos_token", ...): the config's value, else `fallback` ("" = none).
  // Strings become special tokens with every flag false; objects keep their flags.
  std::optional<AddedToken> named(const std::string& key, const std::string& fallback) const;
  // added_tokens_decoder, sorted by id.
  std::vector<AddedToken> added_tokens_decoder() const;
  // extra_special_tokens (Transformers 5), else additional_special_tokens (4.x); nullopt when
  // the config has neither.
  std::optional<std::vector<AddedToken>> extra_special_tokens() const;
  std::string string_or(const std::string& key, const std::string& fallback) const;
  bool bool_or(const std::string& key, bool fallback) const;
  std::string path(const std::string& file) const;  // dir/file
  bool has_file(const std::string& file) const;
};

HfTokenizerConfig read_hf_tokenizer_config(const std::string& dir, const std::string& model_type);

// The language codes Transformers' classes know (FAIRSEQ_LANGUAGE_CODES of each module).
const std::vector<std::string>& nllb_language_codes();
const std::vector<std::string>& mbart_language_codes();
const std::vector<std::string>& mbart50_language_codes();  // mBART's 25, then 27 more
const std::vector<std::string>& m2m100_language_codes(const std::string& set);  // m2m100, wmt21

}  // namespace tfm
