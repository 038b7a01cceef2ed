#pragma once
// Collectives as a component of their own: nonblocking and span-based. Each operation starts and
// returns a CollectiveRequest that the caller completes with wait() (or polls with test());
// the blocking forms are conveniences over them. Core provides the plain MPI implementation
// (MpiCollectives); a plugin may provide others (pipelined, on duplicated communicators, ...).
//
// Counting: every operation counts, in the caller's Traffic, the logical volume it delivers on
// this rank (not the messages inside MPI's algorithm, which are not visible): allreduce, n values
// sent and n received (when the communicator has more than one rank); bcast, the root sends n
// once and every other rank receives n; reduce, every rank but the root sends n and the root
// receives n from each of the others; alltoall(v), what goes to and comes from other ranks.
// The time spent inside wait() is the operation's wait, under its role.
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "plexus/comm_pool.hpp"
#include "plexus/mpi.hpp"

namespace plexus {

/// A collective in progress. Move-only. Its destructor calls no MPI function: a request still
/// pending then is an error reported on stderr (complete every request before it goes).
class CollectiveRequest {
 public:
  /// What an implementation keeps for a pending operation.
  class Pending {
   public:
    virtual ~Pending();
    /// Completes the operation (blocking). Called once.
    virtual void wait() = 0;
    /// Whether the operation has completed; completes it if so. May be called repeatedly.
    virtual bool test() = 0;
  };

  CollectiveRequest() = default;  ///< an already completed request
  explicit CollectiveRequest(std::unique_ptr<Pending> pending);
  CollectiveRequest(CollectiveRequest&&) noexcept;
  CollectiveRequest& operator=(CollectiveRequest&&) noexcept;
  ~CollectiveRequest();

  void wait();
  bool test();
  bool done() const { return !pending_; }

 private:
  std::unique_ptr<Pending> pending_;
};

/// A Pending of plain MPI requests: done when all are; `on_complete` runs once after that.
class MpiPending final : public CollectiveRequest::Pending {
 public:
  MpiPending(std::vector<MPI_Request> requests, mpi::Traffic& traffic, mpi::Role role,
             std::function<void()> on_complete = {});
  ~MpiPending() override;
  void wait() override;
  bool test() override;

 private:
  std::vector<MPI_Request> requests_;
  mpi::Traffic& traffic_;
  mpi::Role role_;
  std::function<void()> on_complete_;
};

/// Completes every request (in order).
void wait_all(std::span<CollectiveRequest> requests);

/// One collective operation as a model sees it (Collectives::model).
struct CollectiveSpec {
  /// "allreduce", "bcast", "reduce", "alltoall" (values: the whole send buffer), "circulate"
  /// (ranks: of the ring), "reduce_across_rings" (ranks: the number of rings).
  std::string operation;
  std::int64_t values = 0;  ///< doubles in this rank's buffer
  int ranks = 1;            ///< ranks taking part
  int rank = 0;             ///< this rank among them
  int root = 0;             ///< bcast and reduce
};

class Collectives {
 public:
  virtual ~Collectives();  // key function, defined in libplexus_core
  virtual std::string name() const = 0;

  /// In-place sum over comm.
  virtual CollectiveRequest iallreduce(std::span<double> values, MPI_Comm comm, mpi::Traffic& traffic,
                                       mpi::Role role = mpi::Role::Other) = 0;
  /// root's values to every rank of comm.
  virtual CollectiveRequest ibcast(std::span<double> values, int root, MPI_Comm comm, mpi::Traffic& traffic,
                                   mpi::Role role = mpi::Role::Other) = 0;
  /// The sum of every rank's `in` into root's `out` (out is ignored on other ranks; in and out
  /// have the same size on the root).
  virtual CollectiveRequest ireduce(std::span<const double> in, std::span<double> out, int root, MPI_Comm comm,
                                    mpi::Traffic& traffic, mpi::Role role = mpi::Role::Other) = 0;
  /// Block q of `send` (send.size()/p values) to rank q; block q of `recv` from rank q.
  virtual CollectiveRequest ialltoall(std::span<const double> send, std::span<double> recv, MPI_Comm comm,
                                      mpi::Traffic& traffic, mpi::Role role = mpi::Role::Other) = 0;
  /// send_counts[q] values (consecutive, in rank order) to rank q; recv_counts[q] from rank q.
  virtual CollectiveRequest ialltoallv(std::span<const double> send, std::span<const int> send_counts,
                                       std::span<double> recv, std::span<const int> recv_counts, MPI_Comm comm,
                                       mpi::Traffic& traffic, mpi::Role role = mpi::Role::Other) = 0;

  /// Every rank's buffer visits every rank of its ring (the ranks of comm, or of the sub-ring of
  /// comm the component makes); on_arrival(buffer, origin) is called once per buffer, the
  /// local one first, origin being the rank in comm it came from, in the order a ring delivers
  /// them (me, me-1, me-2, ...). All buffers of a ring have the same size. `thread`
  /// (0 .. circulate_threads()-1) is the channel when several threads of a rank circulate at
  /// once, each with its own Traffic. Blocking; collective over the ring.
  /// Core default: one MPI_Allgatherv over comm (one thread).
  using ArrivalFn = std::function<void(std::span<const double> buffer, int origin_rank)>;
  virtual void circulate(MPI_Comm comm, std::span<const double> my_buffer, const ArrivalFn& on_arrival,
                         mpi::Traffic& traffic, int thread = 0);
  /// Threads of one rank that may circulate at the same time. Core default: 1.
  virtual int circulate_threads() const { return 1; }
  /// The ring circulate(comm, ...) uses on this rank. Default: the whole of comm.
  struct RingPosition {
    int position = 0;
    int size = 1;
  };
  virtual RingPosition ring_position(MPI_Comm comm);
  /// Sums `values` in place over the ranks at the same position of the other rings of comm (the
  /// final reduction of per-ring results). Default: one ring, nothing to do.
  virtual void reduce_across_rings(MPI_Comm comm, std::span<double> values, mpi::Traffic& traffic);

  /// The model of one operation on this rank: predicted figures under the names bytes_sent,
  /// bytes_received, messages_sent, messages_received (data bytes; the volume the operation
  /// counts), and seconds where the model knows the network (LogP/LogGP, alpha-beta). The
  /// report of an operation carries them as `predicted`. Core default: the logical volume of the
  /// counting rules above. Throws plexus::Error for an operation it does not know.
  virtual std::map<std::string, double> model(const CollectiveSpec& spec) const;

  /// The pool the component makes its communicators in (sub-rings, duplicates): the context's.
  /// A component that needs communicators refuses to work unbound.
  void bind(CommPool& pool) { pool_ = &pool; }

  // Blocking conveniences.
  void allreduce(std::span<double> values, MPI_Comm comm, mpi::Traffic& traffic, mpi::Role role = mpi::Role::Other) {
    iallreduce(values, comm, traffic, role).wait();
  }
  void bcast(std::span<double> values, int root, MPI_Comm comm, mpi::Traffic& traffic,
             mpi::Role role = mpi::Role::Other) {
    ibcast(values, root, comm, traffic, role).wait();
  }
  void reduce(std::span<const double> in, std::span<double> out, int root, MPI_Comm comm, mpi::Traffic& traffic,
              mpi::Role role = mpi::Role::Other) {
    ireduce(in, out, root, comm, traffic, role).wait();
  }
  void alltoall(std::span<const double> send, std::span<double> recv, MPI_Comm comm, mpi::Traffic& traffic,
                mpi::Role role = mpi::Role::Other) {
    ialltoall(send, recv, comm, traffic, role).wait();
  }

 protected:
  /// The bound pool; throws plexus::Error naming the component when it is not bound.
  CommPool& pool() const;

 private:
  CommPool* pool_ = nullptr;
};

/// Core's collectives: one MPI_I* call each.
class MpiCollectives : public Collectives {
 public:
  ~MpiCollectives() override;
  std::string name() const override { return "mpi"; }
  CollectiveRequest iallreduce(std::span<double> values, MPI_Comm comm, mpi::Traffic& traffic,
                               mpi::Role role) override;
  CollectiveRequest ibcast(std::span<double> values, int root, MPI_Comm comm, mpi::Traffic& traffic,
                           mpi::Role role) override;
  CollectiveRequest ireduce(std::span<const double> in, std::span<double> out, int root, MPI_Comm comm,
                            mpi::Traffic& traffic, mpi::Role role) override;
  CollectiveRequest ialltoall(std::span<const double> send, std::span<double> recv, MPI_Comm comm,
                              mpi::Traffic& traffic, mpi::Role role) override;
  CollectiveRequest ialltoallv(std::span<const double> send, std::span<const int> send_counts, std::span<double> recv,
                               std::span<const int> recv_counts, MPI_Comm comm, mpi::Traffic& traffic,
                               mpi::Role role) override;
};

}  // namespace plexus
