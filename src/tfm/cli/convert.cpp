// tfm convert --from transformers HF_DIR --out DIR [--quantization int8|bf16]: a Hugging Face
// Transformers model directory as a tfm model directory (tfm::convert_transformers).
#include <CLI/CLI.hpp>

#include <iostream>

#include "tfm/cli/commands.h"
#include "tfm/convert.h"

namespace tfm::cli {

void add_convert(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "convert",
      "Convert a Hugging Face Transformers model (Marian, M2M100/NLLB, BART/mBART, "
      "GPT-2) into a tfm model directory");
  static std::string from = "transformers", dir, out, quantization;
  static bool force = false;
  cmd->add_option("--from", from, "What the input is: transformers (the only source)")
      ->check(CLI::IsMember({"transformers"}));
  cmd->add_option("input", dir, "The Transformers model directory (save_pretrained's)")->required();
  cmd->add_option("-o,--out", out, "Output model directory")->required();
  cmd->add_option("--quantization", quantization,
                  "Precision the model runs in by default: int8 or bf16 (weights stay f32)")
      ->check(CLI::IsMember({"int8", "bf16"}));
  cmd->add_flag("--force", force, "Replace --out when it exists and is not empty");
  cmd->callback([] {
    ConvertOptions o;
    o.quantization = quantization;
    o.force = force;
    const ModelInfo info = convert_transformers(dir, out, o);
    std::cout << "converted " << info.family << " (" << info.encoder_layers << "+"
              << info.decoder_layers << " layers, d " << info.d_model << ", "
              << info.parameter_count << " parameters) into " << out << "\n";
  });
}

}  // namespace tfm::cli
