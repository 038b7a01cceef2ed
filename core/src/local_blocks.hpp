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
  LocalBlocks(const LocalBlocks&) = delete;  // its finders refer to its own layout
  LocalBlocks& operator=(const LocalBlocks&) = delete;

  /// The block row and column of entry (r, c) (0-based): BlockSizes::block_of, remembered for the
  /// last two blocks of each dimension (a file gives entries in runs within a block, and a
  /// symmetric one alternates between an entry and its mirror).
  int row_block(std::int64_t r) { return rows_.find(r); }
  int col_block(std::int64_t c) { return cols_.find(c); }

  /// The entry (r, c) (0-based) is v, given on `line`; kept when this rank holds its block. An
  /// entry given again is not stored: the first line doing so is remembered.
  void store(std::int64_t r, std::int64_t c, double v, std::int64_t line) {
    store(row_block(r), col_block(c), r, c, v, line);
  }
  /// The same, where the entry's block (i, j) is known.
  void store(int i, int j, std::int64_t r, std::int64_t c, double v, std::int64_t line) {
    if (!m_.is_local(i, j)) return;
    Block& b = block(i, j);
    const int mi = layout_.rows.size(i);
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
    recent_[0] = recent_[1] = Recent{};
    m.set_local(std::move(panel));
  }

 private:
  struct Block {
    std::vector<double> values;
    std::vector<bool> given;
  };
  // The blocks of one dimension whose index ranges were asked for last (two of them).
  class Finder {
   public:
    explicit Finder(const BlockSizes& sizes) : sizes_(sizes) {}
    int find(std::int64_t i) {
      for (const Hit& h : hits_)
        if (i >= h.begin && i < h.end) return h.block;
      const int b = sizes_.block_of(i);  // checks the range
      hits_[1] = hits_[0];
      hits_[0] = {sizes_.offset(b), sizes_.offset(b) + sizes_.size(b), b};
      return b;
    }

   private:
    struct Hit {
      std::int64_t begin = 0, end = 0;
      int block = -1;
    };
    const BlockSizes& sizes_;
    Hit hits_[2];
  };

  // Block (i, j), made (zeroed) when first asked for; the last two asked for are remembered (the
  // map's nodes stay where they are).
  Block& block(int i, int j) {
    for (const Recent& r : recent_)
      if (r.block != nullptr && r.i == i && r.j == j) return *r.block;
    Block& b = blocks_[{i, j}];
    if (b.values.empty()) {
      const std::size_t n =
          static_cast<std::size_t>(layout_.rows.size(i)) * static_cast<std::size_t>(layout_.cols.size(j));
      b.values.assign(n, 0.0);
      b.given.assign(n, false);
    }
    recent_[1] = recent_[0];
    recent_[0] = {i, j, &b};
    return b;
  }

  struct Recent {
    int i = -1, j = -1;
    Block* block = nullptr;
  };
  const DistMatrix& m_;
  BlockLayout layout_;
  Finder rows_{layout_.rows}, cols_{layout_.cols};
  std::map<std::pair<int, int>, Block> blocks_;
  Recent recent_[2];
  std::int64_t duplicate_line_ = 0;
};

}  // namespace plexus::detail
