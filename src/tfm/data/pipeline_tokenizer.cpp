#include "tfm/data/pipeline_tokenizer.h"

#include "tfm/core/check.h"
#include "tfm/data/byte_level.h"
#include "tfm/data/corpus.h"
#include "tfm/data/unicode.h"

namespace tfm {

namespace {

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  std::string out;
  size_t at = 0;
  for (size_t hit; (hit = s.find(from, at)) != std::string::npos; at = hit + from.size())
    out.append(s, at, hit - at).append(to);
  out.append(s, at, std::string::npos);
  s = std::move(out);
}

std::string collapse_spaces(std::string_view s, const std::string& content) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    size_t j = i;
    while (j < s.size() && s[j] == ' ') ++j;
    if (j - i >= 2) {
      out += content;
      i = j;
    } else {
      out += s[i++];
    }
  }
  return out;
}

// Transformers' clean_up_tokenization: the spaces a word-level detokeniser leaves before
// punctuation and English contractions.
std::string clean_up_tokenization(std::string s) {
  static const std::pair<const char*, const char*> kRules[] = {
      {" .", "."},     {" ?", "?"},   {" !", "!"},   {" ,", ","},     {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) replace_all(s, from, to);
  return s;
}

// Cuts s before each occurrence of `mark` (tokenizers' split with MergedWithNext).
std::vector<std::string> split_before(const std::string& s, const std::string& mark) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t hit = s.find(mark); hit != std::string::npos; hit = s.find(mark, hit + mark.size())) {
    if (hit > start) out.push_back(s.substr(start, hit - start));
    start = hit;
  }
  if (start < s.size()) out.push_back(s.substr(start));
  return out;
}

std::vector<std::string> whitespace_split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = std::string::npos;
  for (size_t i = 0; i < s.size();) {
    const size_t at = i;
    const bool space = unicode::has(unicode::next(s, i), unicode::rust_space);
    if (space && start != std::string::npos) {
      out.push_back(s.substr(start, at - start));
      start = std::string::npos;
    } else if (!space && start == std::string::npos) {
      start = at;
    }
  }
  if (start != std::string::npos) out.push_back(s.substr(start));
  return out;
}

std::vector<std::string> apply(const PreTokenizerStep& step, std::string word) {
  switch (step.kind) {
    case PreTokenizerStep::Kind::whitespace_split:
      return whitespace_split(word);
    case PreTokenizerStep::Kind::metaspace: {
      replace_all(word, " ", step.replacement);
      if (step.prepend && !word.empty() && word.rfind(step.replacement, 0) != 0)
        word = step.replacement + word;
      if (!step.split) return {word};
      return split_before(word, step.replacement);
    }
    case PreTokenizerStep::Kind::byte_level: {
      if (step.add_prefix_space && !word.empty() && word[0] != ' ') word = " " + word;
      std::vector<std::string> out;
      if (!step.use_regex) {
        if (!word.empty()) out.push_back(byte_level::to_alphabet(word));
        return out;
      }
      for (const std::string_view piece : byte_level::split(word))
        out.push_back(byte_level::to_alphabet(piece));
      return out;
    }
  }
  return {word};
}

}  // namespace

PipelineTokenizer::PipelineTokenizer(PipelineSpec spec)
    : spec_(std::move(spec)),
      splitter_(spec_.added, AddedTokenSplitter::Style::fast,
                [this](std::string_view s) { return normalize(s); }) {
  TFM_CHECK((spec_.bpe != nullptr) != (spec_.unigram != nullptr))
      << spec_.path << ": a tokenizer needs one model, BPE or Unigram";
  for (const AddedToken& t : splitter_.tokens()) {
    TFM_CHECK(t.id >= 0 && t.id < spec_.size)
        << spec_.path << ": added token \"" << t.content << "\" has id " << t.id
        << ", outside the tokenizer's " << spec_.size << " ids";
    if (added_by_id_.size() <= static_cast<size_t>(t.id))
      added_by_id_.resize(static_cast<size_t>(t.id) + 1, nullptr);
    added_by_id_[static_cast<size_t>(t.id)] = &t;
    if (t.special) special_contents_.insert(t.content);
  }
}

std::string PipelineTokenizer::normalize(std::string_view text) const {
  std::string s(text);
  for (const NormalizerStep& step : spec_.normalizers) {
    switch (step.kind) {
      case NormalizerStep::Kind::precompiled:
        s = step.charsmap->normalize(s);
        break;
      case NormalizerStep::Kind::collapse_spaces:
        s = collapse_spaces(s, step.content);
        break;
      case NormalizerStep::Kind::replace:
        replace_all(s, step.pattern, step.content);
        break;
    }
  }
  return s;
}

std::vector<std::string> PipelineTokenizer::pre_tokenize(const std::string& text) const {
  std::vector<std::string> words{text};
  for (const PreTokenizerStep& step : spec_.pre_tokenizers) {
    std::vector<std::string> next;
    for (std::string& w : words)
      for (std::string& piece : apply(step, std::move(w))) next.push_back(std::move(piece));
    words = std::move(next);
  }
  return words;
}

void PipelineTokenizer::model_tokenize(std::string_view word, std::vector<int64_t>& ids) const {
  if (spec_.bpe)
    spec_.bpe->tokenize(word, ids);
  else
    spec_.unigram->tokenize(word, ids);
}

std::vector<int64_t> PipelineTokenizer::encode_ids(const std::string& text) const {
  std::vector<int64_t> ids;
  for (const TextPiece& piece : splitter_.split(repair_utf8(text))) {
    if (piece.id >= 0) {
      ids.push_back(piece.id);
      continue;
    }
    for (const std::string& word : pre_tokenize(piece.text)) model_tokenize(word, ids);
  }
  return ids;
}

Ids PipelineTokenizer::encode(const std::string& text) const {
  const std::vector<int64_t> ids = encode_ids(text);
  return Ids(ids.begin(), ids.end());
}

const std::string* PipelineTokenizer::token_of(int64_t id) const {
  if (id >= 0 && static_cast<size_t>(id) < added_by_id_.size() &&
      added_by_id_[static_cast<size_t>(id)] != nullptr)
    return &added_by_id_[static_cast<size_t>(id)]->content;
  return spec_.bpe ? spec_.bpe->id_to_token(id) : spec_.unigram->id_to_token(id);
}

int64_t PipelineTokenizer::id_of(const std::string& token) const {
  for (const AddedToken& t : splitter_.tokens())
    if (t.content == token) return t.id;
  return spec_.bpe ? spec_.bpe->token_to_id(token) : spec_.unigram->token_to_id(token);
}

std::string PipelineTokenizer::decode(const Ids& ids) const {
  std::vector<std::string> tokens;
  for (const int32_t id : ids) {
    TFM_CHECK(id >= 0 && id < spec_.size)
        << spec_.path << ": id " << id << " is outside the vocabulary [0, " << spec_.size << ")";
    const std::string* t = token_of(id);
    if (t == nullptr || special_contents_.count(*t) != 0) continue;
    tokens.push_back(*t);
  }
  std::string text;
  switch (spec_.decoder.kind) {
    case DecoderSpec::Kind::none:
      for (size_t i = 0; i < tokens.size(); ++i) text += (i ? " " : "") + tokens[i];
      break;
    case DecoderSpec::Kind::byte_level:
      text = byte_level::decode(tokens);
      break;
    case DecoderSpec::Kind::metaspace: {
      const std::string& r = spec_.decoder.replacement;
      for (size_t i = 0; i < tokens.size(); ++i) {
        std::string t = tokens[i];
        replace_all(t, r, i == 0 && spec_.decoder.prepend ? "" : " ");
        text += t;
      }
      break;
    }
  }
  if (spec_.clean_up_tokenization_spaces && spec_.bpe == nullptr)
    text = clean_up_tokenization(std::move(text));
  return text;
}

std::vector<std::string> PipelineTokenizer::encode_pieces(const std::string& text) const {
  std::vector<std::string> out;
  for (const int64_t id : encode_ids(text)) out.push_back(*token_of(id));
  return out;
}

Ids PipelineTokenizer::pieces_to_ids(const std::vector<std::string>& pieces) const {
  Ids ids;
  for (const std::string& p : pieces) {
    const int64_t id = id_of(p);
    ids.push_back(static_cast<int32_t>(id >= 0 ? id : spec_.special.unk));
  }
  return ids;
}

std::vector<std::string> PipelineTokenizer::ids_to_pieces(const Ids& ids) const {
  std::vector<std::string> out;
  for (const int32_t id : ids) {
    const std::string* t = id >= 0 && id < spec_.size ? token_of(id) : nullptr;
    TFM_CHECK(t != nullptr) << spec_.path << ": id " << id << " is not in the vocabulary";
    out.push_back(*t);
  }
  return out;
}

std::string PipelineTokenizer::describe() const {
  return spec_.family + " (" + (spec_.bpe ? "BPE" : "Unigram") + ", " + std::to_string(spec_.size) +
         " ids, " + std::to_string(spec_.added.size()) + " added tokens; " + spec_.path + ")";
}

}  // namespace tfm
