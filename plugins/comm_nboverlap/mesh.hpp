#pragma once
// The active mesh of one nboverlap operation over the operands' 2D grid, the idle ranks' wait,
// and the plane placement's group maps (internal to the plugin).
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "parts.hpp"
#include "plexus/distribution.hpp"
#include "plexus/matrix.hpp"

namespace plexus::nboverlap {

/// The paper's SymmSquareCube algorithms: 3 (original, GTFock), 4 (baseline), 5 (optimized:
/// pipelined in NDup parts; with NDup = 1 it is the baseline).
enum class Variant { Original, Baseline, Optimized };
Variant variant_of(const std::string& name);
const char* variant_name(Variant v);

/// Block-cyclic group map: index i to group i mod p.
std::vector<int> cyclic(int n, int p);

/// The indices of `map` that belong to group g, in order.
std::vector<int> rows_of_group(const std::vector<int>& map, int g);

/// The mesh's shape: a q x q plane, c layers (3D: q = c = p).
struct MeshShape {
  int q = 1, c = 1;
  int ranks() const { return q * q * c; }
};

/// The mesh for `ranks` ranks (or ActiveRanks when lower, 0: all): with replication 0 the 3D
/// mesh, the largest p with p^3 ranks; with replication c >= 1 the 2.5D mesh, the largest q with
/// q^2 c ranks. Every layer must have a Cannon step (q >= c, so c^3 ranks at least): where the
/// ranks are too few for c, the largest c' < c that they allow (1 at least).
MeshShape mesh_shape(int ranks, int active_ranks, int replication);

/// The active mesh of one operation over a 2D grid.
struct Mesh {
  MPI_Comm all = MPI_COMM_NULL;  // the operands' grid
  int P = 1, me = 0, q = 1, c = 1, n = 1;
  bool active = true;
  std::shared_ptr<const Grid> grid;  // q x q x c over the active ranks; null on idle ranks
  int i = 0, j = 0, k = 0;           // my P_{i,j,k}
  MPI_Comm fibre = MPI_COMM_NULL;    // P_{i,j,:}, by k
  MPI_Comm bcol = MPI_COMM_NULL;     // P_{:,j,k}, by i (the paper's row_comm: B travels here)
  MPI_Comm rrow = MPI_COMM_NULL;     // P_{i,:,k}, by j (the paper's col_comm: C is reduced here)
  MPI_Comm mesh = MPI_COMM_NULL;     // the active ranks, rank (k q + i) q + j
  CommPool* pool = nullptr;
  MPI_Comm release = MPI_COMM_NULL;  // all ranks, for the idle ranks' release (when n < P)
  int rank_of(int pi, int pj, int pk) const { return (pk * q + pi) * q + pj; }
};

/// The mesh of the first q^2 c ranks of g (mesh_shape), with every part communicator of every
/// mesh communicator made before the schedule (a duplicate is collective: made inside a
/// pipeline, one rank's wait for a part could stand before another's MPI_Comm_dup). Same order
/// on every rank: the mesh, the fibres, the B columns, the C rows.
Mesh make_mesh(const Grid& g, MeshShape shape, const PartPlan& plan);

/// How long an idle rank waited and the CPU time its thread used meanwhile.
struct IdleTime {
  double seconds = 0, cpu_seconds = 0;
};

/// The ranks beyond the mesh wait for the operation's end: MPI_Ibarrier, then MPI_Test every
/// 10 ms (Huang and Chow's mechanism); the active ranks join the barrier when they are done.
void idle_until_released(const Mesh& m, IdleTime* idle);

/// Whether X's blocks sit on the plane already: a 2D grid of q columns whose first q process rows
/// are the plane's ranks P_{i,j,0} = i q + j.
bool on_plane(const DistMatrix& X, int q);

}  // namespace plexus::nboverlap
