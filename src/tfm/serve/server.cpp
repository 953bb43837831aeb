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
#include "tfm/core/validate.h"
#include "tfm/serve/api.h"
#include "tfm/serve/metrics.h"

namespace tfm::serve {

namespace {

using Clock = std::chrono::steady_clock;

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

// The translator's options with the server's metrics hook.
TranslatorOptions with_metrics(TranslatorOptions t, Metrics& metrics) {
  t.on_batch = [&metrics](const BatchStats& s) {
    metrics.record_batch(s.sentences, s.source_tokens, s.target_tokens);
  };
  return t;
}

class Server {
 public:
  explicit Server(const ServeOptions& o)
      : options_(o), translator_(o.model_dir, with_metrics(o.translator, metrics_)) {
    validate_serve_options(o);
    TFM_CHECK(translator_.has_vocabularies())
        << "serve: " << o.model_dir << " has no SentencePiece vocabulary (vocab.model, or "
        << "vocab.src.model + vocab.trg.model) and no tfm_tokenizer.json: the server translates "
        << "text";
    translator_.require_vocabularies();
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
    translator_.flush();
    http_.stop();
  }

 private:
  bool authorized(const httplib::Request& req, const std::string& body_key = "") const {
    if (options_.api_key.empty()) return true;
    const std::string header = req.get_header_value("Authorization");
    constexpr std::string_view kBearer = "Bearer ";
    if (header.size() > kBearer.size() && header.compare(0, kBearer.size(), kBearer) == 0 &&
        constant_time_equal(std::string_view(header).substr(kBearer.size()), options_.api_key))
      return true;
    return !body_key.empty() && constant_time_equal(body_key, options_.api_key);
  }

  // Source text to results, through the translator's queue (shared batches), within the timeout.
  std::vector<TranslationResult> translate(const std::vector<std::string>& texts,
                                           const TranslationOptions& o,
                                           const std::vector<std::string>& prefixes = {}) {
    t_sentences = texts.size();
    if (translator_.model_info().decoder_only)
      throw HttpError(400, options_.model_dir +
                               " is a decoder-only model: POST /v1/generate continues prompts "
                               "with it (translating needs an encoder-decoder model)");
    return finish(
        submit([&] { return translator_.translate_async(texts, prefixes, o, Batching::shared); }));
  }

  // Prompts to continuations (a decoder-only model), as translate() does for sources.
  std::vector<TranslationResult> generate(const std::vector<std::string>& texts,
                                          const TranslationOptions& o) {
    t_sentences = texts.size();
    if (!translator_.model_info().decoder_only)
      throw HttpError(400, options_.model_dir +
                               " is an encoder-decoder model: POST /v1/translate translates with "
                               "it (/v1/generate needs a decoder-only model)");
    return finish(submit([&] { return translator_.generate_async(texts, o, Batching::shared); }));
  }

  // The call's own checks (options, prefixes, prompts) fail before anything is queued: the
  // client's request, a 400. A full queue is a 503.
  template <typename F>
  AsyncResults submit(F call) {
    try {
      return call();
    } catch (const QueueFull&) {
      throw HttpError(503, "the queue is full (" +
                               std::to_string(options_.translator.max_queued_requests) +
                               " requests, --max-queue): retry later");
    } catch (const Error& e) {
      throw HttpError(400, e.message());
    }
  }

  // The results within the timeout: a late request is cancelled (its sentences not yet in a
  // batch leave the queue) and gets 504.
  std::vector<TranslationResult> finish(AsyncResults job) {
    const auto deadline = t_start + std::chrono::milliseconds(options_.timeout_ms);
    if (!job.wait_until(deadline)) {
      job.cancel();
      throw HttpError(504, "not translated within " + std::to_string(options_.timeout_ms) +
                               " ms (--timeout-ms)");
    }
    try {
      return job.get();
    } catch (const Error& e) {
      throw HttpError(500, e.message());
    }
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
    const int64_t admitted = options_.translator.max_queued_requests;
    const auto threads =
        static_cast<size_t>(std::min<int64_t>(admitted > 0 ? admitted + 8 : 1024, 1024));
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
    add_status_routes();
    add_translation_routes();
  }

  // GET /health, /metrics and /v1/model.
  void add_status_routes() {
    http_.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(draining_ ? R"({"status":"draining"})" : R"({"status":"ok"})",
                      "application/json");
      if (draining_) res.status = 503;
    });
    http_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      const QueueStats q = translator_.queue_stats();
      res.set_content(metrics_.render(q.queued_sentences, q.admitted_requests),
                      "text/plain; version=0.0.4");
    });
    http_.Get("/v1/model", guarded([this](const httplib::Request&, httplib::Response& res) {
                res.set_content(model_response(translator_.model_info(), translator_.options()),
                                "application/json");
              }));
  }

  // POST /v1/translate, /v1/generate and LibreTranslate's /translate.
  void add_translation_routes() {
    http_.Post(
        "/v1/translate", guarded([this](const httplib::Request& req, httplib::Response& res) {
          const TranslateRequest r = parse_translate_request(req.body, options_.max_sentences);
          validate_request(r, translator_.model_info());
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
          validate_request(r, translator_.model_info());
          const auto results = generate(r.texts, r.options);
          res.set_content(
              translate_response(r, results, translator_.model_info().max_length, "generations"),
              "application/json");
        }));
    http_.Post("/translate", guarded([this](const httplib::Request& req, httplib::Response& res) {
                 const LibreRequest r = libre_request(req);
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

  // LibreTranslate's request from JSON, a form or a multipart form.
  LibreRequest libre_request(const httplib::Request& req) const {
    const std::string type = req.get_header_value("Content-Type");
    if (type.rfind("application/x-www-form-urlencoded", 0) == 0)
      return parse_libre_form(req.params, options_.max_sentences);
    if (req.is_multipart_form_data()) {
      std::multimap<std::string, std::string> fields;
      for (const auto& [name, file] : req.files) fields.emplace(name, file.content);
      return parse_libre_form(fields, options_.max_sentences);
    }
    return parse_libre_json(req.body, options_.max_sentences);
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
  Metrics metrics_;  // before the translator, whose batches it records
  Translator translator_;
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

void validate_serve_options(const ServeOptions& o, const OptionSpeller& name) {
  require_in_range(name("port"), int64_t{o.port}, 0, 65535);
  require_in_range(name("max_request_bytes"), o.max_request_bytes, 1, int64_t{1} << 34);
  require_in_range(name("max_sentences"), o.max_sentences, 1, int64_t{1} << 20);
  require_in_range(name("timeout_ms"), o.timeout_ms, 1, int64_t{1} << 40);
}

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
  std::fprintf(stderr, "tfm serve: stopped\n");
}

}  // namespace tfm::serve
