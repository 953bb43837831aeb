// serve_load: the load generator of bench/serve_load.py, in C++ so that it takes little of the
// CPU the server under test needs (on a 2-core machine, 64 Python client threads took a large
// share of it: docs/performance.md, "tfm serve under load").
//
//   serve_load --port P --input FILE [--expect FILE] (--clients N | --rate R [--seed S])
//              [--host 127.0.0.1] [--connections C] [--raw] [--path /v1/translate]
//
// One sentence (one line of FILE) a POST /v1/translate request, on keep-alive connections with
// TCP_NODELAY, each thread its own connection.
// - Closed loop (--clients N): N threads, each sends the next unsent line as soon as its last
//   answer is in, until every line was sent once. Latency: from send to answer.
// - Open loop (--rate R): Poisson arrivals at R requests/s (exponential gaps, seeded), served by
//   C threads (default 256); latency counts from the scheduled arrival, so a backlog (every
//   thread busy, or the server behind) shows in it.
// With --expect, every answer is compared with that file's line (tfm translate's output).
// --raw sends each line as the request body as it is (a JSON object of the caller's), and then
// an answer with no translation counts as the empty one.
// Prints one JSON object: requests, seconds, rate, p50/p95/p99 latency in ms, errors,
// mismatches, and the generator's own CPU seconds (user + system).
#include <httplib.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
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
  std::fprintf(
      stderr,
      "serve_load: %s\nusage: serve_load --port P --input FILE [--expect FILE] "
      "(--clients N | --rate R [--seed S]) [--host H] [--connections C] [--raw] [--path P]\n",
      why);
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
  if (!in) {
    std::fprintf(stderr, "serve_load: cannot open %s\n", path.c_str());
    std::exit(2);
  }
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

struct Outcome {
  double latency = 0.0;  // seconds
  bool ok = false;
  std::string text;  // the translation
};

class Connection {
 public:
  Connection(const std::string& host, int port, std::string path, bool raw)
      : client_(host, port), path_(std::move(path)), raw_(raw) {
    client_.set_keep_alive(true);
    client_.set_tcp_nodelay(true);
    client_.set_connection_timeout(30);
    client_.set_read_timeout(600);
    client_.set_write_timeout(600);
  }
  // POSTs one body; the first translation of the answer, or ok = false.
  void post(const std::string& body, Outcome& out) {
    auto res = client_.Post(path_.c_str(), body, "application/json");
    if (!res || res->status != 200) {
      if (!res)
        out.text = "connection error " + httplib::to_string(res.error());
      else
        out.text = "HTTP " + std::to_string(res->status) + ": " + res->body.substr(0, 200);
      return;
    }
    try {
      const json answer = json::parse(res->body);
      const json& t = answer.at("translations");
      out.text = raw_ && t.empty() ? std::string() : t.at(0).get<std::string>();
      out.ok = true;
    } catch (const std::exception& e) {
      out.text = std::string("bad answer: ") + e.what();
    }
  }

 private:
  httplib::Client client_;
  std::string path_;
  bool raw_;
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
  std::vector<std::string> bodies;
  bodies.reserve(lines.size());
  for (const auto& l : lines) bodies.push_back(args.raw ? l : json{{"text", l}}.dump());

  const size_t n = lines.size();
  std::vector<Outcome> outcomes(n);
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  const double cpu0 = cpu_seconds();
  const auto t0 = Clock::now();

  if (args.clients > 0) {
    for (int c = 0; c < args.clients; ++c)
      threads.emplace_back([&] {
        Connection conn(args.host, args.port, args.path, args.raw);
        for (size_t i; (i = next.fetch_add(1)) < n;) {
          const auto t = Clock::now();
          conn.post(bodies[i], outcomes[i]);
          outcomes[i].latency = std::chrono::duration<double>(Clock::now() - t).count();
        }
      });
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
    const int workers = static_cast<int>(std::min<size_t>(args.connections, n));
    for (int c = 0; c < workers; ++c)
      threads.emplace_back([&] {
        Connection conn(args.host, args.port, args.path, args.raw);
        for (size_t i; (i = next.fetch_add(1)) < n;) {
          std::this_thread::sleep_until(arrival[i]);
          conn.post(bodies[i], outcomes[i]);
          outcomes[i].latency = std::chrono::duration<double>(Clock::now() - arrival[i]).count();
        }
      });
  }
  for (auto& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = cpu_seconds() - cpu0;

  std::vector<double> latencies;
  latencies.reserve(n);
  size_t errors = 0, mismatches = 0;
  for (size_t i = 0; i < n; ++i) {
    const Outcome& o = outcomes[i];
    if (!o.ok) {
      if (errors++ < 3) std::fprintf(stderr, "serve_load: line %zu: %s\n", i + 1, o.text.c_str());
      continue;
    }
    latencies.push_back(o.latency);
    if (!expect.empty() && o.text != expect[i] && mismatches++ < 3)
      std::fprintf(stderr, "serve_load: line %zu: got \"%s\", tfm translate gave \"%s\"\n", i + 1,
                   o.text.c_str(), expect[i].c_str());
  }
  const json out = {{"requests", n},
                    {"seconds", seconds},
                    {"rate", static_cast<double>(n) / seconds},
                    {"p50_ms", 1e3 * percentile(latencies, 50)},
                    {"p95_ms", 1e3 * percentile(latencies, 95)},
                    {"p99_ms", 1e3 * percentile(latencies, 99)},
                    {"errors", errors},
                    {"mismatches", mismatches},
                    {"client_cpu_s", cpu}};
  std::cout << out.dump() << std::endl;
  return errors == 0 && mismatches == 0 ? 0 : 1;
}
