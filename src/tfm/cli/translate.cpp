// tfm translate --model DIR [search flags] [--ids] [--input F] [--output F], and tfm generate,
// its decoder-only twin (each line a prompt to continue): flags into the Translator's options,
// then one translate_stream or generate_stream call (include/tfm/translator.h): one output line
// per input line, in input order, each written as soon as it and the lines before it are done.
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <ext/stdio_filebuf.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "tfm/cli/commands.h"
#include "tfm/core/allocator.h"
#include "tfm/core/check.h"
#include "tfm/core/file_util.h"
#include "tfm/core/output_file.h"
#include "tfm/core/parallel.h"
#include "tfm/core/profile.h"
#include "tfm/core/validate.h"
#include "tfm/data/vocab.h"
#include "tfm/translator.h"

namespace tfm::cli {

namespace {

// An ostream's buffer over OutputFile, so translate_stream's writes are checked as every other
// output is: a failed write throws tfm::Error naming the file and the errno text, which the
// ostream rethrows (its exceptions() include badbit).
class OutputFileBuf : public std::streambuf {
 public:
  explicit OutputFileBuf(OutputFile& out) : out_(out) {}

 protected:
  int_type overflow(int_type c) override {
    if (c != traits_type::eof()) {
      const char ch = traits_type::to_char_type(c);
      out_.write(std::string_view(&ch, 1));
    }
    return traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    out_.write(std::string_view(s, static_cast<size_t>(n)));
    return n;
  }
  int sync() override {
    out_.flush();
    return 0;
  }

 private:
  OutputFile& out_;
};

struct Flags {
  std::string dir, input, output, target_prefix, precision = "fp32", device = "cpu";
  int64_t beam_size = 1, n_best = 0, batch_size = 32, batch_tokens = 0, sampling_topk = 0,
          min_length = 0, max_length = 0;
  double length_penalty = 0.0, max_length_factor = 2.0, sampling_topp = 1.0, temperature = 1.0;
  uint64_t seed = 0;
  bool ids = false, normalize = false, profile = false;
  int threads = 0, inter_threads = 1;
};

// What a subcommand's callback needs to tell a flag given from a default.
struct Given {
  CLI::Option *n_best, *topk, *topp, *temperature;
};

// The flags both commands share: model, search, batching, threads, precision, files.
Given add_common_flags(CLI::App* cmd, Flags& f, const char* batch_tokens_help) {
  cmd->add_option("--model", f.dir, "Model directory")->required();
  cmd->add_option("--beam-size", f.beam_size, "Beam size (1: greedy)");
  Given g;
  g.n_best =
      cmd->add_option("--n-best", f.n_best, "Print the N best as 'index ||| hypothesis ||| score'");
  cmd->add_option("--length-penalty", f.length_penalty, "GNMT length penalty alpha (0: none)");
  cmd->add_flag("--normalize", f.normalize, "Rank by log-probability / length instead");
  cmd->add_option("--batch-size", f.batch_size, "Sentences a batch");
  cmd->add_option("--batch-tokens", f.batch_tokens, batch_tokens_help);
  cmd->add_option("--min-length", f.min_length, "Tokens before EOS is allowed");
  g.topk = cmd->add_option("--sampling-topk", f.sampling_topk, "Sample from the K best (0: all)");
  g.topp = cmd->add_option("--sampling-topp", f.sampling_topp, "Nucleus sampling mass P");
  g.temperature = cmd->add_option("--temperature", f.temperature, "Sampling temperature");
  cmd->add_option("--seed", f.seed, "Sampling seed");
  cmd->add_flag("--ids", f.ids, "Lines are space-separated token ids (no BOS/EOS)");
  cmd->add_option("--threads", f.threads, "Threads of each batch (0: all cores / inter-threads)");
  cmd->add_option("--inter-threads", f.inter_threads, "Batches decoded at once");
  cmd->add_option("--precision", f.precision, "Linear layers in fp32, bf16, int8 or auto");
  cmd->add_option("--device", f.device, "cpu, or cuda (a CUDA build on a GPU machine)");
  cmd->add_option("--input", f.input, "Input file (default: stdin)");
  cmd->add_option("--output", f.output, "Output file (default: stdout)");
  cmd->add_flag("--profile", f.profile,
                "Print where the time went, by phase, and tokens/s on stderr at the end");
  return g;
}

// The flags' values checked in their names before a model is loaded (a bad flag costs nothing),
// then the run: the Translator checks them again, and what needs the model, in its own words.
void run(const char* command, const Flags& f, const Given& given, bool generate) {
  check_thread_count("--threads", f.threads);
  require_in_range("--inter-threads", int64_t{f.inter_threads}, 1, 1024);
  require_in_range("--batch-size", f.batch_size, 1, 1 << 20);
  require_at_least("--batch-tokens", f.batch_tokens, 0);
  require_at_least("--beam-size", f.beam_size, 1);
  if (given.n_best->count() > 0) require_at_least("--n-best", f.n_best, 1);
  require_in_range("--length-penalty", f.length_penalty, 0.0, 10.0);
  if (generate)
    require_in_range("--max-length", f.max_length, 0, 1 << 20);
  else
    require_in_range("--max-length-factor", f.max_length_factor, 0.0, 1000.0);
  require_at_least("--min-length", f.min_length, 0);
  require_in_range("--temperature", f.temperature, 0.0, 1e6);
  require_at_least("--sampling-topk", f.sampling_topk, 0);
  require_in_range("--sampling-topp", f.sampling_topp, 0.0, 1.0, /*lo_open=*/true);
  TranslatorOptions to;
  to.compute_type = parse_compute_type(f.precision);
  to.device = parse_device(f.device);
  to.intra_threads = f.threads;
  to.inter_threads = f.inter_threads;
  to.max_batch_size = f.batch_size;
  to.max_batch_tokens = f.batch_tokens;
  TranslationOptions o;
  o.beam_size = f.beam_size;
  o.num_hypotheses = f.n_best > 0 ? f.n_best : 1;
  o.length_penalty = f.length_penalty;
  o.normalize_scores = f.normalize;
  o.max_length_factor = f.max_length_factor;
  o.min_decoding_length = f.min_length;
  o.sampling = given.topk->count() > 0 || given.topp->count() > 0 || given.temperature->count() > 0;
  o.sampling_topk = f.sampling_topk;
  o.sampling_topp = f.sampling_topp;
  o.sampling_temperature = f.temperature;
  o.seed = f.seed;
  TFM_CHECK(!o.sampling || o.beam_size == 1) << command << ": sampling needs --beam-size 1";
  TFM_CHECK(o.num_hypotheses <= o.beam_size)
      << command << ": --n-best " << o.num_hypotheses << " exceeds --beam-size " << o.beam_size;
  profile::enable(f.profile);
  const auto started = std::chrono::steady_clock::now();
  Translator translator(f.dir, to);
  const ModelInfo& info = translator.model_info();
  if (generate) {
    TFM_CHECK(info.decoder_only)
        << "generate: " << f.dir
        << " is an encoder-decoder model; tfm translate translates with it";
    // 0: as long as the model's positions allow.
    o.max_decoding_length = f.max_length > 0 ? f.max_length : info.max_length;
  } else {
    TFM_CHECK(!info.decoder_only) << "translate: " << f.dir
                                  << " is a decoder-only model; tfm generate continues prompts "
                                  << "with it";
  }
  if (!f.ids) {
    TFM_CHECK(!info.trg_vocab_path.empty())
        << "no SentencePiece vocabulary in " << f.dir << " (" << kSharedVocabFile << ", or "
        << kSrcVocabFile << " + " << kTrgVocabFile << "); use --ids";
    translator.require_vocabularies();
  }
  const int64_t generable = std::max<int64_t>(1, info.trg_vocab_size - 2);
  TFM_CHECK(f.beam_size <= generable)
      << "--beam-size " << f.beam_size << " is larger than the model's target vocabulary ("
      << generable << " tokens it can generate)";
  StreamOptions so;
  so.ids = f.ids;
  so.n_best = f.n_best > 0;
  so.read_ahead = f.batch_size * 8;
  so.warnings = &std::cerr;

  // Input first: a missing input leaves no empty output file. Standard input is read through a
  // filebuf on fd 0, whose in_avail sees what the pipe holds (cin's stdio buffer does not).
  const bool from_stdin = f.input.empty() || f.input == "-";
  __gnu_cxx::stdio_filebuf<char> stdin_buf(STDIN_FILENO, std::ios::in, 1 << 16);
  std::ifstream file_in;
  if (!from_stdin) {
    TFM_CHECK(!std::filesystem::is_directory(f.input))
        << command << ": --input " << f.input << " is a directory, not a file";
    file_in.open(f.input, std::ios::binary);
    TFM_CHECK(file_in.is_open()) << "cannot open " << f.input << ": " << std::strerror(errno);
  }
  std::istream stdin_stream(&stdin_buf);
  std::istream& in = from_stdin ? stdin_stream : file_in;
  const std::string in_name = from_stdin ? "<stdin>" : f.input;
  std::ifstream prefix_in;
  if (!f.target_prefix.empty()) {
    TFM_CHECK(!std::filesystem::is_directory(f.target_prefix))
        << command << ": --target-prefix " << f.target_prefix << " is a directory, not a file";
    prefix_in.open(f.target_prefix, std::ios::binary);
    TFM_CHECK(prefix_in.is_open())
        << "cannot open " << f.target_prefix << ": " << std::strerror(errno);
    so.target_prefix = &prefix_in;
    so.target_prefix_name = f.target_prefix;
  }
  // Opening the output truncates it: an output that is the input file (by inode, so links and
  // other spellings of the path count) would destroy the input before it is read.
  TFM_CHECK(f.output.empty() || f.output == "-" ||
            !same_file(from_stdin ? "/dev/stdin" : f.input, f.output))
      << command << ": --output " << f.output << " is the input file"
      << (from_stdin ? " (standard input)" : " " + f.input) << "; write to another file";
  TFM_CHECK(f.output.empty() || f.output == "-" || f.target_prefix.empty() ||
            !same_file(f.target_prefix, f.output))
      << command << ": --output " << f.output << " is the --target-prefix file; write to "
      << "another file";
  OutputFile out_file(f.output);
  OutputFileBuf out_buf(out_file);
  std::ostream out(&out_buf);
  out.exceptions(std::ios::badbit);
  if (generate)
    translator.generate_stream(in, out, o, so, in_name);
  else
    translator.translate_stream(in, out, o, so, in_name);
  out_file.close();
  if (f.profile) {
    const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - started;
    const TranslatorOptions& used = translator.options();
    std::cerr << profile::format(profile::collect(), wall.count(),
                                 used.intra_threads * used.inter_threads);
    const AllocatorStats m = cpu_allocator().stats();
    std::cerr << "tensor memory: " << (m.peak_in_use_bytes >> 20) << " MiB at most in use, "
              << (m.cached_bytes >> 20) << " MiB cached at the end; " << m.system_allocs
              << " system allocations, " << m.trims << " cache trims\n";
  }
}

}  // namespace

void add_translate(CLI::App& app) {
  auto* cmd = app.add_subcommand("translate", "Translate lines (stdin by default) with a model");
  static Flags f;
  static Given given = add_common_flags(cmd, f, "Padded source tokens a batch (0: no limit)");
  cmd->add_option("--max-length-factor", f.max_length_factor,
                  "Max output length = F * source length + 10 (with EOS)");
  cmd->add_option("--target-prefix", f.target_prefix,
                  "File of target prefixes, one per input line (empty: none), that every "
                  "translation starts with");
  cmd->callback([] { run("translate", f, given, /*generate=*/false); });
}

void add_generate(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "generate", "Continue prompts (lines of stdin by default) with a decoder-only model");
  static Flags f;
  static Given given = add_common_flags(cmd, f, "Padded prompt tokens a batch (0: no limit)");
  cmd->add_option("--max-length", f.max_length,
                  "Max output length in tokens, prompt and EOS counted (0: the model's positions)");
  cmd->callback([] { run("generate", f, given, /*generate=*/true); });
}

}  // namespace tfm::cli
