// Fuzz target for the corpus reader: the input, split at its first NUL into a source and a target
// file, is read as a parallel corpus, and whole as a TSV file. Each read either raises tfm::Error
// (line counts that differ) or yields pairs of valid UTF-8 (repaired) without CR or LF, counted
// consistently.
#include <cstdint>
#include <string>

#include "fuzz_common.h"
#include "tfm/core/check.h"
#include "tfm/data/corpus.h"

namespace {

void read_all(tfm::CorpusReader reader) {
  tfm::TextPair p;
  int64_t kept = 0;
  try {
    while (reader.next(p)) {
      ++kept;
      for (const std::string* s : {&p.src, &p.trg}) {
        fuzz::check(tfm::repair_utf8(*s) == *s, "fuzz_corpus", "a pair is not valid UTF-8");
        fuzz::check(s->find('\n') == std::string::npos, "fuzz_corpus", "a pair holds a newline");
      }
    }
  } catch (const tfm::Error&) {
    return;
  }
  const tfm::CorpusStats& s = reader.stats();
  fuzz::check(s.pairs_kept == kept && s.pairs_read >= s.pairs_kept && s.skipped() >= 0,
              "fuzz_corpus", "the counts disagree with the pairs handed out");
  (void)s.summary();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const size_t nul = bytes.find('\0');
  const std::string src = bytes.substr(0, nul);
  const std::string trg = nul == std::string::npos ? std::string() : bytes.substr(nul + 1);
  const std::string src_path = fuzz::scratch_file("corpus.src", src);
  const std::string trg_path = fuzz::scratch_file("corpus.trg", trg);
  read_all(tfm::CorpusReader::parallel(src_path, trg_path));
  read_all(tfm::CorpusReader::tsv(fuzz::scratch_file("corpus.tsv", bytes)));
  return 0;
}
