#pragma once
// Process grids and distributions: which process row owns a block row, which process column owns
// a block column.
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace plexus {

class CommPool;

/// A PR x PC process grid over a communicator; rank = prow * PC + pcol (row-major).
/// Owns duplicated grid, row and column communicators.
class Grid {
 public:
  /// dims {0,0} (default): MPI_Dims_create chooses. Throws if PR*PC != size of comm.
  static std::shared_ptr<const Grid> create(MPI_Comm comm, int nprows = 0, int npcols = 0);
  /// The same grid with its communicators from `pool` (made once per shape, freed by the pool's
  /// release(), not by the grid).
  static std::shared_ptr<const Grid> create(CommPool& pool, MPI_Comm comm, int nprows = 0, int npcols = 0);
  ~Grid();
  Grid(const Grid&) = delete;
  Grid& operator=(const Grid&) = delete;

  MPI_Comm comm() const { return comm_; }       ///< all ranks of the grid
  MPI_Comm row_comm() const { return row_comm_; }  ///< ranks of my process row, ordered by pcol
  MPI_Comm col_comm() const { return col_comm_; }  ///< ranks of my process column, ordered by prow
  int nprows() const { return nprows_; }
  int npcols() const { return npcols_; }
  int size() const { return nprows_ * npcols_; }
  int rank() const { return rank_; }
  int myprow() const { return myprow_; }
  int mypcol() const { return mypcol_; }
  int rank_of(int prow, int pcol) const { return prow * npcols_ + pcol; }
  std::string describe() const;  ///< "PRxPC"

 private:
  Grid() = default;
  static std::shared_ptr<Grid> shape(MPI_Comm comm, int nprows, int npcols);
  MPI_Comm comm_ = MPI_COMM_NULL, row_comm_ = MPI_COMM_NULL, col_comm_ = MPI_COMM_NULL;
  bool owns_comms_ = true;
  int nprows_ = 1, npcols_ = 1, rank_ = 0, myprow_ = 0, mypcol_ = 0;
};

/// Maps of block rows to process rows and block columns to process columns on a grid.
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
  int owner(int blkrow, int blkcol) const { return grid_->rank_of(row_dist_[blkrow], col_dist_[blkcol]); }
  const std::string& kind() const { return kind_; }
  /// Block rows owned by my process row, ascending.
  const std::vector<int>& local_rows() const { return local_rows_; }
  /// Block columns owned by my process column, ascending.
  const std::vector<int>& local_cols() const { return local_cols_; }
  bool same_maps(const Distribution& o) const { return row_dist_ == o.row_dist_ && col_dist_ == o.col_dist_; }

 private:
  std::shared_ptr<const Grid> grid_;
  std::vector<int> row_dist_, col_dist_;
  std::vector<int> local_rows_, local_cols_;
  std::string kind_;
};

}  // namespace plexus
