#include "tfm/serve/http_server.h"

#include <arpa/inet.h>
#include <malloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tfm/core/check.h"
#include "tfm/serve/http_workers.h"

namespace tfm::serve {

namespace {

constexpr uint64_t kListenId = 0, kWakeId = 1;
constexpr size_t kReadPiece = 64 * 1024;
constexpr size_t kMaxReadPerEvent = 256 * 1024;  // then the other connections get a turn
constexpr auto kLinger = std::chrono::seconds(2);
constexpr auto kTick = std::chrono::milliseconds(100);
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
// What the server sends a client whose side ends (FIN) while its request waits or is
// translated, to tell a half-close from a close: see HttpServer::Impl::probe.
constexpr std::string_view kProbe = "HTTP/1.1 100 Continue\r\n\r\n";

// waiting: no byte of a request yet (new or kept alive); reading: a request arriving;
// handling: a complete request with a route; writing: its answer going out; lingering: our
// side shut down, the client's last bytes read and dropped so that closing does not reset
// the connection under the answer.
enum class Phase : uint8_t { waiting, reading, handling, writing, lingering };

struct Connection {
  Connection(uint64_t id_, int fd_, std::string remote_, const HttpLimits& limits)
      : id(id_), fd(fd_), remote(std::move(remote_)), parser(limits) {}

  bool pending() const { return phase == Phase::waiting || phase == Phase::reading; }

  uint64_t id;
  int fd;
  std::string remote;
  RequestParser parser;
  std::string in;   // read, not yet parsed
  std::string out;  // to send
  size_t out_pos = 0;
  Phase phase = Phase::waiting;
  Clock::time_point since;     // waiting for a request since (the pending cap closes the oldest)
  Clock::time_point deadline;  // of the phase (none while handling)
  Clock::time_point arrived;   // the request's first byte
  bool peer_eof = false;
  bool probed = false;  // this request's client sent kProbe (or cannot be sent one: HTTP/1.0)
  bool keep_alive = true;
  bool continue_sent = false;
  bool head_only = false;  // a HEAD request: the answer without its body
  int served = 0;
  uint32_t events = 0;  // the epoll interest now
  std::shared_ptr<std::atomic<bool>> gone = std::make_shared<std::atomic<bool>>(false);
};

std::string address_text(const sockaddr_storage& a) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (a.ss_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, buf, sizeof buf);
  else if (a.ss_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(a).sin6_addr, buf, sizeof buf);
  return buf;
}

// The Date header's value, formatted once a second.
const std::string& http_date() {
  static std::time_t when = -1;
  static std::string text;
  const std::time_t now = std::time(nullptr);
  if (now != when) {
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[64];
    std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    text = buf;
    when = now;
  }
  return text;
}

std::string serialize(const HttpResponse& r, bool keep_alive, bool head_only) {
  std::string out;
  out.reserve(256 + r.body.size());
  out.append("HTTP/1.1 ").append(std::to_string(r.status)).append(" ");
  out.append(reason_phrase(r.status)).append("\r\nDate: ").append(http_date()).append("\r\n");
  const bool body_allowed = r.status != 204 && r.status != 304;
  if (body_allowed) {
    out.append("Content-Type: ").append(r.content_type).append("\r\n");
    out.append("Content-Length: ").append(std::to_string(r.body.size())).append("\r\n");
  }
  out.append(keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n");
  for (const auto& [k, v] : r.headers) out.append(k).append(": ").append(v).append("\r\n");
  out.append("\r\n");
  if (body_allowed && !head_only) out.append(r.body);
  return out;
}

}  // namespace

class HttpServer::Impl {
 public:
  Impl(HttpServerOptions o, HttpHandlers h) : o_(std::move(o)), h_(std::move(h)) {
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    TFM_CHECK(epoll_fd_ >= 0 && wake_fd_ >= 0) << "serve: epoll: " << std::strerror(errno);
  }
  ~Impl() {
    workers_.reset();
    for (auto& [id, c] : conns_) ::close(c->fd);
    if (listen_fd_ >= 0) ::close(listen_fd_);
    ::close(wake_fd_);
    ::close(epoll_fd_);
  }

  int bind();
  void run();
  void stop() {
    stop_requested_ = true;
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
  }
  size_t requests_in_progress() const { return in_progress_; }

 private:
  void watch(int fd, uint64_t id, uint32_t events) {
    epoll_event e{};
    e.events = events;
    e.data.u64 = id;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &e);
  }
  void on_event(uint64_t id, uint32_t events);
  void accept_all();
  void evict_oldest_pending();
  void on_readable(Connection& c);
  void probe(Connection& c);
  void process(Connection& c);
  void dispatch(Connection& c);
  void refuse(Connection& c, const HttpError& e);
  void respond(Connection& c, const HttpRequest& req, HttpResponse resp);
  void flush(Connection& c);
  void after_write(Connection& c);
  void begin_close(Connection& c);
  void close(Connection& c);
  void set_phase(Connection& c, Phase p) {
    pending_ -= c.pending();
    c.phase = p;
    pending_ += c.pending();
  }
  void update_interest(Connection& c);
  void take_answers();
  // Connections back to waiting after an answer: the next request, if already read, parsed
  // here rather than down the call chain that sent the answer (no recursion per request).
  void resume_ready() {
    while (!ready_.empty()) {
      std::vector<uint64_t> ids;
      ids.swap(ready_);
      for (uint64_t id : ids) {
        auto it = conns_.find(id);
        if (it != conns_.end() && it->second->pending()) process(*it->second);
      }
    }
  }
  void tick();
  void begin_drain();
  HttpResponse run_slow(HttpRequest& req);

  HttpServerOptions o_;
  HttpHandlers h_;
  int listen_fd_ = -1, epoll_fd_ = -1, wake_fd_ = -1;
  std::unique_ptr<HttpWorkers> workers_;
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> conns_;
  uint64_t next_id_ = 2;
  size_t pending_ = 0;
  std::atomic<bool> stop_requested_{false};
  bool draining_ = false;
  bool accepting_ = true;
  Clock::time_point accept_paused_until_{}, next_tick_{}, last_trim_{};
  bool trim_due_ = false;
  std::vector<uint64_t> ready_;
  std::atomic<size_t> in_progress_{0};
};

int HttpServer::Impl::bind() {
  addrinfo hints{}, *found = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  const std::string port = std::to_string(o_.port);
  const int rc = getaddrinfo(o_.host.c_str(), port.c_str(), &hints, &found);
  int error = rc == 0 ? 0 : EADDRNOTAVAIL;
  for (addrinfo* a = rc == 0 ? found : nullptr; a && listen_fd_ < 0; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    const int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);  // accepted sockets inherit it
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0) {
      listen_fd_ = fd;
    } else {
      error = errno;
      ::close(fd);
    }
  }
  if (found) freeaddrinfo(found);
  TFM_CHECK(listen_fd_ >= 0) << "serve: cannot listen on " << o_.host << ":" << o_.port << " ("
                             << std::strerror(error)
                             << ": the port is taken, or the host is not an address of this "
                                "machine)";
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(addr).sin6_port
                                          : reinterpret_cast<sockaddr_in&>(addr).sin_port);
}

HttpResponse HttpServer::Impl::run_slow(HttpRequest& req) {
  try {
    return h_.slow(req);
  } catch (const HttpError& e) {
    return h_.error(e.status(), e.what());
  } catch (const std::exception& e) {
    return h_.error(500, e.what());
  }
}

void HttpServer::Impl::run() {
  workers_ = std::make_unique<HttpWorkers>(
      o_.workers, [this](HttpRequest& r) { return run_slow(r); }, wake_fd_);
  watch(listen_fd_, kListenId, EPOLLIN);
  watch(wake_fd_, kWakeId, EPOLLIN);
  std::vector<epoll_event> events(256);
  for (;;) {
    if (stop_requested_ && !draining_) begin_drain();
    resume_ready();
    if (draining_ && conns_.empty() && workers_->busy() == 0) break;
    const int n = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()),
                             static_cast<int>(kTick.count()));
    for (int i = 0; i < n; ++i) on_event(events[i].data.u64, events[i].events);
    if (Clock::now() >= next_tick_) tick();
  }
  workers_.reset();
}

void HttpServer::Impl::on_event(uint64_t id, uint32_t events) {
  if (id == kListenId) return accept_all();
  if (id == kWakeId) {
    uint64_t count = 0;
    (void)!::read(wake_fd_, &count, sizeof count);
    return take_answers();
  }
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  Connection& c = *it->second;
  if (events & EPOLLERR) return close(c);
  if ((events & EPOLLRDHUP) && c.phase == Phase::handling && !c.probed) {
    probe(c);
    if (!conns_.count(id)) return;
  }
  if (events & EPOLLIN) {
    on_readable(c);
    if (!conns_.count(id)) return;
  }
  if ((events & EPOLLOUT) && !c.out.empty()) {
    flush(c);
    if (!conns_.count(id)) return;
  }
  // Both directions closed (a reset): nothing more can be read or sent.
  if (events & EPOLLHUP) close(c);
}

void HttpServer::Impl::accept_all() {
  for (int i = 0; i < 256; ++i) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    const int fd =
        accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: a waiting connection makes room, or accepting pauses a little.
        if (pending_ > 0) {
          evict_oldest_pending();
          continue;
        }
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
        accepting_ = false;
        accept_paused_until_ = Clock::now() + kAcceptPause;
      }
      return;
    }
    if (pending_ >= o_.max_pending_connections) evict_oldest_pending();
    const uint64_t id = next_id_++;
    auto c = std::make_unique<Connection>(id, fd, address_text(addr), o_.limits);
    c->since = Clock::now();
    c->deadline = c->since + std::chrono::milliseconds(o_.idle_timeout_ms);
    c->events = EPOLLIN;
    watch(fd, id, EPOLLIN);
    ++pending_;  // a new connection waits for its request
    conns_.emplace(id, std::move(c));
  }
}

void HttpServer::Impl::evict_oldest_pending() {
  Connection* oldest = nullptr;
  for (auto& [id, c] : conns_)
    if (c->pending() && (!oldest || c->since < oldest->since)) oldest = c.get();
  if (oldest) close(*oldest);
}

void HttpServer::Impl::on_readable(Connection& c) {
  const uint64_t id = c.id;
  char buf[kReadPiece];
  for (size_t total = 0; total < kMaxReadPerEvent;) {
    // Only a connection waiting for (or reading) a request, or lingering, reads: a pipelined
    // next request stays in the kernel until this one is answered.
    if (!c.pending() && c.phase != Phase::lingering) break;
    const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    if (n > 0) {
      total += static_cast<size_t>(n);
      if (c.phase == Phase::lingering) continue;  // dropped
      c.in.append(buf, static_cast<size_t>(n));
      process(c);
      if (!conns_.count(id)) return;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n < 0 || c.phase == Phase::lingering) return close(c);  // a reset, or the last bytes
    c.peer_eof = true;  // the client shut down its side: what it sent still gets its answer
    if (c.pending()) return process(c);
    break;
  }
  update_interest(c);
}

// The client's side ended (FIN) while its request waits or is translated: a client that only
// half-closed still reads, one that closed does not, and the reading side cannot tell them apart.
// Sending shows it: an interim 100 (Continue), which every HTTP/1.1 client reads past (RFC 9110,
// 15.2: a client must parse 1xx answers it did not expect), reaches a half-closed client, and a
// closed one's system answers it with a reset: EPOLLERR closes the connection, `gone` is set,
// and the request leaves the queue (499) at once instead of after its batch. HTTP/1.0 clients
// may not be sent a 1xx: theirs is taken as a half-close and answered.
void HttpServer::Impl::probe(Connection& c) {
  c.probed = true;
  c.out.append(kProbe);
  flush(c);  // a failed send (the reset already in) closes the connection
}

void HttpServer::Impl::process(Connection& c) {
  while (c.pending() && !c.in.empty()) {
    if (c.phase == Phase::waiting) {
      set_phase(c, Phase::reading);
      c.arrived = Clock::now();
      c.deadline = c.arrived + std::chrono::milliseconds(o_.read_timeout_ms);
    }
    size_t used = 0;
    try {
      used = c.parser.feed(c.in);
    } catch (const HttpError& e) {
      return refuse(c, e);
    }
    c.in.erase(0, used);
    if (c.parser.head_done() && c.parser.expects_continue() && !c.continue_sent &&
        !c.parser.complete()) {
      c.continue_sent = true;
      c.out.append("HTTP/1.1 100 Continue\r\n\r\n");
      const uint64_t id = c.id;
      flush(c);
      if (!conns_.count(id)) return;
    }
    if (c.parser.complete()) return dispatch(c);
    if (used == 0) break;
  }
  // Nothing more will come: an idle connection closes, and so does a request cut short.
  if (c.peer_eof && c.pending()) return close(c);
  update_interest(c);
}

void HttpServer::Impl::dispatch(Connection& c) {
  HttpRequest req = c.parser.take();
  req.arrived = c.arrived;
  req.remote_addr = c.remote;
  req.gone = c.gone;
  c.keep_alive = req.keep_alive() && c.served + 1 < o_.max_requests_per_connection;
  c.head_only = req.method == "HEAD";
  c.continue_sent = false;
  c.probed = req.minor_version == 0;
  set_phase(c, Phase::handling);
  ++in_progress_;
  std::optional<HttpResponse> quick;
  try {
    quick = h_.quick(req);
  } catch (const HttpError& e) {
    quick = h_.error(e.status(), e.what());
  } catch (const std::exception& e) {
    quick = h_.error(500, e.what());
  }
  if (quick) return respond(c, req, *quick);
  // Every worker busy: refused now rather than held (with its body) until one is free.
  if (workers_->busy() >= o_.workers)
    return respond(
        c, req,
        h_.error(503, "all " + std::to_string(o_.workers) + " workers are busy: retry later"));
  workers_->post({c.id, std::move(req), {}});
  update_interest(c);
}

void HttpServer::Impl::refuse(Connection& c, const HttpError& e) {
  HttpRequest req = c.parser.request();  // what was parsed of it, for the log
  req.arrived = c.phase == Phase::reading ? c.arrived : Clock::now();
  req.remote_addr = c.remote;
  c.keep_alive = false;  // the framing is lost: the rest of the stream cannot be trusted
  c.head_only = false;
  set_phase(c, Phase::handling);
  ++in_progress_;
  respond(c, req, h_.error(e.status(), e.what()));
}

void HttpServer::Impl::respond(Connection& c, const HttpRequest& req, HttpResponse resp) {
  --in_progress_;
  trim_due_ = true;
  h_.finish(req, resp);
  c.out.append(serialize(resp, c.keep_alive && !draining_, c.head_only));
  set_phase(c, Phase::writing);
  c.deadline = Clock::now() + std::chrono::milliseconds(o_.write_timeout_ms);
  flush(c);
}

void HttpServer::Impl::flush(Connection& c) {
  while (c.out_pos < c.out.size()) {
    const ssize_t n =
        ::send(c.fd, c.out.data() + c.out_pos, c.out.size() - c.out_pos, MSG_NOSIGNAL);
    if (n > 0) {
      c.out_pos += static_cast<size_t>(n);
      if (c.phase == Phase::writing)
        c.deadline = Clock::now() + std::chrono::milliseconds(o_.write_timeout_ms);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    return close(c);  // the client is gone
  }
  if (c.out_pos == c.out.size()) {
    std::string().swap(c.out);
    c.out_pos = 0;
    if (c.phase == Phase::writing) return after_write(c);
  }
  update_interest(c);
}

void HttpServer::Impl::after_write(Connection& c) {
  if (!c.keep_alive || draining_) return begin_close(c);
  ++c.served;
  set_phase(c, Phase::waiting);
  c.since = Clock::now();
  c.deadline = c.since + std::chrono::milliseconds(o_.idle_timeout_ms);
  ready_.push_back(c.id);  // a pipelined request already read: parsed from run()'s loop
}

void HttpServer::Impl::begin_close(Connection& c) {
  if (c.peer_eof) return close(c);
  ::shutdown(c.fd, SHUT_WR);
  set_phase(c, Phase::lingering);
  c.deadline = Clock::now() + kLinger;
  update_interest(c);
}

void HttpServer::Impl::close(Connection& c) {
  c.gone->store(true);
  set_phase(c, Phase::lingering);  // out of the pending count
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
  ::close(c.fd);
  conns_.erase(c.id);  // c is destroyed here; a worker's answer for it is logged and dropped
}

void HttpServer::Impl::update_interest(Connection& c) {
  uint32_t want = 0;
  switch (c.phase) {
    case Phase::waiting:
    case Phase::reading:
      want = (c.peer_eof ? 0u : uint32_t{EPOLLIN}) | (c.out.empty() ? 0u : uint32_t{EPOLLOUT});
      break;
    case Phase::handling:  // a FIN from the client is probed (probe)
      want = (c.out.empty() ? 0u : uint32_t{EPOLLOUT}) | (c.probed ? 0u : uint32_t{EPOLLRDHUP});
      break;
    case Phase::writing:
      want = EPOLLOUT;
      break;
    case Phase::lingering:
      want = EPOLLIN;
      break;
  }
  if (want == c.events) return;
  epoll_event e{};
  e.events = want;
  e.data.u64 = c.id;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &e);
  c.events = want;
}

void HttpServer::Impl::take_answers() {
  for (HttpJob& job : workers_->take_done()) {
    auto it = conns_.find(job.connection);
    if (it != conns_.end() && it->second->phase == Phase::handling) {
      respond(*it->second, job.request, std::move(job.response));
    } else {  // the client left meanwhile: logged, not sent
      --in_progress_;
      h_.finish(job.request, job.response);
    }
  }
}

void HttpServer::Impl::tick() {
  const auto now = Clock::now();
  next_tick_ = now + kTick;
  std::vector<uint64_t> expired;
  for (auto& [id, c] : conns_)
    if (c->phase != Phase::handling && now >= c->deadline) expired.push_back(id);
  for (uint64_t id : expired) {
    auto it = conns_.find(id);
    if (it == conns_.end()) continue;
    Connection& c = *it->second;
    if (c.phase == Phase::reading)
      refuse(c, HttpError(408, "the request did not arrive within " +
                                   std::to_string(o_.read_timeout_ms) + " ms (" +
                                   o_.read_timeout_name + ")"));
    else
      close(c);
  }
  if (!accepting_ && !draining_ && now >= accept_paused_until_) {
    watch(listen_fd_, kListenId, EPOLLIN);
    accepting_ = true;
  }
  // Freed memory goes back to the system once nothing is in progress (at most once a second):
  // glibc keeps the arenas of the threads that translated otherwise.
  if (trim_due_ && in_progress_ == 0 && now - last_trim_ > std::chrono::seconds(1)) {
    malloc_trim(0);
    trim_due_ = false;
    last_trim_ = now;
  }
}

void HttpServer::Impl::begin_drain() {
  draining_ = true;
  if (accepting_) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
  accepting_ = false;
  ::close(listen_fd_);
  listen_fd_ = -1;
  std::vector<uint64_t> ids;
  for (auto& [id, c] : conns_) ids.push_back(id);
  for (uint64_t id : ids) {
    Connection& c = *conns_.at(id);
    // A request read is answered (then the connection closes); the rest go now.
    if (c.phase == Phase::handling || c.phase == Phase::writing)
      c.keep_alive = false;
    else
      close(c);
  }
}

HttpServer::HttpServer(HttpServerOptions options, HttpHandlers handlers)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handlers))) {}
HttpServer::~HttpServer() = default;
int HttpServer::bind() {
  return impl_->bind();
}
void HttpServer::run() {
  impl_->run();
}
void HttpServer::stop() {
  impl_->stop();
}
size_t HttpServer::requests_in_progress() const {
  return impl_->requests_in_progress();
}

}  // namespace tfm::serve
