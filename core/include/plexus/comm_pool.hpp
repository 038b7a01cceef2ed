#pragma once
// The communicators of a run, in one pool (part of plexus::Context).
#include <mpi.h>

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace plexus {

/// Communicators made once and kept until release(): asking twice for the same (parent, purpose,
/// color, key) returns the same communicator. A parent must outlive the pool (the run's
/// communicator, or a communicator of the pool itself). Finding a communicator is a local
/// look-up, so the purpose must name the whole split (its shape, not only this rank's colour):
/// then every rank of the parent finds it, or none does and all make it together.
class CommPool {
 public:
  CommPool();
  ~CommPool();  ///< calls no MPI function; communicators not released are reported to stderr
  CommPool(const CommPool&) = delete;
  CommPool& operator=(const CommPool&) = delete;

  /// MPI_Comm_dup of parent, once per purpose. Collective over parent the first time.
  MPI_Comm dup(MPI_Comm parent, const std::string& purpose);
  /// MPI_Comm_split of parent, once per (purpose, color, key). Collective over parent the first time.
  MPI_Comm split(MPI_Comm parent, int color, int key, const std::string& purpose);
  /// Frees every communicator (in reverse order of creation). Collective over the pool's ranks;
  /// call it before MPI_Finalize. The pool is empty and usable again afterwards.
  void release();
  /// Forgets every communicator without freeing it: only for after MPI_Finalize, when freeing is no
  /// longer allowed. No MPI call.
  void forget() noexcept;
  std::size_t size() const { return comms_.size(); }
  /// Changes at every release() and differs between pools: a cache of communicators made from
  /// this pool (keyed by handle) is valid while the epoch it was filled in is current.
  std::uint64_t epoch() const { return epoch_; }

 private:
  using Key = std::tuple<MPI_Comm, std::string, int, int>;
  std::map<Key, MPI_Comm> index_;
  std::vector<MPI_Comm> comms_;  // in creation order
  std::uint64_t epoch_;
};

}  // namespace plexus
