// The parts of tfm_tokenizer.json (data/tokenizer_files.h) that its reader and the Hugging Face
// import (data/hf_tokenizer_import.h) share, so the two cannot disagree on the schema: added
// tokens, a tokenizers-backed side's steps, and the data files (piece -> id maps, BPE merges,
// Unigram pieces, the precompiled character map).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tfm/data/added_tokens.h"
#include "tfm/data/pipeline_tokenizer.h"

namespace tfm {

// {"piece": id, ...}
std::unordered_map<std::string, int64_t> read_piece_ids(const std::string& path);
// [["a", "b"], ...] (or HF's ["a b", ...])
BpeModel::Merges read_merges_json(const nlohmann::json& j, const std::string& where);
// [["piece", score], ...]
std::vector<std::pair<std::string, double>> read_unigram_pieces(const nlohmann::json& j,
                                                                const std::string& where);

std::vector<AddedToken> read_added_tokens(const nlohmann::json& j, const std::string& where);
nlohmann::json added_tokens_json(const std::vector<AddedToken>& tokens);

// "normalizers", "pre_tokenizers", "model" and "decoder" of a pipeline side into `spec`;
// `file` resolves a data file name to its path.
void read_pipeline_steps(const nlohmann::json& j, const std::string& where,
                         const std::function<std::string(const std::string&)>& file,
                         PipelineSpec& spec);

}  // namespace tfm
