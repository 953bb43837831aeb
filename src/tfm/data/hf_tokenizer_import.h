// Converts the tokenizer files of a Hugging Face model directory into a tfm model directory's
// tokenizer (tfm_tokenizer.json and the data files it names: data/tokenizer_files.h), so that the
// converted model encodes and decodes text exactly as `AutoTokenizer.from_pretrained(dir)` of
// Transformers 5 does. docs/convert.md, "Tokenization", lists the families, the files each needs
// and what is refused.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tfm/data/tokenizer.h"

namespace tfm {

struct HfTokenizerImport {
  // "marian", "m2m100", "nllb", "mbart", "mbart50", "bart", "gpt2"
  std::string family;
  std::string hf_class;       // the Transformers class it reproduces ("NllbTokenizer", ...)
  TokenizerSpecials special;  // the (source) tokenizer's pad/bos/eos/unk ids, -1 where none
  int64_t src_size = 0, trg_size = 0;        // ids each side's tokenizer gives are below these
  std::map<std::string, int64_t> languages;  // code -> token id; empty without language tokens
  // The directory's default languages (tokenizer_config.json's src_lang / tgt_lang, or the
  // class's defaults; "" for families without them) and the target language's id: the forced
  // first target token of NLLB, M2M100 and mBART-50 (-1 when none).
  std::string src_lang, tgt_lang;
  int64_t tgt_lang_id = -1;
  SourceFraming framing;           // what frame_source puts around a source
  std::vector<std::string> files;  // the files written into out_dir, tfm_tokenizer.json first
};

// Reads hf_dir's tokenizer files and writes the tfm tokenizer into out_dir (which must exist).
// `model_type` is config.json's (used when tokenizer_config.json names no tokenizer class; "" if
// unknown). Throws tfm::Error naming what it cannot reproduce exactly.
HfTokenizerImport import_hf_tokenizer(const std::string& hf_dir, const std::string& out_dir,
                                      const std::string& model_type = "");

}  // namespace tfm
