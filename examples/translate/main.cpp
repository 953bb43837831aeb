// Translates standard input, one sentence a line, with a tfm model directory:
//   translate MODEL_DIR [BEAM_SIZE] < input.de > output.en
#include <tfm/translator.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " MODEL_DIR [BEAM_SIZE] < input > output\n";
    return 2;
  }
  try {
    tfm::Translator translator(argv[1], {.compute_type = tfm::ComputeType::automatic});
    tfm::TranslationOptions options;
    options.beam_size = argc > 2 ? std::atoi(argv[2]) : 4;
    options.search = tfm::search_for(options.beam_size, /*sampling=*/false);
    std::vector<std::string> lines;
    for (std::string line; std::getline(std::cin, line);) lines.push_back(line);
    for (const tfm::TranslationResult& r : translator.translate_batch(lines, options))
      std::cout << (r.hypotheses.empty() ? "" : r.hypotheses[0].text) << "\n";
    return std::cout.flush() ? 0 : 1;
  } catch (const tfm::Error& e) {
    std::cerr << "translate: " << e.message() << "\n";
    return 1;
  }
}
