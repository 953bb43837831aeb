// translate_stream and generate_stream: a line-window reader (the calling thread) submits each
// window to the request queue as a request of its own, and an ordered writer (a thread of the
// stream's) writes each line as soon as it and every earlier line are done. Each window is
// sorted and batched alone, so its results are those of a translate_batch call on its lines;
// the queue decodes the windows waiting together in one pass (their shards pooled), which keeps
// the threads busy across windows.
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <limits>
#include <mutex>
#include <stop_token>
#include <thread>
#include <utility>

#include "tfm/core/check.h"
#include "tfm/core/profile.h"
#include "tfm/runtime/translator_impl.h"

namespace tfm {

namespace {

// Windows in flight at once: submitted, and not yet written.
constexpr size_t kWindows = 8;

// Input lines (and their target prefix lines) read together.
struct Window {
  uint64_t base = 0;  // index of its first line in the whole input
  std::vector<std::string> lines, prefix_lines;
};

// Windows of at most read_ahead lines: it blocks for one line, then takes only lines already
// readable (in_avail counts the buffered bytes and, for files and pipes, what the kernel holds),
// so an interactive caller gets its answer without sending more. A prefix stream is read in
// lockstep, one line per input line, and must end with the input.
class LineWindowReader {
 public:
  LineWindowReader(std::istream& in, const StreamOptions& so, const std::string& source_name)
      : in_(in), so_(so), name_(source_name) {}

  Window next() {
    profile::Scope reading(profile::Phase::io);
    Window w;
    w.base = base_;
    for (std::string line; static_cast<int64_t>(w.lines.size()) < so_.read_ahead;) {
      if (!w.lines.empty() && in_.rdbuf()->in_avail() <= 0) break;
      if (!std::getline(in_, line)) break;
      w.lines.push_back(std::move(line));
    }
    if (so_.target_prefix) read_prefixes(w);
    TFM_CHECK(!in_.bad()) << "error reading " << name_;
    base_ += w.lines.size();
    return w;
  }

 private:
  void read_prefixes(Window& w) {
    std::istream& pin = *so_.target_prefix;
    for (size_t i = 0; i < w.lines.size(); ++i) {
      std::string line;
      TFM_CHECK(std::getline(pin, line))
          << so_.target_prefix_name << " ends at line " << w.base + i << ", "
          << (pin.bad() ? "unreadable" : "short of") << " the input's line " << w.base + i + 1
          << " (" << name_ << "): one target prefix a line, an empty line for none";
      w.prefix_lines.push_back(std::move(line));
    }
    if (!w.lines.empty()) return;
    std::string line;
    TFM_CHECK(!std::getline(pin, line))
        << so_.target_prefix_name << " has more lines than the input (" << name_ << ", " << w.base
        << " lines): one target prefix a line";
    TFM_CHECK(!pin.bad()) << "error reading " << so_.target_prefix_name;
  }

  std::istream& in_;
  const StreamOptions& so_;
  const std::string& name_;
  uint64_t base_ = 0;
};

std::string join_ids(const Ids& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ' ';
    s += std::to_string(ids[i]);
  }
  return s;
}

// A submitted window, as the writer takes it.
struct InFlight {
  uint64_t base;
  size_t lines;
  std::shared_ptr<runtime::Pending> pending;
};

// Writes the windows' lines in input order, on a thread of its own, each as soon as it is
// decoded; flushes whenever the next line is not ready yet. A failed write is its error, which
// the reader sees before its next window and close() rethrows.
class OrderedWriter {
 public:
  OrderedWriter(const Translator::Impl& impl, std::ostream& out, const StreamOptions& so,
                const std::string& source_name)
      : impl_(impl), out_(out), so_(so), name_(source_name), thread_([this] { run(); }) {}
  ~OrderedWriter() {
    try {
      close();
    } catch (...) {  // the reader's error is already on its way; a write error adds nothing
    }
  }

  // Queues a window (waiting while kWindows are in flight); false once writing failed.
  bool push(InFlight w) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return windows_.size() < kWindows || error_; });
    if (error_) return false;
    if (cancelled_) w.pending->cancel();  // submitted as the caller gave up
    windows_.push_back(std::move(w));
    cv_.notify_all();
    return true;
  }

  // The caller gave up (StreamOptions::stop): every window in flight leaves the queue, and the
  // writer stops at the first line not yet decoded (its error: "cancelled").
  void cancel() {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    for (InFlight& w : windows_) w.pending->cancel();
  }

  // Writes what was queued, then joins; rethrows a write error.
  void close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closing_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  void run() {
    try {
      for (;;) {
        InFlight w;
        {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait(lock, [this] { return closing_ || !windows_.empty(); });
          if (windows_.empty()) return;
          w = windows_.front();
        }
        write(w);
        std::lock_guard<std::mutex> lock(mu_);
        windows_.pop_front();
        cv_.notify_all();
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      error_ = std::current_exception();
      cv_.notify_all();
    }
  }

  void write(const InFlight& w) {
    for (size_t i = 0; i < w.lines; ++i) {
      if (!w.pending->has(i)) flush();
      w.pending->wait_for(i);
      const decode::NBest nb = w.pending->take(i);
      Translator::Impl::check_scores(nb, name_ + ":" + std::to_string(w.base + i + 1));
      profile::Scope writing(profile::Phase::io);
      profile::add_sentences(1);
      if (!nb.empty()) profile::add_generated_tokens(static_cast<int64_t>(nb[0].tokens.size()));
      if (so_.n_best) {  // an empty input prints nothing here: there is no hypothesis
        for (const auto& h : nb) {
          char score[32];
          std::snprintf(score, sizeof score, "%.6f", h.score);
          out_ << w.base + i << " ||| " << text(h.tokens) << " ||| " << score << '\n';
        }
      } else {
        out_ << (nb.empty() ? std::string() : text(nb[0].tokens)) << '\n';
      }
    }
    flush();
  }

  std::string text(const Ids& t) const { return so_.ids ? join_ids(t) : impl_.decode_trg(t); }

  void flush() {
    profile::Scope writing(profile::Phase::io);
    errno = 0;
    out_.flush();
    TFM_CHECK(out_.good()) << "error writing the translations of " << name_ << ": "
                           << (errno ? std::strerror(errno) : "stream failed");
  }

  const Translator::Impl& impl_;
  std::ostream& out_;
  const StreamOptions& so_;
  const std::string& name_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<InFlight> windows_;
  bool closing_ = false;
  bool cancelled_ = false;
  std::exception_ptr error_;
  std::thread thread_;  // last: starts once the rest is built
};

// A window's lines as a request: sources (or prompts) parsed or encoded, checked and cut, each
// keyed by its line in the whole input (so sampling does not depend on the windows).
runtime::Request window_request(const Translator::Impl& impl, const Window& w,
                                const TranslationOptions& options,
                                const decode::SearchOptions& search, const StreamOptions& so,
                                const std::string& source_name, bool prompts) {
  const ModelConfig& c = impl.config();
  runtime::Request r;
  r.search = search;
  r.sources.resize(w.lines.size());
  r.prefixes.resize(prompts ? w.lines.size() : w.prefix_lines.size());
  for (size_t i = 0; i < w.lines.size(); ++i) {
    const std::string where = source_name + ":" + std::to_string(w.base + i + 1);
    r.keys.push_back(w.base + i);
    bool cut = false;  // the ids are of the line's beginning only (encode_enough)
    if (prompts) {     // an empty prompt starts from BOS alone
      r.prefixes[i] = so.ids ? parse_ids(w.lines[i], c.trg_vocab_size, where)
                             : impl.encode_trg(w.lines[i], impl.target_room(), &cut);
      impl.check_prefix(r.prefixes[i], where, options, cut);
      continue;
    }
    Ids& src = r.sources[i];
    src = so.ids ? parse_ids(w.lines[i], c.src_vocab_size, where)
                 : impl.encode_src(w.lines[i], options.source_lang, impl.source_room(), &cut);
    const size_t n = src.size();
    const bool truncated = impl.prepare_source(src, where);
    if (so.warnings && cut)
      *so.warnings << "tfm: warning: " << where << ": longer than the model reads (its first "
                   << src.size() << " tokens are translated); truncated\n";
    else if (so.warnings && truncated)
      *so.warnings << "tfm: warning: " << where << ": " << n << " tokens, more than the model's "
                   << src.size() << "; truncated\n";
    if (r.prefixes.empty()) continue;
    const std::string pwhere = so.target_prefix_name + ":" + std::to_string(w.base + i + 1);
    r.prefixes[i] = so.ids ? parse_ids(w.prefix_lines[i], c.trg_vocab_size, pwhere)
                           : impl.encode_trg(w.prefix_lines[i], impl.target_room(), &cut);
    impl.check_prefix(r.prefixes[i], pwhere, options, cut);
  }
  return r;
}

}  // namespace

void Translator::Impl::stream(std::istream& in, std::ostream& out,
                              const TranslationOptions& options, const StreamOptions& so,
                              const std::string& source_name, bool prompts) const {
  if (!so.ids) require_vocabs();
  validate_stream_options(so);
  decode::SearchOptions search = checked_search(options);
  search.return_attention = false;  // lines of text have no place for it
  // Every window shares the relay: the step ids are the lines' keys, their index in the input.
  const std::shared_ptr<runtime::StepRelay> relay = relay_steps(search, options);
  search.return_logits = false;  // nor for the logits
  search.scores = so.n_best;     // only n-best lines print scores (whatever return_scores says)
  TFM_CHECK_ARG(!options.replace_unknowns)
      << "replace_unknowns replaces tokens by source tokens: lines of text have none to put in "
      << "(translate token ids, or token lists in Python)";
  LineWindowReader reader(in, so, source_name);
  OrderedWriter writer(*this, out, so, source_name);
  const std::stop_callback on_stop(so.stop, [&writer, &relay] {
    if (relay) relay->cancel();
    writer.cancel();
  });
  while (!so.stop.stop_requested()) {
    const Window w = reader.next();
    if (w.lines.empty()) break;
    runtime::Request r = window_request(*this, w, options, search, so, source_name, prompts);
    if (!writer.push({w.base, w.lines.size(), submit(std::move(r), /*refusable=*/false)})) break;
  }
  writer.close();
  TFM_CHECK(!so.stop.stop_requested()) << source_name << ": cancelled";
}

}  // namespace tfm
