#include "tfm/data/ding.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "tfm/core/check.h"
#include "tfm/core/file_util.h"
#include "tfm/data/corpus.h"

namespace tfm {

std::string DingStats::summary() const {
  std::ostringstream s;
  s << "read " << lines << " lines: " << comments << " comments/blank, " << malformed
    << " malformed (no single ' :: ')\n"
    << "sub-entries: " << sub_entries << "; skipped: " << empty << " with a side empty after "
    << "cleaning, " << unbalanced_dropped << " from " << unbalanced
    << " entries with unequal ' | ' counts (first sub-entry kept)\n"
    << "synonyms: " << empty_synonyms << " cleaned to nothing, " << unpaired_synonyms
    << " left unpaired (unequal '; ' counts: first of each side paired)\n"
    << "pairs: " << pairs_extracted << " extracted, " << duplicates << " duplicates removed, "
    << pairs << " unique; repaired invalid UTF-8 in " << utf8_repaired_lines << " lines ("
    << utf8_replaced_sequences << " sequences)";
  return s.str();
}

namespace {

char closer_of(char c) {
  switch (c) {
    case '(':
      return ')';
    case '[':
      return ']';
    case '{':
      return '}';
    case '<':
      return '>';
    default:
      return 0;
  }
}

bool is_closer(char c) {
  return c == ')' || c == ']' || c == '}' || c == '>';
}

// Marks the bytes inside matched bracket pairs (brackets included) as 1 and unmatched brackets as
// 2. Brackets are ASCII, so this is safe on UTF-8 bytes.
std::vector<char> bracket_mask(std::string_view s) {
  std::vector<char> mask(s.size(), 0);
  std::vector<size_t> open;
  for (size_t i = 0; i < s.size(); ++i) {
    if (closer_of(s[i])) {
      open.push_back(i);
    } else if (is_closer(s[i])) {
      if (!open.empty() && closer_of(s[open.back()]) == s[i]) {
        std::fill(mask.begin() + static_cast<std::ptrdiff_t>(open.back()),
                  mask.begin() + static_cast<std::ptrdiff_t>(i) + 1, 1);
        open.pop_back();
      } else {
        mask[i] = 2;
      }
    }
  }
  for (size_t i : open) mask[i] = 2;
  return mask;
}

// Splits at `sep` outside matched brackets: "(Druck; Vakuum)" is one explanation, not two
// synonyms.
std::vector<std::string_view> split_outside_brackets(std::string_view s, std::string_view sep) {
  const std::vector<char> mask = bracket_mask(s);
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t i = 0; i + sep.size() <= s.size();) {
    if (mask[i] != 1 && s.compare(i, sep.size(), sep) == 0) {
      parts.push_back(s.substr(start, i - start));
      i += sep.size();
      start = i;
    } else {
      ++i;
    }
  }
  parts.push_back(s.substr(start));
  return parts;
}

bool is_space(char c) {
  return c == ' ' || c == '\t';
}
bool is_punct(char c) {
  return c == ',' || c == '.' || c == ';' || c == ':' || c == '!' || c == '?';
}

// Removes /ABBR/ (no space inside, a space or the start before it, a space, punctuation or the end
// after it): "Allgemeine Geschäftsbedingungen /AGB/". "und/oder" is not one.
std::string drop_abbreviations(std::string_view s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '/' && (i == 0 || is_space(s[i - 1]))) {
      size_t j = i + 1;
      while (j < s.size() && s[j] != '/' && !is_space(s[j])) ++j;
      const bool closed = j < s.size() && s[j] == '/' && j > i + 1;
      if (closed && (j + 1 == s.size() || is_space(s[j + 1]) || is_punct(s[j + 1]))) {
        i = j + 1;
        continue;
      }
    }
    out += s[i++];
  }
  return out;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// FNV-1a over the bytes, then mixed with the seed: the same on every platform and library version
// (std::hash is neither).
uint64_t text_hash(std::string_view s, uint64_t seed) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001B3ull;
  }
  return splitmix64(h ^ splitmix64(seed));
}

struct PairHash {
  size_t operator()(const std::pair<std::string, std::string>& p) const {
    return std::hash<std::string>()(p.first) * 31 + std::hash<std::string>()(p.second);
  }
};

std::vector<std::string> clean_synonyms(std::string_view sub_entry, DingStats& stats) {
  std::vector<std::string> out;
  for (std::string_view syn : split_outside_brackets(sub_entry, "; ")) {
    std::string c = clean_ding_text(syn);
    if (c.empty()) {
      ++stats.empty_synonyms;
    } else {
      out.push_back(std::move(c));
    }
  }
  return out;
}

}  // namespace

std::string clean_ding_text(std::string_view text) {
  const std::string s = drop_abbreviations(text);
  const std::vector<char> mask = bracket_mask(s);
  std::string out;
  bool pending_space = false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (mask[i]) continue;
    const char c = s[i];
    if (is_space(c)) {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space && !is_punct(c)) out += ' ';
    pending_space = false;
    out += c;
  }
  return out;
}

bool is_ding_sentence(std::string_view de) {
  if (de.empty()) return false;
  const char last = de.back();
  if (last != '.' && last != '!' && last != '?') return false;
  int words = 0;
  bool in_word = false;
  for (char c : de) {
    if (is_space(c)) {
      in_word = false;
    } else if (!in_word) {
      in_word = true;
      ++words;
    }
  }
  return words >= 4;
}

std::vector<DingPair> parse_ding(std::istream& in, DingStats& stats) {
  std::vector<DingPair> pairs;
  std::unordered_set<std::pair<std::string, std::string>, PairHash> seen;
  std::string raw;
  while (std::getline(in, raw)) {
    ++stats.lines;
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    int64_t replaced = 0;
    const std::string line = repair_utf8(raw, &replaced);
    if (replaced > 0) {
      ++stats.utf8_repaired_lines;
      stats.utf8_replaced_sequences += replaced;
    }
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') {
      ++stats.comments;
      continue;
    }
    const size_t sep = line.find(" :: ");
    if (sep == std::string::npos || line.find(" :: ", sep + 4) != std::string::npos) {
      ++stats.malformed;
      continue;
    }
    std::vector<std::string_view> de =
        split_outside_brackets(std::string_view(line).substr(0, sep), " | ");
    std::vector<std::string_view> en =
        split_outside_brackets(std::string_view(line).substr(sep + 4), " | ");
    if (de.size() != en.size()) {
      ++stats.unbalanced;
      stats.unbalanced_dropped += static_cast<int64_t>(std::max(de.size(), en.size())) - 1;
      de.resize(1);
      en.resize(1);
    }
    for (size_t k = 0; k < de.size(); ++k) {
      ++stats.sub_entries;
      const std::vector<std::string> ds = clean_synonyms(de[k], stats);
      const std::vector<std::string> es = clean_synonyms(en[k], stats);
      if (ds.empty() || es.empty()) {
        ++stats.empty;
        continue;
      }
      const size_t n = ds.size() == es.size() ? ds.size() : 1;
      stats.unpaired_synonyms += static_cast<int64_t>(ds.size() + es.size() - 2 * n);
      for (size_t j = 0; j < n; ++j) {
        ++stats.pairs_extracted;
        if (!seen.emplace(ds[j], es[j]).second) {
          ++stats.duplicates;
          continue;
        }
        pairs.push_back({ds[j], es[j], stats.lines});
      }
    }
  }
  stats.pairs = static_cast<int64_t>(pairs.size());
  return pairs;
}

std::vector<DingPair> read_ding(const std::string& path, DingStats& stats) {
  std::ifstream in(path, std::ios::binary);
  TFM_CHECK(in) << "cannot read the Ding dictionary " << path
                << (std::filesystem::exists(path)
                        ? std::string()
                        : std::string(": no such file; on Debian/Ubuntu install it with "
                                      "`sudo apt-get install trans-de-en`, or pass --input"));
  std::vector<DingPair> pairs = parse_ding(in, stats);
  TFM_CHECK(!in.bad()) << "error reading " << path;
  return pairs;
}

DingSplit split_ding(const std::vector<DingPair>& pairs, const DingSplitOptions& options) {
  TFM_CHECK(options.valid >= 0 && options.test >= 0)
      << "split_ding: sizes must be >= 0, got valid " << options.valid << ", test " << options.test;
  TFM_CHECK(options.sentence_share >= 0.0 && options.sentence_share <= 1.0)
      << "split_ding: sentence share " << options.sentence_share << " is outside [0, 1]";
  // German texts in order of first appearance, with their pairs.
  std::unordered_map<std::string_view, size_t> key_of;
  std::vector<std::vector<size_t>> members;
  std::vector<std::string_view> keys;
  for (size_t i = 0; i < pairs.size(); ++i) {
    auto [it, added] = key_of.emplace(pairs[i].de, keys.size());
    if (added) {
      keys.push_back(pairs[i].de);
      members.emplace_back();
    }
    members[it->second].push_back(i);
  }
  struct Ranked {
    uint64_t hash;
    size_t key;
  };
  std::vector<Ranked> sentences, phrases;
  for (size_t k = 0; k < keys.size(); ++k) {
    (is_ding_sentence(keys[k]) ? sentences : phrases)
        .push_back({text_hash(keys[k], options.seed), k});
  }
  auto by_hash = [&](const Ranked& a, const Ranked& b) {
    return a.hash != b.hash ? a.hash < b.hash : keys[a.key] < keys[b.key];
  };
  std::sort(sentences.begin(), sentences.end(), by_hash);
  std::sort(phrases.begin(), phrases.end(), by_hash);

  DingSplit split;
  std::vector<char> held_out(keys.size(), 0);
  size_t next_sentence = 0, next_phrase = 0;
  auto take = [&](int64_t size, std::vector<DingPair>& into, int64_t& n_sentences) {
    const size_t want = static_cast<size_t>(size);
    size_t want_s = static_cast<size_t>(static_cast<double>(want) * options.sentence_share + 0.5);
    const size_t left_s = sentences.size() - next_sentence, left_p = phrases.size() - next_phrase;
    want_s = std::min(want_s, left_s);
    size_t want_p = std::min(want - want_s, left_p);
    want_s = std::min(want - want_p, left_s);  // too few phrases: more sentences
    std::vector<Ranked> chosen;
    for (size_t i = 0; i < want_s; ++i) chosen.push_back(sentences[next_sentence++]);
    for (size_t i = 0; i < want_p; ++i) chosen.push_back(phrases[next_phrase++]);
    std::sort(chosen.begin(), chosen.end(), by_hash);
    for (const Ranked& r : chosen) {
      held_out[r.key] = 1;
      into.push_back(pairs[members[r.key].front()]);
      split.held_out_extra_dropped += static_cast<int64_t>(members[r.key].size()) - 1;
    }
    n_sentences = static_cast<int64_t>(want_s);
  };
  take(options.valid, split.valid, split.valid_sentences);
  take(options.test, split.test, split.test_sentences);
  for (const DingPair& p : pairs) {
    if (!held_out[key_of.at(p.de)]) split.train.push_back(p);
  }
  return split;
}

void write_ding_split(const DingSplit& split, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  TFM_CHECK(!ec) << "cannot create " << dir << ": " << ec.message();
  auto write = [&](const char* name, const std::vector<DingPair>& pairs) {
    std::string de, en;
    for (const DingPair& p : pairs) {
      de += p.de;
      de += '\n';
      en += p.en;
      en += '\n';
    }
    const std::string base = (std::filesystem::path(dir) / name).string();
    write_file_atomic(base + ".de", de);
    write_file_atomic(base + ".en", en);
  };
  write("train", split.train);
  write("valid", split.valid);
  write("test", split.test);
}

}  // namespace tfm
