#include "tfm/data/vocab.h"

#include <sentencepiece_processor.h>

#include <filesystem>
#include <sstream>

#include "tfm/core/check.h"
#include "tfm/core/file_util.h"

namespace tfm {

Vocab::Vocab(const std::string& model_path)
    : sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()), path_(model_path) {
  // SentencePiece reads a directory as "basic_filebuf::underflow" and waits on a FIFO forever.
  require_regular_file(model_path);
  const auto status = sp_->Load(model_path);
  TFM_CHECK(status.ok()) << "cannot load SentencePiece model " << model_path << ": "
                         << status.ToString();
}

Vocab::~Vocab() = default;

Ids Vocab::encode(const std::string& text) const {
  std::vector<int> ids;
  const auto status = sp_->Encode(text, &ids);
  TFM_CHECK(status.ok()) << path_ << ": cannot encode \"" << text << "\": " << status.ToString();
  return Ids(ids.begin(), ids.end());
}

std::vector<std::string> Vocab::encode_pieces(const std::string& text) const {
  std::vector<std::string> pieces;
  const auto status = sp_->Encode(text, &pieces);
  TFM_CHECK(status.ok()) << path_ << ": cannot encode \"" << text << "\": " << status.ToString();
  return pieces;
}

Ids Vocab::pieces_to_ids(const std::vector<std::string>& pieces) const {
  Ids ids;
  ids.reserve(pieces.size());
  for (const std::string& p : pieces) ids.push_back(sp_->PieceToId(p));
  return ids;
}

std::vector<std::string> Vocab::ids_to_pieces(const Ids& ids) const {
  std::vector<std::string> pieces;
  pieces.reserve(ids.size());
  const int64_t n = size();
  for (const auto id : ids) {
    TFM_CHECK(id >= 0 && id < n) << path_ << ": id " << id << " is outside the vocabulary [0, " << n
                                 << ")";
    pieces.push_back(sp_->IdToPiece(static_cast<int>(id)));
  }
  return pieces;
}

std::string Vocab::decode(const Ids& ids) const {
  std::string out;
  const auto status = sp_->Decode(std::vector<int>(ids.begin(), ids.end()), &out);
  TFM_CHECK(status.ok()) << path_ << ": cannot decode: " << status.ToString();
  return out;
}

int64_t Vocab::size() const {
  return sp_->GetPieceSize();
}

int64_t Vocab::pad_id() const {
  return sp_->pad_id();
}
int64_t Vocab::bos_id() const {
  return sp_->bos_id();
}
int64_t Vocab::eos_id() const {
  return sp_->eos_id();
}

TokenizerSpecials Vocab::special_ids() const {
  return {pad_id(), bos_id(), eos_id(), sp_->unk_id()};
}

std::string Vocab::describe() const {
  return "SentencePiece, " + std::to_string(size()) + " pieces (" + path_ + ")";
}

std::string legacy_vocab_file(const std::string& name) {
  const std::string ext = ".model";
  TFM_CHECK(name.size() > ext.size() && name.ends_with(ext)) << "not a vocabulary name: " << name;
  return name.substr(0, name.size() - ext.size()) + ".spm";
}

namespace {

// dir/name, else dir/<legacy name>, else "".
std::string find_vocab(const std::string& dir, const std::string& name) {
  namespace fs = std::filesystem;
  for (const std::string& n : {name, legacy_vocab_file(name)}) {
    const fs::path p = fs::path(dir) / n;
    if (fs::exists(p)) return p.string();
  }
  return "";
}

}  // namespace

ModelVocabPaths find_model_vocabs(const std::string& dir) {
  const std::string shared = find_vocab(dir, kSharedVocabFile);
  if (!shared.empty()) return {shared, shared};
  const std::string src = find_vocab(dir, kSrcVocabFile), trg = find_vocab(dir, kTrgVocabFile);
  TFM_CHECK(src.empty() == trg.empty())
      << dir << " has " << (src.empty() ? trg : src) << " but no "
      << (src.empty() ? kSrcVocabFile : kTrgVocabFile) << ": a model directory holds "
      << kSharedVocabFile << ", or " << kSrcVocabFile << " and " << kTrgVocabFile;
  return {src, trg};
}

Ids parse_ids(const std::string& line, int64_t vocab_size, const std::string& where) {
  Ids ids;
  std::istringstream in(line);
  std::string tok;
  while (in >> tok) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(tok, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    TFM_CHECK(used == tok.size() && !tok.empty())
        << where << ": \"" << tok << "\" is not a token id";
    TFM_CHECK(v >= 0 && v < vocab_size)
        << where << ": token id " << v << " is outside the vocabulary [0, " << vocab_size << ")";
    ids.push_back(static_cast<int32_t>(v));
  }
  return ids;
}

}  // namespace tfm
