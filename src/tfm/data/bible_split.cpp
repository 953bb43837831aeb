#include "tfm/data/bible_split.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "tfm/core/check.h"
#include "tfm/core/file_util.h"

namespace tfm {

namespace {

std::string book_list(const std::vector<BiblePair>& pairs) {
  std::vector<std::string> books;
  for (const BiblePair& p : pairs) {
    if (books.empty() || books.back() != p.key.book) books.push_back(p.key.book);
  }
  std::string out;
  for (const std::string& b : books) out += (out.empty() ? "" : ", ") + b;
  return out;
}

void check_books(const std::vector<std::string>& books, const char* flag,
                 const std::set<std::string>& present, const std::vector<BiblePair>& pairs) {
  std::set<std::string> seen;
  for (const std::string& b : books) {
    TFM_CHECK(seen.insert(b).second) << flag << " names " << b << " twice";
    TFM_CHECK(present.count(b)) << flag << ": no verse of a book '" << b
                                << "' is in both modules; the books are: " << book_list(pairs);
  }
}

}  // namespace

BibleSplit split_bible_by_books(const std::vector<BiblePair>& pairs,
                                const BibleSplitOptions& options) {
  std::set<std::string> present;
  for (const BiblePair& p : pairs) present.insert(p.key.book);
  check_books(options.test_books, "test books", present, pairs);
  check_books(options.valid_books, "valid books", present, pairs);
  for (const std::string& b : options.test_books) {
    TFM_CHECK(std::find(options.valid_books.begin(), options.valid_books.end(), b) ==
              options.valid_books.end())
        << b << " is both a test book and a valid book";
  }
  auto listed = [](const std::vector<std::string>& books, const std::string& b) {
    return std::find(books.begin(), books.end(), b) != books.end();
  };
  BibleSplit split;
  for (const BiblePair& p : pairs) {
    if (listed(options.test_books, p.key.book)) {
      split.test.push_back(p);
    } else if (listed(options.valid_books, p.key.book)) {
      split.valid.push_back(p);
    } else {
      split.train.push_back(p);
    }
  }
  TFM_CHECK(!split.test.empty() && !split.valid.empty())
      << "the test and valid splits need at least one book each";
  TFM_CHECK(!split.train.empty()) << "no book is left for training after the held-out books";
  return split;
}

void write_bible_split(const BibleSplit& split, const std::string& dir, const std::string& src_lang,
                       const std::string& trg_lang) {
  auto valid_lang = [](const std::string& l) {
    return !l.empty() && l != "keys" && l.find_first_of("/\\ \t") == std::string::npos;
  };
  TFM_CHECK(valid_lang(src_lang) && valid_lang(trg_lang) && src_lang != trg_lang)
      << "the languages name the files: they must be two different non-empty names without "
         "spaces or slashes, other than 'keys' (got '"
      << src_lang << "' and '" << trg_lang << "')";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  TFM_CHECK(!ec) << "cannot create " << dir << ": " << ec.message();
  auto write = [&](const char* name, const std::vector<BiblePair>& pairs) {
    std::string src, trg, keys;
    for (const BiblePair& p : pairs) {
      // A verse is one line: the markup removal leaves no line breaks, but be sure.
      TFM_CHECK(p.src.find('\n') == std::string::npos && p.trg.find('\n') == std::string::npos)
          << p.key.str() << ": a line break inside the verse";
      src += p.src + '\n';
      trg += p.trg + '\n';
      keys += p.key.str() + '\n';
    }
    const std::string base = (std::filesystem::path(dir) / name).string();
    write_file_atomic(base + "." + src_lang, src);
    write_file_atomic(base + "." + trg_lang, trg);
    write_file_atomic(base + ".keys", keys);
  };
  write("train", split.train);
  write("valid", split.valid);
  write("test", split.test);
}

}  // namespace tfm
