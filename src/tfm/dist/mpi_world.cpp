// World over Open MPI: the plugin libtfm_mpi.so (dist/mpi_plugin.h), built where CMake finds MPI
// and opened by dist::world() when several processes were launched. Collectives are nonblocking
// calls waited on with a deadline, so a rank that died or hung ends the job (MPI_Abort) instead of
// leaving the others in a collective forever, naming the ranks that did not answer.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tfm/core/check.h"
#include "tfm/dist/mpi_plugin.h"
#include "tfm/dist/world.h"

namespace tfm::dist {

namespace {

double now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// Floats a bucket: large enough that latency is amortised, small enough that the receive
// buffer (size × slice) stays modest. TFM_BUCKET_MB overrides it (for tests and tuning).
int64_t bucket_floats_from_env() {
  const char* v = std::getenv("TFM_BUCKET_MB");
  double mb = v != nullptr && *v != '\0' ? std::strtod(v, nullptr) : 16.0;
  if (!(mb > 0)) mb = 16.0;
  return std::max<int64_t>(1, static_cast<int64_t>(mb * (1 << 20) / sizeof(float)));
}

class MpiWorld final : public World {
 public:
  explicit MpiWorld(double timeout) : timeout_(timeout) {
    int provided = 0;
    // Only the thread that trains calls MPI; OpenMP's threads never do.
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    // MPI_Finalize on a normal exit: mpirun counts a process that exits without it as failed.
    std::atexit([] {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Finalize();
    });
    // One communicator per phase of the bucketed sum: each phase's collectives are then posted
    // in bucket order on every rank, however the two phases interleave (MPI requires one order
    // of collectives per communicator on all ranks).
    MPI_Comm_dup(MPI_COMM_WORLD, &scatter_comm_);
    MPI_Comm_dup(MPI_COMM_WORLD, &gather_comm_);
    MPI_Comm_dup(MPI_COMM_WORLD, &probe_comm_);
    bucket_ = bucket_floats_from_env();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void sum_in_rank_order(std::span<float> data) override {
    const int64_t n = static_cast<int64_t>(data.size());
    for (int64_t b = 0; b < n; b += bucket_) start_sum(data.subspan(b, std::min(bucket_, n - b)));
    finish_sums();
  }

  // One bucket: rank r receives every rank's slice r (alltoallv), adds them in rank order, and
  // the summed slices are gathered back (allgatherv): the cost of a ring all-reduce,
  // 2 (N - 1) / N of the bucket sent and received, in an order MPI cannot change.
  void start_sum(std::span<float> x) override {
    auto b = std::make_unique<Bucket>();
    b->x = x;
    const int64_t n = static_cast<int64_t>(x.size());
    const int64_t per = (n + size_ - 1) / size_;
    b->counts.resize(size_);
    b->displs.resize(size_);
    for (int r = 0; r < size_; ++r) {
      const int64_t lo = std::min(n, r * per), hi = std::min(n, (r + 1) * per);
      b->counts[r] = static_cast<int>(hi - lo);
      b->displs[r] = static_cast<int>(lo);
    }
    const int mine = b->counts[rank_];
    b->recv.resize(static_cast<size_t>(mine) * size_);
    b->rcounts.assign(size_, mine);
    b->rdispls.resize(size_);
    for (int r = 0; r < size_; ++r) b->rdispls[r] = r * mine;
    MPI_Ialltoallv(x.data(), b->counts.data(), b->displs.data(), MPI_FLOAT, b->recv.data(),
                   b->rcounts.data(), b->rdispls.data(), MPI_FLOAT, scatter_comm_, &b->req);
    pending_.push_back(std::move(b));
  }

  void progress() override {
    // In posting order: a bucket's all-gather is posted only after every earlier bucket's, so
    // the ranks post their collectives in one order whatever completes first where.
    for (auto& b : pending_) {
      if (b->phase == 2) continue;
      int done = 0;
      MPI_Test(&b->req, &done, MPI_STATUS_IGNORE);
      if (!done) return;
      if (b->phase == 0) {
        reduce_slices(*b);
        MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_FLOAT, b->x.data(), b->counts.data(), b->displs.data(),
                        MPI_FLOAT, gather_comm_, &b->req);
        b->phase = 1;
        return;  // just posted: test it next time
      }
      b->phase = 2;
    }
  }

  void finish_sums() override {
    const double deadline = now() + timeout_;
    for (int spins = 0;; ++spins) {
      progress();
      if (std::all_of(pending_.begin(), pending_.end(),
                      [](const auto& b) { return b->phase == 2; }))
        break;
      if (now() > deadline) timed_out("gradient sum");
      idle(spins);
    }
    pending_.clear();
  }

  int64_t bucket_floats() const override { return bucket_; }

  std::vector<double> allgather(std::span<const double> mine) override {
    std::vector<double> all(mine.size() * static_cast<size_t>(size_));
    MPI_Request r;
    MPI_Iallgather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(),
                   static_cast<int>(mine.size()), MPI_DOUBLE, MPI_COMM_WORLD, &r);
    wait(&r, 1, "allgather");
    return all;
  }

  [[noreturn]] void abort(const std::string& message) override {
    std::cerr << "tfm: error (rank " << rank_ << " of " << size_ << "): " << message << "\n"
              << std::flush;
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::_Exit(1);
  }

 private:
  struct Bucket {
    std::span<float> x;
    std::vector<int> counts, displs, rcounts, rdispls;
    std::vector<float> recv;
    MPI_Request req = MPI_REQUEST_NULL;
    int phase = 0;  // 0: slices being exchanged, 1: sums being gathered, 2: done
  };

  // This rank's slice of a bucket: the N ranks' copies added in rank order.
  void reduce_slices(Bucket& b) {
    const int mine = b.counts[rank_];
    float* out = b.x.data() + b.displs[rank_];
    std::copy(b.recv.begin(), b.recv.begin() + mine, out);
    for (int r = 1; r < size_; ++r) {
      const float* in = b.recv.data() + static_cast<size_t>(r) * mine;
      for (int i = 0; i < mine; ++i) out[i] += in[i];
    }
    b.recv = {};
  }

  void wait(MPI_Request* reqs, int n, const char* what) {
    const double deadline = now() + timeout_;
    for (int spins = 0;; ++spins) {
      int done = 0;
      MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
      if (done) return;
      if (now() > deadline) timed_out(what);
      idle(spins);
    }
  }

  // Between tests of a collective: spin briefly (one usually completes in microseconds), then
  // yield the core and answer the other ranks' liveness probes.
  void idle(int spins) {
    if (spins <= 1000) return;
    answer_probes();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }

  // Another rank's collective timed out and asks who is alive (timed_out): a rank waiting in a
  // collective answers; one stopped, hung, or busy outside the collectives does not.
  void answer_probes() {
    for (;;) {
      int flag = 0;
      MPI_Status st;
      MPI_Iprobe(MPI_ANY_SOURCE, kProbeTag, probe_comm_, &flag, &st);
      if (!flag) return;
      int ask = 0, alive = 1;
      MPI_Recv(&ask, 1, MPI_INT, st.MPI_SOURCE, kProbeTag, probe_comm_, MPI_STATUS_IGNORE);
      // 4 bytes go out eagerly: this returns without the asker receiving them.
      MPI_Send(&alive, 1, MPI_INT, st.MPI_SOURCE, kAliveTag, probe_comm_);
    }
  }

  // A collective's deadline passed. Which ranks did not come cannot be read from the
  // collective, so every other rank is asked on a communicator of its own and given a grace of
  // a few seconds (answering the others' questions meanwhile); the abort names those silent.
  [[noreturn]] void timed_out(const std::string& what) {
    std::vector<int> asks(size_, 1), answers(size_, 0);
    std::vector<MPI_Request> reqs;
    std::vector<int> peers;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      MPI_Request s, a;
      MPI_Isend(&asks[r], 1, MPI_INT, r, kProbeTag, probe_comm_, &s);
      MPI_Request_free(&s);
      MPI_Irecv(&answers[r], 1, MPI_INT, r, kAliveTag, probe_comm_, &a);
      reqs.push_back(a);
      peers.push_back(r);
    }
    const double grace = std::clamp(timeout_ / 10, 1.0, 10.0);
    for (const double until = now() + grace; now() < until;) {
      int done = 0;
      MPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &done, MPI_STATUSES_IGNORE);
      if (done) break;
      answer_probes();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::string silent;
    int count = 0;
    for (size_t i = 0; i < peers.size(); ++i) {
      int done = 0;
      if (reqs[i] != MPI_REQUEST_NULL) MPI_Test(&reqs[i], &done, MPI_STATUS_IGNORE);
      if (answers[peers[i]] != 0) continue;
      silent += (count++ ? ", " : "") + std::to_string(peers[i]);
    }
    const std::string waited =
        " for " + std::to_string(static_cast<int64_t>(timeout_)) + " s (TFM_COLLECTIVE_TIMEOUT)";
    if (count == 0)  // every rank answered: they wait on each other in different collectives
      abort(what + ": no answer" + waited + ", though every rank is alive: they wait in " +
            "different collectives (a bug: please report it)");
    abort(what + ": no answer from rank" + (count > 1 ? "s " : " ") + silent + waited +
          " (nor to a liveness probe within " + std::to_string(static_cast<int64_t>(grace)) +
          " s: stopped, hung, or busy outside the collectives)");
  }

  int rank_ = 0, size_ = 1;
  double timeout_ = 1800;
  int64_t bucket_ = 1;
  std::vector<std::unique_ptr<Bucket>> pending_;
  MPI_Comm scatter_comm_ = MPI_COMM_NULL, gather_comm_ = MPI_COMM_NULL;
  MPI_Comm probe_comm_ = MPI_COMM_NULL;  // timed_out's questions and their answers
  static constexpr int kProbeTag = 1, kAliveTag = 2;
};

}  // namespace

}  // namespace tfm::dist

#ifndef TFM_VERSION_STRING
#error "TFM_VERSION_STRING (CMake's project version) must be defined"
#endif

extern "C" __attribute__((visibility("default"))) tfm::dist::World* tfm_plugin_mpi_world(
    const char* version, double collective_timeout_seconds, std::string* why) {
  if (std::string(version) != TFM_VERSION_STRING) {
    *why = std::string("it was built for tfm ") + TFM_VERSION_STRING + ", this is tfm " + version;
    return nullptr;
  }
  return new tfm::dist::MpiWorld(collective_timeout_seconds);
}
