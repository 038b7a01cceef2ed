// LocalProduct::finish: C's index, each row's blocks in ascending columns, however they came.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dense_reference.hpp"
#include "local_product_testing.hpp"
#include "plexus/kernel.hpp"
#include "plexus/local_multiply.hpp"

using namespace plexus;

using test::dense_of;
using test::make_panel;

namespace {

// Multiplies the panel pairs (a[t], b[t]) tick by tick into an empty C on 1, 2 and 3 threads and
// checks that every row's blocks ascend and that C is the dense product; returns the last C.
// `at_least`: C's blocks, at least (the case's premise).
Panel expect_sorted_rows_and_dense_result(const BlockSizes& rows_s, const BlockLayout& la, const BlockLayout& lb,
                                          const BlockLayout& lc, const std::vector<Panel>& a,
                                          const std::vector<Panel>& b, std::int64_t at_least) {
  std::vector<int> rows(static_cast<std::size_t>(rows_s.count()));
  for (int i = 0; i < rows_s.count(); ++i) rows[static_cast<std::size_t>(i)] = i;
  const Panel empty(rows);
  std::vector<double> ref(static_cast<std::size_t>(lc.rows.total() * lc.cols.total()), 0.0);
  for (std::size_t t = 0; t < a.size(); ++t)
    test::dense_gemm(lc.rows.total(), lc.cols.total(), la.cols.total(), 1.0, dense_of(a[t].view(), la),
                     dense_of(b[t].view(), lb), 1.0, ref);
  Panel c;
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    ReferenceKernel k;
    LocalProduct lp(empty.view(), lc, k, threads, {});
    for (std::size_t t = 0; t < a.size(); ++t) lp.multiply(a[t].view(), la, b[t].view(), lb);
    c = lp.finish();
    const PanelView v = c.view();
    EXPECT_GE(v.nblocks, at_least);
    for (int r = 0; r < v.nrows; ++r)
      for (std::int64_t q = v.row_ptr[r] + 1; q < v.row_ptr[r + 1]; ++q) EXPECT_LT(v.cols[q - 1], v.cols[q]);
    EXPECT_LE(test::relative_error(dense_of(v, lc), ref), 1e-14);
  }
  return c;
}

}  // namespace

// finish() orders each C row's blocks by column: rows with many blocks for the columns they span
// through a bitmap of the span, rows of a few blocks far apart by a sort. Ticks bring each row's
// blocks out of order (tick t's columns lie below tick t - 1's, or between them), so nothing comes
// sorted by chance.
TEST(LocalProduct, FinishGivesEveryRowItsBlocksInAscendingColumns) {
  const BlockSizes rows_s = BlockSizes::cyclic(24, {2, 3});
  {
    SCOPED_TRACE("24 columns, rows with many blocks");
    BlockLayout l{rows_s, rows_s};
    std::vector<Panel> a, b;
    for (int t = 0; t < 3; ++t) {
      // Tick t brings k = t only, and B's row t holds the columns from the top down by tick.
      a.push_back(make_panel(l, 81 + t, [t](int, int k) { return k == t; }));
      b.push_back(make_panel(l, 91 + t, [t](int k, int j) { return k == t && j >= 16 - 8 * t && j < 24 - 8 * t; }));
    }
    expect_sorted_rows_and_dense_result(rows_s, l, l, l, a, b, 24 * 24 / 2);
  }
  {
    SCOPED_TRACE("3,000 columns, rows of 18 blocks far apart and rows of many (both through the bitmap)");
    const BlockSizes wide = BlockSizes::cyclic(3000, {1});
    const BlockSizes ks = BlockSizes::cyclic(4, {2, 3});
    BlockLayout la{rows_s, ks}, lb{ks, wide}, lc{rows_s, wide};
    std::vector<Panel> a, b;
    for (int t = 0; t < 3; ++t) {  // even rows: 6 columns a tick, 500 apart, interleaved by tick
      a.push_back(make_panel(la, 81 + t, [t](int i, int k) { return k == t && i % 2 == 0; }));
      b.push_back(make_panel(lb, 91 + t, [t](int k, int j) { return k == t && j % 500 == 15 - 7 * t; }));
    }
    // Odd rows: 1,500 columns in one tick.
    a.push_back(make_panel(la, 84, [](int i, int k) { return k == 3 && i % 2 == 1; }));
    b.push_back(make_panel(lb, 94, [](int k, int j) { return k == 3 && j % 2 == 0; }));
    const Panel c = expect_sorted_rows_and_dense_result(rows_s, la, lb, lc, a, b, 12 * 1500);
    const PanelView v = c.view();
    for (int r = 0; r < v.nrows; ++r) {  // the premise: rows of both densities
      const std::int64_t n = v.row_ptr[r + 1] - v.row_ptr[r];
      if (v.row_ids[r] % 2 == 0) {
        ASSERT_EQ(n, 18);
        EXPECT_GE(v.cols[v.row_ptr[r + 1] - 1] - v.cols[v.row_ptr[r]], 2000);
      } else {
        ASSERT_EQ(n, 1500);
      }
    }
  }
  {
    // A bitmap of such a row's span would be thousands of words for its few blocks: these rows
    // are sorted.
    SCOPED_TRACE("200,000 columns, rows of 15 blocks about 10,000 apart");
    const BlockSizes wide = BlockSizes::cyclic(200000, {1});
    const BlockSizes ks = BlockSizes::cyclic(3, {2});
    BlockLayout la{rows_s, ks}, lb{ks, wide}, lc{rows_s, wide};
    std::vector<Panel> a, b;
    for (int t = 0; t < 3; ++t) {
      a.push_back(make_panel(la, 81 + t, [t](int, int k) { return k == t; }));
      b.push_back(make_panel(lb, 91 + t, [t](int k, int j) { return k == t && j % 40000 == 39999 - 9999 * t; }));
    }
    const Panel c = expect_sorted_rows_and_dense_result(rows_s, la, lb, lc, a, b, 24 * 15);
    const PanelView v = c.view();
    for (int r = 0; r < v.nrows; ++r) {  // the premise: 15 blocks spread over most of the row
      ASSERT_EQ(v.row_ptr[r + 1] - v.row_ptr[r], 15);
      EXPECT_GE(v.cols[v.row_ptr[r + 1] - 1] - v.cols[v.row_ptr[r]], 150000);
    }
  }
}
