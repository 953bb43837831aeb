#include "tfm/data/hf_sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>

#include "tfm/core/check.h"
#include "tfm/data/corpus.h"
#include "tfm/data/unicode.h"

namespace tfm {

namespace {

std::unique_ptr<sentencepiece::SentencePieceProcessor> load_spm(const std::string& path) {
  auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const auto status = sp->Load(path);
  TFM_CHECK(status.ok()) << "cannot load SentencePiece model " << path << ": " << status.ToString();
  return sp;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

}  // namespace

HfSentencePieceTokenizer::HfSentencePieceTokenizer(HfSentencePieceSpec spec)
    : spec_(std::move(spec)),
      encoder_(load_spm(spec_.encode_model)),
      decoder_(spec_.decode_model == spec_.encode_model ? nullptr : load_spm(spec_.decode_model)),
      splitter_(spec_.added, AddedTokenSplitter::Style::slow) {
  for (const AddedToken& t : spec_.added) {
    added_ids_[t.content] = t.id;
    added_contents_[t.id] = t.content;
  }
  for (const auto& [name, id] : spec_.language_tokens) language_names_[id] = name;
  const SpmModelFile model = read_spm_model_file(spec_.encode_model);
  for (const auto& p : model.pieces)
    TFM_CHECK(p.type != SpmModelFile::PieceType::byte)
        << spec_.encode_model
        << ": a SentencePiece model with byte fallback (tfm reproduces those without)";
  if (model.model_type == 1) unigram_ = std::make_unique<SpmUnigram>(model);
  TFM_CHECK(spec_.special.unk >= 0) << spec_.path << ": the tokenizer has no unknown token";
}

HfSentencePieceTokenizer::~HfSentencePieceTokenizer() = default;

int64_t HfSentencePieceTokenizer::piece_id(const std::string& piece) const {
  if (const auto it = added_ids_.find(piece); it != added_ids_.end()) return it->second;
  if (const auto it = spec_.language_tokens.find(piece); it != spec_.language_tokens.end())
    return it->second;
  const auto it = spec_.vocab.find(piece);
  return it == spec_.vocab.end() ? spec_.special.unk : it->second;
}

std::vector<std::string> HfSentencePieceTokenizer::encode_pieces(const std::string& text) const {
  std::vector<std::string> out;
  for (const TextPiece& piece : splitter_.split(repair_utf8(text))) {
    if (piece.id >= 0) {
      out.push_back(piece.text);
      continue;
    }
    std::string_view rest = piece.text;
    // Marian: a target-language code at the start of the text is a token of its own.
    if (spec_.style == HfSentencePieceSpec::Style::marian && rest.starts_with(">>")) {
      if (const size_t end = rest.find("<<"); end != std::string_view::npos) {
        out.emplace_back(rest.substr(0, end + 2));
        rest.remove_prefix(end + 2);
      }
    }
    std::vector<std::string> pieces;
    const auto status = encoder_->Encode(std::string(rest), &pieces);
    TFM_CHECK(status.ok()) << spec_.path << ": cannot encode \"" << rest
                           << "\": " << status.ToString();
    if (unigram_) {
      // The library's pieces spell the normalised text; cut it again as SentencePiece 0.2 does.
      std::string normalized;
      for (const std::string& p : pieces) normalized += p;
      pieces = unigram_->encode(normalized);
    }
    out.insert(out.end(), pieces.begin(), pieces.end());
  }
  return out;
}

Ids HfSentencePieceTokenizer::encode(const std::string& text) const {
  return pieces_to_ids(encode_pieces(text));
}

Ids HfSentencePieceTokenizer::pieces_to_ids(const std::vector<std::string>& pieces) const {
  Ids ids;
  ids.reserve(pieces.size());
  for (const std::string& p : pieces) ids.push_back(static_cast<int32_t>(piece_id(p)));
  return ids;
}

std::string HfSentencePieceTokenizer::piece_of(int64_t id) const {
  TFM_CHECK(id >= 0 && id < spec_.size)
      << spec_.path << ": id " << id << " is outside the vocabulary [0, " << spec_.size << ")";
  if (const auto it = added_contents_.find(id); it != added_contents_.end()) return it->second;
  if (const auto it = language_names_.find(id); it != language_names_.end()) return it->second;
  if (static_cast<size_t>(id) < spec_.id_to_piece.size() &&
      !spec_.id_to_piece[static_cast<size_t>(id)].empty())
    return spec_.id_to_piece[static_cast<size_t>(id)];
  // Marian falls back to the decoding model's own piece; M2M100 to <unk>.
  const auto& sp = decoder_ ? *decoder_ : *encoder_;
  if (spec_.style == HfSentencePieceSpec::Style::marian && id < sp.GetPieceSize())
    return sp.IdToPiece(static_cast<int>(id));
  return added_contents_.count(spec_.special.unk) ? added_contents_.at(spec_.special.unk) : "<unk>";
}

std::vector<std::string> HfSentencePieceTokenizer::ids_to_pieces(const Ids& ids) const {
  std::vector<std::string> out;
  out.reserve(ids.size());
  for (const int32_t id : ids) out.push_back(piece_of(id));
  return out;
}

std::string HfSentencePieceTokenizer::decode_pieces(const std::vector<std::string>& pieces) const {
  std::string out;
  const auto& sp = decoder_ ? *decoder_ : *encoder_;
  const auto status = sp.Decode(pieces, &out);
  TFM_CHECK(status.ok()) << spec_.path << ": cannot decode: " << status.ToString();
  return out;
}

std::string HfSentencePieceTokenizer::decode(const Ids& ids) const {
  std::vector<std::string> tokens;
  for (const int32_t id : ids)
    if (spec_.special_ids.count(id) == 0) tokens.push_back(piece_of(id));
  const bool marian = spec_.style == HfSentencePieceSpec::Style::marian;
  // Special tokens (when not skipped) bypass SentencePiece; Marian adds a space after each.
  std::string out;
  std::vector<std::string> run;
  for (const std::string& t : tokens) {
    if (spec_.special_tokens.count(t) != 0) {
      out += decode_pieces(run) + t + (marian ? " " : "");
      run.clear();
    } else {
      run.push_back(t);
    }
  }
  out += decode_pieces(run);
  if (marian) replace_all(out, "\u2581", " ");
  return std::string(unicode::trim(out, unicode::py_space, true, true));  // Python's strip()
}

std::string HfSentencePieceTokenizer::describe() const {
  return spec_.family + " (SentencePiece " + spec_.encode_model + " + vocab.json, " +
         std::to_string(spec_.size) + " ids; " + spec_.path + ")";
}

}  // namespace tfm
