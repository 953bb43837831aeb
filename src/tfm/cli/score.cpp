// tfm score --model DIR --src F --trg F [--ids]: one total log-probability of target + EOS per
// line pair, teacher forced: flags, the lines (as ids, each checked with its file:line), and one
// Translator::score_batch call.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "tfm/cli/commands.h"
#include "tfm/cli/flags.h"
#include "tfm/cli/io.h"
#include "tfm/core/check.h"
#include "tfm/core/output_file.h"
#include "tfm/data/vocab.h"
#include "tfm/output_path.h"
#include "tfm/translator.h"

namespace tfm::cli {

namespace {

// The lines as ids: parsed (--ids) or tokenised by the model's vocabulary. max_tokens: what the
// model's positions hold on this side; a longer line is an error naming it before any scoring.
std::vector<std::vector<int64_t>> to_ids(const Translator& t, const std::vector<std::string>& lines,
                                         const std::string& path, bool ids_mode, bool source,
                                         int64_t vocab_size, int64_t max_tokens) {
  std::vector<std::vector<int64_t>> out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string where = path + ":" + std::to_string(i + 1);
    if (ids_mode) {
      const Ids ids = parse_ids(lines[i], vocab_size, where);
      out.emplace_back(ids.begin(), ids.end());
    } else {
      out.push_back(source ? t.tokenize_source(lines[i]) : t.tokenize_target(lines[i]));
    }
    TFM_CHECK(static_cast<int64_t>(out.back().size()) <= max_tokens)
        << where << ": " << out.back().size() << " tokens, more than the model's " << max_tokens;
  }
  return out;
}

}  // namespace

void add_score(CLI::App& app) {
  auto* cmd = app.add_subcommand("score", "Log-probability of each target given its source");
  static std::string dir, src_path, trg_path, precision = "fp32", device = "cpu";
  static bool ids = false;
  static int threads = 0;
  static int64_t batch_size = 32;
  cmd->add_option("-m,--model", dir, "Model directory")->required();
  cmd->add_option("--src", src_path, "Source sentences, one a line (not for decoder-only models)");
  cmd->add_option("--trg", trg_path, "Target sentences, one a line")->required();
  cmd->add_flag("--ids", ids, "Lines are space-separated token ids (no BOS/EOS)");
  cmd->add_option("--threads", threads, "Threads (0: all cores)");
  cmd->add_option("--precision", precision, "Linear layers in fp32, bf16, int8 or auto");
  cmd->add_option("--device", device, "cpu, or cuda (a CUDA build on a GPU machine)");
  cmd->add_option("--batch-size", batch_size, "Sentences a batch");
  cmd->callback([] {
    TranslatorOptions to;
    to.compute_type = parse_compute_type(precision);
    to.device = parse_device(device);
    to.intra_threads = threads;
    to.max_batch_size = batch_size;
    validate_translator_options(to, flag_speller({{"intra_threads", "--threads"},
                                                  {"max_batch_size", "--batch-size"},
                                                  {"compute_type", "--precision"}}));
    // Scores go to standard output: never onto an input or into the model (a `>>` would append
    // to the file being read).
    check_output_path("-", {.kind = OutputKind::stream,
                            .name = "score:",
                            .inputs = {src_path, trg_path},
                            .model_dirs = {dir}});
    Translator translator(dir, to);
    const ModelInfo& info = translator.model_info();
    if (!ids) {
      TFM_CHECK(!info.src_vocab_path.empty())
          << "no SentencePiece vocabulary in the model directory (" << kSharedVocabFile << ", or "
          << kSrcVocabFile << " + " << kTrgVocabFile << "); use --ids";
      translator.require_vocabularies();
    }
    const std::vector<std::string> trg_lines = read_lines(trg_path);
    std::vector<std::string> src_lines;
    if (!info.decoder_only) {
      TFM_CHECK(!src_path.empty()) << "score: --src is required for an encoder-decoder model";
      src_lines = read_lines(src_path);
      TFM_CHECK(src_lines.size() == trg_lines.size())
          << "score: " << src_path << " has " << src_lines.size() << " lines but " << trg_path
          << " has " << trg_lines.size();
    }
    const int64_t src_specials = (info.source_bos ? 1 : 0) + (info.source_eos ? 1 : 0);
    const auto src = to_ids(translator, src_lines, src_path, ids, /*source=*/true,
                            info.src_vocab_size, info.max_length - src_specials);
    const auto trg = to_ids(translator, trg_lines, trg_path, ids, /*source=*/false,
                            info.trg_vocab_size, info.max_length - 1);
    const std::vector<double> scores = translator.score_batch(src, trg);
    OutputFile out("-");
    for (double s : scores) {
      char line[64];
      std::snprintf(line, sizeof line, "%.9g\n", s);
      out << line;
    }
    out.close();
  });
}

}  // namespace tfm::cli
