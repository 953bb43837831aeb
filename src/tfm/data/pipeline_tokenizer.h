// A tokenizers-backed ("fast") Transformers tokenizer: NLLB, mBART, mBART-50 (SentencePiece
// vocabularies Transformers runs through the `tokenizers` library) and BART, GPT-2 (byte-level
// BPE). Each step is the library's own, as Transformers 5 configures it for the family:
//   added tokens (data/added_tokens.h) -> normalizers -> pre-tokenizers -> BPE or Unigram
// and for decoding: special tokens skipped -> the decoder (Metaspace or ByteLevel) -> the
// tokenizer's clean_up_tokenization (when configured, never for a BPE model, as Transformers 5).
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tfm/data/added_tokens.h"
#include "tfm/data/bpe_model.h"
#include "tfm/data/precompiled_charsmap.h"
#include "tfm/data/tokenizer.h"
#include "tfm/data/unigram_model.h"

namespace tfm {

struct NormalizerStep {
  enum class Kind { precompiled, collapse_spaces, replace };
  Kind kind = Kind::replace;
  std::shared_ptr<const PrecompiledCharsmap> charsmap;  // precompiled
  std::string pattern, content;  // replace: every `pattern` by `content`; collapse_spaces: runs
                                 // of two or more spaces (Replace(Regex(" {2,}"))) by `content`
};

struct PreTokenizerStep {
  enum class Kind { metaspace, whitespace_split, byte_level };
  Kind kind = Kind::metaspace;
  std::string replacement = "\u2581";  // metaspace
  bool prepend = true;                 // metaspace: prepend_scheme "always" (else "never")
  bool split = true;                   // metaspace: cut before each replacement character
  bool add_prefix_space = false;       // byte_level
  bool use_regex = true;               // byte_level
};

struct DecoderSpec {
  enum class Kind { none, metaspace, byte_level };
  Kind kind = Kind::none;
  std::string replacement = "\u2581";
  bool prepend = true;  // metaspace: the first token's replacement characters are dropped
};

struct PipelineSpec {
  std::string family, path;
  std::vector<NormalizerStep> normalizers;
  std::vector<PreTokenizerStep> pre_tokenizers;
  std::shared_ptr<const BpeModel> bpe;  // one of the two models
  std::shared_ptr<const UnigramModel> unigram;
  DecoderSpec decoder;
  std::vector<AddedToken> added;
  bool clean_up_tokenization_spaces = false;
  TokenizerSpecials special;
  int64_t size = 0;  // ids are below it
};

class PipelineTokenizer : public Tokenizer {
 public:
  explicit PipelineTokenizer(PipelineSpec spec);

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

  std::string normalize(std::string_view text) const;
  std::vector<std::string> pre_tokenize(const std::string& text) const;

 private:
  std::vector<int64_t> encode_ids(const std::string& text) const;
  void model_tokenize(std::string_view word, std::vector<int64_t>& ids) const;
  // The token string of an id (an added token's content first), nullptr if none.
  const std::string* token_of(int64_t id) const;
  int64_t id_of(const std::string& token) const;  // -1 when none

  PipelineSpec spec_;
  AddedTokenSplitter splitter_;
  std::vector<const AddedToken*> added_by_id_;
  std::set<std::string> special_contents_;
};

}  // namespace tfm
