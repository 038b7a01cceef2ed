#pragma once
// What LocalProduct's translation units share (local_multiply.cpp: the ticks' passes;
// local_product_plans.cpp: replaying plans; local_product_finish.cpp: C's panel;
// local_product_last_tick.cpp: the last tick's filter): the threads' work and scratch (the
// threads' loop: threads.hpp), and C's rows put in column order.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <utility>
#include <vector>

#include "plexus/error.hpp"
#include "plexus/local_multiply.hpp"
#include "plexus/memory.hpp"
#include "product_plan.hpp"
#include "threads.hpp"

namespace plexus {

// Index arrays sized by a block count, and the stack buffers: counted under Category::Other and,
// from kPoolMinBytes on, served from the tracker's pool. A multiply creates its accumulators
// afresh, so these would otherwise be freed and allocated again by every multiply; malloc puts
// such mid-size blocks between long-lived small ones and the heap grows with the number of
// multiplies (issue 9: a rank's RSS from 90 to 370 MB over 2,000 multiplies).
template <class T>
using Scratch = memory::vector<T, memory::Category::Other>;
constexpr std::size_t kStackCapacity = 4096;  // 160 KiB of StackEntry

// `values` resized to n with a capacity of n where it had less: resize() alone doubles the
// capacity, and finish() gives back a C far beyond its size with a copy of all of it (the last
// tick's kept blocks and their join).
inline void resize_exactly(MatrixData& values, std::size_t n) {
  values.reserve(n);
  values.resize(n);
}

// Per C row the (column, offset) of its blocks in the shared value area.
using RowLists = std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>>;

// A C row's blocks in column order (C's index, finish; the last tick's filter, keep_large_blocks).
// A row whose blocks are many for the columns they span sets one bit per block in a bitmap of its
// span (and notes the block's offset by its column), then reads the set bits out word by word: its
// blocks plus the span's words (the bitmap of a span of 64 k columns is 8 KB; the offsets are
// touched at the row's columns only). Any other row is sorted, its comparisons about log2 of its
// length each. (Before, each column of the span was visited: an S-E-like C of 400 block columns,
// rows of 29 blocks over spans of 385 columns, spent 150 us a multiply in it, as long as a sort; a
// large random C of 2.3 million blocks, 780 a row over 3,000 columns, took 110-129 ms a multiply in
// the two counting passes over the thread's rows that did this before those visits, whose
// scattered stores missed the caches.) The bitmap (one bit per block column, cleared as it is read)
// and the offsets by column (read only where a bit is set) are made at the first row that needs them.
class ColumnOrder {
 public:
  explicit ColumnOrder(std::int64_t ncols) : ncols_(static_cast<std::size_t>(ncols)) {}
  // emit(col, offset) for each block of `list` (not empty), by column; a column listed twice throws.
  // emit may overwrite the list's entries up to the one it is given.
  template <class Emit>
  void operator()(std::vector<std::pair<std::int64_t, std::int64_t>>& list, Emit&& emit) {
    constexpr std::int64_t kBitmapWordsPerBlock = 2, kBitmapAlways = 8;
    std::int64_t lo = list.front().first, hi = lo;
    for (const auto& entry : list) {
      lo = std::min(lo, entry.first);
      hi = std::max(hi, entry.first);
    }
    const auto n = static_cast<std::int64_t>(list.size());
    const std::int64_t words = (hi - lo) / 64 + 1;
    if (words <= kBitmapWordsPerBlock * n + kBitmapAlways) {
      if (bits_.empty()) {
        bits_.assign(ncols_ / 64 + 1, 0);
        offset_of_.resize(ncols_);  // read only where a bit says the row set it
      }
      std::uint64_t* const bit = bits_.data();
      std::int64_t* const off_of = offset_of_.data();
      bool twice = false;
      for (const auto& [col, off] : list) {
        const std::int64_t at = col - lo;
        const std::uint64_t mask = std::uint64_t{1} << (at & 63);
        std::uint64_t& word = bit[at >> 6];
        twice |= (word & mask) != 0;
        word |= mask;
        off_of[col] = off;
      }
      if (twice) {
        for (std::int64_t wd = 0; wd < words; ++wd) bit[wd] = 0;
        throw duplicate();
      }
      for (std::int64_t wd = 0; wd < words; ++wd) {
        std::uint64_t x = bit[wd];
        bit[wd] = 0;
        for (const std::int64_t base = lo + 64 * wd; x != 0; x &= x - 1) {
          const std::int64_t col = base + std::countr_zero(x);
          emit(col, off_of[col]);
        }
      }
    } else {
      std::sort(list.begin(), list.end());
      if (std::adjacent_find(list.begin(), list.end(),
                             [](const auto& x, const auto& y) { return x.first == y.first; }) != list.end())
        throw duplicate();
      for (const auto& [col, off] : list) emit(col, off);
    }
  }

 private:
  static Error duplicate() { return Error("LocalProduct::finish", "a row of C lists one of its blocks twice"); }
  std::size_t ncols_;
  memory::vector<std::uint64_t, memory::Category::Other> bits_;
  memory::vector<std::int64_t, memory::Category::Other> offset_of_;
};

// Row lists of finished products, emptied but with their room, for the next product to take: a
// multiply without a plan reserves every row's list, so each row cost an allocation and a free a
// multiply (S-E-like, 400 rows: about a tenth of such a multiply in malloc and free). Kept up to a
// bound on their room (local_product_finish.cpp); safe to call from any thread.
RowLists take_row_lists();
void give_back_row_lists(RowLists&& rows) noexcept;

// The C rows a thread owns.
struct LocalProduct::ThreadWork {
  int row_begin = 0, row_end = 0;
  RowLists rows;                // per owned row
  Scratch<std::int64_t> c_off;  // global block col -> offset for the current row, -1 if absent
  // (row, position in its list) of the blocks new this tick: for the symbolic pass's offsets, and
  // for a plan's record (the one pass fills it only while it records). Pooled: a large C's tick adds
  // millions (a 64 MB array, mapped afresh by every multiply when it came from malloc).
  Scratch<std::pair<int, std::size_t>> fresh;
  std::vector<std::int64_t> tile_cursor;  // per block of the current A row: where its B row goes on
  std::int64_t fresh_values = 0;          // values of the new blocks, placed from `base` on
  std::int64_t base = 0;
  Scratch<StackEntry> stack;  // kStackCapacity entries, held from the constructor on
  Scratch<int> placed;        // the columns of the blocks a batch of products placed (kStackCapacity)
  std::vector<int> counted;   // the columns a row's count marked (CountPass)
  LocalMultiplyStats stats;
  plan::ThreadTick record;      // the thread's share of the tick, when the product records a plan
  bool record_dropped = false;  // the share outgrew the plans' room this tick
};

// A thread's share of C's room in a tick of several threads' one pass (local_product_slabs.hpp):
// its new blocks go from `begin` on, the next at `next`, none beyond `end`.
struct LocalProduct::Slab {
  std::int64_t begin = 0, next = 0, end = 0;
};

// The A rows (of `nrows`, whose C rows a_c_row lists, ascending) whose C row lies in [c_begin,
// c_end), a thread's rows: a contiguous range [first, second).
inline std::pair<int, int> a_rows_in(const int* a_c_row, int nrows, int c_begin, int c_end) {
  const auto row = [&](int c_row) {
    return static_cast<int>(std::lower_bound(a_c_row, a_c_row + nrows, c_row) - a_c_row);
  };
  return {row(c_begin), row(c_end)};
}

// Whether on-the-fly filtering keeps every product of a tick: an A block of norm a (row r, block
// column k) times each block of B's row k, of norm b, is kept where a * b >= row r's eps, so all
// are where a times the smallest norm of B's row k reaches it (a filtered tick may then go dense:
// local_product_dense.cpp). `k_count`: the block rows of B.
bool filter_keeps_every_product(const PanelView& a, const PanelView& b, const double* a_norms, const double* b_norms,
                                const int* a_c_row, const std::vector<double>& row_eps, int k_count);

// The block norms of panel `b` (block_norms) from B's values given as a dense matrix laid out as
// `layout`: each block is gathered first, so that its norm is summed exactly as block_norms sums
// it and the filter decides alike.
void dense_block_norms(const double* dense, const DenseLayout& layout, const PanelView& b, const BlockLayout& b_layout,
                       double* norms);

}  // namespace plexus
