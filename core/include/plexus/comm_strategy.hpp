#pragma once
// How a distributed operation moves data. Each strategy lists the operations it provides.
//
// Transitional (SDK 2): a CommStrategy is a MultiplyAlgorithm (its multiply is run by core's
// one driver, plexus::multiply in multiply.hpp) plus the collectives a plugin provides
// (circulate, reductions). The collectives move to a component kind of their own next.
#include <mpi.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "plexus/kernel.hpp"
#include "plexus/local_multiply.hpp"
#include "plexus/matrix.hpp"
#include "plexus/mpi.hpp"
#include "plexus/multiply.hpp"

namespace plexus {

/// Operations a communication strategy may provide (bit flags).
enum Operation : unsigned { OpMultiply = 1u, OpCirculate = 2u, OpAllreduceSum = 4u };
std::string operation_name(Operation op);

class CommStrategy : public MultiplyAlgorithm {
 public:
  ~CommStrategy() override;  // key function, defined in libplexus_core
  virtual unsigned operations() const = 0;

  /// C = alpha * A * B + beta * C through core's driver (plexus::multiply) with this strategy's
  /// schedule. Collective over the grid.
  MultiplyReport multiply(double alpha, const DistMatrix& a, const DistMatrix& b, double beta, DistMatrix& c,
                          Kernel& kernel, const MultiplyOptions& options = {});

  /// Without a multiply of its own: the error naming the strategies that have one.
  Panel run(MultiplyTask& task) override;

  /// Every rank's buffer visits every rank of its ring (the ranks of comm, or of the sub-ring of
  /// comm the strategy makes); on_arrival(buffer, origin) is called once per buffer, the local one
  /// included, origin being the rank in comm the buffer came from. All buffers of a ring must have
  /// the same size. my_buffer is consumed: on return it holds a buffer of the same size with
  /// unspecified contents. `thread` (0 .. circulate_threads()-1) is the channel when several
  /// threads of a rank circulate at once, each with its own Traffic. Collective over the ring.
  /// Core default: MPI_Allgatherv over comm (one thread).
  using ArrivalFn = std::function<void(const std::vector<double>& buffer, int origin_rank)>;
  virtual void circulate(MPI_Comm comm, std::vector<double>& my_buffer, const ArrivalFn& on_arrival,
                         mpi::Traffic& traffic, int thread);
  /// Threads of one rank that may call circulate at the same time (each with its own thread
  /// index). Core default: 1.
  virtual int circulate_threads() const { return 1; }

  /// The ring circulate(comm, ...) uses on this rank: its position and size. Default: the whole
  /// of comm.
  struct RingPosition {
    int position = 0;
    int size = 1;
  };
  virtual RingPosition ring_position(MPI_Comm comm);
  /// Sums `values` (in place, on every rank) over the ranks that hold the same position in the
  /// other rings of comm: the final reduction of per-ring results. Default: one ring, nothing to do.
  virtual void reduce_across_rings(MPI_Comm comm, std::vector<double>& values, mpi::Traffic& traffic);

  /// In-place sum over comm. Core default: MPI_Allreduce.
  virtual void allreduce_sum(MPI_Comm comm, std::vector<double>& values, mpi::Traffic& traffic);

 protected:
  /// Throws the error for an operation this strategy lacks, naming the strategies that have it.
  [[noreturn]] void missing_operation(Operation op) const;
};

}  // namespace plexus
