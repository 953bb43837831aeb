// tfm translate --model DIR [search flags] [--ids] [--input F] [--output F]: one output line per
// input line, in input order, streamed: input is read in windows of at most 8 batches (one line on
// a terminal), each window sorted by length and decoded in batches (less padding), and finished
// output is written and flushed after each batch as far as input order allows.
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <numeric>

#include "tfm/cli/commands.h"
#include "tfm/core/file_util.h"
#include "tfm/core/output_file.h"
#include "tfm/core/parallel.h"
#include "tfm/core/validate.h"
#include "tfm/data/vocab.h"
#include "tfm/decode/search.h"
#include "tfm/model/checkpoint.h"

namespace tfm::cli {

namespace {

std::string join_ids(const Ids& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ' ';
    s += std::to_string(ids[i]);
  }
  return s;
}

// Lines of a file or standard input, read in windows: next_window blocks for the first line, then
// takes only lines already available, so a pipe fed one line at a time (a coprocess, a chat
// front end) gets each translation without waiting for more input or EOF. Lines split on '\n'
// only, bytes kept as they are; a last line without '\n' counts (as cli::read_lines).
class LineStream {
 public:
  explicit LineStream(const std::string& path)
      : name_(path.empty() || path == "-" ? std::string("<stdin>") : path) {
    if (path.empty() || path == "-") {
      fd_ = STDIN_FILENO;
    } else {
      fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      TFM_CHECK(fd_ >= 0) << "cannot open " << path << ": " << std::strerror(errno);
      own_ = true;
      struct stat st {};
      TFM_CHECK(::fstat(fd_, &st) != 0 || !S_ISDIR(st.st_mode))
          << "cannot read " << path << ": it is a directory";
    }
  }
  ~LineStream() {
    if (own_) ::close(fd_);
  }
  LineStream(const LineStream&) = delete;
  LineStream& operator=(const LineStream&) = delete;

  bool interactive() const { return ::isatty(fd_) == 1; }
  const std::string& name() const { return name_; }

  // Replaces `lines` by up to `max` lines; false when the input is exhausted.
  bool next_window(size_t max, std::vector<std::string>& lines) {
    lines.clear();
    while (lines.size() < max) {
      const size_t nl = buf_.find('\n', pos_);
      if (nl != std::string::npos) {
        lines.emplace_back(buf_, pos_, nl - pos_);
        pos_ = nl + 1;
      } else if (eof_) {
        if (pos_ < buf_.size()) lines.emplace_back(buf_, pos_);
        pos_ = buf_.size();
        break;
      } else if (!lines.empty() && !readable_now()) {
        break;
      } else {
        read_more();
      }
    }
    return !lines.empty();
  }

 private:
  bool readable_now() const {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;
  }
  void read_more() {
    buf_.erase(0, pos_);
    pos_ = 0;
    char chunk[1 << 16];
    for (;;) {
      const ssize_t n = ::read(fd_, chunk, sizeof chunk);
      if (n > 0) {
        buf_.append(chunk, static_cast<size_t>(n));
        return;
      }
      if (n == 0) {
        eof_ = true;
        return;
      }
      TFM_CHECK(errno == EINTR) << "error reading " << name_ << ": " << std::strerror(errno);
    }
  }

  std::string name_;
  int fd_ = -1;
  bool own_ = false;
  bool eof_ = false;
  std::string buf_;  // bytes read and not yet handed out, from pos_
  size_t pos_ = 0;
};

struct Flags {
  std::string dir, input, output, precision = "fp32";
  int64_t beam_size = 1, n_best = 0, batch_size = 32, sampling_topk = 0, min_length = 0;
  double length_penalty = 0.0, max_length_factor = 2.0, sampling_topp = 1.0, temperature = 1.0;
  uint64_t seed = 0;
  bool ids = false, normalize = false;
  int threads = 0;
};

}  // namespace

void add_translate(CLI::App& app) {
  auto* cmd = app.add_subcommand("translate", "Translate lines (stdin by default) with a model");
  static Flags f;
  cmd->add_option("--model", f.dir, "Model directory")->required();
  cmd->add_option("--beam-size", f.beam_size, "Beam size (1: greedy)");
  auto* n_best =
      cmd->add_option("--n-best", f.n_best, "Print the N best as 'index ||| hypothesis ||| score'");
  cmd->add_option("--length-penalty", f.length_penalty, "GNMT length penalty alpha (0: none)");
  cmd->add_flag("--normalize", f.normalize, "Rank by log-probability / length instead");
  cmd->add_option("--batch-size", f.batch_size, "Sentences a batch");
  cmd->add_option("--max-length-factor", f.max_length_factor,
                  "Max output length = F * source length + 10 (with EOS)");
  cmd->add_option("--min-length", f.min_length, "Tokens before EOS is allowed");
  auto* topk =
      cmd->add_option("--sampling-topk", f.sampling_topk, "Sample from the K best (0: all)");
  auto* topp = cmd->add_option("--sampling-topp", f.sampling_topp, "Nucleus sampling mass P");
  auto* temp = cmd->add_option("--temperature", f.temperature, "Sampling temperature");
  cmd->add_option("--seed", f.seed, "Sampling seed");
  cmd->add_flag("--ids", f.ids, "Lines are space-separated token ids (no BOS/EOS)");
  cmd->add_option("--threads", f.threads, "Threads (0: all cores)");
  cmd->add_option("--precision", f.precision, "Linear layers in fp32, bf16 or int8");
  cmd->add_option("--input", f.input, "Input file (default: stdin)");
  cmd->add_option("--output", f.output, "Output file (default: stdout)");
  cmd->callback([topk, topp, temp, n_best] {
    // Values first, before a model is loaded: a bad flag costs nothing.
    check_thread_count("--threads", f.threads);
    require_in_range("--batch-size", f.batch_size, 1, 1 << 20);
    if (n_best->count() > 0) require_at_least("--n-best", f.n_best, 1);
    set_threads(f.threads);
    auto model = load_model(f.dir);
    model->bind_inference(resolve_compute_type(parse_compute_type(f.precision)), std::nullopt,
                          /*keep_f32=*/false);
    const ModelConfig& c = model->config();
    TFM_CHECK(c.has_encoder()) << "translate: " << f.dir << " is a decoder-only model";
    ModelVocabs vocabs;
    if (!f.ids) {
      vocabs = load_checked_vocabs(f.dir, c);
      TFM_CHECK(vocabs.src && vocabs.trg)
          << "no SentencePiece vocabulary in " << f.dir << " (" << kSharedVocabFile << ", or "
          << kSrcVocabFile << " + " << kTrgVocabFile << "); use --ids";
    }
    decode::SearchOptions o;
    o.beam_size = f.beam_size;
    o.n_best = f.n_best > 0 ? f.n_best : 1;
    o.length_penalty = f.length_penalty;
    o.normalize = f.normalize;
    o.max_length_a = f.max_length_factor;
    o.min_length = f.min_length;
    o.sampling = topk->count() > 0 || topp->count() > 0 || temp->count() > 0;
    o.top_k = f.sampling_topk;
    o.top_p = f.sampling_topp;
    o.temperature = f.temperature;
    o.seed = f.seed;
    TFM_CHECK(!o.sampling || o.beam_size == 1) << "translate: sampling needs --beam-size 1";
    decode::validate_search_options(o, c);
    auto search = decode::make_search(o);

    LineStream input(f.input);  // first: a missing input leaves no empty output file
    // Opening the output truncates it: an output that is the input file (by inode, so links and
    // other spellings of the path count) would destroy the input before it is read.
    const bool from_stdin = f.input.empty() || f.input == "-";
    TFM_CHECK(f.output.empty() || f.output == "-" ||
              !same_file(from_stdin ? "/dev/stdin" : f.input, f.output))
        << "translate: --output " << f.output << " is the input file"
        << (from_stdin ? " (standard input)" : " " + f.input) << "; write to another file";
    OutputFile out(f.output);
    // A terminal gets each line's translation as soon as it is typed; otherwise a window of lines
    // is sorted by length and batched (less padding), bounded so memory stays flat on any input.
    const size_t window = input.interactive() ? 1 : static_cast<size_t>(f.batch_size) * 8;
    size_t base = 0;  // index of the window's first line in the whole input
    std::vector<std::string> lines;
    while (input.next_window(window, lines)) {
      std::vector<Ids> src(lines.size());
      for (size_t i = 0; i < lines.size(); ++i) {
        const std::string where = input.name() + ":" + std::to_string(base + i + 1);
        src[i] =
            f.ids ? parse_ids(lines[i], c.src_vocab_size, where) : vocabs.src->encode(lines[i]);
        const size_t limit = static_cast<size_t>(c.max_length - c.seq_format().source_specials());
        if (src[i].size() > limit) {
          std::cerr << "tfm: warning: " << where << ": " << src[i].size()
                    << " tokens, more than the model's " << limit << "; truncated\n";
          src[i].resize(limit);
        }
      }
      // Non-empty lines, shortest first; empty lines translate to empty lines without a search.
      std::vector<size_t> order;
      for (size_t i = 0; i < src.size(); ++i)
        if (!src[i].empty()) order.push_back(i);
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return src[a].size() < src[b].size(); });
      std::vector<decode::NBest> result(src.size());
      std::vector<bool> ready(src.size(), false);
      for (size_t i = 0; i < src.size(); ++i) ready[i] = src[i].empty();
      size_t next_out = 0;
      auto flush_ready = [&] {
        for (; next_out < src.size() && ready[next_out]; ++next_out) {
          const decode::NBest& nb = result[next_out];
          if (f.n_best > 0) {  // empty inputs print nothing here: there is no hypothesis
            for (const auto& h : nb) {
              const std::string text = f.ids ? join_ids(h.tokens) : vocabs.trg->decode(h.tokens);
              char score[64];
              std::snprintf(score, sizeof score, "%.6f", h.score);
              out << std::to_string(base + next_out) << " ||| " << text << " ||| " << score << "\n";
            }
          } else {
            const std::string text = nb.empty() ? std::string()
                                     : f.ids    ? join_ids(nb[0].tokens)
                                                : vocabs.trg->decode(nb[0].tokens);
            out << text << "\n";
          }
          result[next_out].clear();
        }
        out.flush();
      };
      flush_ready();
      for (size_t start = 0; start < order.size(); start += static_cast<size_t>(f.batch_size)) {
        const size_t end = std::min(order.size(), start + static_cast<size_t>(f.batch_size));
        std::vector<Ids> batch;
        std::vector<uint64_t> ids;  // whole-input line numbers: sampling does not see windows
        for (size_t k = start; k < end; ++k) {
          batch.push_back(src[order[k]]);
          ids.push_back(base + order[k]);
        }
        std::vector<decode::NBest> r = search->run(*model, batch, ids);
        for (size_t k = 0; k < r.size(); ++k) {
          result[order[start + k]] = std::move(r[k]);
          ready[order[start + k]] = true;
        }
        flush_ready();
      }
      base += lines.size();
    }
    out.close();
  });
}

}  // namespace tfm::cli
