// Fuzz target for the converted Hugging Face tokenizers (text from users): any bytes, as text, give
// ids inside the vocabulary, one token string per id, and a decoding that is valid UTF-8; any ids
// inside the vocabulary decode to valid UTF-8. The first byte picks the tokenizer: one directory of
// each kind from tests/fixtures/hf_tokenizers, imported once.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "fuzz_common.h"
#include "tfm/core/check.h"
#include "tfm/data/corpus.h"
#include "tfm/data/hf_tokenizer_import.h"
#include "tfm/data/tokenizer_files.h"

namespace {

namespace fs = std::filesystem;

std::vector<tfm::ModelTokenizers> load_all() {
  std::vector<tfm::ModelTokenizers> out;
  const fs::path tmp = fs::temp_directory_path() / ("tfm_fuzz_hf_" + std::to_string(::getpid()));
  for (const char* name : {"marian_shared", "m2m100", "nllb", "mbart", "mbart50", "gpt2"}) {
    const fs::path dir = tmp / name;
    fs::create_directories(dir);
    tfm::import_hf_tokenizer((fs::path(TFM_FIXTURES_DIR) / "hf_tokenizers" / name).string(),
                             dir.string());
    out.push_back(tfm::load_model_tokenizers(dir.string()));
  }
  fs::remove_all(tmp);  // the tokenizers hold what they read
  return out;
}

bool valid_utf8(const std::string& s) {
  return tfm::repair_utf8(s) == s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<tfm::ModelTokenizers> all = load_all();
  if (size == 0) return 0;
  const tfm::Tokenizer& tok = *all[data[0] % all.size()].src;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const tfm::Ids ids = tok.encode(text);
  for (const int32_t id : ids)
    fuzz::check(id >= 0 && id < tok.size(), "fuzz_hf_tokenizers", "an id outside the vocabulary");
  fuzz::check(tok.encode_pieces(text).size() == ids.size(), "fuzz_hf_tokenizers",
              "not one token string per id");
  fuzz::check(valid_utf8(tok.decode(ids)), "fuzz_hf_tokenizers", "decoding is not UTF-8");
  // The bytes as ids (two bytes each), decoded.
  tfm::Ids raw;
  for (size_t i = 1; i + 1 < size; i += 2)
    raw.push_back(static_cast<int32_t>((data[i] | (data[i + 1] << 8)) % tok.size()));
  fuzz::check(valid_utf8(tok.decode(raw)), "fuzz_hf_tokenizers", "decoding ids is not UTF-8");
  return 0;
}
