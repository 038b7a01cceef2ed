#pragma once
// C's columns in tiles for one row of a local product's products (local_multiply.cpp). Internal
// to core.
#include <algorithm>
#include <cstdint>
#include <limits>

#include "local_product_work.hpp"
#include "plexus/layout.hpp"
#include "plexus/panel.hpp"

namespace plexus {

// C's columns in tiles for one row of products. A row's products sweep the C row once per block
// of the A row; when the C row is larger than a core's second-level cache (H2O-like blocks of 23:
// 450 blocks of 4.2 KB, 1.9 MB), each sweep fetches C's blocks from memory again. In tiles of
// about kTileBytes of C, every block of a tile gets all its products of the row while the tile is
// in cache; B's blocks stream as before. Rows that span up to kTileAboveBytes are not cut: they
// stay in cache anyway, and cutting splits the runs of products that share an A block (S-E-like
// rows of blocks of 6 span about 76 KB). Tuned with plexus-bench on a core with 2 MB of L2
// (docs/performance.md, "C's columns in tiles"). The tiles cover every column (the first and the
// last reach to the ends), so which product falls into which tile decides only the order. Host
// backends only: a device backend's C is in the device's memory, not in this core's cache.
constexpr std::int64_t kTileBytes = std::int64_t{128} << 10;
constexpr std::int64_t kTileAboveBytes = std::int64_t{512} << 10;
constexpr int kMaxTiles = 64;
constexpr std::int64_t kMinRun = 2;

struct ColumnTiles {
  int count = 1;                     // one tile (the whole row) until plan() cuts one
  std::int64_t end[kMaxTiles] = {};  // tile t ends before block column end[t] (the last: never)

  // The span of the row's products (from the first and last block of each B row it takes: a
  // Panel's rows are sorted; in any other order the span is only a worse guess), cut into tiles
  // of about kTileBytes of what the row's products can touch of C (none below kTileAboveBytes).
  void plan(const PanelView& a, int ar, const PanelView& b, const Scratch<int>& b_row_of, const BlockSizes& cols,
            int widest, int m) {
    count = 1;
    end[0] = std::numeric_limits<std::int64_t>::max();
    std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = -1, products = 0, runs = 0;
    for (std::int64_t ab = a.row_ptr[ar]; ab < a.row_ptr[ar + 1]; ++ab) {
      const int br = b_row_of[static_cast<std::size_t>(a.cols[ab])];
      if (br < 0 || b.row_ptr[br] == b.row_ptr[br + 1]) continue;
      lo = std::min(lo, b.cols[b.row_ptr[br]]);
      hi = std::max(hi, b.cols[b.row_ptr[br + 1] - 1]);
      products += b.row_ptr[br + 1] - b.row_ptr[br];
      ++runs;
    }
    if (hi < lo || lo < 0 || hi >= cols.count()) return;
    const std::int64_t v0 = cols.offset(static_cast<int>(lo)), span = cols.offset(static_cast<int>(hi) + 1) - v0;
    // What the row's products touch of C: the span, or fewer columns where the products are few
    // for it (a random sparse row: 900 products over 3,000 columns touch at most 900 of them, a
    // C row of 259 KB for blocks of 6, not 864): at most one block of the widest (`widest`, C's
    // widest block column) a product.
    const std::int64_t touched = std::min(span, products * std::max(1, widest));
    const std::int64_t bytes = touched * m * static_cast<std::int64_t>(sizeof(double));
    if (bytes <= kTileAboveBytes) return;
    // A sparse row may span far more than it holds: no more tiles than leave each block of the
    // A row about kMinRun products per tile.
    const std::int64_t most = std::min<std::int64_t>(kMaxTiles, products / (kMinRun * runs));
    count = static_cast<int>(std::min(most, (bytes + kTileBytes - 1) / kTileBytes));
    if (count <= 1) {
      count = 1;
      return;
    }
    for (int t = 0; t + 1 < count; ++t) end[t] = cols.block_of(v0 + span * (t + 1) / count);
    end[count - 1] = std::numeric_limits<std::int64_t>::max();
  }
};

}  // namespace plexus
