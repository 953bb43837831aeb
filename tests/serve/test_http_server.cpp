// The server's transport (serve/http_server.h) with handlers of the test's own: a request that
// finds every worker busy is refused at once (503) instead of held; the drain answers a request
// already read (with Connection: close), closes idle and half-sent connections at once, and
// run() returns once the answer is out; a worker does not run a job whose client left while it
// waited. Plain sockets on loopback.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tfm/serve/http_server.h"
#include "tfm/serve/http_workers.h"

namespace tfm::serve {
namespace {

// Handlers whose POST /slow waits until released; anything else answers at once.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  int waiting = 0;

  void release() {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
    cv.notify_all();
  }
  bool wait_for_waiting(int n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return waiting >= n; });
  }
  HttpHandlers handlers() {
    HttpHandlers h;
    h.quick = [](HttpRequest& r) -> std::optional<HttpResponse> {
      if (r.path == "/slow") return std::nullopt;
      HttpResponse res;
      res.body = "fast";
      return res;
    };
    h.slow = [this](HttpRequest&) {
      std::unique_lock<std::mutex> lock(mu);
      ++waiting;
      cv.notify_all();
      cv.wait(lock, [&] { return open; });
      HttpResponse res;
      res.body = "slow";
      return res;
    };
    h.finish = [](const HttpRequest&, HttpResponse&) {};
    h.error = [](int status, const std::string& message) {
      HttpResponse res;
      res.status = status;
      res.body = message;
      return res;
    };
    return h;
  }
};

int connect_to(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

void send_all(int fd, const std::string& s) {
  ASSERT_EQ(::send(fd, s.data(), s.size(), MSG_NOSIGNAL), static_cast<ssize_t>(s.size()));
}

// Everything until the server closes (or 10 s pass).
std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
    out.append(buf, static_cast<size_t>(n));
  return out;
}

// The first answer's status line, read up to its blank line.
std::string status_line(int fd) {
  std::string out;
  char c;
  while (out.find("\r\n\r\n") == std::string::npos && ::recv(fd, &c, 1, 0) == 1) out += c;
  return out.substr(0, out.find("\r\n"));
}

const char kSlow[] = "POST /slow HTTP/1.1\r\nContent-Length: 0\r\n\r\n";

struct Running {
  explicit Running(Gate& gate, size_t workers) {
    HttpServerOptions o;
    o.port = 0;
    o.workers = workers;
    server = std::make_unique<HttpServer>(o, gate.handlers());
    port = server->bind();
    thread = std::thread([this] { server->run(); });
  }
  ~Running() {
    server->stop();
    if (thread.joinable()) thread.join();
  }
  std::unique_ptr<HttpServer> server;
  int port = 0;
  std::thread thread;
};

TEST(HttpServer, ARequestFindingEveryWorkerBusyIsRefusedAtOnce) {
  Gate gate;
  Running r(gate, 2);
  const int a = connect_to(r.port), b = connect_to(r.port), c = connect_to(r.port);
  send_all(a, kSlow);
  send_all(b, kSlow);
  ASSERT_TRUE(gate.wait_for_waiting(2));
  send_all(c, kSlow);
  EXPECT_EQ(status_line(c), "HTTP/1.1 503 Service Unavailable");
  gate.release();
  EXPECT_EQ(status_line(a), "HTTP/1.1 200 OK");
  EXPECT_EQ(status_line(b), "HTTP/1.1 200 OK");
  for (int fd : {a, b, c}) ::close(fd);
}

TEST(HttpServer, TheDrainAnswersWhatWasReadAndClosesTheRest) {
  Gate gate;
  Running r(gate, 4);
  const int busy = connect_to(r.port), idle = connect_to(r.port), partial = connect_to(r.port);
  send_all(busy, kSlow);
  send_all(partial, "POST /slow HTTP/1.1\r\nContent-Le");
  ASSERT_TRUE(gate.wait_for_waiting(1));
  const auto t0 = std::chrono::steady_clock::now();
  r.server->stop();
  EXPECT_EQ(read_all(idle), "");  // closed without an answer, at once
  EXPECT_EQ(read_all(partial), "");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  gate.release();
  const std::string answer = read_all(busy);
  EXPECT_EQ(answer.substr(0, answer.find("\r\n")), "HTTP/1.1 200 OK");
  EXPECT_NE(answer.find("Connection: close\r\n"), std::string::npos);
  EXPECT_EQ(answer.substr(answer.size() - 4), "slow");
  r.thread.join();  // run() returned: nothing left
  for (int fd : {busy, idle, partial}) ::close(fd);
}

// A job whose client leaves while it waits for a worker is not run, and its answer (logged, not
// sent) says the client left rather than 200.
TEST(HttpWorkers, AJobWhoseClientLeftBeforeItStartedIsNotRun) {
  const int wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ASSERT_GE(wake, 0);
  Gate gate;
  std::vector<std::string> ran;
  std::mutex ran_mu;
  {
    HttpWorkers workers(
        1,
        [&](HttpRequest& r) {
          {
            std::lock_guard<std::mutex> lock(ran_mu);
            ran.push_back(r.path);
          }
          return gate.handlers().slow(r);
        },
        wake);
    auto gone = std::make_shared<std::atomic<bool>>(false);
    HttpJob first, second;
    first.request.path = "/first";
    second.request.path = "/second";
    second.request.gone = gone;
    workers.post(std::move(first));
    ASSERT_TRUE(gate.wait_for_waiting(1));  // the one worker is busy: /second waits
    workers.post(std::move(second));
    gone->store(true);
    gate.release();
    std::vector<HttpJob> done;
    for (int i = 0; i < 1000 && done.size() < 2; ++i) {
      for (auto& j : workers.take_done()) done.push_back(std::move(j));
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_EQ(done.size(), 2u);
    EXPECT_EQ(done[0].response.status, 200);
    EXPECT_EQ(done[1].request.path, "/second");
    EXPECT_EQ(done[1].response.status, 499);
  }
  EXPECT_EQ(ran, std::vector<std::string>{"/first"});
  ::close(wake);
}

}  // namespace
}  // namespace tfm::serve
