// What a Hugging Face tokenizer import writes (data/hf_tokenizer_import.h): the files of the
// tfm tokenizer, collected before anything is written so that a refused directory leaves nothing
// behind, then written atomically with tfm_tokenizer.json last.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "tfm/data/hf_tokenizer_config.h"
#include "tfm/data/hf_tokenizer_import.h"

namespace tfm {

struct HfImportOutput {
  HfTokenizerImport result;
  nlohmann::json config = nlohmann::json::object();         // tfm_tokenizer.json
  std::vector<std::pair<std::string, std::string>> data;    // (file name, bytes)
  std::vector<std::pair<std::string, std::string>> copies;  // (source path, file name)

  // Writes everything into out_dir and fills result.files.
  void write(const std::string& out_dir);
};

// The families: each fills `out` (config, data, result) from the HF directory `c`.
void import_marian(const HfTokenizerConfig& c, HfImportOutput& out);
void import_m2m100(const HfTokenizerConfig& c, HfImportOutput& out);
void import_fast(const HfTokenizerConfig& c, HfImportOutput& out);  // NLLB, mBART(-50), BART, GPT-2

// The framing as tfm_tokenizer.json writes it: ids, and "language" for the language token.
nlohmann::json framing_json(const SourceFraming& f);

}  // namespace tfm
