#include "tfm/serve/server.h"

#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "tfm/core/check.h"
#include "tfm/data/tokenizer_files.h"
#include "tfm/serve/api.h"
#include "tfm/serve/metrics.h"

namespace tfm::serve {

namespace {

// When the request on this thread arrived, and how many sentences it carried: httplib runs a
// request's pre-routing handler, handler and logger on one thread, and only the logger sees the
// final status.
thread_local Clock::time_point t_start;
thread_local size_t t_sentences = 0;

// Time depends on the lengths alone, never on where the first difference is.
bool constant_time_equal(std::string_view a, std::string_view b) {
  volatile unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const auto x = static_cast<unsigned char>(i < a.size() ? a[i] : 0);
    const auto y = static_cast<unsigned char>(i < b.size() ? b[i] : 0);
    diff = diff | (x ^ y);
  }
  return diff == 0;
}

const char* reason(int status) {
  switch (status) {
    case 400:
      return "bad request";
    case 401:
      return "unauthorized";
    case 404:
      return "no such route";
    case 405:
      return "method not allowed";
    case 413:
      return "the request is larger than --max-request-bytes";
    case 414:
      return "the URI is too long";
    case 503:
      return "unavailable";
    case 504:
      return "timed out";
    default:
      return "error";
  }
}

class Server {
 public:
  explicit Server(const ServeOptions& o)
      : options_(o),
        translator_(o.model_dir, o.translator),
        vocabs_(load_model_tokenizers(o.model_dir)),
        batcher_(translator_, batcher_options(o), [this](const BatchStats& s) {
          metrics_.record_batch(s.sentences, s.source_tokens, s.target_tokens);
        }) {
    TFM_CHECK(vocabs_.src && vocabs_.trg)
        << "serve: " << o.model_dir << " has no SentencePiece vocabulary (vocab.model, or "
        << "vocab.src.model + vocab.trg.model) and no " << kTokenizerConfigFile
        << ": the server translates text";
    TFM_CHECK(o.max_request_bytes >= 1)
        << "serve: --max-request-bytes must be at least 1 (got " << o.max_request_bytes << ")";
    TFM_CHECK(o.max_sentences >= 1)
        << "serve: --max-sentences must be at least 1 (got " << o.max_sentences << ")";
    TFM_CHECK(o.timeout_ms >= 1) << "serve: --timeout-ms must be at least 1 (got " << o.timeout_ms
                                 << ")";
    TFM_CHECK(o.port >= 0 && o.port <= 65535)
        << "serve: --port must be in [0, 65535] (got " << o.port << ")";
    setup();
  }

  // Binds, then serves until stop(); false when the address cannot be bound.
  void bind() {
    // httplib 0.11 listens with a backlog of 5: a burst of new connections beyond that waits for
    // the client's SYN retransmit (a second or more), and some are reset. So keep the socket
    // (the last one this sees is the one bound) and listen() again with a real backlog.
    //
    // TCP_NODELAY: httplib writes a response's headers and body with two send() calls, and on a
    // keep-alive connection Nagle's algorithm holds the body back until the client ACKs the
    // headers, which a client waiting for the body delays by up to 40 ms (Linux's delayed ACK):
    // one client on a kept-alive connection saw 44 ms a request instead of ~2. Accepted sockets
    // inherit the option from the listening one.
    http_.set_tcp_nodelay(true);
    http_.set_socket_options([this](socket_t sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
      setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
      listen_fd_ = sock;
    });
    if (options_.port == 0) {
      port_ = http_.bind_to_any_port(options_.host);
    } else {
      port_ = http_.bind_to_port(options_.host, options_.port) ? options_.port : -1;
    }
    TFM_CHECK(port_ > 0) << "serve: cannot listen on " << options_.host << ":" << options_.port
                         << " (the port is taken, or the host is not an address of this machine)";
    TFM_CHECK(::listen(listen_fd_, SOMAXCONN) == 0)
        << "serve: listen on " << options_.host << ":" << port_ << ": " << std::strerror(errno);
    std::fprintf(stderr, "tfm serve: listening on http://%s:%d (model %s, %s, %d x %d threads)\n",
                 options_.host.c_str(), port_, options_.model_dir.c_str(),
                 compute_type_name(translator_.options().compute_type),
                 translator_.options().inter_threads, translator_.options().intra_threads);
  }
  void listen() { http_.listen_after_bind(); }
  bool running() const { return http_.is_running(); }

  // The drain: batches stop waiting for company, the listening socket closes, and listen()
  // returns once every request already received is answered.
  void stop() {
    draining_ = true;
    batcher_.flush_now();
    http_.stop();
  }
  void finish() { batcher_.stop(); }

 private:
  static BatcherOptions batcher_options(const ServeOptions& o) {
    BatcherOptions b = o.batcher;
    b.workers = std::max(1, o.translator.inter_threads);
    return b;
  }

  bool authorized(const httplib::Request& req, const std::string& body_key = "") const {
    if (options_.api_key.empty()) return true;
    const std::string header = req.get_header_value("Authorization");
    constexpr std::string_view kBearer = "Bearer ";
    if (header.size() > kBearer.size() && header.compare(0, kBearer.size(), kBearer) == 0 &&
        constant_time_equal(std::string_view(header).substr(kBearer.size()), options_.api_key))
      return true;
    return !body_key.empty() && constant_time_equal(body_key, options_.api_key);
  }

  // Source text to results with the hypotheses' text: through the batcher, within the timeout.
  std::vector<TranslationResult> translate(const std::vector<std::string>& texts,
                                           const TranslationOptions& o,
                                           const std::vector<std::string>& prefix_texts = {}) {
    t_sentences = texts.size();
    if (translator_.model_info().decoder_only)
      throw HttpError(400, options_.model_dir +
                               " is a decoder-only model: POST /v1/generate continues prompts "
                               "with it (translating needs an encoder-decoder model)");
    std::vector<std::vector<int64_t>> prefixes;
    bool any_prefix = false;
    for (const auto& t : prefix_texts) {
      const Ids p = vocabs_.trg->encode(t);
      any_prefix = any_prefix || !p.empty();
      prefixes.emplace_back(p.begin(), p.end());
    }
    if (!any_prefix) prefixes.clear();
    try {
      // The Translator's own checks of the options and the prefixes, on empty sources (which it
      // decodes nothing for), one request at a time: a bad value is the client's, and never
      // reaches a batch shared with other requests' sentences.
      translator_.translate_batch(std::vector<std::vector<int64_t>>(prefixes.size()), prefixes, o);
    } catch (const Error& e) {
      throw HttpError(400, e.message());
    }
    if (texts.empty()) return {};
    std::vector<std::vector<int64_t>> ids;
    ids.reserve(texts.size());
    // As the Translator reads text (a converted model's framing included).
    for (const auto& t : texts) ids.push_back(translator_.tokenize_source(t));
    return run_job(std::make_shared<Job>(std::move(ids), o, std::move(prefixes)));
  }

  // Prompts to continuations (a decoder-only model), as translate() does for sources: checked
  // alone, then batched with other requests' prompts.
  std::vector<TranslationResult> generate(const std::vector<std::string>& texts,
                                          const TranslationOptions& o) {
    t_sentences = texts.size();
    if (!translator_.model_info().decoder_only)
      throw HttpError(400, options_.model_dir +
                               " is an encoder-decoder model: POST /v1/translate translates with "
                               "it (/v1/generate needs a decoder-only model)");
    std::vector<std::vector<int64_t>> prompts;
    for (const auto& t : texts) {
      const Ids p = vocabs_.trg->encode(t);
      prompts.emplace_back(p.begin(), p.end());
    }
    try {
      translator_.check_generate_batch(prompts, o);
    } catch (const Error& e) {
      throw HttpError(400, e.message());
    }
    if (texts.empty()) return {};
    auto job = std::make_shared<Job>(std::vector<std::vector<int64_t>>(prompts.size()), o,
                                     std::move(prompts));
    return run_job(job);
  }

  // A job through the batcher, within the timeout; the hypotheses' text filled in.
  std::vector<TranslationResult> run_job(const std::shared_ptr<Job>& job) {
    if (!batcher_.submit(job))
      throw HttpError(503, "the queue is full (" + std::to_string(options_.batcher.max_queue) +
                               " requests, --max-queue): retry later");
    const auto deadline = t_start + std::chrono::milliseconds(options_.timeout_ms);
    if (!batcher_.wait_until(job, deadline))
      throw HttpError(504, "not translated within " + std::to_string(options_.timeout_ms) +
                               " ms (--timeout-ms)");
    if (!job->error().empty()) throw HttpError(500, job->error());
    std::vector<TranslationResult> results = std::move(job->results());
    for (auto& r : results)
      for (auto& h : r.hypotheses) h.text = vocabs_.trg->decode(Ids(h.ids.begin(), h.ids.end()));
    return results;
  }

  // A handler whose HttpError (or any other failure) becomes a JSON error answer.
  template <typename F>
  httplib::Server::Handler guarded(F f) {
    return [f](const httplib::Request& req, httplib::Response& res) {
      try {
        f(req, res);
      } catch (const HttpError& e) {
        res.status = e.status();
        if (e.status() == 503) res.set_header("Retry-After", "1");
        res.set_content(error_body(e.what()), "application/json");
      } catch (const Error& e) {
        res.status = 500;
        res.set_content(error_body(e.message()), "application/json");
      } catch (const std::exception& e) {
        res.status = 500;
        res.set_content(error_body(e.what()), "application/json");
      }
    };
  }

  void setup() {
    // One thread per admitted request, as each waits for its batch, and a few more so that a
    // full queue is still answered (503), as are /health and /metrics.
    const auto threads =
        static_cast<size_t>(std::min<int64_t>(options_.batcher.max_queue + 8, 1024));
    http_.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    http_.set_payload_max_length(static_cast<size_t>(options_.max_request_bytes));
    // httplib closes a kept-alive connection after 5 requests by default, so a busy client
    // reconnects (a TCP handshake, an accept and a hand-off to a pool thread) every fifth request.
    // A connection idle for 5 s is still closed, which is what frees its thread.
    http_.set_keep_alive_max_count(100);
    http_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      t_start = Clock::now();
      t_sentences = 0;
      // /health stays open for load balancers; /translate also takes LibreTranslate's api_key.
      if (req.path == "/health" || req.path == "/translate" || authorized(req))
        return httplib::Server::HandlerResponse::Unhandled;
      res.status = 401;
      res.set_header("WWW-Authenticate", "Bearer");
      res.set_content(error_body("missing or wrong API key (Authorization: Bearer KEY)"),
                      "application/json");
      return httplib::Server::HandlerResponse::Handled;
    });
    http_.set_error_handler([](const httplib::Request&, httplib::Response& res) {
      if (res.body.empty()) res.set_content(error_body(reason(res.status)), "application/json");
    });
    http_.set_logger(
        [this](const httplib::Request& req, const httplib::Response& res) { log(req, res); });

    http_.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(draining_ ? R"({"status":"draining"})" : R"({"status":"ok"})",
                      "application/json");
      if (draining_) res.status = 503;
    });
    http_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics_.render(batcher_.queued_sentences(), batcher_.admitted_requests()),
                      "text/plain; version=0.0.4");
    });
    http_.Get("/v1/model", guarded([this](const httplib::Request&, httplib::Response& res) {
                res.set_content(model_response(translator_.model_info(), translator_.options()),
                                "application/json");
              }));
    http_.Post(
        "/v1/translate", guarded([this](const httplib::Request& req, httplib::Response& res) {
          const TranslateRequest r = parse_translate_request(req.body, options_.max_sentences);
          const auto results = translate(r.texts, r.options, r.target_prefix);
          res.set_content(translate_response(r, results, translator_.model_info().max_length),
                          "application/json");
        }));
    http_.Post(
        "/v1/generate", guarded([this](const httplib::Request& req, httplib::Response& res) {
          const TranslateRequest r = parse_translate_request(req.body, options_.max_sentences);
          if (!r.target_prefix.empty())
            throw HttpError(400,
                            "target_prefix does not apply to /v1/generate: the texts are "
                            "the prompts");
          const auto results = generate(r.texts, r.options);
          res.set_content(
              translate_response(r, results, translator_.model_info().max_length, "generations"),
              "application/json");
        }));
    http_.Post("/translate", guarded([this](const httplib::Request& req, httplib::Response& res) {
                 const std::string type = req.get_header_value("Content-Type");
                 LibreRequest r;
                 if (type.rfind("application/x-www-form-urlencoded", 0) == 0) {
                   r = parse_libre_form(req.params, options_.max_sentences);
                 } else if (req.is_multipart_form_data()) {
                   std::multimap<std::string, std::string> fields;
                   for (const auto& [name, file] : req.files) fields.emplace(name, file.content);
                   r = parse_libre_form(fields, options_.max_sentences);
                 } else {
                   r = parse_libre_json(req.body, options_.max_sentences);
                 }
                 if (!authorized(req, r.api_key))
                   throw HttpError(
                       401, "missing or wrong API key (api_key, or Authorization: Bearer KEY)");
                 if (r.format != "text")
                   throw HttpError(400,
                                   "format '" + r.format + "' is not supported: only \"text\"");
                 const auto results = translate(r.q, TranslationOptions{});
                 res.set_content(libre_response(r, results), "application/json");
               }));
  }

  // One line a request: time, client, request line, status, bytes out, latency, sentences.
  void log(const httplib::Request& req, const httplib::Response& res) {
    const double seconds = std::chrono::duration<double>(Clock::now() - t_start).count();
    metrics_.record_request(res.status, seconds);
    // The time to the second, formatted once a second on each thread.
    thread_local std::time_t t_when = -1;
    thread_local char t_when_text[32];
    const std::time_t now = std::time(nullptr);
    if (now != t_when) {
      std::tm tm{};
      gmtime_r(&now, &tm);
      std::strftime(t_when_text, sizeof t_when_text, "%Y-%m-%dT%H:%M:%SZ", &tm);
      t_when = now;
    }
    // One write(2) a line, not fprintf: stdio holds its lock on stderr across the write, and
    // under load the request threads queued for it (a futex wake a line). One write() of a line
    // does not mix with another's: the kernel serialises writes to one open file, and a pipe
    // takes a write of up to PIPE_BUF bytes whole.
    char buf[512];
    auto format = [&](char* out, size_t size) {
      return std::snprintf(out, size, "%s %s \"%s %s\" %d %zuB %.1fms sentences=%zu\n", t_when_text,
                           req.remote_addr.c_str(), req.method.c_str(), req.path.c_str(),
                           res.status, res.body.size(), seconds * 1000.0, t_sentences);
    };
    const int n = format(buf, sizeof buf);
    if (n < 0) return;
    std::string long_line;
    const char* line = buf;
    if (static_cast<size_t>(n) >= sizeof buf) {  // a long path
      long_line.resize(static_cast<size_t>(n) + 1);
      format(long_line.data(), long_line.size());
      line = long_line.data();
    }
    for (size_t done = 0; done < static_cast<size_t>(n);) {
      const ssize_t w = ::write(STDERR_FILENO, line + done, static_cast<size_t>(n) - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return;  // a log that cannot be written does not fail the request
      done += static_cast<size_t>(w);
    }
  }

  ServeOptions options_;
  Translator translator_;
  ModelTokenizers vocabs_;
  Metrics metrics_;
  Batcher batcher_;
  httplib::Server http_;
  std::atomic<bool> draining_{false};
  int port_ = -1;
  int listen_fd_ = -1;
};

// SIGTERM and SIGINT blocked in this thread (and so in every thread it starts) and taken by
// sigtimedwait on a watcher thread instead: the drain then runs as ordinary code, not in a
// signal handler. The old mask comes back when the server is done.
class SignalScope {
 public:
  SignalScope() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGTERM);
    sigaddset(&set_, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
  }
  ~SignalScope() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  const sigset_t& set() const { return set_; }

 private:
  sigset_t set_, old_;
};

}  // namespace

void serve(const ServeOptions& options) {
  SignalScope signals;  // before any thread starts: the Translator's workers inherit the mask
  Server server(options);
  server.bind();
  std::atomic<bool> done{false};
  std::thread watcher([&] {
    const timespec tick{0, 100'000'000};
    while (!done) {
      const int sig = sigtimedwait(&signals.set(), nullptr, &tick);
      if (sig != SIGTERM && sig != SIGINT) continue;
      std::fprintf(stderr, "tfm serve: %s: finishing the requests in flight\n",
                   sig == SIGTERM ? "SIGTERM" : "SIGINT");
      // stop() before listen() has started would be lost: wait for it.
      while (!done && !server.running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      server.stop();
      return;
    }
  });
  server.listen();
  done = true;
  watcher.join();
  server.finish();
  std::fprintf(stderr, "tfm serve: stopped\n");
}

}  // namespace tfm::serve
