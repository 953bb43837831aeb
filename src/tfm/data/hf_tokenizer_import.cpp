#include "tfm/data/hf_tokenizer_import.h"

#include <filesystem>

#include "tfm/core/check.h"
#include "tfm/core/file_util.h"
#include "tfm/data/hf_import_output.h"
#include "tfm/data/tokenizer_files.h"

namespace tfm {

namespace fs = std::filesystem;
using nlohmann::json;

json framing_json(const SourceFraming& f) {
  auto part = [](const std::vector<FrameToken>& tokens) {
    json a = json::array();
    for (const FrameToken& t : tokens) a.push_back(t.language ? json("language") : json(t.id));
    return a;
  };
  return {{"prefix", part(f.prefix)}, {"suffix", part(f.suffix)}};
}

void HfImportOutput::write(const std::string& out_dir) {
  TFM_CHECK(fs::is_directory(out_dir)) << out_dir << " is not a directory";
  result.files.clear();
  result.files.push_back(kTokenizerConfigFile);
  for (const auto& [from, name] : copies) {
    copy_file_atomic(from, (fs::path(out_dir) / name).string());
    result.files.push_back(name);
  }
  for (const auto& [name, bytes] : data) {
    write_file_atomic((fs::path(out_dir) / name).string(), bytes);
    result.files.push_back(name);
  }
  write_file_atomic((fs::path(out_dir) / kTokenizerConfigFile).string(), config.dump(1) + "\n");
}

HfTokenizerImport import_hf_tokenizer(const std::string& hf_dir, const std::string& out_dir,
                                      const std::string& model_type) {
  TFM_CHECK(fs::is_directory(hf_dir)) << hf_dir << " is not a directory";
  const HfTokenizerConfig c = read_hf_tokenizer_config(hf_dir, model_type);
  TFM_CHECK(!c.bool_or("split_special_tokens", false))
      << c.path("tokenizer_config.json")
      << ": split_special_tokens is true (special tokens in text read as text); tfm reproduces "
         "the default only";
  HfImportOutput out;
  out.config["format"] = "tfm-tokenizer";
  out.config["version"] = 1;
  out.config["hf_class"] = c.tokenizer_class;
  out.result.hf_class = c.tokenizer_class;
  const std::string& k = c.tokenizer_class;
  if (k == "MarianTokenizer") {
    import_marian(c, out);
  } else if (k == "M2M100Tokenizer") {
    import_m2m100(c, out);
  } else if (k == "NllbTokenizer" || k == "MBartTokenizer" || k == "MBart50Tokenizer" ||
             k == "BartTokenizer" || k == "RobertaTokenizer" || k == "GPT2Tokenizer") {
    import_fast(c, out);
  } else {
    TFM_FAIL() << hf_dir << ": tokenizer class " << k
               << " is not one tfm reproduces (MarianTokenizer, M2M100Tokenizer, NllbTokenizer, "
                  "MBartTokenizer, MBart50Tokenizer, BartTokenizer/RobertaTokenizer, "
                  "GPT2Tokenizer)";
  }
  out.config["family"] = out.result.family;
  out.config["framing"] = framing_json(out.result.framing);
  json langs = json::object();
  for (const auto& [code, id] : out.result.languages) langs[code] = id;
  out.config["languages"] = langs;
  out.config["source_lang"] = out.result.src_lang;
  out.config["target_lang"] = out.result.tgt_lang;
  out.write(out_dir);
  return out.result;
}

}  // namespace tfm
