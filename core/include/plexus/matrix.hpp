#pragma once
// A distributed block-sparse matrix: distribution + block layout + the local blocks (blocked CSR
// over the block rows of my process row, holding only blocks of my process column).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "plexus/distribution.hpp"
#include "plexus/layout.hpp"
#include "plexus/mpi.hpp"
#include "plexus/panel.hpp"

namespace plexus {

class DistMatrix {
 public:
  DistMatrix(std::string name, std::shared_ptr<const Distribution> dist, BlockLayout layout);

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  const Distribution& distribution() const { return *dist_; }
  const std::shared_ptr<const Distribution>& distribution_ptr() const { return dist_; }
  const Grid& grid() const { return dist_->grid(); }
  const BlockLayout& layout() const { return layout_; }
  std::int64_t nrows() const { return layout_.rows.total(); }
  std::int64_t ncols() const { return layout_.cols.total(); }
  bool is_local(int blkrow, int blkcol) const;

  // ---- building -------------------------------------------------------------------------
  /// Sets block (row, col) to `values` (column-major, rows(row) x cols(col)). The block must be
  /// local. New blocks become visible after finalize(); existing ones are overwritten at once.
  void put_block(int row, int col, const double* values);
  /// Merges blocks put since the last finalize into the blocked CSR (a later put wins).
  void finalize();
  bool finalized() const { return pending_.empty(); }

  // ---- access ---------------------------------------------------------------------------
  /// Values of a local block, or nullptr if the block is absent (or not local).
  const double* get_block(int row, int col) const;
  double* get_block(int row, int col);
  const Panel& local() const { return local_; }
  /// Replaces the local blocks (strategies use this); the panel's rows must be local_rows().
  void set_local(Panel panel);
  std::int64_t local_nblocks() const { return local_.nblocks(); }
  /// Collective: number of blocks over all ranks.
  std::int64_t global_nblocks() const;
  /// Collective: fraction of blocks present.
  double occupancy() const;

  // ---- algebra (collective where a reduction is needed) ------------------------------------
  /// `threads` share the work (the kernel's threads, where the caller has a context).
  void scale(double alpha, int threads = 1);
  /// this = alpha * this + beta * other (union of the block patterns). other must have the same
  /// layout; if its distribution differs it is redistributed first. `threads` share the rows.
  void add(double alpha, double beta, const DistMatrix& other, int threads = 1);
  /// Adds alpha to every diagonal element (creating diagonal blocks when absent). Square only.
  void add_identity(double alpha);
  double trace() const;
  /// Collective: the sum of elementwise products. `threads` share the local sum (its last digits
  /// may then depend on how many, as frobenius_norm's).
  double dot(const DistMatrix& other, int threads = 1) const;
  /// Collective. `threads` share the local sum (it then adds their partial sums, so its last
  /// digits may depend on how many).
  double frobenius_norm(int threads = 1) const;
  /// Frobenius norm of every local block, in local block order.
  std::vector<double> block_norms() const;
  /// Drops local blocks whose Frobenius norm is below eps. Returns the number dropped locally.
  /// `threads` share the work (a multiply's filter: the kernel's threads).
  std::int64_t filter(double eps, int threads = 1);
  /// A copy of this matrix on another distribution over the same grid communicator. Collective.
  DistMatrix redistribute(std::shared_ptr<const Distribution> target) const;
  /// The same, counting the exchange in `traffic` (role Other).
  DistMatrix redistribute(std::shared_ptr<const Distribution> target, mpi::Traffic& traffic) const;
  /// Gathers the whole matrix as a dense column-major array (nrows x ncols). root < 0: on every
  /// rank; else only on root (others get an empty vector). For tests and small outputs.
  std::vector<double> to_dense(int root = -1) const;

  /// All blocks of the matrix gathered in block form: (row, col) pairs and their values in the
  /// same order. root < 0: on every rank; else only on root. Collective.
  struct Gathered {
    std::vector<std::int64_t> index;  ///< row0, col0, row1, col1, ...
    std::vector<double> values;       ///< the blocks' values, column-major, one after another
  };
  Gathered gather_blocks(int root = -1) const;

 private:
  // The sum of squares of the local values (their blocks': a panel's area holds nothing else).
  double local_sum_of_squares(int threads) const;
  std::string name_;
  std::shared_ptr<const Distribution> dist_;
  BlockLayout layout_;
  Panel local_;
  std::map<std::pair<int, int>, std::vector<double>> pending_;
};

}  // namespace plexus
