// A model directory's tokenizers. tfm's own directories hold SentencePiece models (vocab.model,
// or vocab.src.model + vocab.trg.model: data/vocab.h); a directory converted from Hugging Face
// holds tfm_tokenizer.json, which names the family, each side's tokenizer and the files it reads
// (the schema is in docs/convert.md, "Tokenization"; hf_tokenizer_import.h writes it).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tfm/data/tokenizer.h"

namespace tfm {

inline constexpr const char* kTokenizerConfigFile = "tfm_tokenizer.json";

struct ModelTokenizers {
  std::shared_ptr<const Tokenizer> src, trg;
};

// The source and target tokenizers of a model directory (the same object when they are one):
// tfm_tokenizer.json when present, else the SentencePiece vocabularies; null members when the
// directory has neither.
ModelTokenizers load_model_tokenizers(const std::string& dir);

// The names of every tokenizer file of a model directory (tfm_tokenizer.json and the data files
// it names, or the SentencePiece models), relative to it: what a copy of the model must take.
std::vector<std::string> tokenizer_file_names(const std::string& dir);

// The tokenizers tfm_tokenizer.json describes (`path`: the file; the files it names are beside it).
ModelTokenizers load_tokenizer_config(const std::string& path);

}  // namespace tfm
