#pragma once
// The nboverlap collectives component: every operation cut into parts on duplicated
// communicators (parts.hpp), all parts posted at once and completed together.
#include <map>
#include <span>
#include <string>

#include "parts.hpp"
#include "plexus/collectives.hpp"

namespace plexus::nboverlap {

class NbOverlapCollectives final : public Collectives {
 public:
  explicit NbOverlapCollectives(PartPlan plan) : plan_(plan) {}
  std::string name() const override { return "nboverlap"; }
  const PartPlan& plan() const { return plan_; }

  CollectiveRequest iallreduce(std::span<double> values, MPI_Comm comm, mpi::Traffic& traffic,
                               mpi::Role role) override;
  CollectiveRequest ibcast(std::span<double> values, int root, MPI_Comm comm, mpi::Traffic& traffic,
                           mpi::Role role) override;
  CollectiveRequest ireduce(std::span<const double> in, std::span<double> out, int root, MPI_Comm comm,
                            mpi::Traffic& traffic, mpi::Role role) override;
  CollectiveRequest ialltoall(std::span<const double> send, std::span<double> recv, MPI_Comm comm,
                              mpi::Traffic& traffic, mpi::Role role) override;
  /// NDup calls (every rank posts the same number); the count of each rank pair is cut by the
  /// part rule, the parts beyond its own count empty.
  CollectiveRequest ialltoallv(std::span<const double> send, std::span<const int> send_counts,
                               std::span<double> recv, std::span<const int> recv_counts, MPI_Comm comm,
                               mpi::Traffic& traffic, mpi::Role role) override;
  /// Every rank's buffer reaches every rank by one MPI_Iallgatherv per part (the parts of the
  /// largest buffer), then arrives in ring order.
  void circulate(MPI_Comm comm, std::span<const double> my_buffer, const ArrivalFn& on_arrival,
                 mpi::Traffic& traffic, int thread = 0) override;
  /// Core's logical volume; messages counted once per part.
  std::map<std::string, double> model(const CollectiveSpec& spec) const override;

 private:
  PartPlan plan_;
};

}  // namespace plexus::nboverlap
