#include "tfm/serve/server.h"

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <string_view>
#include <thread>

#include "tfm/core/check.h"
#include "tfm/core/validate.h"
#include "tfm/serve/api.h"
#include "tfm/serve/form.h"
#include "tfm/serve/http_server.h"
#include "tfm/serve/libretranslate.h"
#include "tfm/serve/metrics.h"
#include "tfm/serve/static_files.h"

namespace tfm::serve {

namespace {

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

// The translator's options with the server's metrics hook.
TranslatorOptions with_metrics(TranslatorOptions t, Metrics& metrics) {
  t.on_batch = [&metrics](const BatchStats& s) {
    metrics.record_batch(s.sentences, s.source_tokens, s.target_tokens);
  };
  return t;
}

HttpResponse json_response(std::string body, size_t sentences = 0) {
  HttpResponse r;
  r.body = std::move(body);
  r.sentences = sentences;
  return r;
}

// One write(2) a line: one write of a line does not mix with another's (the kernel serialises
// writes to one file, and a pipe takes up to PIPE_BUF bytes whole), and stdio's lock is not held
// across it.
void write_line(const std::string& line) {
  for (size_t done = 0; done < line.size();) {
    const ssize_t w = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;  // a log that cannot be written does not fail the request
    done += static_cast<size_t>(w);
  }
}

// The routes a method may take (for 405 and its Allow header), and which need no API key.
struct RouteInfo {
  std::string_view path, allow;
  bool open;
};
constexpr RouteInfo kRoutes[] = {
    {"/health", "GET, HEAD", true},   {"/languages", "GET, HEAD", true},
    {"/metrics", "GET, HEAD", false}, {"/v1/model", "GET, HEAD", false},
    {"/v1/translate", "POST", false}, {"/v1/generate", "POST", false},
    {"/translate", "POST", true},  // LibreTranslate's api_key is in the body: checked there
    {"/detect", "POST", true},        {"/frontend/settings", "GET, HEAD", true},
};

// How long the translate page waits after a key before it translates; it reads this from
// GET /frontend/settings (LibreTranslate's frontendTimeout), as LibreTranslate's page does.
constexpr int64_t kPageWaitMs = 300;

const RouteInfo* find_route(std::string_view path) {
  for (const auto& r : kRoutes)
    if (r.path == path) return &r;
  return nullptr;
}

class Service {
 public:
  explicit Service(const ServeOptions& o)
      : options_(o),
        translator_(o.model_dir, with_metrics(o.translator, metrics_)),
        http_(transport_options(o), handlers()) {
    validate_serve_options(o);
    TFM_CHECK(translator_.has_vocabularies())
        << "serve: " << o.model_dir << " has no SentencePiece vocabulary (vocab.model, or "
        << "vocab.src.model + vocab.trg.model) and no tfm_tokenizer.json: the server translates "
        << "text";
    translator_.require_vocabularies();
    if (!o.source_lang.empty()) languages_.push_back({o.source_lang, o.target_lang});
  }

  void bind() {
    port_ = http_.bind();
    std::fprintf(stderr, "tfm serve: listening on http://%s:%d (model %s, %s, %d x %d threads)\n",
                 options_.host.c_str(), port_, options_.model_dir.c_str(),
                 compute_type_name(translator_.options().compute_type),
                 translator_.options().inter_threads, translator_.options().intra_threads);
  }
  void run() { http_.run(); }
  // The drain: batches stop waiting for company, then the transport stops reading new
  // requests and answers those it has.
  void stop() {
    draining_ = true;
    translator_.flush();
    http_.stop();
  }
  size_t requests_in_progress() const { return http_.requests_in_progress(); }

 private:
  static HttpServerOptions transport_options(const ServeOptions& o) {
    HttpServerOptions h;
    h.host = o.host;
    h.port = o.port;
    h.limits.max_body_bytes = static_cast<size_t>(o.max_request_bytes);
    h.limits.body_limit_name = "--max-request-bytes";
    h.read_timeout_ms = o.read_timeout_ms;
    h.read_timeout_name = "--read-timeout-ms";
    h.max_pending_connections = static_cast<size_t>(o.max_pending_connections);
    // A worker per admitted request, as each waits for its batch, and a few more so that a
    // full queue is still answered (503) at once.
    const int64_t admitted = o.translator.max_queued_requests;
    h.workers = static_cast<size_t>(std::min<int64_t>(admitted > 0 ? admitted + 8 : 1024, 1024));
    return h;
  }

  HttpHandlers handlers() {
    HttpHandlers h;
    h.quick = [this](HttpRequest& r) { return quick(r); };
    h.slow = [this](HttpRequest& r) { return slow(r); };
    h.finish = [this](const HttpRequest& r, HttpResponse& res) { finish(r, res); };
    h.error = [this](int status, const std::string& message) { return error(status, message); };
    return h;
  }

  HttpResponse error(int status, const std::string& message) const {
    HttpResponse r = json_response(error_body(message));
    r.status = status;
    if (status == 503) r.headers.emplace_back("Retry-After", "1");
    if (status == 401) r.headers.emplace_back("WWW-Authenticate", "Bearer");
    return r;
  }

  bool authorized(const HttpRequest& req, const std::string& body_key = "") const {
    if (options_.api_key.empty()) return true;
    const std::string_view header = req.header("Authorization").value_or("");
    constexpr std::string_view kBearer = "Bearer ";
    if (header.size() > kBearer.size() && header.substr(0, kBearer.size()) == kBearer &&
        constant_time_equal(header.substr(kBearer.size()), options_.api_key))
      return true;
    return !body_key.empty() && constant_time_equal(body_key, options_.api_key);
  }

  std::optional<HttpResponse> quick(HttpRequest& req);
  HttpResponse slow(HttpRequest& req);
  HttpResponse preflight(const HttpRequest& req) const;
  void finish(const HttpRequest& req, HttpResponse& res);
  void log(const HttpRequest& req, const HttpResponse& res, double seconds) const;
  std::vector<TranslationResult> translate(const HttpRequest& req,
                                           const std::vector<std::string>& texts,
                                           const TranslationOptions& o,
                                           const std::vector<std::string>& prefixes = {});
  std::vector<TranslationResult> generate(const HttpRequest& req,
                                          const std::vector<std::string>& texts,
                                          const TranslationOptions& o);
  template <typename F>
  AsyncResults submit(F call);
  std::vector<TranslationResult> finish_job(const HttpRequest& req, AsyncResults job);
  HttpResponse translate_route(const HttpRequest& req, bool generating);
  TranslationOptions libre_options(const LibreRequest& r, TranslationOptions o) const;
  std::vector<AttentionLabels> attention_labels(
      const TranslateRequest& r, const std::vector<TranslationResult>& results) const;

  ServeOptions options_;
  Metrics metrics_;  // before the translator, whose batches it records
  Translator translator_;
  std::vector<LanguagePair> languages_;
  std::atomic<bool> draining_{false};
  HttpServer http_;  // last: its threads call the members above
  int port_ = -1;
};

std::optional<HttpResponse> Service::quick(HttpRequest& req) {
  if (req.method == "OPTIONS") return preflight(req);
  if (const StaticFile* f = find_static_file(req.path);
      f && (req.method == "GET" || req.method == "HEAD")) {
    HttpResponse r;
    r.content_type = std::string(f->content_type);
    r.body = std::string(f->body);
    r.headers.emplace_back("Cache-Control", "no-cache");
    return r;
  }
  const RouteInfo* route = find_route(req.path);
  if (!route) return error(404, "no such route: " + req.path);
  const bool get = req.method == "GET" || req.method == "HEAD";
  if (route->allow.find(get ? "GET" : req.method) == std::string_view::npos) {
    HttpResponse r = error(405, req.method + " is not allowed on " + req.path + " (" +
                                    std::string(route->allow) + ")");
    r.headers.emplace_back("Allow", std::string(route->allow) + ", OPTIONS");
    return r;
  }
  if (!route->open && !authorized(req))
    return error(401, "missing or wrong API key (Authorization: Bearer KEY)");
  if (req.path == "/health") {
    HttpResponse r = json_response(draining_ ? R"({"status":"draining"})" : R"({"status":"ok"})");
    if (draining_) r.status = 503;
    return r;
  }
  if (req.path == "/languages") return json_response(languages_response(languages_));
  if (req.path == "/frontend/settings")
    return json_response(
        frontend_settings_response(languages_, !options_.api_key.empty(), kPageWaitMs));
  if (req.path == "/metrics") {
    const QueueStats q = translator_.queue_stats();
    HttpResponse r;
    r.content_type = "text/plain; version=0.0.4";
    r.body = metrics_.render(q.queued_sentences, q.admitted_requests);
    return r;
  }
  if (req.path == "/v1/model")
    return json_response(model_response(translator_.model_info(), translator_.options()));
  if (req.path == "/detect")
    return error(501,
                 "language detection is not supported: a tfm model translates the "
                 "languages GET /languages lists");
  return std::nullopt;  // a translation: on a worker
}

HttpResponse Service::slow(HttpRequest& req) {
  if (req.path == "/v1/translate") return translate_route(req, false);
  if (req.path == "/v1/generate") return translate_route(req, true);
  // LibreTranslate's /translate: the key may be in the body.
  const LibreRequest r = parse_libre_request(req, options_.max_sentences);
  if (!authorized(req, r.api_key))
    throw HttpError(401, "missing or wrong API key (api_key, or Authorization: Bearer KEY)");
  const TranslateTexts run = [&](const std::vector<std::string>& texts,
                                 const TranslationOptions& o) {
    return translate(req, texts, libre_options(r, o));
  };
  return json_response(
      run_libre_request(r, languages_, translator_.model_info(), options_.max_sentences, run),
      r.q.size());
}

// LibreTranslate's options (o: its alternatives') for this model: a converted model's own search
// (its generation config) when no alternatives are asked, and a multilingual converted model's
// language pair from source/target, its tokenizer's codes ("auto": its default source language).
TranslationOptions Service::libre_options(const LibreRequest& r, TranslationOptions o) const {
  const ModelInfo& m = translator_.model_info();
  if (m.search_rule == "transformers" && r.alternatives == 0) o = translator_.default_options();
  if (m.family == "nllb" || m.family == "m2m_100" || m.family == "mbart") {
    if (r.source != "auto") o.source_lang = r.source;
    o.target_lang = r.target;
  }
  o.return_scores = false;  // LibreTranslate's answers carry none
  return o;
}

HttpResponse Service::translate_route(const HttpRequest& req, bool generating) {
  // A form (curl -d's default Content-Type) is read as JSON when it holds JSON; one that does
  // not is most likely meant for LibreTranslate's route.
  const std::string_view type = req.header("Content-Type").value_or("");
  const size_t first = req.body.find_first_not_of(" \t\r\n");
  if (form_kind(type) != FormKind::none && (first == std::string::npos || req.body[first] != '{'))
    throw HttpError(415, "POST " + req.path + " takes a JSON body ({\"text\": ...}), not a form (" +
                             std::string(type.substr(0, type.find(';'))) +
                             "); LibreTranslate's form requests go to POST /translate");
  // A field left out is the model's own setting (a converted model's generation config).
  const TranslateRequest r =
      parse_translate_request(req.body, options_.max_sentences, translator_.default_options());
  if (generating && !r.target_prefix.empty())
    throw HttpError(400, "target_prefix does not apply to /v1/generate: the texts are the prompts");
  validate_request(r, translator_.model_info());
  const auto results = generating ? generate(req, r.texts, r.options)
                                  : translate(req, r.texts, r.options, r.target_prefix);
  const int64_t positions = translator_.model_info().max_length;
  return json_response(
      translate_response(r, results, positions, generating ? "generations" : "translations",
                         r.options.return_attention ? attention_labels(r, results)
                                                    : std::vector<AttentionLabels>{}),
      r.texts.size());
}

// The heat map's labels: the source's pieces as the model reads them (cut to its positions,
// framed by BOS/EOS as the model frames sources) and each hypothesis's target pieces. A source
// whose pieces do not match the attention's width is labelled by position.
std::vector<AttentionLabels> Service::attention_labels(
    const TranslateRequest& r, const std::vector<TranslationResult>& results) const {
  const ModelInfo& m = translator_.model_info();
  std::vector<AttentionLabels> out(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& hyps = results[i].hypotheses;
    if (hyps.empty() || hyps[0].attention.empty()) continue;
    const size_t width = hyps[0].attention[0].size();
    // A long text is not tokenised again whole for its labels (the model read its beginning).
    std::vector<std::string> src = translator_.source_tokens(
        r.texts[i].substr(0, std::min<size_t>(r.texts[i].size(), 64 * 1024)));
    const size_t framing = (m.source_bos ? 1 : 0) + (m.source_eos ? 1 : 0);
    if (src.size() + framing > width) src.resize(width >= framing ? width - framing : 0);
    if (m.source_bos) src.insert(src.begin(), "<s>");
    if (m.source_eos) src.push_back("</s>");
    if (src.size() != width) {
      src.clear();
      for (size_t k = 0; k < width; ++k) src.push_back(std::to_string(k + 1));
    }
    out[i].source = std::move(src);
    for (const auto& h : hyps) out[i].target.push_back(translator_.target_ids_to_tokens(h.ids));
  }
  return out;
}

// Source text to results, through the translator's queue (shared batches), within the timeout.
std::vector<TranslationResult> Service::translate(const HttpRequest& req,
                                                  const std::vector<std::string>& texts,
                                                  const TranslationOptions& o,
                                                  const std::vector<std::string>& prefixes) {
  if (translator_.model_info().decoder_only)
    throw HttpError(400, options_.model_dir +
                             " is a decoder-only model: POST /v1/generate continues prompts "
                             "with it (translating needs an encoder-decoder model)");
  return finish_job(req, submit([&] {
                      return translator_.translate_async(texts, prefixes, o, Batching::shared);
                    }));
}

// Prompts to continuations (a decoder-only model), as translate() does for sources.
std::vector<TranslationResult> Service::generate(const HttpRequest& req,
                                                 const std::vector<std::string>& texts,
                                                 const TranslationOptions& o) {
  if (!translator_.model_info().decoder_only)
    throw HttpError(400, options_.model_dir +
                             " is an encoder-decoder model: POST /v1/translate translates with "
                             "it (/v1/generate needs a decoder-only model)");
  return finish_job(req,
                    submit([&] { return translator_.generate_async(texts, o, Batching::shared); }));
}

// The call's own checks (options, prefixes, prompts) fail before anything is queued: the
// client's request, a 400. A full queue is a 503.
template <typename F>
AsyncResults Service::submit(F call) {
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

// The results within the timeout from the request's arrival: a late request is cancelled (its
// sentences not yet in a batch leave the queue) and gets 504; so is one whose client has gone.
std::vector<TranslationResult> Service::finish_job(const HttpRequest& req, AsyncResults job) {
  const auto deadline = req.arrived + std::chrono::milliseconds(options_.timeout_ms);
  for (;;) {
    const auto now = Clock::now();
    if (job.wait_until(std::min(deadline, now + std::chrono::milliseconds(100)))) break;
    if (req.gone && req.gone->load()) {
      job.cancel();
      throw HttpError(499, "the client closed the connection before the answer");
    }
    if (Clock::now() >= deadline) {
      job.cancel();
      throw HttpError(504, "not translated within " + std::to_string(options_.timeout_ms) +
                               " ms (--timeout-ms)");
    }
  }
  try {
    return job.get();
  } catch (const Error& e) {
    throw HttpError(500, e.message());
  }
}

// OPTIONS: a CORS preflight from an allowed origin gets what it asks for; anything else the
// methods of the server.
HttpResponse Service::preflight(const HttpRequest& req) const {
  HttpResponse r;
  r.status = 204;
  r.headers.emplace_back("Allow", "GET, HEAD, POST, OPTIONS");
  const auto origin = req.header("Origin");
  const bool allowed =
      origin && std::any_of(options_.cors_origins.begin(), options_.cors_origins.end(),
                            [&](const auto& o) { return o == "*" || o == *origin; });
  if (allowed && req.header("Access-Control-Request-Method")) {
    r.headers.emplace_back("Access-Control-Allow-Methods", "GET, HEAD, POST, OPTIONS");
    r.headers.emplace_back("Access-Control-Allow-Headers", "Authorization, Content-Type");
    r.headers.emplace_back("Access-Control-Max-Age", "600");
  }
  return r;
}

// Every answer: CORS headers for an allowed origin, the metrics, the access log.
void Service::finish(const HttpRequest& req, HttpResponse& res) {
  if (const auto origin = req.header("Origin"); origin && !options_.cors_origins.empty()) {
    for (const auto& o : options_.cors_origins) {
      if (o != "*" && o != *origin) continue;
      res.headers.emplace_back("Access-Control-Allow-Origin",
                               o == "*" ? "*" : std::string(*origin));
      if (o != "*") res.headers.emplace_back("Vary", "Origin");
      break;
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - req.arrived).count();
  metrics_.record_request(res.status, seconds);
  log(req, res, seconds);
}

// One line a request: time, client, request line, status, bytes out, latency, sentences.
void Service::log(const HttpRequest& req, const HttpResponse& res, double seconds) const {
  char when[32];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  const std::string method = req.method.empty() ? "-" : req.method;
  std::string path = req.path.empty() ? "-" : req.path.substr(0, 256);
  for (char& ch : path)  // one line a request, whatever the path holds
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7F || ch == '"') ch = '?';
  char tail[128];
  std::snprintf(tail, sizeof tail, "\" %d %zuB %.1fms sentences=%zu\n", res.status, res.body.size(),
                seconds * 1000.0, res.sentences);
  write_line(std::string(when) + " " + req.remote_addr + " \"" + method + " " + path + tail);
}

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

// The first signal drains; a second one takes the signal's default action (the process ends
// with it), for an operator who will not wait for the requests in flight.
void watch_signals(const SignalScope& signals, Service& service, const std::atomic<bool>& done) {
  const timespec tick{0, 100'000'000};
  bool draining = false;
  while (!done) {
    const int sig = sigtimedwait(&signals.set(), nullptr, &tick);
    if (sig != SIGTERM && sig != SIGINT) continue;
    const char* name = sig == SIGTERM ? "SIGTERM" : "SIGINT";
    if (draining) {
      std::fprintf(stderr, "tfm serve: second %s: stopping now, %zu requests unanswered\n", name,
                   service.requests_in_progress());
      signal(sig, SIG_DFL);
      sigset_t one;
      sigemptyset(&one);
      sigaddset(&one, sig);
      pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
      raise(sig);
      return;
    }
    std::fprintf(stderr, "tfm serve: %s: finishing %zu requests in flight (again to stop now)\n",
                 name, service.requests_in_progress());
    draining = true;
    service.stop();
  }
}

// As many descriptors as the hard limit allows: each connection holds one.
void raise_file_limit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

}  // namespace

void validate_serve_options(const ServeOptions& o, const OptionSpeller& name) {
  require_in_range(name("port"), int64_t{o.port}, 0, 65535);
  require_in_range(name("max_request_bytes"), o.max_request_bytes, 1, int64_t{1} << 34);
  require_in_range(name("max_sentences"), o.max_sentences, 1, int64_t{1} << 20);
  require_in_range(name("timeout_ms"), o.timeout_ms, 1, int64_t{1} << 40);
  require_in_range(name("read_timeout_ms"), o.read_timeout_ms, 1, int64_t{1} << 40);
  require_in_range(name("max_pending_connections"), o.max_pending_connections, 1, 1 << 20);
  TFM_CHECK_ARG(o.source_lang.empty() == o.target_lang.empty())
      << name("source_lang") << " and " << name("target_lang") << " go together (got "
      << (o.source_lang.empty() ? name("target_lang") : name("source_lang")) << " alone)";
  for (const auto& origin : o.cors_origins)
    TFM_CHECK_ARG(origin == "*" || origin.rfind("http://", 0) == 0 ||
                  origin.rfind("https://", 0) == 0)
        << name("cors_origins") << " '" << origin
        << "' is not an origin (http://host[:port], https://..., or *)";
}

void serve(const ServeOptions& options) {
  SignalScope signals;  // before any thread starts: the Translator's workers inherit the mask
  raise_file_limit();
  Service service(options);
  service.bind();
  std::atomic<bool> done{false};
  std::thread watcher([&] { watch_signals(signals, service, done); });
  service.run();
  done = true;
  watcher.join();
  std::fprintf(stderr, "tfm serve: stopped\n");
}

}  // namespace tfm::serve
