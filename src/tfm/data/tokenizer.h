// Text <-> ids: the interface behind every vocabulary a model directory can hold. tfm's own
// SentencePiece models (data/vocab.h) implement it byte for byte as before; a directory converted
// from Hugging Face holds tfm_tokenizer.json (data/tokenizer_files.h), and its tokenizer gives the
// ids and the text that model's own Transformers tokenizer gives (docs/convert.md, "Tokenization").
//
// Encoding is two explicit steps: encode() gives the ids of the text's own tokens, and
// frame_source() adds what the tokenizer puts around a source sentence (</s>, <s>, the source
// language's token), so a caller can pick the language per request.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tfm/data/batch.h"

namespace tfm {

// A tokenizer's special ids; -1 where it has none.
struct TokenizerSpecials {
  int64_t pad = -1, bos = -1, eos = -1, unk = -1;
};

// One token of a source framing: a fixed id, or the source language's token.
struct FrameToken {
  int64_t id = -1;
  bool language = false;
};

// What frame_source puts before and after a source sentence's ids.
struct SourceFraming {
  std::vector<FrameToken> prefix, suffix;
  int64_t size() const { return static_cast<int64_t>(prefix.size() + suffix.size()); }
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // The ids of the text's own tokens: no BOS/EOS/language token (frame_source adds those).
  virtual Ids encode(const std::string& text) const = 0;
  // Ids to text with the special ids (language codes included) skipped, as Transformers'
  // batch_decode(..., skip_special_tokens=True) gives it for a converted model.
  virtual std::string decode(const Ids& ids) const = 0;
  // The tokens as strings ("▁Hund", "Ġworld"): text -> tokens, tokens <-> ids. A token not in
  // the vocabulary is the unknown id; an id outside [0, size()) is an error.
  virtual std::vector<std::string> encode_pieces(const std::string& text) const = 0;
  virtual Ids pieces_to_ids(const std::vector<std::string>& pieces) const = 0;
  virtual std::vector<std::string> ids_to_pieces(const Ids& ids) const = 0;
  // Ids are in [0, size()).
  virtual int64_t size() const = 0;
  virtual TokenizerSpecials special_ids() const = 0;
  // The file the tokenizer was loaded from (a SentencePiece model, or tfm_tokenizer.json).
  virtual const std::string& path() const = 0;
  // "sentencepiece" for tfm's own vocabularies; a converted model's tokenizer family
  // ("marian", "m2m100", "nllb", "mbart", "mbart50", "bart", "gpt2").
  virtual std::string family() const = 0;
  // One line for `tfm info`: the family, the kind and size of the vocabulary.
  virtual std::string describe() const = 0;

  // tfm's own vocabularies leave the framing to the model (ModelConfig's SeqFormat), and their
  // size must be the model's vocabulary size; a converted tokenizer frames its sources itself and
  // may be smaller than the model's embedding table.
  bool converted() const { return family() != "sentencepiece"; }

  // Language code -> token id ("deu_Latn", "de", "ro_RO"); empty without language tokens.
  const std::map<std::string, int64_t>& languages() const { return languages_; }
  // The id of a language code; an unknown code is an error that lists the known ones.
  int64_t language_id(const std::string& code) const;
  // The source language frame_source uses when it is given none ("" when the tokenizer has none).
  const std::string& default_source_lang() const { return default_source_lang_; }

  // "fnv1a64:" and 16 hex digits: a hash of every piece in id order, which tells a vocabulary from
  // another of the same size. A model records its vocabularies' (ModelConfig) and refuses others.
  std::string fingerprint() const;

  const SourceFraming& framing() const { return framing_; }
  // The ids the model's tokenizer gives for a source sentence whose own tokens are `pieces`:
  // the framing's prefix, the pieces, its suffix, the language tokens for `src_lang` ("" = the
  // default source language). An empty framing returns the pieces unchanged.
  Ids frame_source(const Ids& pieces, const std::string& src_lang = "") const;

  void set_framing(SourceFraming framing) { framing_ = std::move(framing); }
  void set_languages(std::map<std::string, int64_t> languages, std::string default_source_lang);

 private:
  SourceFraming framing_;
  std::map<std::string, int64_t> languages_;
  std::string default_source_lang_;
};

}  // namespace tfm
