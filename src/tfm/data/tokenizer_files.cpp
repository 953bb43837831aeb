#include "tfm/data/tokenizer_files.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "tfm/core/check.h"
#include "tfm/core/file_util.h"
#include "tfm/data/hf_sentencepiece_tokenizer.h"
#include "tfm/data/pipeline_tokenizer.h"
#include "tfm/data/tokenizer_json.h"
#include "tfm/data/vocab.h"

namespace tfm {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Reads `key` of `j` as T, with the file and the key in the error.
template <typename T>
T get(const json& j, const char* key, const std::string& where) {
  TFM_CHECK(j.is_object() && j.contains(key)) << where << ": \"" << key << "\" is missing";
  try {
    return j.at(key).get<T>();
  } catch (const json::exception& e) {
    TFM_FAIL() << where << ": \"" << key << "\": " << e.what();
  }
  return T{};
}

std::string beside(const std::string& config, const std::string& name) {
  TFM_CHECK(!name.empty() && fs::path(name).filename() == fs::path(name))
      << config << ": \"" << name << "\" is not a file name beside it";
  return (fs::path(config).parent_path() / name).string();
}

TokenizerSpecials read_special(const json& j, const std::string& where) {
  TokenizerSpecials s;
  s.pad = get<int64_t>(j, "pad", where);
  s.bos = get<int64_t>(j, "bos", where);
  s.eos = get<int64_t>(j, "eos", where);
  s.unk = get<int64_t>(j, "unk", where);
  return s;
}

std::shared_ptr<Tokenizer> sentencepiece_side(const json& j, const std::string& path,
                                              const std::string& family) {
  const std::string where = path + " (" + family + ")";
  HfSentencePieceSpec spec;
  const std::string style = get<std::string>(j, "style", where);
  TFM_CHECK(style == "marian" || style == "m2m100")
      << where << ": unknown SentencePiece style \"" << style << "\"";
  spec.style =
      style == "marian" ? HfSentencePieceSpec::Style::marian : HfSentencePieceSpec::Style::m2m100;
  spec.family = family;
  spec.path = path;
  spec.encode_model = beside(path, get<std::string>(j, "model", where));
  spec.decode_model = beside(path, get<std::string>(j, "decode_model", where));
  const std::string vocab_file = beside(path, get<std::string>(j, "vocab", where));
  spec.vocab = read_piece_ids(vocab_file);
  const std::string decode_vocab = beside(path, get<std::string>(j, "decode_vocab", where));
  const auto decode_ids = decode_vocab == vocab_file ? spec.vocab : read_piece_ids(decode_vocab);
  spec.size = get<int64_t>(j, "size", where);
  spec.id_to_piece.assign(static_cast<size_t>(spec.size), "");
  for (const auto& [piece, id] : decode_ids)
    if (id >= 0 && id < spec.size) spec.id_to_piece[static_cast<size_t>(id)] = piece;
  spec.added = read_added_tokens(j.value("added_tokens", json::array()), where);
  const json lang_tokens = j.value("language_tokens", json::object());
  for (const auto& [name, id] : lang_tokens.items()) spec.language_tokens[name] = id.get<int64_t>();
  for (const auto& id : j.value("special_ids", json::array()))
    spec.special_ids.insert(id.get<int64_t>());
  for (const auto& t : j.value("special_tokens", json::array()))
    spec.special_tokens.insert(t.get<std::string>());
  spec.special = read_special(j, where);
  return std::make_shared<HfSentencePieceTokenizer>(std::move(spec));
}

std::shared_ptr<Tokenizer> pipeline_side(const json& j, const std::string& path,
                                         const std::string& family) {
  const std::string where = path + " (" + family + ")";
  PipelineSpec spec;
  spec.family = family;
  spec.path = path;
  read_pipeline_steps(
      j, where, [&](const std::string& name) { return beside(path, name); }, spec);
  spec.added = read_added_tokens(j.value("added_tokens", json::array()), where);
  spec.clean_up_tokenization_spaces = j.value("clean_up_tokenization_spaces", false);
  spec.special = read_special(j, where);
  spec.size = get<int64_t>(j, "size", where);
  return std::make_shared<PipelineTokenizer>(std::move(spec));
}

std::shared_ptr<Tokenizer> side(const json& j, const std::string& path, const std::string& family) {
  const std::string kind = get<std::string>(j, "kind", path);
  if (kind == "sentencepiece") return sentencepiece_side(j, path, family);
  if (kind == "pipeline") return pipeline_side(j, path, family);
  TFM_FAIL() << path << ": unknown tokenizer kind \"" << kind << "\" (sentencepiece or pipeline)";
  return nullptr;
}

SourceFraming read_framing(const json& j, const std::string& where) {
  SourceFraming f;
  for (const char* part : {"prefix", "suffix"}) {
    auto& out = std::string(part) == "prefix" ? f.prefix : f.suffix;
    for (const json& t : j.value(part, json::array())) {
      if (t.is_string()) {
        TFM_CHECK(t.get<std::string>() == "language")
            << where << ": framing entry " << t.dump() << " (an id, or \"language\")";
        out.push_back({-1, true});
      } else {
        out.push_back({t.get<int64_t>(), false});
      }
    }
  }
  return f;
}

}  // namespace

ModelTokenizers load_tokenizer_config(const std::string& path) {
  json j;
  try {
    j = json::parse(read_file(path));
  } catch (const json::exception& e) {
    TFM_FAIL() << path << " is not valid JSON: " << e.what();
  }
  TFM_CHECK(j.value("format", "") == "tfm-tokenizer")
      << path << " is not a tfm tokenizer file (\"format\": \"tfm-tokenizer\" is missing)";
  const int version = j.value("version", 0);
  TFM_CHECK(version == 1) << path << ": tokenizer file version " << version
                          << " (this tfm reads version 1)";
  const std::string family = get<std::string>(j, "family", path);
  ModelTokenizers t;
  auto src = side(get<json>(j, "source", path), path, family);
  auto trg = j.contains("target") ? side(j.at("target"), path, family) : src;
  std::map<std::string, int64_t> languages;
  const json langs = j.value("languages", json::object());
  for (const auto& [code, id] : langs.items()) languages[code] = id.get<int64_t>();
  src->set_framing(read_framing(j.value("framing", json::object()), path));
  src->set_languages(languages, j.value("source_lang", ""));
  if (trg != src) trg->set_languages(languages, j.value("source_lang", ""));
  t.src = src;
  t.trg = trg;
  return t;
}

std::vector<std::string> tokenizer_file_names(const std::string& dir) {
  std::vector<std::string> names;
  const fs::path config = fs::path(dir) / kTokenizerConfigFile;
  if (fs::exists(config)) {
    names.push_back(kTokenizerConfigFile);
    // Every data file a side names, once.
    std::function<void(const json&)> walk = [&](const json& j) {
      if (j.is_object()) {
        for (const auto& [key, v] : j.items()) {
          const bool file_key = key == "model" || key == "decode_model" || key == "vocab" ||
                                key == "decode_vocab" || key == "merges" || key == "pieces" ||
                                key == "charsmap";
          if (file_key && v.is_string()) {
            if (std::find(names.begin(), names.end(), v.get<std::string>()) == names.end())
              names.push_back(v.get<std::string>());
          } else {
            walk(v);
          }
        }
      } else if (j.is_array()) {
        for (const json& v : j) walk(v);
      }
    };
    try {
      walk(json::parse(read_file(config.string())));
    } catch (const json::exception& e) {
      TFM_FAIL() << config.string() << " is not valid JSON: " << e.what();
    }
    return names;
  }
  const ModelVocabPaths p = find_model_vocabs(dir);
  for (const std::string& path : {p.src, p.trg}) {
    const std::string name = fs::path(path).filename().string();
    if (!path.empty() && std::find(names.begin(), names.end(), name) == names.end())
      names.push_back(name);
  }
  return names;
}

ModelTokenizers load_model_tokenizers(const std::string& dir) {
  const fs::path config = fs::path(dir) / kTokenizerConfigFile;
  if (fs::exists(config)) return load_tokenizer_config(config.string());
  const ModelVocabPaths p = find_model_vocabs(dir);
  ModelTokenizers t;
  if (p.src.empty()) return t;
  auto src = std::make_shared<Vocab>(p.src);
  t.src = src;
  t.trg = p.trg == p.src ? t.src : std::make_shared<Vocab>(p.trg);
  return t;
}

}  // namespace tfm
