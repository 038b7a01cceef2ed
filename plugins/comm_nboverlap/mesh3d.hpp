#pragma once
// The 3D multiply of Huang and Chow (IPDPS'19) on a p x p x p mesh of the active ranks, and
// SymmSquareCube (D^2 and D^3 of a symmetric D in one operation, Algorithms 3, 4 and 5).
//
// Mesh: the first p^3 ranks of the operands' grid (p^3 <= P, or <= ActiveRanks), rank
// (k * p + i) * p + j for P_{i,j,k}; the others are idle during the operation (MPI_Ibarrier,
// MPI_Test and a 10 ms sleep, the paper's mechanism). The operands' blocks live on the first
// plane: P_{i,j,0} holds the panel of block rows of group i and block columns of group j
// (group maps: the operands' own when they are placed so, else block-cyclic), as
// distribution_for() places them: a (P/p) x p grid whose first p process rows are the plane.
// Operands placed otherwise are moved to the plane first and C back afterwards, counted under
// their roles.
//
// Communicators (from the grid's pool): the fibre P_{i,j,:}, the paper's row_comm P_{:,j,k}
// (bcast of B) and col_comm P_{i,:,k} (reduce of C), each with NDup - 1 duplicates for the parts.
//
// With Replication = c >= 1 the mesh is q x q x c instead (the 2.5D Algorithm 6, cannon25d.hpp):
// the plane is q x q, and the same placement, idle ranks and figures apply with q for p.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collectives.hpp"
#include "mesh.hpp"
#include "parts.hpp"
#include "plexus/comm_strategy.hpp"

namespace plexus::nboverlap {

struct MeshOptions {
  PartPlan plan;
  Variant variant = Variant::Optimized;
  int active_ranks = 0;  ///< 0: all ranks may take part
  int replication = 0;   ///< 0: the 3D mesh; c >= 1: the 2.5D mesh q x q x c (Algorithm 6)
};

class Mesh3D final : public CommStrategy {
 public:
  explicit Mesh3D(MeshOptions o) : opt_(o), collectives_(o.plan) {}
  std::string name() const override { return "nboverlap"; }
  Collectives& collectives() override { return collectives_; }

  /// The plane placement: a (P/p) x p grid of the proposal's ranks, block rows and columns of
  /// group i on process row / column i < p (block-cyclic); the proposal when p does not divide P.
  std::shared_ptr<const Distribution> distribution_for(std::shared_ptr<const Distribution> proposal) const override;
  Panel run(MultiplyTask& task) override;
  bool square_and_cube(Kernel& kernel, const DistMatrix& D, DistMatrix& D2, DistMatrix& D3,
                       const MultiplyOptions& options, std::vector<MultiplyReport>& reports) override;
  /// Volumes of the plane-placed schedule on dense panels (every plane panel the same size).
  std::optional<ModelPrediction> model(const ModelSpec& spec, int prow, int pcol) const override;

 private:
  /// The mesh for a grid of `ranks` (rank `rank`): mesh_shape, with a warning (once, rank 0) when
  /// the ranks allow less Replication than asked.
  MeshShape shape(int ranks, int rank) const;

  MeshOptions opt_;
  mutable bool warned_ = false;
  NbOverlapCollectives collectives_;
};

}  // namespace plexus::nboverlap
