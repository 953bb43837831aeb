// Byte-pair encoding of one pre-tokenized word, as the `tokenizers` library's BPE model does it:
// the word's characters (or bytes, after a byte-level pre-tokenizer) looked up in the vocabulary
// (unknown ones as the unknown token, fused when fuse_unk, or as <0xXX> byte tokens with
// byte_fallback), then the lowest-ranked merge applied first, leftmost among equals, until none
// applies. GPT-2, BART and NLLB use it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tfm {

class BpeModel {
 public:
  struct Options {
    std::string unk_token;  // "" = none: an unknown character is dropped
    bool fuse_unk = false;
    bool byte_fallback = false;
    bool ignore_merges = false;  // a word in the vocabulary is one token, merges or not
    std::string continuing_subword_prefix, end_of_word_suffix;
  };
  using Merges = std::vector<std::pair<std::string, std::string>>;

  // Every merge's two tokens and its result must be in the vocabulary (tokenizers refuses the
  // model otherwise); a pair listed twice takes its later rank, as tokenizers' map does.
  BpeModel(std::unordered_map<std::string, int64_t> vocab, const Merges& merges, Options options);

  void tokenize(std::string_view word, std::vector<int64_t>& ids) const;
  int64_t token_to_id(const std::string& token) const;  // -1 when absent
  // nullptr for an id the vocabulary does not hold.
  const std::string* id_to_token(int64_t id) const;
  int64_t max_id() const { return static_cast<int64_t>(id_to_token_.size()) - 1; }

 private:
  struct Merge {
    uint32_t rank;
    int64_t result;
  };
  static uint64_t key(int64_t a, int64_t b) {
    return (static_cast<uint64_t>(a) << 32) | static_cast<uint64_t>(b);
  }
  std::vector<int64_t> initial_symbols(std::string_view word, std::vector<size_t>& lengths) const;

  std::unordered_map<std::string, int64_t> vocab_;
  std::vector<std::string> id_to_token_;
  std::vector<char> has_id_;
  std::unordered_map<uint64_t, Merge> merges_;
  Options options_;
};

}  // namespace tfm
