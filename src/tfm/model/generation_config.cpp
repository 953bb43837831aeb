#include "tfm/model/generation_config.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "tfm/core/check.h"
#include "tfm/core/file_util.h"

namespace tfm {

namespace fs = std::filesystem;

const char* to_string(EarlyStopping e) {
  switch (e) {
    case EarlyStopping::heuristic:
      return "false";
    case EarlyStopping::finished:
      return "true";
    case EarlyStopping::never:
      return "never";
  }
  return "?";
}

const char* to_string(TargetLanguage t) {
  switch (t) {
    case TargetLanguage::none:
      return "none";
    case TargetLanguage::forced_bos:
      return "forced_bos";
    case TargetLanguage::decoder_start:
      return "decoder_start";
  }
  return "?";
}

void GenerationConfig::validate(int64_t vocab) const {
  TFM_CHECK(num_beams >= 1) << "generation: num_beams must be at least 1, got " << num_beams;
  TFM_CHECK(num_return_sequences >= 1 && num_return_sequences <= num_beams)
      << "generation: num_return_sequences must be in [1, num_beams " << num_beams << "], got "
      << num_return_sequences;
  TFM_CHECK(std::isfinite(length_penalty)) << "generation: length_penalty must be a finite number";
  TFM_CHECK(!max_length || *max_length >= 1)
      << "generation: max_length must be at least 1, got " << *max_length;
  TFM_CHECK(!max_new_tokens || *max_new_tokens >= 1)
      << "generation: max_new_tokens must be at least 1, got " << *max_new_tokens;
  TFM_CHECK(min_length >= 0 && min_new_tokens >= 0)
      << "generation: min_length and min_new_tokens must be at least 0";
  TFM_CHECK(no_repeat_ngram_size >= 0)
      << "generation: no_repeat_ngram_size must be at least 0, got " << no_repeat_ngram_size;
  auto in_vocab = [&](const char* name, int64_t id) {
    TFM_CHECK(id >= 0 && id < vocab)
        << "generation: " << name << " " << id << " is outside the vocabulary [0, " << vocab << ")";
  };
  for (const Ids& seq : bad_words_ids) {
    TFM_CHECK(!seq.empty()) << "generation: bad_words_ids holds an empty sequence";
    for (int32_t id : seq) in_vocab("bad_words_ids entry", id);
  }
  if (forced_bos_token_id) in_vocab("forced_bos_token_id", *forced_bos_token_id);
  if (forced_eos_token_id) in_vocab("forced_eos_token_id", *forced_eos_token_id);
}

std::string GenerationConfig::to_json() const {
  nlohmann::ordered_json j;
  j["family"] = family;
  j["tokenizer"] = tokenizer;
  if (!compute_type.empty()) j["compute_type"] = compute_type;
  j["target_language"] = to_string(target_language);
  j["source_language"] = source_language;
  j["num_beams"] = num_beams;
  j["num_return_sequences"] = num_return_sequences;
  j["length_penalty"] = length_penalty;
  if (early_stopping == EarlyStopping::never)
    j["early_stopping"] = "never";
  else
    j["early_stopping"] = early_stopping == EarlyStopping::finished;
  j["max_length"] = max_length ? nlohmann::ordered_json(*max_length) : nullptr;
  j["max_new_tokens"] = max_new_tokens ? nlohmann::ordered_json(*max_new_tokens) : nullptr;
  j["min_length"] = min_length;
  j["min_new_tokens"] = min_new_tokens;
  j["no_repeat_ngram_size"] = no_repeat_ngram_size;
  j["bad_words_ids"] = bad_words_ids;
  j["forced_bos_token_id"] =
      forced_bos_token_id ? nlohmann::ordered_json(*forced_bos_token_id) : nullptr;
  j["forced_eos_token_id"] =
      forced_eos_token_id ? nlohmann::ordered_json(*forced_eos_token_id) : nullptr;
  return j.dump(2);
}

namespace {

std::optional<int64_t> optional_int(const nlohmann::json& j, const char* key,
                                    const std::string& what) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  TFM_CHECK(j[key].is_number_integer()) << what << ": " << key << " must be an integer or null";
  return j[key].get<int64_t>();
}

}  // namespace

GenerationConfig GenerationConfig::from_json(const std::string& text, const std::string& what) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    TFM_FAIL() << what << ": not valid JSON: " << e.what();
  }
  TFM_CHECK(j.is_object()) << what << ": expected a JSON object";
  static const char* kKnown[] = {"family",
                                 "tokenizer",
                                 "compute_type",
                                 "target_language",
                                 "source_language",
                                 "num_beams",
                                 "num_return_sequences",
                                 "length_penalty",
                                 "early_stopping",
                                 "max_length",
                                 "max_new_tokens",
                                 "min_length",
                                 "min_new_tokens",
                                 "no_repeat_ngram_size",
                                 "bad_words_ids",
                                 "forced_bos_token_id",
                                 "forced_eos_token_id"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    for (const char* k : kKnown) known = known || it.key() == k;
    TFM_CHECK(known) << what << ": unknown key \"" << it.key() << "\"";
  }
  GenerationConfig g;
  try {
    auto text_of = [&](const char* key, std::string& out) {
      if (j.contains(key)) out = j[key].get<std::string>();
    };
    text_of("family", g.family);
    text_of("tokenizer", g.tokenizer);
    text_of("compute_type", g.compute_type);
    if (j.contains("target_language")) {
      const std::string t = j["target_language"].get<std::string>();
      bool found = false;
      for (TargetLanguage v :
           {TargetLanguage::none, TargetLanguage::forced_bos, TargetLanguage::decoder_start})
        if (t == to_string(v)) g.target_language = v, found = true;
      TFM_CHECK(found) << what << ": target_language must be none, forced_bos or decoder_start, "
                       << "got \"" << t << "\"";
    }
    if (j.contains("source_language")) g.source_language = j["source_language"].get<bool>();
    if (j.contains("num_beams")) g.num_beams = j["num_beams"].get<int64_t>();
    if (j.contains("num_return_sequences"))
      g.num_return_sequences = j["num_return_sequences"].get<int64_t>();
    if (j.contains("length_penalty")) g.length_penalty = j["length_penalty"].get<double>();
    if (j.contains("early_stopping")) {
      const auto& e = j["early_stopping"];
      if (e.is_string()) {
        TFM_CHECK(e.get<std::string>() == "never")
            << what << ": early_stopping must be true, false or \"never\"";
        g.early_stopping = EarlyStopping::never;
      } else {
        g.early_stopping = e.get<bool>() ? EarlyStopping::finished : EarlyStopping::heuristic;
      }
    }
    g.max_length = optional_int(j, "max_length", what);
    g.max_new_tokens = optional_int(j, "max_new_tokens", what);
    if (j.contains("min_length")) g.min_length = j["min_length"].get<int64_t>();
    if (j.contains("min_new_tokens")) g.min_new_tokens = j["min_new_tokens"].get<int64_t>();
    if (j.contains("no_repeat_ngram_size"))
      g.no_repeat_ngram_size = j["no_repeat_ngram_size"].get<int64_t>();
    if (j.contains("bad_words_ids")) g.bad_words_ids = j["bad_words_ids"].get<std::vector<Ids>>();
    g.forced_bos_token_id = optional_int(j, "forced_bos_token_id", what);
    g.forced_eos_token_id = optional_int(j, "forced_eos_token_id", what);
  } catch (const nlohmann::json::exception& e) {
    TFM_FAIL() << what << ": a value has the wrong type: " << e.what();
  }
  return g;
}

std::optional<GenerationConfig> read_generation_config(const std::string& dir) {
  const std::string path = (fs::path(dir) / kGenerationFile).string();
  if (!fs::exists(path)) return std::nullopt;
  return GenerationConfig::from_json(read_file(path), path);
}

void write_generation_config(const GenerationConfig& g, const std::string& dir) {
  write_file_atomic((fs::path(dir) / kGenerationFile).string(), g.to_json() + "\n");
}

}  // namespace tfm
