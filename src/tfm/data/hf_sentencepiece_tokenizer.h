// Transformers' SentencePiece-backed ("slow", pure Python) tokenizers: MarianTokenizer (OPUS-MT)
// and M2M100Tokenizer. A SentencePiece model cuts the text into pieces and a vocab.json maps the
// pieces to ids (a piece it lacks is <unk>); added tokens are found first with Transformers' own
// Trie (data/added_tokens.h); a unigram model's normalised text is segmented as SentencePiece 0.2
// (which Transformers runs) segments it (data/spm_unigram.h). Marian takes a ">>xx<<"
// target-language code at the start of a text as one token. Decoding skips the special ids, joins
// the pieces through the decoding SentencePiece model (Marian: the source model unless the
// vocabularies are separate, as Transformers does) and strips the result.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "tfm/data/added_tokens.h"
#include "tfm/data/spm_unigram.h"
#include "tfm/data/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace tfm {

struct HfSentencePieceSpec {
  enum class Style { marian, m2m100 };
  Style style = Style::marian;
  std::string family, path;
  std::string encode_model, decode_model;          // SentencePiece model files
  std::unordered_map<std::string, int64_t> vocab;  // pieces -> ids (encoding)
  std::vector<std::string> id_to_piece;            // ids -> pieces (decoding); "" = none
  std::vector<AddedToken> added;
  // m2m100: "__de__" -> id; these are not added tokens in Transformers 5 (the text "__de__" is
  // ordinary text), but decode as their names.
  std::unordered_map<std::string, int64_t> language_tokens;
  std::set<int64_t> special_ids;         // skipped when decoding
  std::set<std::string> special_tokens;  // kept out of SentencePiece's decoding
  TokenizerSpecials special;
  int64_t size = 0;
};

class HfSentencePieceTokenizer : public Tokenizer {
 public:
  explicit HfSentencePieceTokenizer(HfSentencePieceSpec spec);
  ~HfSentencePieceTokenizer() override;

  Ids encode(const std::string& text) const override;
  std::string decode(const Ids& ids) const override;
  std::vector<std::string> encode_pieces(const std::string& text) const override;
  Ids pieces_to_ids(const std::vector<std::string>& pieces) const override;
  std::vector<std::string> ids_to_pieces(const Ids& ids) const override;
  int64_t size() const override { return spec_.size; }
  TokenizerSpecials special_ids() const override { return spec_.special; }
  const std::string& path() const override { return spec_.path; }
  std::string family() const override { return spec_.family; }
  std::string describe() const override;

 private:
  int64_t piece_id(const std::string& piece) const;
  std::string piece_of(int64_t id) const;
  std::string decode_pieces(const std::vector<std::string>& pieces) const;

  HfSentencePieceSpec spec_;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> encoder_, decoder_;
  // A unigram model's pieces are cut again as SentencePiece 0.2 cuts them (data/spm_unigram.h).
  std::unique_ptr<SpmUnigram> unigram_;
  AddedTokenSplitter splitter_;
  std::unordered_map<std::string, int64_t> added_ids_;
  std::unordered_map<int64_t, std::string> added_contents_;
  std::unordered_map<int64_t, std::string> language_names_;
};

}  // namespace tfm
