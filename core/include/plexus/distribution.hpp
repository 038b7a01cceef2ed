#pragma once
// Process grids (PR x PC, with an optional third dimension of L layers) and distributions: which
// process row owns a block row, which process column owns a block column.
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "plexus/comm_pool.hpp"

namespace plexus {

struct PanelIndex;
struct PanelView;

/// A PR x PC x L process grid over a communicator: L layers (planes) of PR x PC ranks, L = 1 for
/// the 2D grids of most algorithms. Coordinates (prow, pcol, layer); in the plane of a layer the
/// ranks form the usual row-major PR x PC grid.
///
/// Communicators: comm() all ranks; plane_comm() my layer's PR x PC ranks, ordered by
/// prow * PC + pcol; row_comm() / col_comm() my process row / column inside my plane, ordered by
/// pcol / prow; fibre_comm() the L ranks with my (prow, pcol), ordered by layer. With L = 1 the
/// plane is comm() and the fibre is MPI_COMM_SELF (no communicator is made for either).
///
/// Two kinds of grids have layers:
///  - made by create(..., L): rank = (layer * PR + prow) * PC + pcol (layer-major: each plane is a
///    contiguous block of ranks). The p x p x p mesh of a 3D algorithm.
///  - a layered view of a 2D grid, layered(sr, sc): the PR x PC grid cut into groups of sr x sc
///    processes, regarded as (PR/sr) x (PC/sc) groups x L = sr*sc members. The view's
///    (prow, pcol) is my group, its layer my member index (row-major in the group); its fibre is
///    my group, its plane the ranks with my member index. The ranks are those of the 2D grid:
///    rank = (prow*sr + layer/sc) * PC2 + pcol*sc + layer%sc, PC2 = the 2D grid's PC. 2.5D
///    algorithms (rma25d) keep their operands on the 2D grid and use the view for their layers.
///
/// Communicators come from a CommPool. create(pool, ...) takes them from a pool the caller owns
/// (the Context's) and the grid frees nothing; create(comm, ...) gives the grid a pool of its own,
/// released by its destructor (as standalone grids always were). A layered view takes its
/// communicators from the pool of its grid and keeps that grid alive: made once per shape, freed
/// by that pool's release(), never by the view.
class Grid : public std::enable_shared_from_this<Grid> {
 public:
  /// dims 0 (default): MPI_Dims_create chooses PR x PC for size/L ranks. Throws InputError if
  /// L < 1, if PR*PC*L != size of comm, or if a given dimension cannot divide it (every rank the
  /// same, before any communication).
  static std::shared_ptr<const Grid> create(MPI_Comm comm, int nprows = 0, int npcols = 0, int nlayers = 1);
  /// The same grid with its communicators from `pool` (made once per shape, freed by the pool's
  /// release(), not by the grid).
  static std::shared_ptr<const Grid> create(CommPool& pool, MPI_Comm comm, int nprows = 0, int npcols = 0,
                                            int nlayers = 1);
  ~Grid();  ///< frees communicators only for a grid made by create(comm, ...) (its own pool)
  Grid(const Grid&) = delete;
  Grid& operator=(const Grid&) = delete;

  /// This 2D grid seen as (PR/sr) x (PC/sc) groups x sr*sc layers (see above); layered(1, 1) is the
  /// grid itself. Collective over comm() the first time for a shape. Throws InputError, the same
  /// on every rank and before any communication, if the grid already has layers or sr (sc) is
  /// not a positive divisor of PR (PC).
  std::shared_ptr<const Grid> layered(int sr, int sc) const;
  /// The ranks of this grid (in comm()'s order) as another PR x PC grid, its communicators from
  /// this grid's pool (made once per shape, freed by that pool's release()); keeps this grid
  /// alive. Throws InputError, the same on every rank, if PR*PC is not the grid's size.
  std::shared_ptr<const Grid> reshaped(int nprows, int npcols) const;
  /// The pool the grid's communicators come from (the context's for ctx.grid(), else the grid's
  /// own): an algorithm makes the communicators of its schedule there, once per purpose, freed by
  /// that pool's release() (e.g. comm_nboverlap's mesh of active ranks).
  CommPool& pool() const { return *pool_; }
  /// Whether block owners agree: the same shape and the same rank for every (prow, pcol, layer).
  bool same_placement(const Grid& o) const;

  MPI_Comm comm() const { return comm_; }              ///< all ranks of the grid
  MPI_Comm row_comm() const { return row_comm_; }      ///< my process row in my plane, ordered by pcol
  MPI_Comm col_comm() const { return col_comm_; }      ///< my process column in my plane, ordered by prow
  MPI_Comm plane_comm() const { return plane_comm_; }  ///< my layer, ordered by prow * PC + pcol
  MPI_Comm fibre_comm() const { return fibre_comm_; }  ///< my (prow, pcol) on every layer, ordered by layer
  int nprows() const { return nprows_; }
  int npcols() const { return npcols_; }
  int nlayers() const { return nlayers_; }
  int size() const { return nprows_ * npcols_ * nlayers_; }
  int rank() const { return rank_; }  ///< in comm()
  int myprow() const { return myprow_; }
  int mypcol() const { return mypcol_; }
  int mylayer() const { return mylayer_; }
  /// The rank in comm() of (prow, pcol, layer).
  int rank_of(int prow, int pcol, int layer = 0) const {
    if (group_rows_ * group_cols_ == 1) return (layer * nprows_ + prow) * npcols_ + pcol;
    return (prow * group_rows_ + layer / group_cols_) * (npcols_ * group_cols_) + pcol * group_cols_ +
           layer % group_cols_;
  }
  /// The sr x sc of a layered view; 1 x 1 for a grid made by create().
  int group_rows() const { return group_rows_; }
  int group_cols() const { return group_cols_; }
  std::string describe() const;  ///< "PRxPC", "PRxPCxL", or for a view "PRxPCxL (sr x sc groups of PR2xPC2)"

 private:
  Grid() = default;
  static std::shared_ptr<Grid> shape(MPI_Comm comm, int nprows, int npcols, int nlayers);
  void make_comms(CommPool& pool, const std::string& name);
  MPI_Comm comm_ = MPI_COMM_NULL, row_comm_ = MPI_COMM_NULL, col_comm_ = MPI_COMM_NULL;
  MPI_Comm plane_comm_ = MPI_COMM_NULL, fibre_comm_ = MPI_COMM_SELF;
  std::unique_ptr<CommPool> own_pool_;  // create(comm, ...) only
  CommPool* pool_ = nullptr;            // where the communicators (and those of views) come from
  std::shared_ptr<const Grid> parent_;  // a view keeps its grid, and so the grid's pool, alive
  int nprows_ = 1, npcols_ = 1, nlayers_ = 1, rank_ = 0, myprow_ = 0, mypcol_ = 0, mylayer_ = 0;
  int group_rows_ = 1, group_cols_ = 1;
};

/// Maps of block rows to process rows and block columns to process columns on a grid.
///
/// On a grid with layers the maps are those of the plane and the blocks live on layer 0: block
/// (i, j) is owned by rank_of(row_dist[i], col_dist[j], 0), and the ranks of the other layers own
/// nothing (their local_rows() and local_cols() are empty). A matrix is never stored twice, so
/// norms, gathers and redistributions stay exact; an algorithm that wants copies on other layers
/// makes them itself along fibre_comm(), counted as its own traffic.
class Distribution {
 public:
  Distribution(std::shared_ptr<const Grid> grid, std::vector<int> row_dist, std::vector<int> col_dist,
               std::string kind);

  /// Block-cyclic 2D: block row i on process row i mod PR, block col j on process col j mod PC.
  static std::shared_ptr<const Distribution> block_cyclic(std::shared_ptr<const Grid> grid, int nblkrows,
                                                          int nblkcols);
  /// DBCSR's load-balancing distribution: block rows (cols) randomly permuted with a seeded
  /// permutation, then dealt cyclically to process rows (cols). Same seed, same map, any rank.
  static std::shared_ptr<const Distribution> random_permuted(std::shared_ptr<const Grid> grid, int nblkrows,
                                                             int nblkcols, std::uint64_t seed);
  /// 1D block rows: contiguous ranges of block rows, balanced by count, over a P x 1 grid.
  /// Throws if the grid has more than one process column.
  static std::shared_ptr<const Distribution> rows_1d(std::shared_ptr<const Grid> grid, int nblkrows,
                                                     int nblkcols);
  /// The distribution of the same kind for another block count (used to build compatible operands).
  static std::shared_ptr<const Distribution> by_name(const std::string& kind, std::shared_ptr<const Grid> grid,
                                                     int nblkrows, int nblkcols, std::uint64_t seed);

  const Grid& grid() const { return *grid_; }
  const std::shared_ptr<const Grid>& grid_ptr() const { return grid_; }
  const std::vector<int>& row_dist() const { return row_dist_; }
  const std::vector<int>& col_dist() const { return col_dist_; }
  int nblkrows() const { return static_cast<int>(row_dist_.size()); }
  int nblkcols() const { return static_cast<int>(col_dist_.size()); }
  /// The rank (in grid().comm()) holding block (blkrow, blkcol): on layer 0.
  int owner(int blkrow, int blkcol) const { return grid_->rank_of(row_dist_[blkrow], col_dist_[blkcol], 0); }
  const std::string& kind() const { return kind_; }
  /// Block rows owned by my process row, ascending (empty on layers other than 0).
  const std::vector<int>& local_rows() const { return local_rows_; }
  /// Block columns owned by my process column, ascending (empty on layers other than 0).
  const std::vector<int>& local_cols() const { return local_cols_; }
  /// A view of a panel of my local rows without blocks (made once, here): where a multiply starts
  /// C from nothing (beta = 0), every multiply, without a panel of its own.
  PanelView empty_local_view() const;
  /// The same maps on grids that place blocks alike: every block has the same owner rank.
  bool same_maps(const Distribution& o) const {
    return row_dist_ == o.row_dist_ && col_dist_ == o.col_dist_ && grid_->same_placement(*o.grid_);
  }

 private:
  std::shared_ptr<const Grid> grid_;
  std::vector<int> row_dist_, col_dist_;
  std::vector<int> local_rows_, local_cols_;
  std::string kind_;
  std::shared_ptr<const PanelIndex> no_blocks_;  // local_rows_, no blocks
};

}  // namespace plexus
