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
#include "tfm/cli/flags.h"
#include "tfm/core/allocator.h"
#include "tfm/core/check.h"
#include "tfm/core/file_util.h"
#include "tfm/core/output_file.h"
#include "tfm/core/profile.h"
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
  std::string source_lang, target_lang;
  int64_t beam_size = 1, n_best = 0, batch_size = 32, batch_tokens = 0, sampling_topk = 0,
          min_length = 0, max_length = 0, max_new_tokens = 0;
  double length_penalty = 0.0, max_length_factor = 2.0, sampling_topp = 1.0, temperature = 1.0;
  uint64_t seed = 0;
  bool ids = false, normalize = false, profile = false;
  int threads = 0, inter_threads = 1;
};

// What a subcommand's callback needs to tell a flag given from a default: a search flag not
// given takes the model's own setting (read_default_options: a converted model's generation
// config; tfm's defaults, which are the flags', otherwise).
struct Given {
  CLI::Option *n_best, *topk, *topp, *temperature;
  CLI::Option *beam_size, *length_penalty, *min_length, *max_new_tokens, *precision;
  CLI::Option *max_length = nullptr, *max_length_factor = nullptr;
};

// The flags both commands share: model, search, batching, threads, precision, files.
Given add_common_flags(CLI::App* cmd, Flags& f, const char* batch_tokens_help) {
  cmd->add_option("-m,--model", f.dir, "Model directory")->required();
  Given g;
  g.beam_size = cmd->add_option("-b,--beam-size", f.beam_size,
                                "Beam size (1: greedy; default: 1, a converted model's num_beams)");
  g.n_best =
      cmd->add_option("--n-best", f.n_best, "Print the N best as 'index ||| hypothesis ||| score'");
  g.length_penalty = cmd->add_option(
      "--length-penalty", f.length_penalty,
      "GNMT length penalty alpha (0: none); a converted model's: score / length^alpha");
  cmd->add_flag("--normalize", f.normalize, "Rank by log-probability / length instead");
  cmd->add_option("--batch-size", f.batch_size, "Sentences a batch");
  cmd->add_option("--batch-tokens", f.batch_tokens, batch_tokens_help);
  g.min_length = cmd->add_option("--min-length", f.min_length, "Tokens before EOS is allowed");
  g.max_new_tokens =
      cmd->add_option("--max-new-tokens", f.max_new_tokens,
                      "Max tokens after the prefix or prompt, EOS counted (0: none)");
  cmd->add_option("--source-lang", f.source_lang,
                  "Source language code of a multilingual converted model (NLLB, M2M100, mBART)");
  cmd->add_option("--target-lang", f.target_lang,
                  "Target language code of a multilingual converted model (NLLB, M2M100, mBART)");
  g.topk = cmd->add_option("--sampling-topk", f.sampling_topk, "Sample from the K best (0: all)");
  g.topp = cmd->add_option("--sampling-topp", f.sampling_topp, "Nucleus sampling mass P");
  g.temperature = cmd->add_option("--temperature", f.temperature, "Sampling temperature");
  cmd->add_option("--seed", f.seed, "Sampling seed");
  cmd->add_flag("--ids", f.ids, "Lines are space-separated token ids (no BOS/EOS)");
  cmd->add_option("--threads", f.threads, "Threads of each batch (0: all cores / inter-threads)");
  cmd->add_option("--inter-threads", f.inter_threads, "Batches decoded at once");
  g.precision = cmd->add_option(
      "--precision", f.precision,
      "Linear layers in fp32, bf16, int8 or auto (default: fp32, or a converted model's "
      "--quantization)");
  cmd->add_option("--device", f.device, "cpu, or cuda (a CUDA build on a GPU machine)");
  cmd->add_option("-i,--input", f.input, "Input file (default: stdin)");
  cmd->add_option("-o,--output", f.output, "Output file (default: stdout)");
  cmd->add_flag("--profile", f.profile,
                "Print where the time went, by phase, and tokens/s on stderr at the end");
  return g;
}

// How the library's checks name the options on these commands' lines.
OptionSpeller translate_flags(bool generate) {
  return flag_speller({
      {"num_hypotheses", "--n-best"},
      {"normalize_scores", "--normalize"},
      {"max_decoding_length", generate ? "--max-length" : "max_decoding_length"},
      {"min_decoding_length", "--min-length"},
      {"sampling_temperature", "--temperature"},
      {"search=sampling", "sampling (--sampling-topk, --sampling-topp or --temperature)"},
      {"search=beam", "a --beam-size above 1"},
      {"intra_threads", "--threads"},
      {"max_batch_size", "--batch-size"},
      {"max_batch_tokens", "--batch-tokens"},
      {"compute_type", "--precision"},
      {"read_ahead", "--batch-size"},
  });
}

TranslatorOptions translator_options(const Flags& f) {
  TranslatorOptions to;
  to.compute_type = parse_compute_type(f.precision);
  to.device = parse_device(f.device);
  to.intra_threads = f.threads;
  to.inter_threads = f.inter_threads;
  to.max_batch_size = f.batch_size;
  to.max_batch_tokens = f.batch_tokens;
  return to;
}

// The flags as the API's options over the model's own (the flags not given keep those); the
// search is sampling when any sampling flag is given.
TranslationOptions translation_options(const Flags& f, const Given& given, const ModelInfo& info,
                                       bool generate) {
  TranslationOptions o = read_default_options(f.dir);
  const bool sampling =
      given.topk->count() > 0 || given.topp->count() > 0 || given.temperature->count() > 0;
  if (given.beam_size->count() > 0 || sampling) o.beam_size = f.beam_size;
  o.search = search_for(o.beam_size, sampling);
  // A model's default hypothesis count fits its default beam, not necessarily --beam-size.
  o.num_hypotheses = given.n_best->count() > 0 ? f.n_best : std::min(o.num_hypotheses, o.beam_size);
  if (given.length_penalty->count() > 0) o.length_penalty = f.length_penalty;
  o.normalize_scores = f.normalize;
  if (given.max_length_factor && given.max_length_factor->count() > 0)
    o.max_length_factor = f.max_length_factor;
  // tfm generate --max-length 0: as long as the model's positions allow (a converted model: its
  // generation config's).
  if (generate) {
    const int64_t model_max =
        info.search_rule == "transformers" ? o.max_decoding_length : info.max_length;
    o.max_decoding_length = f.max_length == 0 ? model_max : f.max_length;
  }
  if (given.min_length->count() > 0) o.min_decoding_length = f.min_length;
  if (given.max_new_tokens->count() > 0) o.max_new_tokens = f.max_new_tokens;
  o.source_lang = f.source_lang;
  o.target_lang = f.target_lang;
  o.sampling_topk = f.sampling_topk;
  o.sampling_topp = f.sampling_topp;
  o.sampling_temperature = f.temperature;
  o.seed = f.seed;
  return o;
}

// The model suits the command: an encoder-decoder translates, a decoder-only model generates.
void check_model_kind(const Flags& f, const ModelInfo& info, bool generate) {
  if (generate)
    TFM_CHECK_ARG(info.decoder_only)
        << "generate: " << f.dir
        << " is an encoder-decoder model; tfm translate translates with it";
  else
    TFM_CHECK_ARG(!info.decoder_only)
        << "translate: " << f.dir << " is a decoder-only model; tfm generate continues "
        << "prompts with it";
}

// The input, the prefix file and the output opened as the stream reads and writes them; the
// output is opened last and never over the input (by inode: links and other spellings count).
struct Files {
  __gnu_cxx::stdio_filebuf<char> stdin_buf{STDIN_FILENO, std::ios::in, 1 << 16};
  std::istream stdin_stream{&stdin_buf};
  std::ifstream file_in, prefix_in;
  std::istream* in = nullptr;
  std::string in_name;

  Files(const char* command, const Flags& f, StreamOptions& so) {
    // Input first: a missing input leaves no empty output file. Standard input is read through
    // a filebuf on fd 0, whose in_avail sees what the pipe holds (cin's stdio buffer does not).
    const bool from_stdin = f.input.empty() || f.input == "-";
    if (!from_stdin) open(command, "--input", f.input, file_in);
    in = from_stdin ? &stdin_stream : &file_in;
    in_name = from_stdin ? "<stdin>" : f.input;
    if (!f.target_prefix.empty()) {
      open(command, "--target-prefix", f.target_prefix, prefix_in);
      so.target_prefix = &prefix_in;
      so.target_prefix_name = f.target_prefix;
    }
    TFM_CHECK(f.output.empty() || f.output == "-" ||
              !same_file(from_stdin ? "/dev/stdin" : f.input, f.output))
        << command << ": --output " << f.output << " is the input file"
        << (from_stdin ? " (standard input)" : " " + f.input) << "; write to another file";
    TFM_CHECK(f.output.empty() || f.output == "-" || f.target_prefix.empty() ||
              !same_file(f.target_prefix, f.output))
        << command << ": --output " << f.output << " is the --target-prefix file; write to "
        << "another file";
  }

  static void open(const char* command, const char* flag, const std::string& path,
                   std::ifstream& file) {
    TFM_CHECK(!std::filesystem::is_directory(path))
        << command << ": " << flag << " " << path << " is a directory, not a file";
    file.open(path, std::ios::binary);
    TFM_CHECK(file.is_open()) << "cannot open " << path << ": " << std::strerror(errno);
  }
};

void print_profile(const Translator& translator, std::chrono::steady_clock::time_point started) {
  const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - started;
  const TranslatorOptions& used = translator.options();
  std::cerr << profile::format(profile::collect(), wall.count(),
                               used.intra_threads * used.inter_threads);
  const AllocatorStats m = cpu_allocator().stats();
  std::cerr << "tensor memory: " << (m.peak_in_use_bytes >> 20) << " MiB at most in use, "
            << (m.cached_bytes >> 20) << " MiB cached at the end; " << m.system_allocs
            << " system allocations, " << m.trims << " cache trims\n";
}

// The flags checked by the library's validators in their names before the model is loaded (the
// config alone is read: a bad flag costs nothing), then one stream call.
void run(const char* command, const Flags& f, const Given& given, bool generate) {
  const OptionSpeller flags = translate_flags(generate);
  TranslatorOptions to = translator_options(f);
  validate_translator_options(to, flags);
  const ModelInfo info = read_model_info(f.dir);
  // --precision not given: the precision a converted model was given at conversion, if any
  // (auto picks it).
  if (given.precision->count() == 0 && !info.compute_type.empty())
    to.compute_type = ComputeType::automatic;
  check_model_kind(f, info, generate);
  const TranslationOptions o = translation_options(f, given, info, generate);
  validate_translation_options(o, info, flags);
  StreamOptions so;
  so.ids = f.ids;
  so.n_best = given.n_best->count() > 0;
  so.read_ahead = f.batch_size * 8;
  so.warnings = &std::cerr;
  validate_stream_options(so, flags);

  profile::enable(f.profile);
  const auto started = std::chrono::steady_clock::now();
  Translator translator(f.dir, to);
  if (!f.ids) {
    TFM_CHECK(!info.trg_vocab_path.empty())
        << "no SentencePiece vocabulary in " << f.dir << " (" << kSharedVocabFile << ", or "
        << kSrcVocabFile << " + " << kTrgVocabFile << "); use --ids";
    translator.require_vocabularies();
  }
  Files files(command, f, so);
  OutputFile out_file(f.output);
  OutputFileBuf out_buf(out_file);
  std::ostream out(&out_buf);
  out.exceptions(std::ios::badbit);
  if (generate)
    translator.generate_stream(*files.in, out, o, so, files.in_name);
  else
    translator.translate_stream(*files.in, out, o, so, files.in_name);
  out_file.close();
  if (f.profile) print_profile(translator, started);
}

}  // namespace

void add_translate(CLI::App& app) {
  auto* cmd = app.add_subcommand("translate", "Translate lines (stdin by default) with a model");
  static Flags f;
  static Given given = add_common_flags(cmd, f, "Padded source tokens a batch (0: no limit)");
  given.max_length_factor =
      cmd->add_option("--max-length-factor", f.max_length_factor,
                      "Max output length = F * source length + 10 (with EOS; tfm's own models)");
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
  given.max_length = cmd->add_option(
      "--max-length", f.max_length,
      "Max output length in tokens, prompt and EOS counted (0: the model's positions, or a "
      "converted model's generation config)");
  cmd->callback([] { run("generate", f, given, /*generate=*/true); });
}

}  // namespace tfm::cli
