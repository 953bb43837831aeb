// serve_load: the load generator of bench/serve_load.py. It shares the machine with the server
// it measures, so it is written to take as little CPU as it can: one thread, one epoll loop,
// non-blocking keep-alive HTTP/1.1 connections with TCP_NODELAY, a request written with one
// send(), and the answers parsed (JSON) only after the clock stops. On the 2-core machine of
// docs/history/performance.md, 64 Python client threads took ~0.4 ms of CPU a request, a
// thread-a-client cpp-httplib client ~0.07 ms, this ~0.02 ms.
//
//   serve_load --port P --input FILE [--expect FILE] (--clients N | --rate R [--seed S])
//              [--host 127.0.0.1] [--connections C] [--raw] [--path /v1/translate]
//
// One sentence (one line of FILE) a POST request ({"text": line}; --raw: the line is the body).
// - Closed loop (--clients N): N connections, each sends the next unsent line as soon as its last
//   answer is in, until every line was sent once. Latency: from send to answer.
// - Open loop (--rate R): Poisson arrivals at R requests/s (exponential gaps, seeded); each goes
//   out on an idle connection, or a new one while fewer than C (default 256) are open, or waits
//   for one. Latency counts from the scheduled arrival, so a backlog shows in it. Keep C below
//   the server's threads (--max-queue + 8): a kept-alive connection holds one, and a connection
//   beyond them waits for one to close.
// With --expect, every answer's first translation is compared with that file's line (tfm
// translate's output); with --raw an answer with no translation counts as "". Prints one JSON
// object: requests, seconds, rate, p50/p95/p99 latency in ms, errors, mismatches, connections
// opened, and the generator's own CPU seconds (user + system).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

struct Args {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string input, expect;
  int clients = 0;
  double rate = 0.0;
  int connections = 256;
  uint64_t seed = 1;
  bool raw = false;
  std::string path = "/v1/translate";
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "serve_load: %s\nusage: serve_load --port P --input FILE [--expect FILE] "
               "(--clients N | --rate R [--seed S]) [--host H] [--connections C] [--raw] "
               "[--path P]\n",
               why);
  std::exit(2);
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "serve_load: %s\n", what.c_str());
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--raw") {
      a.raw = true;
      continue;
    }
    if (i + 1 >= argc) usage(("no value after " + k).c_str());
    const std::string v = argv[++i];
    if (k == "--host")
      a.host = v;
    else if (k == "--port")
      a.port = std::stoi(v);
    else if (k == "--input")
      a.input = v;
    else if (k == "--expect")
      a.expect = v;
    else if (k == "--clients")
      a.clients = std::stoi(v);
    else if (k == "--rate")
      a.rate = std::stod(v);
    else if (k == "--connections")
      a.connections = std::stoi(v);
    else if (k == "--seed")
      a.seed = std::stoull(v);
    else if (k == "--path")
      a.path = v;
    else
      usage(("unknown flag " + k).c_str());
  }
  if (a.port <= 0 || a.input.empty()) usage("--port and --input are required");
  if ((a.clients > 0) == (a.rate > 0)) usage("give one of --clients N or --rate R");
  if (a.connections < 1) usage("--connections must be at least 1");
  return a;
}

std::vector<std::string> read_lines(const std::string& path, bool skip_blank) {
  std::ifstream in(path, std::ios::binary);
  if (!in) die("cannot open " + path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) {
    if (skip_blank && l.find_first_not_of(" \t\r") == std::string::npos) continue;
    lines.push_back(std::move(l));
  }
  return lines;
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// bench/serve_load.py's percentile: the nearest rank, rounded.
double percentile(std::vector<double> xs, double q) {
  if (xs.empty()) return std::nan("");
  std::sort(xs.begin(), xs.end());
  const auto k = static_cast<size_t>(std::llround(q / 100.0 * static_cast<double>(xs.size() - 1)));
  return xs[std::min(k, xs.size() - 1)];
}

bool iequals_prefix(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

// One request's fate.
struct Outcome {
  Clock::time_point start;  // sent (closed loop) or scheduled (open loop)
  double latency = 0.0;     // seconds
  int status = 0;           // 0: no answer
  std::string body;         // the answer's body, parsed after the run
};

// One keep-alive connection with at most one request in flight.
struct Conn {
  int fd = -1;
  long request = -1;  // the index in flight, -1: idle
  std::string in;     // what has arrived of the answer
  size_t header_end = 0, content_length = 0;
  int status = 0;
  bool close_after = false;  // the server said Connection: close
  bool answered_any = false;
};

class Loop {
 public:
  Loop(const Args& args, const std::vector<std::string>& requests, std::vector<Outcome>& outcomes)
      : args_(args), requests_(requests), outcomes_(outcomes) {
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_ < 0) die(std::string("epoll_create1: ") + std::strerror(errno));
    addr_.sin_family = AF_INET;
    addr_.sin_port = htons(static_cast<uint16_t>(args.port));
    if (inet_pton(AF_INET, args.host.c_str(), &addr_.sin_addr) != 1)
      die("--host must be an IPv4 address: " + args.host);
  }
  ~Loop() {
    for (auto& c : conns_)
      if (c->fd >= 0) ::close(c->fd);
    ::close(epoll_);
  }

  // Closed loop: `clients` connections, each keeps one request in flight.
  void closed(int clients) {
    for (int i = 0; i < clients && next_ < requests_.size(); ++i) {
      Conn* c = open();
      send_next(c, Clock::now());
    }
    run([this](Conn* c) {
      if (next_ < requests_.size()) send_next(c, Clock::now());
    });
  }

  // Open loop: request i goes out at arrival[i] (or as soon after as a connection is free).
  void open_loop(const std::vector<Clock::time_point>& arrival) {
    arrival_ = &arrival;
    run([this](Conn* c) { idle_.push_back(c); });
  }

  size_t opened() const { return opened_; }

 private:
  Conn* open() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) die(std::string("socket: ") + std::strerror(errno));
    int yes = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    // A blocking connect (immediate on loopback), then non-blocking I/O.
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr_), sizeof addr_) != 0)
      die("connect to " + args_.host + ":" + std::to_string(args_.port) + ": " +
          std::strerror(errno));
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.ptr = c.get();
    if (epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev) != 0)
      die(std::string("epoll_ctl: ") + std::strerror(errno));
    conns_.push_back(std::move(c));
    ++opened_;
    ++open_;
    return conns_.back().get();
  }

  void close_conn(Conn* c) {
    epoll_ctl(epoll_, EPOLL_CTL_DEL, c->fd, nullptr);
    ::close(c->fd);
    c->fd = -1;
    --open_;
    std::erase(idle_, c);
  }

  void send_next(Conn* c, Clock::time_point start) {
    const size_t i = next_++;
    outcomes_[i].start = start;
    send(c, i);
  }

  void send(Conn* c, size_t i) {
    c->request = static_cast<long>(i);
    c->in.clear();
    c->header_end = c->content_length = 0;
    c->status = 0;
    const std::string& msg = requests_[i];
    size_t off = 0;
    while (off < msg.size()) {  // small messages: one send, almost always
      const ssize_t w = ::send(c->fd, msg.data() + off, msg.size() - off, MSG_NOSIGNAL);
      if (w > 0) {
        off += static_cast<size_t>(w);
      } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        pollfd p{c->fd, POLLOUT, 0};
        ::poll(&p, 1, 1000);
      } else {
        break;  // the read side sees the failure and retries
      }
    }
  }

  // Reads what arrived; true once the whole answer is in.
  bool receive(Conn* c, bool& eof) {
    char buf[16384];
    for (;;) {
      const ssize_t r = ::recv(c->fd, buf, sizeof buf, 0);
      if (r > 0) {
        c->in.append(buf, static_cast<size_t>(r));
        continue;
      }
      if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) eof = true;
      break;
    }
    if (c->header_end == 0) {
      const size_t e = c->in.find("\r\n\r\n");
      if (e == std::string::npos) return false;
      c->header_end = e + 4;
      const std::string_view head(c->in.data(), e);
      if (head.size() > 12) c->status = std::atoi(head.data() + 9);  // "HTTP/1.1 200 OK"
      size_t p = head.find("\r\n");
      while (p != std::string_view::npos) {
        const size_t q = head.find("\r\n", p + 2);
        const std::string_view line =
            head.substr(p + 2, q == std::string_view::npos ? q : q - p - 2);
        if (iequals_prefix(line, "content-length:"))
          c->content_length = std::strtoull(line.data() + 15, nullptr, 10);
        else if (iequals_prefix(line, "connection:") &&
                 line.find("close") != std::string_view::npos)
          c->close_after = true;
        p = q;
      }
    }
    return c->in.size() >= c->header_end + c->content_length;
  }

  template <typename OnFree>
  void run(OnFree on_free) {
    std::vector<epoll_event> events(256);
    while (done_ < requests_.size()) {
      timespec timeout{};
      bool wait_forever = true;
      if (arrival_) {
        // Send every request whose time has come and that has a connection.
        const auto now = Clock::now();
        while (next_ < requests_.size() && (*arrival_)[next_] <= now) {
          Conn* c = nullptr;
          if (!idle_.empty()) {
            c = idle_.back();
            idle_.pop_back();
          } else if (open_ < static_cast<size_t>(args_.connections)) {
            c = open();
          } else {
            break;  // every connection busy: the request waits (its latency grows)
          }
          send_next(c, (*arrival_)[next_]);
        }
        if (next_ < requests_.size() &&
            (!idle_.empty() || open_ < static_cast<size_t>(args_.connections))) {
          // Sleep until the next arrival, to the microsecond (epoll_wait's milliseconds would
          // send it late, or spin).
          const auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                (*arrival_)[next_] - Clock::now())
                                .count();
          timeout.tv_sec = std::max<int64_t>(0, wait) / 1'000'000'000;
          timeout.tv_nsec = std::max<int64_t>(0, wait) % 1'000'000'000;
          wait_forever = false;
        }
      }
      const int n = epoll_pwait2(epoll_, events.data(), static_cast<int>(events.size()),
                                 wait_forever ? nullptr : &timeout, nullptr);
      if (n < 0 && errno != EINTR) die(std::string("epoll_pwait2: ") + std::strerror(errno));
      const auto now = Clock::now();
      for (int k = 0; k < n; ++k) {
        Conn* c = static_cast<Conn*>(events[k].data.ptr);
        if (c->fd < 0) continue;
        bool eof = false;
        const bool complete = c->request >= 0 && receive(c, eof);
        if (c->request < 0) {  // idle: the server closed it (idle timeout)
          char b;
          if (::recv(c->fd, &b, 1, MSG_PEEK) <= 0) close_conn(c);
          continue;
        }
        if (!complete) {
          if (!eof) continue;
          // The server closed a kept-alive connection as this request went out: send it again
          // on a new one (once it has answered on this one, a close mid-answer is an error).
          const auto i = static_cast<size_t>(c->request);
          const bool retry = c->in.empty() && c->answered_any;
          close_conn(c);
          if (retry) {
            send(open(), i);
          } else {
            outcomes_[i].latency = std::chrono::duration<double>(now - outcomes_[i].start).count();
            outcomes_[i].body = "connection closed mid-answer";
            ++done_;
            if (arrival_ == nullptr && next_ < requests_.size()) send_next(open(), now);
          }
          continue;
        }
        Outcome& o = outcomes_[static_cast<size_t>(c->request)];
        o.latency = std::chrono::duration<double>(now - o.start).count();
        o.status = c->status;
        o.body = c->in.substr(c->header_end, c->content_length);
        ++done_;
        c->request = -1;
        c->answered_any = true;
        if (c->close_after || eof) {
          close_conn(c);
          if (arrival_ == nullptr && next_ < requests_.size()) send_next(open(), now);
        } else {
          on_free(c);
        }
      }
    }
  }

  const Args& args_;
  const std::vector<std::string>& requests_;
  std::vector<Outcome>& outcomes_;
  int epoll_ = -1;
  sockaddr_in addr_{};
  std::vector<std::unique_ptr<Conn>> conns_;
  std::vector<Conn*> idle_;
  const std::vector<Clock::time_point>* arrival_ = nullptr;
  size_t next_ = 0, done_ = 0, opened_ = 0, open_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  const std::vector<std::string> lines = read_lines(args.input, /*skip_blank=*/true);
  if (lines.empty()) usage("the input has no sentence");
  std::vector<std::string> expect;
  if (!args.expect.empty()) {
    expect = read_lines(args.expect, /*skip_blank=*/false);
    if (expect.size() < lines.size()) usage("--expect has fewer lines than --input");
  }
  // Whole requests, ready to send.
  std::vector<std::string> requests;
  requests.reserve(lines.size());
  for (const auto& l : lines) {
    const std::string body = args.raw ? l : json{{"text", l}}.dump();
    requests.push_back(
        "POST " + args.path + " HTTP/1.1\r\nHost: " + args.host + ":" + std::to_string(args.port) +
        "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
        "\r\n\r\n" + body);
  }

  const size_t n = lines.size();
  std::vector<Outcome> outcomes(n);
  Loop loop(args, requests, outcomes);
  const double cpu0 = cpu_seconds();
  const auto t0 = Clock::now();
  if (args.clients > 0) {
    loop.closed(args.clients);
  } else {
    std::mt19937_64 rng(args.seed);
    std::exponential_distribution<double> gap(args.rate);
    std::vector<Clock::time_point> arrival(n);
    double at = 0.0;
    for (size_t i = 0; i < n; ++i) {
      at += gap(rng);
      arrival[i] =
          t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(at));
    }
    loop.open_loop(arrival);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = cpu_seconds() - cpu0;

  std::vector<double> latencies;
  latencies.reserve(n);
  size_t errors = 0, mismatches = 0;
  for (size_t i = 0; i < n; ++i) {
    const Outcome& o = outcomes[i];
    std::string text, error;
    if (o.status != 200) {
      error = o.status ? "HTTP " + std::to_string(o.status) + ": " + o.body.substr(0, 200) : o.body;
    } else {
      try {
        const json answer = json::parse(o.body);
        const json& t = answer.at("translations");
        text = args.raw && t.empty() ? std::string() : t.at(0).get<std::string>();
      } catch (const std::exception& e) {
        error = std::string("bad answer: ") + e.what();
      }
    }
    if (!error.empty()) {
      if (errors++ < 3) std::fprintf(stderr, "serve_load: line %zu: %s\n", i + 1, error.c_str());
      continue;
    }
    latencies.push_back(o.latency);
    if (!expect.empty() && text != expect[i] && mismatches++ < 3)
      std::fprintf(stderr, "serve_load: line %zu: got \"%s\", tfm translate gave \"%s\"\n", i + 1,
                   text.c_str(), expect[i].c_str());
  }
  const json out = {{"requests", n},
                    {"seconds", seconds},
                    {"rate", static_cast<double>(n) / seconds},
                    {"p50_ms", 1e3 * percentile(latencies, 50)},
                    {"p95_ms", 1e3 * percentile(latencies, 95)},
                    {"p99_ms", 1e3 * percentile(latencies, 99)},
                    {"errors", errors},
                    {"mismatches", mismatches},
                    {"connections", loop.opened()},
                    {"client_cpu_s", cpu}};
  std::cout << out.dump() << std::endl;
  return errors == 0 && mismatches == 0 ? 0 : 1;
}
