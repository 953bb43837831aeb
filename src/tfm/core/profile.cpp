#include "tfm/core/profile.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <vector>

namespace tfm::profile {

namespace {

constexpr int kPhases = static_cast<int>(Phase::count);

std::atomic<bool> g_enabled{false};
std::atomic<int64_t> g_generated{0};
std::atomic<int64_t> g_sentences{0};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool sealed(int p) {
  switch (static_cast<Phase>(p)) {
    case Phase::load:
    case Phase::spm:
    case Phase::encode:
    case Phase::vocab_projection:
    case Phase::kv_reorder:
      return true;
    default:
      return false;
  }
}

struct ThreadState;

// Every thread's counters, and the sums of threads that have exited.
struct Registry {
  std::mutex mu;
  std::vector<ThreadState*> live;
  std::array<int64_t, kPhases> retired{};
  std::array<double, kPhases> retired_flops{};
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: threads may exit after main's statics
  return *r;
}

struct ThreadState {
  int current = -1;
  int sealed_depth = 0;
  int64_t last = 0;
  // Written by this thread only; read by collect() from another, hence atomics (relaxed).
  std::array<std::atomic<int64_t>, kPhases> ns{};
  std::array<std::atomic<double>, kPhases> flops{};

  ThreadState() {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    r.live.push_back(this);
  }
  ~ThreadState() {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    for (int p = 0; p < kPhases; ++p) {
      r.retired[p] += ns[p].load(std::memory_order_relaxed);
      r.retired_flops[p] += flops[p].load(std::memory_order_relaxed);
    }
    r.live.erase(std::find(r.live.begin(), r.live.end(), this));
  }
  void charge(int64_t t) {
    if (current >= 0)
      ns[current].store(ns[current].load(std::memory_order_relaxed) + (t - last),
                        std::memory_order_relaxed);
    last = t;
  }
};

ThreadState& state() {
  thread_local ThreadState s;
  return s;
}

}  // namespace

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::load:
      return "model load";
    case Phase::io:
      return "I/O (read, write)";
    case Phase::spm:
      return "SentencePiece";
    case Phase::encode:
      return "encoder";
    case Phase::decoder:
      return "decoder: other";
    case Phase::gemm:
      return "decoder: GEMMs";
    case Phase::attention:
      return "decoder: attention";
    case Phase::vocab_projection:
      return "vocabulary projection";
    case Phase::log_softmax:
      return "log-softmax (rows)";
    case Phase::top_k:
      return "log-softmax + top-k";
    case Phase::kv_reorder:
      return "KV-cache reorder";
    case Phase::search:
      return "search bookkeeping";
    case Phase::wait:
      return "idle (shards done)";
    case Phase::count:
      break;
  }
  return "?";
}

void enable(bool on) {
  g_enabled.store(on, std::memory_order_relaxed);
}

bool enabled() {
  return g_enabled.load(std::memory_order_relaxed);
}

void Scope::enter(Phase p) {
  ThreadState& t = state();
  if (t.sealed_depth > 0) return;  // inside a sealed phase: its time stays there
  t.charge(now_ns());
  previous_ = t.current;
  t.current = static_cast<int>(p);
  if (sealed(t.current)) ++t.sealed_depth;
  active_ = true;
}

void Scope::leave() {
  ThreadState& t = state();
  t.charge(now_ns());
  if (sealed(t.current)) --t.sealed_depth;
  t.current = previous_;
}

void add_generated_tokens(int64_t n) {
  if (enabled()) g_generated.fetch_add(n, std::memory_order_relaxed);
}

void add_sentences(int64_t n) {
  if (enabled()) g_sentences.fetch_add(n, std::memory_order_relaxed);
}

void add_gemm_flops(double n) {
  if (!enabled()) return;
  ThreadState& t = state();
  if (t.current < 0) return;
  auto& f = t.flops[t.current];
  f.store(f.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

double Report::total() const {
  double s = 0;
  for (double x : seconds) s += x;
  return s;
}

Report collect() {
  Report out;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::array<int64_t, kPhases> ns = r.retired;
  out.gemm_flops = r.retired_flops;
  for (const ThreadState* t : r.live)
    for (int p = 0; p < kPhases; ++p) {
      ns[p] += t->ns[p].load(std::memory_order_relaxed);
      out.gemm_flops[p] += t->flops[p].load(std::memory_order_relaxed);
    }
  for (int p = 0; p < kPhases; ++p) out.seconds[p] = static_cast<double>(ns[p]) * 1e-9;
  out.generated_tokens = g_generated.load(std::memory_order_relaxed);
  out.sentences = g_sentences.load(std::memory_order_relaxed);
  return out;
}

void reset() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.retired.fill(0);
  r.retired_flops.fill(0);
  for (ThreadState* t : r.live) {
    for (auto& x : t->ns) x.store(0, std::memory_order_relaxed);
    for (auto& x : t->flops) x.store(0, std::memory_order_relaxed);
  }
  g_generated.store(0);
  g_sentences.store(0);
}

std::string format(const Report& r, double wall, int threads) {
  std::string s;
  char line[512];
  const double capacity = wall * std::max(threads, 1);
  double flops = 0;
  for (double f : r.gemm_flops) flops += f;
  std::snprintf(line, sizeof line, "%-24s %10s %8s%s\n", "phase", "thread-s", "share",
                flops > 0 ? "   linear layers: GFLOP/s a thread" : "");
  s += line;
  for (int p = 0; p < kPhases; ++p) {
    if (r.seconds[p] <= 0) continue;
    std::snprintf(line, sizeof line, "%-24s %10.3f %7.1f%%", phase_name(static_cast<Phase>(p)),
                  r.seconds[p], capacity > 0 ? 100.0 * r.seconds[p] / capacity : 0.0);
    s += line;
    if (r.gemm_flops[p] > 0) {
      std::snprintf(line, sizeof line, "   %8.1f (%.3f TFLOP)",
                    r.gemm_flops[p] / r.seconds[p] * 1e-9, r.gemm_flops[p] * 1e-12);
      s += line;
    }
    s += "\n";
  }
  const double outside = std::max(0.0, capacity - r.total());
  std::snprintf(line, sizeof line, "%-24s %10.3f %7.1f%%\n", "not in any phase", outside,
                capacity > 0 ? 100.0 * outside / capacity : 0.0);
  s += line;
  // Load, reading and encoding a window run between searches; only the output lines of a
  // finished shard (decoded and written under a lock) overlap the other threads' shards, a few
  // hundredths of a second of a real run. So the search's wall time is, to that much, what is
  // left of the command's.
  const auto at = [&](Phase p) { return r.seconds[static_cast<int>(p)]; };
  const double search = std::max(1e-9, wall - at(Phase::load) - at(Phase::spm) - at(Phase::io));
  const double tokens = static_cast<double>(r.generated_tokens);
  std::snprintf(line, sizeof line,
                "%lld sentences, %lld tokens generated (without EOS) on %d threads\n"
                "search:  %8.3f s  %9.1f tok/s\n"
                "command: %8.3f s  %9.1f tok/s (model load, SentencePiece and I/O included)\n",
                static_cast<long long>(r.sentences), static_cast<long long>(r.generated_tokens),
                threads, search, tokens / search, wall, wall > 0 ? tokens / wall : 0.0);
  s += line;
  return s;
}

}  // namespace tfm::profile
