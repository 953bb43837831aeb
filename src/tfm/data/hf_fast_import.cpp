// The import of Transformers' tokenizers-backed ("fast") tokenizers: NllbTokenizer,
// MBartTokenizer, MBart50Tokenizer, RobertaTokenizer (BART) and GPT2Tokenizer
// (data/hf_tokenizer_import.h). Transformers 5 builds each from the class's own pipeline and the
// directory's model (tokenizer.json's vocabulary and merges or pieces, else the SentencePiece
// model or vocab.json + merges.txt), then adds the special tokens; this does the same.
#include <algorithm>
#include <memory>
#include <unordered_map>

#include "tfm/core/check.h"
#include "tfm/core/file_util.h"
#include "tfm/data/hf_import_output.h"
#include "tfm/data/spm_model_file.h"
#include "tfm/data/tokenizer_json.h"
#include "tfm/data/unicode.h"

namespace tfm {

using nlohmann::json;

namespace {

struct FastModel {
  bool bpe = true;
  std::unordered_map<std::string, int64_t> vocab;      // BPE
  BpeModel::Merges merges;                             // BPE
  std::vector<std::pair<std::string, double>> pieces;  // Unigram
  std::string charsmap;                                // precompiled, "" = none
  json post_processor;                                 // tokenizer.json's, null if none
  int64_t size() const {
    return bpe ? static_cast<int64_t>(vocab.size()) : static_cast<int64_t>(pieces.size());
  }
  int64_t id_of(const std::string& t) const {
    if (bpe) {
      const auto it = vocab.find(t);
      return it == vocab.end() ? -1 : it->second;
    }
    for (int64_t i = static_cast<int64_t>(pieces.size()) - 1; i >= 0; --i)
      if (pieces[static_cast<size_t>(i)].first == t) return i;
    return -1;
  }
};

std::string base64_decode(const std::string& in, const std::string& where) {
  auto value = [&](char ch) -> int {
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    if (ch == '+') return 62;
    if (ch == '/') return 63;
    TFM_FAIL() << where << ": invalid base64";
    return 0;
  };
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (const char ch : in) {
    if (ch == '=') break;
    acc = (acc << 6) | static_cast<uint32_t>(value(ch));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

// Transformers' generate_merges(vocab): for every piece, each split into two pieces of the
// vocabulary, ordered by the piece's id, then by the lengths of the two parts.
BpeModel::Merges generate_merges(const std::vector<std::string>& pieces_by_id,
                                 const std::unordered_map<std::string, int64_t>& vocab) {
  struct M {
    std::string l, r;
    int64_t score, ll, rl;
  };
  std::vector<M> all;
  for (size_t id = 0; id < pieces_by_id.size(); ++id) {
    const std::string& piece = pieces_by_id[id];
    if (vocab.at(piece) != static_cast<int64_t>(id)) continue;  // a repeated piece's earlier id
    std::vector<M> local;
    const std::vector<char32_t> chars = unicode::decode(piece);
    std::string left;
    size_t byte = 0;
    for (size_t k = 1; k < chars.size(); ++k) {
      unicode::append(left, chars[k - 1]);
      byte = left.size();
      const std::string right = piece.substr(byte);
      const auto il = vocab.find(left), ir = vocab.find(right);
      if (il != vocab.end() && ir != vocab.end())
        local.push_back({left, right, static_cast<int64_t>(id), static_cast<int64_t>(k),
                         static_cast<int64_t>(chars.size() - k)});
    }
    std::stable_sort(local.begin(), local.end(), [&](const M& a, const M& b) {
      const int64_t al = vocab.at(a.l), bl = vocab.at(b.l);
      return al != bl ? al < bl : vocab.at(a.r) < vocab.at(b.r);
    });
    all.insert(all.end(), local.begin(), local.end());
  }
  std::stable_sort(all.begin(), all.end(), [](const M& a, const M& b) {
    if (a.score != b.score) return a.score < b.score;
    if (a.ll != b.ll) return a.ll < b.ll;
    return a.rl < b.rl;
  });
  BpeModel::Merges out;
  out.reserve(all.size());
  for (M& m : all) out.emplace_back(std::move(m.l), std::move(m.r));
  return out;
}

// tokenizer.json's model (and the charsmap of a Precompiled normalizer), as
// TokenizersBackend.convert_to_native_format extracts them.
FastModel model_from_tokenizer_json(const HfTokenizerConfig& c, bool want_bpe) {
  const std::string path = c.path("tokenizer.json");
  json tj;
  try {
    tj = json::parse(read_file(path));
  } catch (const json::exception& e) {
    TFM_FAIL() << path << " is not valid JSON: " << e.what();
  }
  FastModel m;
  const json& model = tj.at("model");
  const std::string type = model.value("type", "");
  TFM_CHECK(type == (want_bpe ? "BPE" : "Unigram"))
      << path << ": a " << (type.empty() ? "untyped" : type) << " model, where "
      << c.tokenizer_class << " builds a " << (want_bpe ? "BPE" : "Unigram") << " one";
  m.bpe = want_bpe;
  if (want_bpe) {
    for (const auto& [t, id] : model.at("vocab").items()) m.vocab[t] = id.get<int64_t>();
    m.merges = read_merges_json(model.value("merges", json::array()), path);
  } else {
    m.pieces = read_unigram_pieces(model.at("vocab"), path);
  }
  json norm = tj.value("normalizer", json());
  std::vector<json> steps;
  if (norm.is_object() && norm.value("type", "") == "Sequence")
    steps = norm.at("normalizers").get<std::vector<json>>();
  else if (norm.is_object())
    steps = {norm};
  for (const json& s : steps)
    if (s.value("type", "") == "Precompiled" && s.contains("precompiled_charsmap") &&
        s["precompiled_charsmap"].is_string()) {
      m.charsmap = base64_decode(s["precompiled_charsmap"].get<std::string>(), path);
      break;
    }
  m.post_processor = tj.value("post_processor", json());
  return m;
}

// The fairseq vocabulary mBART's and mBART-50's classes build from a SentencePiece model:
// <s> <pad> </s> <unk>, the model's pieces after its first three, the language codes, <mask>.
FastModel mbart_model_from_spm(const SpmModelFile& spm, const std::vector<std::string>& codes,
                               const HfTokenizerConfig& c) {
  FastModel m;
  m.bpe = false;
  const char* bos_key = c.tokenizer_class == "MBart50Tokenizer" ? "cls_token" : "bos_token";
  for (const auto& [key, fallback] : std::vector<std::pair<const char*, const char*>>{
           {bos_key, "<s>"}, {"pad_token", "<pad>"}, {"eos_token", "</s>"}, {"unk_token", "<unk>"}})
    m.pieces.emplace_back(c.named(key, fallback)->content, 0.0);
  for (size_t i = 3; i < spm.pieces.size(); ++i)
    m.pieces.emplace_back(spm.pieces[i].piece, static_cast<double>(spm.pieces[i].score));
  for (const std::string& code : codes) m.pieces.emplace_back(code, 0.0);
  m.pieces.emplace_back(c.named("mask_token", "<mask>")->content, 0.0);
  m.charsmap = spm.precompiled_charsmap;
  return m;
}

// NLLB from its SentencePiece model: the pieces in order as a BPE vocabulary with merges
// generated from it, then the fairseq order (<s> <pad> </s> <unk> first).
FastModel nllb_model_from_spm(const SpmModelFile& spm, const HfTokenizerConfig& c) {
  FastModel m;
  std::vector<std::string> by_id;
  std::unordered_map<std::string, int64_t> spm_vocab;
  for (const auto& p : spm.pieces) {
    spm_vocab[p.piece] = static_cast<int64_t>(by_id.size());
    by_id.push_back(p.piece);
  }
  m.merges = generate_merges(by_id, spm_vocab);
  for (const auto& [key, fallback] :
       std::vector<std::pair<const char*, const char*>>{{"bos_token", "<s>"},
                                                        {"pad_token", "<pad>"},
                                                        {"eos_token", "</s>"},
                                                        {"unk_token", "<unk>"}})
    m.vocab.emplace(c.named(key, fallback)->content, static_cast<int64_t>(m.vocab.size()));
  for (const std::string& piece : by_id)
    if (m.vocab.count(piece) == 0) m.vocab.emplace(piece, static_cast<int64_t>(m.vocab.size()));
  m.charsmap = spm.precompiled_charsmap;
  return m;
}

FastModel byte_level_model_from_files(const HfTokenizerConfig& c) {
  FastModel m;
  TFM_CHECK(c.has_file("vocab.json") && c.has_file("merges.txt"))
      << c.dir << " has neither tokenizer.json nor vocab.json + merges.txt (" << c.tokenizer_class
      << ")";
  m.vocab = read_piece_ids(c.path("vocab.json"));
  const std::string text = read_file(c.path("merges.txt"));
  size_t line_no = 0;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    at = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.starts_with("#version")) continue;
    if (line.empty() && at >= text.size()) break;
    const size_t space = line.find(' ');
    TFM_CHECK(space != std::string::npos && line.find(' ', space + 1) == std::string::npos)
        << c.path("merges.txt") << ":" << line_no << ": \"" << line
        << "\" is not two tokens separated by one space";
    m.merges.emplace_back(line.substr(0, space), line.substr(space + 1));
  }
  return m;
}

}  // namespace

namespace {

// What Transformers 5's TokenizersBackend adds to the backend it built, in its order:
// added_tokens_decoder (by id), the named special tokens, the extra special tokens. Each token
// takes the model's id when the model has it, its earlier id when added before (the later flags
// win, as tokenizers' AddedVocabulary updates the entry), else the next id after both.
class AddedIds {
 public:
  explicit AddedIds(const FastModel& m) : model_(m) {}

  void add(AddedToken t) {
    if (t.content.empty()) return;
    for (AddedToken& a : tokens_) {
      if (a.content != t.content) continue;
      const bool was_special = a.special;
      t.id = a.id;
      a = t;
      a.special = a.special || was_special;
      return;
    }
    t.id = model_.id_of(t.content);
    if (t.id < 0) {
      int64_t top = -1;
      for (const AddedToken& a : tokens_) top = std::max(top, a.id);
      t.id = top >= model_.size() ? top + 1 : model_.size();
    }
    tokens_.push_back(std::move(t));
  }
  bool has(const std::string& content) const {
    return std::any_of(tokens_.begin(), tokens_.end(),
                       [&](const AddedToken& a) { return a.content == content; });
  }
  int64_t id_of(const std::string& content) const {
    for (const AddedToken& a : tokens_)
      if (a.content == content) return a.id;
    return model_.id_of(content);
  }
  std::vector<AddedToken> sorted() const {
    std::vector<AddedToken> out = tokens_;
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
    return out;
  }
  int64_t size() const {
    int64_t top = model_.size() - 1;
    for (const AddedToken& a : tokens_) top = std::max(top, a.id);
    return top + 1;
  }

 private:
  const FastModel& model_;
  std::vector<AddedToken> tokens_;
};

// The class's named special tokens: (key, default content; "" = none), and how it wraps <mask>.
struct ClassTokens {
  std::vector<std::pair<std::string, std::string>> named;
  bool mask_lstrip = false, mask_normalized = false;
};

ClassTokens class_tokens(const std::string& k) {
  ClassTokens t;
  if (k == "GPT2Tokenizer") {
    t.named = {{"bos_token", "<|endoftext|>"},
               {"eos_token", "<|endoftext|>"},
               {"unk_token", "<|endoftext|>"},
               {"sep_token", ""},
               {"pad_token", ""},
               {"cls_token", ""},
               {"mask_token", ""}};
    return t;
  }
  t.named = {{"bos_token", k == "MBart50Tokenizer" ? "" : "<s>"},
             {"eos_token", "</s>"},
             {"unk_token", "<unk>"},
             {"sep_token", "</s>"},
             {"pad_token", "<pad>"},
             {"cls_token", "<s>"},
             {"mask_token", "<mask>"}};
  t.mask_lstrip = k != "RobertaTokenizer" && k != "BartTokenizer";
  t.mask_normalized = k == "NllbTokenizer";
  return t;
}

// The named special tokens as the class hands them to TokenizersBackend.
std::vector<AddedToken> named_tokens(const HfTokenizerConfig& c, const ClassTokens& ct) {
  std::vector<AddedToken> out;
  for (const auto& [key, fallback] : ct.named) {
    auto t = c.named(key, fallback);
    if (!t) continue;
    const bool from_string = !c.raw.contains(key) || c.raw[key].is_string();
    if (key == "mask_token" && from_string) {
      t->lstrip = ct.mask_lstrip;
      t->normalized = ct.mask_normalized;
    }
    t->special = true;
    out.push_back(*t);
  }
  return out;
}

// The class's extra special tokens, in order.
std::vector<AddedToken> extra_tokens(const HfTokenizerConfig& c, const SpmModelFile* spm) {
  const std::string& k = c.tokenizer_class;
  auto plain = [](const std::vector<std::string>& codes) {
    std::vector<AddedToken> out;
    for (const std::string& code : codes) {
      AddedToken t;
      t.content = code;
      t.special = true;
      out.push_back(t);
    }
    return out;
  };
  if (auto e = c.extra_special_tokens()) return *e;
  if (k == "NllbTokenizer") {
    // Converting a SentencePiece model, Transformers lists its control and user-defined pieces
    // as the extra tokens, and NLLB's language codes are then not added.
    if (spm != nullptr) {
      std::vector<AddedToken> out;
      for (const auto& p : spm->pieces)
        if (p.type == SpmModelFile::PieceType::control ||
            p.type == SpmModelFile::PieceType::user_defined) {
          AddedToken t;
          t.content = p.piece;
          t.special = p.type == SpmModelFile::PieceType::control;
          out.push_back(t);
        }
      return out;
    }
    return plain(nllb_language_codes());
  }
  if (k == "MBartTokenizer") return plain(mbart_language_codes());
  if (k == "MBart50Tokenizer") return plain(mbart50_language_codes());
  return {};
}

json bpe_model_json(const std::string& unk, bool fuse_unk) {
  return {{"type", "bpe"},         {"vocab", "vocab.json"}, {"merges", "merges.json"},
          {"unk_token", unk},      {"fuse_unk", fuse_unk},  {"byte_fallback", false},
          {"ignore_merges", false}};
}

json metaspace_json(bool decoder) {
  json j = {{"type", "metaspace"}, {"replacement", "\u2581"}, {"prepend", true}};
  if (!decoder) j["split"] = true;
  return j;
}

}  // namespace

namespace {

// GPT-2's framing: an explicit add_bos_token / add_eos_token in the config rebuilds it
// (TokenizersBackend.update_post_processor), as does a directory without tokenizer.json;
// otherwise tokenizer.json's post-processor stands.
SourceFraming gpt2_framing(const HfTokenizerConfig& c, const FastModel& m, const AddedIds& ids,
                           bool from_tokenizer_json) {
  SourceFraming f;
  const bool explicit_flags = c.raw.contains("add_bos_token") || c.raw.contains("add_eos_token");
  if (explicit_flags || !from_tokenizer_json || m.post_processor.is_null()) {
    const auto bos = c.named("bos_token", "<|endoftext|>");
    const auto eos = c.named("eos_token", "<|endoftext|>");
    if (c.bool_or("add_bos_token", false) && bos) f.prefix.push_back({ids.id_of(bos->content)});
    if (c.bool_or("add_eos_token", false) && eos) f.suffix.push_back({ids.id_of(eos->content)});
    return f;
  }
  const std::string type = m.post_processor.value("type", "");
  if (type == "ByteLevel") return f;
  TFM_CHECK(type == "TemplateProcessing")
      << c.path("tokenizer.json") << ": a " << type
      << " post-processor on a GPT-2 tokenizer (tfm reproduces ByteLevel and "
         "TemplateProcessing)";
  bool seen_sequence = false;
  for (const json& piece : m.post_processor.at("single")) {
    if (piece.contains("Sequence")) {
      TFM_CHECK(!seen_sequence) << c.path("tokenizer.json") << ": a template with two sequences";
      seen_sequence = true;
      continue;
    }
    const std::string name = piece.at("SpecialToken").at("id").get<std::string>();
    const json& ids_of = m.post_processor.at("special_tokens").at(name).at("ids");
    TFM_CHECK(ids_of.size() == 1) << c.path("tokenizer.json") << ": template token " << name;
    (seen_sequence ? f.suffix : f.prefix).push_back({ids_of[0].get<int64_t>()});
  }
  return f;
}

}  // namespace

namespace {

// The class's model: tokenizer.json's when there is one, else built from the other files.
FastModel load_model(const HfTokenizerConfig& c, std::unique_ptr<SpmModelFile>& spm) {
  const std::string& k = c.tokenizer_class;
  const bool unigram = k == "MBartTokenizer" || k == "MBart50Tokenizer";
  if (c.has_file("tokenizer.json")) return model_from_tokenizer_json(c, !unigram);
  if (k == "GPT2Tokenizer" || k == "RobertaTokenizer" || k == "BartTokenizer")
    return byte_level_model_from_files(c);
  TFM_CHECK(c.has_file("sentencepiece.bpe.model"))
      << c.dir << " has neither tokenizer.json nor sentencepiece.bpe.model (" << k << ")";
  spm = std::make_unique<SpmModelFile>(read_spm_model_file(c.path("sentencepiece.bpe.model")));
  if (k == "NllbTokenizer") return nllb_model_from_spm(*spm, c);
  return mbart_model_from_spm(
      *spm, k == "MBartTokenizer" ? mbart_language_codes() : mbart50_language_codes(), c);
}

// The class's normalizers, pre-tokenizers and decoder, and the model's data files.
json pipeline_steps(const HfTokenizerConfig& c, const FastModel& m, HfImportOutput& out) {
  const std::string& k = c.tokenizer_class;
  json side = {{"kind", "pipeline"}};
  json normalizers = json::array(), pre = json::array();
  if (k == "NllbTokenizer" || k == "MBart50Tokenizer") {
    if (!m.charsmap.empty()) {
      normalizers.push_back({{"type", "precompiled"}, {"charsmap", "charsmap.bin"}});
      out.data.emplace_back("charsmap.bin", m.charsmap);
    }
    if (!m.charsmap.empty() || k == "MBart50Tokenizer")
      normalizers.push_back({{"type", "collapse_spaces"}, {"content", " "}});
  }
  if (k == "GPT2Tokenizer" || k == "RobertaTokenizer" || k == "BartTokenizer") {
    pre.push_back({{"type", "byte_level"},
                   {"add_prefix_space", c.bool_or("add_prefix_space", false)},
                   {"use_regex", true}});
    side["decoder"] = {{"type", "byte_level"}};
  } else {
    if (k == "MBartTokenizer") pre.push_back({{"type", "whitespace_split"}});
    pre.push_back(metaspace_json(false));
    side["decoder"] = metaspace_json(true);
  }
  side["normalizers"] = normalizers;
  side["pre_tokenizers"] = pre;
  if (m.bpe) {
    const auto unk = c.named("unk_token", "<unk>");
    side["model"] = k == "NllbTokenizer" ? bpe_model_json(unk ? unk->content : "", true)
                                         : bpe_model_json("", false);
    json vocab = json::object(), merges = json::array();
    for (const auto& [t, id] : m.vocab) vocab[t] = id;
    for (const auto& [a, b] : m.merges) merges.push_back({a, b});
    out.data.emplace_back("vocab.json", vocab.dump());
    out.data.emplace_back("merges.json", merges.dump());
  } else {
    side["model"] = {
        {"type", "unigram"}, {"pieces", "unigram.json"}, {"unk_id", 3}, {"byte_fallback", false}};
    json pieces = json::array();
    for (const auto& [p, score] : m.pieces) pieces.push_back({p, score});
    out.data.emplace_back("unigram.json", pieces.dump());
  }
  side["clean_up_tokenization_spaces"] = c.bool_or("clean_up_tokenization_spaces", false);
  return side;
}

TokenizerSpecials special_ids_of(const HfTokenizerConfig& c, const AddedIds& ids) {
  TokenizerSpecials s;
  for (const auto& [key, fallback] : class_tokens(c.tokenizer_class).named) {
    const auto t = c.named(key, fallback);
    const int64_t id = t ? ids.id_of(t->content) : -1;
    if (key == "pad_token") s.pad = id;
    if (key == "bos_token") s.bos = id;
    if (key == "eos_token") s.eos = id;
    if (key == "unk_token") s.unk = id;
  }
  return s;
}

// The family, the source framing and the default source language; the class's language codes.
const std::vector<std::string>* family_and_framing(const HfTokenizerConfig& c, const FastModel& m,
                                                   const AddedIds& ids, HfTokenizerImport& r) {
  const std::string& k = c.tokenizer_class;
  const int64_t eos = r.special.eos;
  const SourceFraming lang_first{{{-1, true}}, {{eos}}}, lang_last{{}, {{eos}, {-1, true}}};
  if (k == "NllbTokenizer") {
    r.family = "nllb";
    r.framing = c.bool_or("legacy_behaviour", false) ? lang_last : lang_first;
    r.src_lang = c.string_or("src_lang", "eng_Latn");
    return &nllb_language_codes();
  }
  if (k == "MBartTokenizer" || k == "MBart50Tokenizer") {
    const bool cc25 = k == "MBartTokenizer";
    r.family = cc25 ? "mbart" : "mbart50";
    r.framing = cc25 ? lang_last : lang_first;
    r.src_lang = c.string_or("src_lang", "en_XX");
    return cc25 ? &mbart_language_codes() : &mbart50_language_codes();
  }
  if (k == "GPT2Tokenizer") {
    r.family = "gpt2";
    r.framing = gpt2_framing(c, m, ids, c.has_file("tokenizer.json"));
    return nullptr;
  }
  r.family = "bart";
  const auto cls = c.named("cls_token", "<s>"), sep = c.named("sep_token", "</s>");
  r.framing = {{{ids.id_of(cls->content)}}, {{ids.id_of(sep->content)}}};
  return nullptr;
}

// The language table (the class's codes and the extra tokens shaped like them, each with a token
// of its own) and the checked source and target languages.
void languages(const HfTokenizerConfig& c, const std::vector<std::string>& codes,
               const std::vector<AddedToken>& extras, const AddedIds& ids, HfTokenizerImport& r) {
  std::vector<std::string> all = codes;
  for (const AddedToken& t : extras)
    if (std::find(all.begin(), all.end(), t.content) == all.end()) all.push_back(t.content);
  for (const std::string& code : all) {
    const int64_t id = ids.id_of(code);
    const bool is_code =
        std::find(codes.begin(), codes.end(), code) != codes.end() ||
        (code.size() >= 5 && code.find('_') != std::string::npos && code.front() != '<');
    if (id >= 0 && id != r.special.unk && is_code) r.languages[code] = id;
  }
  auto check = [&](const std::string& lang, const char* what) {
    TFM_CHECK(r.languages.count(lang) != 0)
        << c.dir << ": " << what << " \"" << lang << "\" has no token of its own in this "
        << c.tokenizer_class << " (Transformers would encode it as <unk>)";
  };
  check(r.src_lang, "src_lang");
  r.tgt_lang = c.string_or("tgt_lang", "");
  if (!r.tgt_lang.empty()) {
    check(r.tgt_lang, "tgt_lang");
    r.tgt_lang_id = r.languages.at(r.tgt_lang);
  }
}

}  // namespace

void import_fast(const HfTokenizerConfig& c, HfImportOutput& out) {
  std::unique_ptr<SpmModelFile> spm;
  const FastModel m = load_model(c, spm);
  const std::vector<AddedToken> extras = extra_tokens(c, spm.get());
  AddedIds ids(m);
  for (const AddedToken& t : c.added_tokens_decoder()) ids.add(t);
  for (const AddedToken& t : named_tokens(c, class_tokens(c.tokenizer_class)))
    if (!ids.has(t.content)) ids.add(t);
  for (const AddedToken& t : extras)
    if (!ids.has(t.content)) ids.add(t);

  json side = pipeline_steps(c, m, out);
  const TokenizerSpecials s = special_ids_of(c, ids);
  side["added_tokens"] = added_tokens_json(ids.sorted());
  side["pad"] = s.pad;
  side["bos"] = s.bos;
  side["eos"] = s.eos;
  side["unk"] = s.unk;
  side["size"] = ids.size();
  out.config["source"] = side;
  out.result.special = s;
  out.result.src_size = out.result.trg_size = ids.size();
  if (const auto* codes = family_and_framing(c, m, ids, out.result))
    languages(c, *codes, extras, ids, out.result);
}

}  // namespace tfm
