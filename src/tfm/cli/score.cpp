// tfm score --model DIR --src F --trg F [--ids]: one total log-probability of target + EOS per
// line pair, teacher forced: flags, the lines, and one Translator::score_batch call.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "tfm/cli/commands.h"
#include "tfm/cli/io.h"
#include "tfm/core/check.h"
#include "tfm/data/vocab.h"
#include "tfm/translator.h"

namespace tfm::cli {

namespace {

std::vector<std::vector<int64_t>> parse_id_lines(const std::vector<std::string>& lines,
                                                 const std::string& path, int64_t vocab_size) {
  std::vector<std::vector<int64_t>> out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const Ids ids = parse_ids(lines[i], vocab_size, path + ":" + std::to_string(i + 1));
    out.emplace_back(ids.begin(), ids.end());
  }
  return out;
}

}  // namespace

void add_score(CLI::App& app) {
  auto* cmd = app.add_subcommand("score", "Log-probability of each target given its source");
  static std::string dir, src_path, trg_path, precision = "fp32";
  static bool ids = false;
  static int threads = 0;
  static int64_t batch_size = 32;
  cmd->add_option("--model", dir, "Model directory")->required();
  cmd->add_option("--src", src_path, "Source sentences, one a line (not for decoder-only models)");
  cmd->add_option("--trg", trg_path, "Target sentences, one a line")->required();
  cmd->add_flag("--ids", ids, "Lines are space-separated token ids (no BOS/EOS)");
  cmd->add_option("--threads", threads, "Threads (0: all cores)");
  cmd->add_option("--precision", precision, "Linear layers in fp32, bf16, int8 or auto");
  cmd->add_option("--batch-size", batch_size, "Sentences a batch")->check(CLI::PositiveNumber);
  cmd->callback([] {
    TranslatorOptions to;
    to.compute_type = parse_compute_type(precision);
    to.intra_threads = threads;
    to.max_batch_size = batch_size;
    Translator translator(dir, to);
    const ModelInfo& info = translator.model_info();
    TFM_CHECK(ids || translator.has_vocabularies())
        << "no SentencePiece vocabulary in the model directory (" << kSharedVocabFile << ", or "
        << kSrcVocabFile << " + " << kTrgVocabFile << "); use --ids";
    const std::vector<std::string> trg = read_lines(trg_path);
    std::vector<std::string> src;
    if (!info.decoder_only) {
      TFM_CHECK(!src_path.empty()) << "score: --src is required for an encoder-decoder model";
      src = read_lines(src_path);
      TFM_CHECK(src.size() == trg.size()) << "score: " << src_path << " has " << src.size()
                                          << " lines but " << trg_path << " has " << trg.size();
    }
    const std::vector<double> scores =
        ids ? translator.score_batch(parse_id_lines(src, src_path, info.src_vocab_size),
                                     parse_id_lines(trg, trg_path, info.trg_vocab_size))
            : translator.score_batch(src, trg);
    for (double s : scores) std::printf("%.9g\n", s);
  });
}

}  // namespace tfm::cli
