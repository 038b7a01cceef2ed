#pragma once
// How a distributed operation moves data. Each strategy lists the operations it provides.
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

namespace plexus {

/// Operations a communication strategy may provide (bit flags).
enum Operation : unsigned { OpMultiply = 1u, OpCirculate = 2u, OpAllreduceSum = 4u };
std::string operation_name(Operation op);

struct MultiplyOptions {
  double filter_eps = 0.0;  ///< on-the-fly filtering and final filtering of C; 0 disables
};

/// What one multiply did on this rank: counted, never estimated.
struct MultiplyReport {
  std::string strategy;
  std::string kernel;
  int ticks = 0;
  double seconds = 0;             ///< whole multiply on this rank
  double kernel_seconds = 0;      ///< stacks processed by the kernel
  double stack_seconds = 0;       ///< building stacks
  double flops = 0;               ///< 2*m*n*k over the products computed on this rank
  std::int64_t products = 0;
  std::int64_t skipped_products = 0;
  std::array<mpi::RoleCounts, mpi::kRoles> traffic{};  ///< per role A, B, C, Other
  std::int64_t peak_buffer_bytes = 0;   ///< peak of communication buffers during the multiply
  std::int64_t peak_memory_bytes = 0;   ///< peak of all tracked memory during the multiply
  std::map<std::string, double> extra;  ///< strategy-specific figures (documented by the strategy)

  double wait_seconds() const;
  std::int64_t bytes_sent() const;  ///< data + index, all roles
  std::int64_t messages_sent() const;
};

/// A problem for the dry-run model: a PR x PC grid whose every rank holds local panels of A, B
/// and C of these sizes (bytes of values), spread evenly over the k indices.
struct ModelSpec {
  int nprows = 1, npcols = 1;
  std::int64_t bytes_a = 0, bytes_b = 0, bytes_c = 0;
};

/// What one rank of a multiply will do, predicted by the strategy's own schedule.
struct ModelPrediction {
  int ticks = 0;
  std::int64_t bytes_a = 0, bytes_b = 0, bytes_c = 0;  ///< data bytes each rank receives (A, B) and sends (C)
  std::int64_t buffer_bytes = 0;                       ///< communication buffers (values), the paper's footprint
  std::string note;                                    ///< e.g. the layer count actually used
};

class CommStrategy {
 public:
  virtual ~CommStrategy();  // key function, defined in libplexus_core
  virtual std::string name() const = 0;
  virtual unsigned operations() const = 0;

  /// The distribution this strategy wants for an operand, given a proposal (default: the proposal).
  virtual std::shared_ptr<const Distribution> distribution_for(std::shared_ptr<const Distribution> proposal) const;

  /// C = alpha * A * B + beta * C. Collective over the grid.
  virtual MultiplyReport multiply(double alpha, const DistMatrix& a, const DistMatrix& b, double beta, DistMatrix& c,
                                  Kernel& kernel, const MultiplyOptions& options);

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

  /// The dry-run model of multiply for rank (prow, pcol) of spec's grid, without moving data or
  /// needing MPI: the same schedule the real run follows. Default: not modelled (nullopt).
  virtual std::optional<ModelPrediction> model(const ModelSpec& spec, int prow, int pcol) const;

  /// In-place sum over comm. Core default: MPI_Allreduce.
  virtual void allreduce_sum(MPI_Comm comm, std::vector<double>& values, mpi::Traffic& traffic);

 protected:
  /// Throws the error for an operation this strategy lacks, naming the strategies that have it.
  [[noreturn]] void missing_operation(Operation op) const;
};

}  // namespace plexus
