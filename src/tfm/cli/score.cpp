// tfm score --model DIR --src F --trg F [--ids]: one total log-probability of target + EOS per
// line pair, teacher forced.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>

#include "tfm/cli/commands.h"
#include "tfm/cli/io.h"
#include "tfm/core/output_file.h"
#include "tfm/core/parallel.h"
#include "tfm/core/validate.h"
#include "tfm/data/vocab.h"
#include "tfm/model/checkpoint.h"
#include "tfm/model/score.h"

namespace tfm::cli {

namespace {

// max_tokens: what the model's positions hold on this side; a longer line is an error naming it
// before any scoring starts.
std::vector<Ids> to_ids(const std::vector<std::string>& lines, const std::string& path,
                        bool ids_mode, const std::shared_ptr<Vocab>& vocab, int64_t vocab_size,
                        int64_t max_tokens) {
  std::vector<Ids> out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string where = path + ":" + std::to_string(i + 1);
    if (ids_mode) {
      out.push_back(parse_ids(lines[i], vocab_size, where));
    } else {
      TFM_CHECK(vocab) << "no SentencePiece vocabulary in the model directory (" << kSharedVocabFile
                       << ", or " << kSrcVocabFile << " + " << kTrgVocabFile << "); use --ids";
      out.push_back(vocab->encode(lines[i]));
    }
    TFM_CHECK(static_cast<int64_t>(out.back().size()) <= max_tokens)
        << where << ": " << out.back().size() << " tokens, more than the model's " << max_tokens;
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
  cmd->add_option("--precision", precision, "Linear layers in fp32, bf16 or int8");
  cmd->add_option("--batch-size", batch_size, "Sentences a batch");
  cmd->callback([] {
    check_thread_count("--threads", threads);
    require_in_range("--batch-size", batch_size, 1, 1 << 20);
    set_threads(threads);
    auto model = load_model(dir);
    model->bind_inference(resolve_compute_type(parse_compute_type(precision)), std::nullopt,
                          /*keep_f32=*/false);
    const ModelConfig& c = model->config();
    ModelVocabs vocabs;
    if (!ids) vocabs = load_checked_vocabs(dir, c);
    std::vector<std::string> trg_lines = read_lines(trg_path);
    std::vector<Ids> src,
        trg = to_ids(trg_lines, trg_path, ids, vocabs.trg, c.trg_vocab_size, c.max_length - 1);
    if (c.has_encoder()) {
      TFM_CHECK(!src_path.empty()) << "score: --src is required for an encoder-decoder model";
      std::vector<std::string> src_lines = read_lines(src_path);
      TFM_CHECK(src_lines.size() == trg_lines.size())
          << "score: " << src_path << " has " << src_lines.size() << " lines but " << trg_path
          << " has " << trg_lines.size();
      src = to_ids(src_lines, src_path, ids, vocabs.src, c.src_vocab_size,
                   c.max_length - c.seq_format().source_specials());
    }
    const std::vector<double> scores = score_pairs(*model, src, trg, batch_size);
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
