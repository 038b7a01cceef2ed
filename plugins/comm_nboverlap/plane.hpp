#pragma once
// Panels of the nboverlap schedules (internal to the plugin): operands moved onto the plane and
// results back to their owners, counted; local transposes and filters; the plane panels' sizes;
// one local product; the strategy's report figures.
#include <mpi.h>

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mesh.hpp"
#include "plexus/figures.hpp"
#include "plexus/kernel.hpp"
#include "plexus/local_multiply.hpp"
#include "plexus/matrix.hpp"
#include "plexus/mpi.hpp"
#include "plexus/panel.hpp"
#include "wire.hpp"

namespace plexus::nboverlap {

/// The blocks of a panel moved to the ranks `dest` names (one counted exchange over comm).
Panel moved(const PanelView& v, const BlockLayout& layout, MPI_Comm comm, const std::function<int(int, int)>& dest,
            const std::vector<int>& my_rows, mpi::Traffic& t, mpi::Role role);

/// The transpose of a panel of a matrix with square blocks of the same sizes on rows and columns
/// (D_kj -> D_kj^T, which is D_jk for a symmetric D), over `rows` (the old columns).
Panel transposed(const PanelView& v, const BlockLayout& layout, const std::vector<int>& rows);

/// The blocks of a view whose Frobenius norm is at least eps (DistMatrix::filter's rule), on
/// `threads` threads (the kernel's).
Panel filtered(const PanelView& v, const BlockLayout& layout, double eps, int threads);

/// What one rank of the plane holds of an operand: its panel (in place or moved there).
struct PlaneOperand {
  const Panel* panel = nullptr;  // the plane panel (layer 0 only)
  Panel owned;                   // when moved
};

/// X's panel on the plane: X's own when it is placed by the maps (`in`), else its blocks moved to
/// P_{rm(r), cm(c), 0} (one counted exchange over all ranks, idle ones included).
void to_plane(const DistMatrix& X, const std::vector<int>& rm, const std::vector<int>& cm, bool in, const Mesh& m,
              mpi::Traffic& traffic, mpi::Role role, PlaneOperand& out);

/// A result held on the plane as the panel of `target`'s distribution on this rank: moved to the
/// owners (role C) when the target is not placed on the plane (`in` false), else kept by the
/// plane ranks (the others hold no rows).
Panel from_plane(Panel&& plane, const DistMatrix& target, bool in, const Mesh& m, mpi::Traffic& traffic);

/// The strategy figures of one operation on the mesh, with the alpha-beta model's terms of this
/// rank's data (model_latency_terms, model_bandwidth_bytes: time = alpha terms + beta bytes).
void mesh_figures(Figures& extra, const Mesh& m, const PartPlan& plan, const IdleTime* idle,
                  const AlphaBeta& model);

/// Sizes of every plane panel of up to two operands, known to every active rank (one allgather).
struct PlaneSizes {
  std::vector<std::int64_t> s;  // per mesh rank: words and values of operand 0, then of operand 1
  std::int64_t words(int rank, int op) const { return s[static_cast<std::size_t>(4 * rank + 2 * op)]; }
  std::int64_t values(int rank, int op) const { return s[static_cast<std::size_t>(4 * rank + 2 * op + 1)]; }
};
PlaneSizes gather_sizes(const Mesh& m, const Panel* a, const Panel* b, mpi::Traffic& t);

/// One local product C_{i,k} (partial, inner group j) of A_ij and B_jk over the rows of group i.
Panel local_product(Kernel& kernel, const PanelView& a, const BlockLayout& a_layout, const PanelView& b,
                    const BlockLayout& b_layout, const BlockLayout& c_layout, const std::vector<int>& rows,
                    const std::vector<double>& thresholds, LocalMultiplyStats& stats);

/// What a SymmSquareCube schedule is given on an active rank.
struct SquareCubeJob {
  Kernel& kernel;
  const DistMatrix& D;
  const Panel* plane;           ///< D_ij on P_{i,j,0}, null elsewhere
  const std::vector<int>& map;  ///< the group map of D's block rows and columns
  const std::vector<double>& thresholds;
  double filter_eps;
  const Mesh& m;
  Transport& tr;
  const PartPlan& plan;
  Variant variant;
  double t_start;
};

/// What it leaves there: D^2 and D^3 on P_{i,j,0} (empty panels elsewhere), the products' counts,
/// and the traffic, the model and the time at the end of D^2's part.
struct SquareCube {
  Panel d2, d3;
  LocalMultiplyStats s2, s3;
  std::array<mpi::RoleCounts, mpi::kRoles> after_square{};
  AlphaBeta model_square;
  double t_square = 0;
};

}  // namespace plexus::nboverlap
