// A C++ client of the installed libtfm for test_translator.py, which compares the Python
// package's target prefixes and attention with the C++ API's. Reads lines "source<TAB>prefix"
// (text), translates them in one translate_batch call with those target prefixes and
// return_attention, and prints per hypothesis "H<TAB>sentence<TAB>text<TAB>log_prob", then one
// "A<TAB>w1 w2 ..." line per attention row (%.9g: floats exactly).
//   attention_probe MODEL_DIR BEAM_SIZE NUM_HYPOTHESES < lines > out
#include <tfm/translator.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: " << argv[0] << " MODEL_DIR BEAM_SIZE NUM_HYPOTHESES < lines\n";
    return 2;
  }
  try {
    tfm::Translator translator(argv[1]);
    tfm::TranslationOptions options;
    options.beam_size = std::atoi(argv[2]);
    options.search = tfm::search_for(options.beam_size, /*sampling=*/false);
    options.num_hypotheses = std::atoi(argv[3]);
    options.return_attention = true;
    std::vector<std::string> sources, prefixes;
    for (std::string line; std::getline(std::cin, line);) {
      const size_t tab = line.find('\t');
      sources.push_back(line.substr(0, tab));
      prefixes.push_back(tab == std::string::npos ? "" : line.substr(tab + 1));
    }
    const auto results = translator.translate_batch(sources, prefixes, options);
    for (size_t i = 0; i < results.size(); ++i)
      for (const tfm::TranslationHypothesis& h : results[i].hypotheses) {
        std::printf("H\t%zu\t%s\t%.17g\n", i, h.text.c_str(), h.log_prob);
        for (const std::vector<float>& row : h.attention) {
          std::printf("A\t");
          for (size_t s = 0; s < row.size(); ++s) std::printf(s ? " %.9g" : "%.9g", row[s]);
          std::printf("\n");
        }
      }
    return std::fflush(stdout) == 0 ? 0 : 1;
  } catch (const tfm::Error& e) {
    std::cerr << "attention_probe: " << e.message() << "\n";
    return 1;
  }
}
