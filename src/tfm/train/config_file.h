// Training config files: a flat mapping from option names (the command-line flags without the
// leading "--"; '_' and '-' are interchangeable) to values, in YAML or JSON:
//
//   # train.yaml                      {"preset": "small",
//   preset: small                      "batch-tokens": 4096,
//   batch-tokens: 4096                 "valid-bleu": true}
//   valid-bleu: true
//   vocab-src: [a.spm]               (a list gives an option several values)
//
// Flags given on the command line override the file. Nested mappings are rejected: every
// option is one flag.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tfm {

// (name with '-' separators, values) in file order. A scalar gives one value, a list several;
// booleans come back as "true"/"false". Errors name the file and, for YAML, the line.
std::vector<std::pair<std::string, std::vector<std::string>>> read_config_file(
    const std::string& path);

}  // namespace tfm
