// tfm info --model DIR: the config and the parameter counts, and a converted model's family,
// tokenizer and search rule.
#include <CLI/CLI.hpp>

#include <iostream>
#include <map>

#include "tfm/cli/commands.h"
#include "tfm/core/output_file.h"
#include "tfm/model/checkpoint.h"
#include "tfm/model_info.h"

namespace tfm::cli {

void add_info(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Print a model's config and parameter counts");
  static std::string dir;
  cmd->add_option("-m,--model", dir, "Model directory")->required();
  cmd->callback([] {
    auto model = load_model(dir);
    // A mismatch is worth knowing here too.
    const ModelTokenizers tokenizers = load_checked_tokenizers(dir, model->config());
    OutputFile out("-");
    out << model->config().to_json() << "\n";
    std::map<std::string, int64_t> groups;
    for (const auto& [name, t] : model->named_parameters())
      groups[name.substr(0, name.find('.'))] += t->numel();
    for (const auto& [group, n] : groups)
      out << "parameters." << group << " " << std::to_string(n) << "\n";
    out << "parameters.total " << std::to_string(model->parameter_count()) << "\n";
    if (tokenizers.src) {
      out << "tokenizer.source " << tokenizers.src->describe() << "\n";
      out << "tokenizer.target " << tokenizers.trg->describe() << "\n";
    }
    // A model converted from Transformers: where it came from and how it decodes.
    const ModelInfo info = read_model_info(dir);
    if (!info.family.empty()) {
      out << "family " << info.family << "\n";
      if (!tokenizers.src) out << "tokenizer none (token ids only)\n";
      out << "search_rule " << info.search_rule << "\n";
      if (!info.compute_type.empty()) out << "compute_type " << info.compute_type << "\n";
    }
    out.close();
  });
}

}  // namespace tfm::cli
