// Where a command's time goes, by phase: `tfm translate --profile` (bench/translate_real.sh).
//
// A Scope charges the time its thread spends inside it to its phase, exclusive of the scopes
// nested in it, so the phases of one thread add up to the time that thread spent inside any scope.
// Some phases are "sealed" (loading, the encoder, the vocabulary projection, the KV-cache
// reorder, SentencePiece): scopes nested in them are not split off, so an encoder's GEMMs count
// as the encoder, not as the decoder's GEMMs. Only the thread that opens a scope is timed; the
// threads of an op's own parallel region are not (with sharded search every op runs on its
// thread alone, so the decoding threads are all timed).
//
// Off by default: a Scope then costs one relaxed atomic load. Timing is per thread (no shared
// writes on the hot path); collect() sums the threads, live and finished.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace tfm::profile {

enum class Phase : int {
  load,       // reading and binding the model (sealed)
  io,         // reading input lines, writing output lines
  spm,        // SentencePiece encode and decode (sealed)
  encode,     // encoder and cross-attention K/V projection (sealed)
  decoder,    // a decoder step outside the parts below (embedding, norms, residuals, KV append)
  gemm,       // the decoder layers' linear layers
  attention,  // decoder self- and cross-attention
  vocab_projection,  // the output projection to the vocabulary (sealed)
  log_softmax,       // log-softmax over the vocabulary, written out (sampling, target prefixes)
  top_k,             // masks and top-k (beam, greedy: with the log-softmax fused in), to host
  kv_reorder,        // reordering the KV caches after a step (sealed)
  search,            // the search's host bookkeeping: candidates, hypotheses, batching
  wait,              // a decoding thread idle, its shards done, the other threads' not
  count
};

const char* phase_name(Phase p);

void enable(bool on);
bool enabled();

class Scope {
 public:
  explicit Scope(Phase p) {
    if (enabled()) enter(p);
  }
  ~Scope() { end(); }
  // Leaves the phase before the end of the C++ scope (once; the destructor then does nothing).
  void end() {
    if (active_) leave();
    active_ = false;
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  void enter(Phase p);
  void leave();
  bool active_ = false;
  int previous_ = -1;
};

// Counters a run adds to (thread-safe; only while enabled).
void add_generated_tokens(int64_t n);
void add_sentences(int64_t n);
// The floating-point operations of a linear layer's product (2 · rows · outputs · inputs),
// charged to the phase the calling thread is in, a sealed phase keeping those of the layers
// inside it (the encoder's, the vocabulary projection's): the profile's GFLOP/s column. Nothing
// outside a scope.
void add_gemm_flops(double flops);

struct Report {
  std::array<double, static_cast<int>(Phase::count)> seconds{};  // thread-seconds per phase
  std::array<double, static_cast<int>(Phase::count)> gemm_flops{};  // per phase
  int64_t generated_tokens = 0;
  int64_t sentences = 0;
  double total() const;
};

// Sums every thread's phases so far (threads that have exited included).
Report collect();
void reset();

// A table of the report for a command that ran wall_seconds on `threads` threads: each phase's
// seconds and share, for a phase with linear layers their GFLOP/s over the phase's
// thread-seconds (the phase's other work counted in its time), the search's and the whole
// command's tokens per second. The rate is per timed thread: with sharded search each thread
// runs its ops alone, so it is the rate of one core (an op split over the threads of a parallel
// region, which are not timed, would read higher).
std::string format(const Report& r, double wall_seconds, int threads);

}  // namespace tfm::profile
