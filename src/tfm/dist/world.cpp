#include "tfm/dist/world.h"

#include <cstdlib>
#include <iostream>
#include <memory>

#include "tfm/core/check.h"
#include "tfm/core/plugin.h"
#include "tfm/dist/mpi_plugin.h"
#include "tfm/version.h"

namespace tfm::dist {

void World::sum_in_rank_order(const Tensor& flat) {
  TFM_CHECK(flat.defined() && flat.dtype() == DType::f32 && flat.device() == Device::cpu &&
            flat.is_contiguous())
      << "sum_in_rank_order: expected a contiguous f32 CPU tensor, got " << flat.describe();
  sum_in_rank_order(std::span<float>(flat.data<float>(), static_cast<size_t>(flat.numel())));
}

void World::start_sum(const Tensor& bucket) {
  TFM_CHECK(bucket.defined() && bucket.dtype() == DType::f32 && bucket.device() == Device::cpu &&
            bucket.is_contiguous())
      << "start_sum: expected a contiguous f32 CPU tensor, got " << bucket.describe();
  start_sum(std::span<float>(bucket.data<float>(), static_cast<size_t>(bucket.numel())));
}

namespace {

class SingleProcess final : public World {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void sum_in_rank_order(std::span<float>) override {}
  void start_sum(std::span<float>) override {}
  void progress() override {}
  void finish_sums() override {}
  int64_t bucket_floats() const override { return int64_t{1} << 22; }
  std::vector<double> allgather(std::span<const double> mine) override {
    return {mine.begin(), mine.end()};
  }
  [[noreturn]] void abort(const std::string& message) override {
    std::cerr << "tfm: error: " << message << "\n";
    std::abort();
  }
};

int env_int(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return 0;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return end != v && n > 0 && n < (1 << 24) ? static_cast<int>(n) : 0;
}

}  // namespace

int launched_world_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "SLURM_NTASKS"}) {
    if (const int n = env_int(name)) {
      // Slurm sets SLURM_NTASKS for the whole allocation, also around a plain (non-srun) start;
      // only a task started by srun has SLURM_PROCID.
      if (std::string(name) == "SLURM_NTASKS" && std::getenv("SLURM_PROCID") == nullptr) continue;
      return n;
    }
  }
  return 1;
}

double collective_timeout_seconds() {
  const char* v = std::getenv("TFM_COLLECTIVE_TIMEOUT");
  if (v == nullptr || *v == '\0') return 1800.0;
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  TFM_CHECK(end != v && *end == '\0' && s > 0 && s < 1e9)
      << "TFM_COLLECTIVE_TIMEOUT must be a positive number of seconds, got \"" << v << "\"";
  return s;
}

namespace {
World* g_distributed = nullptr;
}  // namespace

World* distributed_world() {
  return g_distributed;
}

World& single_process() {
  static SingleProcess one;
  return one;
}

namespace {

// The MPI transport, opened from its plugin (libtfm_mpi.so, mpi_world.cpp) when this process is
// one of several. RTLD_GLOBAL: Open MPI's components, which libmpi opens itself, need its symbols.
std::unique_ptr<World> open_mpi_world(int launched) {
  const plugin::LoadResult p = plugin::open(kMpiPluginFile, kMpiPluginEntry, true);
  TFM_CHECK(p.entry != nullptr)
      << "started as one of " << launched << " processes (mpirun/srun), but there is no MPI "
      << "transport: " << p.error
      << (p.error.find(std::string(kMpiPluginFile) + " not found") == 0
              ? "; it is built with tfm where CMake finds MPI (scripts/setup.sh installs Open "
                "MPI). Each process would train alone and write the same files"
              : "");
  std::string why;
  World* w =
      reinterpret_cast<MpiPluginEntry>(p.entry)(version(), collective_timeout_seconds(), &why);
  TFM_CHECK(w != nullptr) << "started as one of " << launched << " processes, but there is no MPI "
                          << "transport: " << p.path << " cannot be used: " << why;
  return std::unique_ptr<World>(w);
}

}  // namespace

World& world() {
  static World& w = []() -> World& {
    const int n = launched_world_size();
    if (n <= 1) return single_process();
    static const std::unique_ptr<World> mpi = open_mpi_world(n);
    if (mpi->size() > 1) g_distributed = mpi.get();
    return *mpi;
  }();
  return w;
}

}  // namespace tfm::dist
