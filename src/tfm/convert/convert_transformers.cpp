#include "tfm/convert/convert_transformers.h"

#include <filesystem>

#include "tfm/convert/hf_config.h"
#include "tfm/convert/hf_weights.h"
#include "tfm/core/check.h"
#include "tfm/core/file_util.h"
#include "tfm/data/hf_tokenizer_import.h"
#include "tfm/model/checkpoint.h"

namespace tfm::convert {

namespace fs = std::filesystem;

namespace {

// Whether hf_dir has a tokenizer to import: any file a Transformers tokenizer of the families
// reads. Without one the model converts alone and translates token ids.
bool has_tokenizer_files(const std::string& hf_dir) {
  for (const char* name : {"tokenizer_config.json", "tokenizer.json", "source.spm",
                           "sentencepiece.bpe.model", "vocab.json", "merges.txt"})
    if (fs::exists(fs::path(hf_dir) / name)) return true;
  return false;
}

}  // namespace

void convert_transformers(const std::string& hf_dir, const std::string& out_dir, const Options& o) {
  TFM_CHECK(o.quantization == ComputeType::float32 || o.quantization == ComputeType::bfloat16 ||
            o.quantization == ComputeType::int8)
      << "convert: --quantization must be int8 or bf16 (or none), got "
      << compute_type_name(o.quantization);
  TFM_CHECK(!out_dir.empty()) << "convert: the output directory is empty";
  std::error_code ec;
  TFM_CHECK(!fs::exists(out_dir) || o.force || (fs::is_directory(out_dir) && fs::is_empty(out_dir)))
      << "convert: " << out_dir << " exists and is not empty (--force replaces it)";
  TFM_CHECK(!fs::exists(out_dir) || !fs::equivalent(out_dir, hf_dir, ec))
      << "convert: the output directory is the input directory " << hf_dir;
  HfModel m = read_hf_model(hf_dir);
  const auto model = build_from_hf(m, read_hf_tensors(hf_dir), hf_dir);
  if (o.quantization != ComputeType::float32)
    m.generation.compute_type = compute_type_name(o.quantization);
  const bool tokenizer = has_tokenizer_files(hf_dir);
  write_dir_atomic(out_dir, [&](const std::string& tmp) {
    save_model(*model, tmp);
    if (tokenizer) {
      // The tokenizer the model was trained with, so that text translates out of the box; what
      // the import cannot reproduce exactly is an error, never a tokenizer that differs.
      const HfTokenizerImport imp = import_hf_tokenizer(hf_dir, tmp, m.model_type);
      m.generation.tokenizer = imp.family;
      load_checked_tokenizers(tmp,
                              model->config());  // its ids fit the model, its EOS is the model's
    }
    write_generation_config(m.generation, tmp);
  });
}

}  // namespace tfm::convert
