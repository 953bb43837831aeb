// The processes of a data-parallel run (docs/distributed.md): this process's rank, their number,
// and the two collectives training needs, both in a fixed order so that a run is reproducible
// for a given number of processes. One process (the default) is a world of size 1 whose
// collectives are no-ops; `mpirun -np N` / `srun` makes a world of N over Open MPI, through the
// MPI transport's plugin (dist/mpi_plugin.h) where tfm was built with MPI.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tfm/core/tensor.h"

namespace tfm::dist {

class World {
 public:
  virtual ~World() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Every rank's `data` becomes the element-wise sum over the ranks, added in rank order,
  // ((x_0 + x_1) + x_2) + ..., the same bits on every rank and every run. Sent in buckets (each
  // rank sums one slice of a bucket, then the slices are gathered back).
  virtual void sum_in_rank_order(std::span<float> data) = 0;
  // The same over a flat contiguous f32 CPU tensor, in place (a gradient arena). The transport
  // reads and writes its memory, as file I/O does: the one place above ops/ that may.
  void sum_in_rank_order(const Tensor& flat);
  // The same sum, one bucket at a time and without waiting, so that it overlaps computation:
  // start_sum posts one bucket (its memory must stay untouched until finish_sums), progress
  // advances the posted ones (call it often: MPI moves nonblocking collectives only inside MPI
  // calls), finish_sums waits for all. Every rank must post the same buckets (the same element
  // ranges) in the same order. The bits are those of sum_in_rank_order, however the buffer is
  // cut into buckets: each element is summed in rank order.
  virtual void start_sum(std::span<float> bucket) = 0;
  void start_sum(const Tensor& bucket);  // a contiguous f32 CPU tensor (a slice of an arena)
  virtual void progress() = 0;
  virtual void finish_sums() = 0;
  // Elements per bucket (TFM_BUCKET_MB, default 16 MB of floats).
  virtual int64_t bucket_floats() const = 0;
  // Each rank's `mine` (the same length on all), concatenated in rank order, on every rank.
  virtual std::vector<double> allgather(std::span<const double> mine) = 0;
  // Ends every process of the job after printing `message` (with this rank) on stderr. Used
  // when this rank cannot go on: the others would otherwise wait in the next collective.
  [[noreturn]] virtual void abort(const std::string& message) = 0;
};

// The process's world, made on first use: MPI's when this process was started by mpirun or
// srun with more than one process, otherwise a single process. Started as one of several
// processes without the MPI plugin (or the MPI library it needs) is an error naming what is
// missing (each process would train alone and write the same files).
World& world();

// A world of this process alone (what code given no world uses), whatever the launcher says.
World& single_process();

// The world if world() has made one of several processes, else null: where a front end's last
// resort (an error no rank can recover from) calls abort(), so the other ranks do not wait.
World* distributed_world();

// The launcher's process count from its environment (Open MPI, PMI/PMIx, Slurm); 1 when none.
int launched_world_size();

// Seconds a collective may wait for the other ranks before the job is aborted: the
// TFM_COLLECTIVE_TIMEOUT environment variable, 1800 by default (a validation on rank 0 holds the
// others for its length).
double collective_timeout_seconds();

}  // namespace tfm::dist
