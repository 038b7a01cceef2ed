#pragma once
// How a distributed operation moves data: a strategy is a multiply algorithm and names the
// collectives its plugin provides with it.
//
// A CommStrategy is a MultiplyAlgorithm (its multiply is run by core's one driver,
// plexus::multiply in multiply.hpp) plus collectives(): the collectives component its plugin
// provides with it, which the Communication/Strategy shorthand selects (core's plain MPI ones
// when it has none). Collectives are components of their own (collectives.hpp).
#include <mpi.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "plexus/collectives.hpp"
#include "plexus/kernel.hpp"
#include "plexus/local_multiply.hpp"
#include "plexus/matrix.hpp"
#include "plexus/mpi.hpp"
#include "plexus/multiply.hpp"

namespace plexus {


class CommStrategy : public MultiplyAlgorithm {
 public:
  ~CommStrategy() override;  // key function, defined in libplexus_core

  /// C = alpha * A * B + beta * C through core's driver (plexus::multiply) with this strategy's
  /// schedule. Collective over the grid.
  MultiplyReport multiply(double alpha, const DistMatrix& a, const DistMatrix& b, double beta, DistMatrix& c,
                          Kernel& kernel, const MultiplyOptions& options = {});

  /// Every strategy is a multiply algorithm: this is its schedule (MultiplyAlgorithm::run).
  Panel run(MultiplyTask& task) override = 0;

  /// The collectives the strategy's plugin provides with it (core default: plain MPI). The
  /// conveniences below forward to them; Collectives (collectives.hpp) documents each.
  virtual Collectives& collectives() { return default_collectives_; }
  using ArrivalFn = Collectives::ArrivalFn;
  using RingPosition = Collectives::RingPosition;
  void circulate(MPI_Comm comm, std::span<const double> my_buffer, const ArrivalFn& on_arrival, mpi::Traffic& traffic,
                 int thread = 0) {
    collectives().circulate(comm, my_buffer, on_arrival, traffic, thread);
  }
  int circulate_threads() { return collectives().circulate_threads(); }
  RingPosition ring_position(MPI_Comm comm) { return collectives().ring_position(comm); }
  void reduce_across_rings(MPI_Comm comm, std::span<double> values, mpi::Traffic& traffic) {
    collectives().reduce_across_rings(comm, values, traffic);
  }
  /// In-place sum over comm.
  void allreduce_sum(MPI_Comm comm, std::span<double> values, mpi::Traffic& traffic) {
    collectives().allreduce(values, comm, traffic);
  }

 private:
  MpiCollectives default_collectives_;
};

}  // namespace plexus
