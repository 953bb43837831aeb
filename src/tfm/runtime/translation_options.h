// The options of translation checked and converted, written once for every front door: the
// public validators (include/tfm/translator.h: validate_translation_options,
// validate_translator_options, validate_stream_options) are defined in translation_options.cpp,
// one table entry per option, and nothing else checks these options' ranges (the structure test
// check_options.py fails when a check of one appears anywhere else).
#pragma once

#include <string>
#include <vector>

#include "tfm/decode/search.h"
#include "tfm/translator.h"

namespace tfm::runtime {

// The search the options describe (validated first: validate_translation_options).
decode::SearchOptions to_search_options(const TranslationOptions& options);

// The option names the validators have an entry for, in table order (for the structure test and
// the docs: every field of the option structs has one).
std::vector<std::string> translation_option_fields();
std::vector<std::string> translator_option_fields();

// Fails unless `device` can run here (the CPU always; cuda in a CUDA build with a GPU), naming
// the option through `name`.
void check_device_available(Device device, const std::string& name);

}  // namespace tfm::runtime
