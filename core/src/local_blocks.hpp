#pragma once
// The blocks of a matrix that one rank keeps while a file is read entry by entry (by every rank,
// or by rank 0, which sends each rank the entries of its blocks).
// Private to core: the Matrix Market and CP2K CSR readers share it.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "plexus/matrix.hpp"
#include "plexus/mpi.hpp"

namespace plexus::detail {

class LocalBlocks {
 public:
  explicit LocalBlocks(const DistMatrix& m) : m_(m), layout_(m.layout()) {}

  /// The entry (r, c) (0-based) is v, given on `line`; kept when this rank holds its block. An
  /// entry given again is not stored: the first line doing so is remembered.
  void store(std::int64_t r, std::int64_t c, double v, std::int64_t line) {
    const int i = layout_.rows.block_of(r), j = layout_.cols.block_of(c);
    if (!m_.is_local(i, j)) return;
    auto& b = blocks_[{i, j}];
    const int mi = layout_.rows.size(i);
    if (b.values.empty()) {
      const std::size_t n = static_cast<std::size_t>(mi) * static_cast<std::size_t>(layout_.cols.size(j));
      b.values.assign(n, 0.0);
      b.given.assign(n, false);
    }
    const auto k = static_cast<std::size_t>((r - layout_.rows.offset(i)) + (c - layout_.cols.offset(j)) * mi);
    if (b.given[k]) {
      if (duplicate_line_ == 0) duplicate_line_ = line;
      return;
    }
    b.given[k] = true;
    b.values[k] = v;
  }

  /// The first line, over all ranks, that gave an entry again (the rank holding it saw it), or 0.
  /// Collective over `comm`.
  std::int64_t first_duplicate_line(MPI_Comm comm) const {
    std::int64_t first = duplicate_line_ > 0 ? duplicate_line_ : std::numeric_limits<std::int64_t>::max();
    mpi::check(MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT64_T, MPI_MIN, comm), "MPI_Allreduce");
    return first == std::numeric_limits<std::int64_t>::max() ? 0 : first;
  }

  /// The blocks as the local blocks of `m` (the matrix given to the constructor).
  void move_into(DistMatrix& m) {
    Panel panel(m.distribution().local_rows());
    for (auto& [ij, b] : blocks_)
      std::copy(b.values.begin(), b.values.end(),
                panel.append_block(panel.row_index(ij.first), ij.second, static_cast<int>(b.values.size())));
    blocks_.clear();
    m.set_local(std::move(panel));
  }

 private:
  struct Block {
    std::vector<double> values;
    std::vector<bool> given;
  };
  const DistMatrix& m_;
  BlockLayout layout_;
  std::map<std::pair<int, int>, Block> blocks_;
  std::int64_t duplicate_line_ = 0;
};

}  // namespace plexus::detail
