// The import of Transformers' SentencePiece-backed ("slow") tokenizers: MarianTokenizer and
// M2M100Tokenizer (data/hf_tokenizer_import.h).
#include <algorithm>
#include <unordered_map>

#include "tfm/core/check.h"
#include "tfm/data/hf_import_output.h"
#include "tfm/data/tokenizer_json.h"

namespace tfm {

using nlohmann::json;

namespace {

// What a slow tokenizer's added tokens and special tokens come to, as Transformers 5's
// PythonBackend computes them: tokenizer_config.json's added_tokens_decoder, then every special
// token (bos, eos, unk, sep, pad, cls, mask, then the extra ones) that is not among them, at its
// vocabulary id or appended after the vocabulary.
struct SlowSpecials {
  std::vector<AddedToken> added;
  std::vector<int64_t> special_ids;
  std::vector<std::string> special_tokens;
  TokenizerSpecials ids;
};

SlowSpecials slow_specials(const HfTokenizerConfig& c,
                           const std::unordered_map<std::string, int64_t>& vocab,
                           const std::vector<std::pair<std::string, std::string>>& named,
                           const std::vector<AddedToken>& extras) {
  SlowSpecials s;
  std::unordered_map<std::string, int64_t> current = vocab;
  for (AddedToken t : c.added_tokens_decoder()) {
    current[t.content] = t.id;
    s.added.push_back(std::move(t));
  }
  std::vector<std::string> specials;
  for (const auto& [key, fallback] : named)
    if (const auto t = c.named(key, fallback)) specials.push_back(t->content);
  for (const AddedToken& t : extras) specials.push_back(t.content);
  auto added_id = [&](const std::string& content) -> int64_t {
    for (const AddedToken& t : s.added)
      if (t.content == content) return t.id;
    return -1;
  };
  for (const std::string& content : specials) {
    if (content.empty() || added_id(content) >= 0) continue;
    AddedToken t;
    t.content = content;
    t.special = true;
    const auto it = current.find(content);
    t.id = it != current.end() ? it->second : static_cast<int64_t>(current.size());
    current[content] = t.id;
    s.added.push_back(std::move(t));
  }
  for (const std::string& content : specials) {
    if (std::find(s.special_tokens.begin(), s.special_tokens.end(), content) !=
        s.special_tokens.end())
      continue;
    s.special_tokens.push_back(content);
    s.special_ids.push_back(added_id(content));
  }
  auto id_of = [&](const std::string& key, const std::string& fallback) -> int64_t {
    const auto t = c.named(key, fallback);
    return t ? added_id(t->content) : -1;
  };
  for (const auto& [key, fallback] : named) {
    if (key == "pad_token") s.ids.pad = id_of(key, fallback);
    if (key == "bos_token") s.ids.bos = id_of(key, fallback);
    if (key == "eos_token") s.ids.eos = id_of(key, fallback);
    if (key == "unk_token") s.ids.unk = id_of(key, fallback);
  }
  return s;
}

json slow_side(const SlowSpecials& s, const std::string& style, const std::string& model,
               const std::string& decode_model, const std::string& vocab,
               const std::string& decode_vocab, int64_t size) {
  json j = {{"kind", "sentencepiece"},
            {"style", style},
            {"model", model},
            {"decode_model", decode_model},
            {"vocab", vocab},
            {"decode_vocab", decode_vocab},
            {"added_tokens", added_tokens_json(s.added)},
            {"special_ids", s.special_ids},
            {"special_tokens", s.special_tokens},
            {"pad", s.ids.pad},
            {"bos", s.ids.bos},
            {"eos", s.ids.eos},
            {"unk", s.ids.unk},
            {"size", size}};
  return j;
}

int64_t size_with(const std::unordered_map<std::string, int64_t>& vocab, const SlowSpecials& s) {
  int64_t top = -1;
  for (const auto& [p, id] : vocab) top = std::max(top, id);
  for (const AddedToken& t : s.added) top = std::max(top, t.id);
  return top + 1;
}

void require_plain_spm(const HfTokenizerConfig& c) {
  const json kwargs = c.raw.value("sp_model_kwargs", json::object());
  TFM_CHECK(kwargs.is_object() && kwargs.empty())
      << c.path("tokenizer_config.json") << ": sp_model_kwargs " << kwargs.dump()
      << " (SentencePiece sampling or other encoder options); tfm reproduces the default only";
}

void require_file(const HfTokenizerConfig& c, const std::string& name, const char* what) {
  TFM_CHECK(c.has_file(name)) << c.dir << " has no " << name << " (" << what << ")";
}

}  // namespace

void import_marian(const HfTokenizerConfig& c, HfImportOutput& out) {
  require_plain_spm(c);
  for (const char* f : {"source.spm", "target.spm", "vocab.json"})
    require_file(c, f, "MarianTokenizer reads source.spm, target.spm and vocab.json");
  const bool separate = c.bool_or("separate_vocabs", false);
  if (separate) require_file(c, "target_vocab.json", "MarianTokenizer with separate_vocabs");
  const auto vocab = read_piece_ids(c.path("vocab.json"));
  const std::vector<std::pair<std::string, std::string>> named = {
      {"bos_token", ""},      {"eos_token", "</s>"}, {"unk_token", "<unk>"}, {"sep_token", ""},
      {"pad_token", "<pad>"}, {"cls_token", ""},     {"mask_token", ""}};
  const SlowSpecials s =
      slow_specials(c, vocab, named, c.extra_special_tokens().value_or(std::vector<AddedToken>{}));
  TFM_CHECK(s.ids.unk >= 0 && vocab.count(c.named("unk_token", "<unk>")->content) != 0)
      << c.path("vocab.json") << " has no unknown token (MarianTokenizer requires one)";
  const int64_t size = size_with(vocab, s);
  out.result.family = "marian";
  out.result.special = s.ids;
  out.copies = {{c.path("source.spm"), "source.spm"},
                {c.path("target.spm"), "target.spm"},
                {c.path("vocab.json"), "vocab.json"}};
  // Transformers decodes with the source model unless the vocabularies are separate.
  out.config["source"] =
      slow_side(s, "marian", "source.spm", "source.spm", "vocab.json", "vocab.json", size);
  if (separate) {
    out.copies.emplace_back(c.path("target_vocab.json"), "target_vocab.json");
    const auto trg_vocab = read_piece_ids(c.path("target_vocab.json"));
    out.config["target"] = slow_side(s, "marian", "target.spm", "target.spm", "target_vocab.json",
                                     "target_vocab.json", size_with(trg_vocab, s));
    out.result.trg_size = size_with(trg_vocab, s);
  } else {
    out.config["target"] =
        slow_side(s, "marian", "target.spm", "source.spm", "vocab.json", "vocab.json", size);
    out.result.trg_size = size;
    // Multilingual OPUS-MT models name the target language in the source text: ">>fra<<".
    for (const auto& [piece, id] : vocab)
      if (piece.size() > 4 && piece.starts_with(">>") && piece.ends_with("<<"))
        out.result.languages[piece] = id;
  }
  out.result.src_size = size;
  out.result.framing.suffix = {{s.ids.eos, false}};
}

void import_m2m100(const HfTokenizerConfig& c, HfImportOutput& out) {
  require_plain_spm(c);
  for (const char* f : {"vocab.json", "sentencepiece.bpe.model"})
    require_file(c, f, "M2M100Tokenizer reads vocab.json and sentencepiece.bpe.model");
  const auto vocab = read_piece_ids(c.path("vocab.json"));
  const auto& codes = m2m100_language_codes(c.string_or("language_codes", "m2m100"));
  // The class appends the language tokens to the extra special tokens it is given; a config
  // that lists extra_special_tokens (Transformers 5 writes []) replaces that list.
  std::vector<AddedToken> extras;
  if (c.raw.contains("extra_special_tokens") && !c.raw["extra_special_tokens"].is_null()) {
    extras = *c.extra_special_tokens();
  } else {
    extras = c.extra_special_tokens().value_or(std::vector<AddedToken>{});
    for (const std::string& code : codes) {
      const std::string token = "__" + code + "__";
      if (std::none_of(extras.begin(), extras.end(),
                       [&](const AddedToken& t) { return t.content == token; })) {
        AddedToken t;
        t.content = token;
        t.special = true;
        extras.push_back(t);
      }
    }
  }
  const std::vector<std::pair<std::string, std::string>> named = {
      {"bos_token", "<s>"},   {"eos_token", "</s>"}, {"unk_token", "<unk>"}, {"sep_token", "</s>"},
      {"pad_token", "<pad>"}, {"cls_token", ""},     {"mask_token", ""}};
  // get_vocab() holds the vocabulary ids [0, len(vocab.json)) only.
  const SlowSpecials s = slow_specials(c, vocab, named, extras);
  TFM_CHECK(s.ids.unk >= 0 && vocab.count(c.named("unk_token", "<unk>")->content) != 0)
      << c.path("vocab.json") << " has no unknown token (M2M100Tokenizer requires one)";
  json lang_tokens = json::object();
  const auto encoder_size = static_cast<int64_t>(vocab.size());
  for (size_t i = 0; i < codes.size(); ++i) {
    const int64_t id = encoder_size + static_cast<int64_t>(i);
    lang_tokens["__" + codes[i] + "__"] = id;
    out.result.languages[codes[i]] = id;
  }
  int64_t size = std::max(size_with(vocab, s), encoder_size + static_cast<int64_t>(codes.size()));
  out.result.family = "m2m100";
  out.result.special = s.ids;
  out.copies = {{c.path("sentencepiece.bpe.model"), "sentencepiece.bpe.model"},
                {c.path("vocab.json"), "vocab.json"}};
  json side = slow_side(s, "m2m100", "sentencepiece.bpe.model", "sentencepiece.bpe.model",
                        "vocab.json", "vocab.json", size);
  side["language_tokens"] = lang_tokens;
  out.config["source"] = side;
  out.result.src_size = out.result.trg_size = size;
  out.result.src_lang = c.string_or("src_lang", "en");
  out.result.tgt_lang = c.string_or("tgt_lang", "");
  out.result.framing.prefix = {{-1, true}};
  out.result.framing.suffix = {{s.ids.eos, false}};
  TFM_CHECK(out.result.languages.count(out.result.src_lang) != 0)
      << c.path("tokenizer_config.json") << ": src_lang \"" << out.result.src_lang
      << "\" is not one of the tokenizer's languages";
  if (!out.result.tgt_lang.empty()) {
    TFM_CHECK(out.result.languages.count(out.result.tgt_lang) != 0)
        << c.path("tokenizer_config.json") << ": tgt_lang \"" << out.result.tgt_lang
        << "\" is not one of the tokenizer's languages";
    out.result.tgt_lang_id = out.result.languages.at(out.result.tgt_lang);
  }
}

}  // namespace tfm
