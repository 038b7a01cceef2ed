// The order of a product's stack entries: each C block gets its products in ascending k on any
// number of threads, and wide C rows are multiplied in column tiles (ColumnTiles) with the same
// result, sparse ones untiled.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
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
// The reference product, recording every stack entry in the order the kernel got it (threads
// call process() concurrently: each stack is appended whole, under a lock).
class EntryRecordingKernel final : public HostKernel {
 public:
  std::string name() const override { return "entry-recording"; }
  void process(const StackEntry* stack, std::int64_t n, const double* a, const double* b, double* c) override {
    {
      const std::lock_guard<std::mutex> lock(mutex);
      entries.insert(entries.end(), stack, stack + n);
    }
    reference.process(stack, n, a, b, c);
  }
  std::mutex mutex;
  std::vector<StackEntry> entries;
  ReferenceKernel reference;
};
}  // namespace

// Each C block gets its products in A's block order within the row (ascending k here), whatever
// the number of threads: the rounding of a block's sum does not depend on how the work is split.
TEST(LocalProduct, EachCBlockGetsItsProductsInAscendingK) {
  const BlockSizes s = BlockSizes::cyclic(13, {2, 3});
  const int nb = s.count();
  BlockLayout l{s, s};
  Panel a = make_panel(l, 71, [](int i, int k) { return (i * 3 + k) % 4 != 0; });
  Panel b = make_panel(l, 72, [](int k, int j) { return (k + 2 * j) % 3 != 1; });
  std::vector<int> rows(static_cast<std::size_t>(nb));
  for (int i = 0; i < nb; ++i) rows[static_cast<std::size_t>(i)] = i;
  for (int threads : {1, 2}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    EntryRecordingKernel k;
    LocalProduct lp(Panel(rows).view(), l, k, threads, {});
    lp.multiply(a.view(), l, b.view(), l);
    const Panel c = lp.finish();
    const std::int64_t n = s.total();
    std::vector<double> ref(static_cast<std::size_t>(n * n), 0.0);
    test::dense_gemm(n, n, n, 1.0, dense_of(a.view(), l), dense_of(b.view(), l), 1.0, ref);
    EXPECT_LE(test::relative_error(dense_of(c.view(), l), ref), 1e-13);
    // Offsets back to block coordinates.
    std::map<std::int64_t, std::pair<int, int>> a_at, c_at;
    std::map<std::int64_t, int> b_row_at;
    const PanelView av = a.view(), bv = b.view(), cv = c.view();
    for (int r = 0; r < av.nrows; ++r)
      for (std::int64_t q = av.row_ptr[r]; q < av.row_ptr[r + 1]; ++q)
        a_at[av.offsets[q]] = {static_cast<int>(av.row_ids[r]), static_cast<int>(av.cols[q])};
    for (int r = 0; r < bv.nrows; ++r)
      for (std::int64_t q = bv.row_ptr[r]; q < bv.row_ptr[r + 1]; ++q)
        b_row_at[bv.offsets[q]] = static_cast<int>(bv.row_ids[r]);
    for (int r = 0; r < cv.nrows; ++r)
      for (std::int64_t q = cv.row_ptr[r]; q < cv.row_ptr[r + 1]; ++q)
        c_at[cv.offsets[q]] = {static_cast<int>(cv.row_ids[r]), static_cast<int>(cv.cols[q])};
    ASSERT_EQ(k.entries.size(), static_cast<std::size_t>(lp.stats().products));
    std::map<std::int64_t, int> last_k;  // per C block: the k of its previous product
    for (const StackEntry& e : k.entries) {
      const auto [i, kk] = a_at.at(e.a);
      ASSERT_EQ(b_row_at.at(e.b), kk);
      ASSERT_EQ(c_at.at(e.c).first, i);
      auto [it, fresh] = last_k.emplace(e.c, kk);
      if (!fresh) {
        EXPECT_LT(it->second, kk) << "C block (" << i << ", " << c_at.at(e.c).second << ")";
        it->second = kk;
      }
    }
    // Every product of the dense pattern was made once.
    std::int64_t expect = 0;
    for (int i = 0; i < nb; ++i)
      for (int kk = 0; kk < nb; ++kk)
        for (int j = 0; j < nb; ++j) expect += (i * 3 + kk) % 4 != 0 && (kk + 2 * j) % 3 != 1;
    EXPECT_EQ(lp.stats().products, expect);
  }
}

// A C row wider than a core's cache is multiplied in column tiles (local_multiply.cpp,
// ColumnTiles): the A blocks of the row come round once per tile instead of once. The result and
// the number of products stay those of the untiled product in every pass (1 thread with and
// without room reserved for C, 2 threads), with B rows out of column order (each block is taken
// once, in whichever tile its row's cursor reaches it), with a B row missing, and with filtering.
// With B rows sorted by column each C block still gets its products in ascending k. A backend
// that keeps C on a device gets the row untiled.
TEST(LocalProduct, WideRowsAreMultipliedInColumnTilesWithTheSameResult) {
  const BlockSizes rows = BlockSizes::uniform(3, 8), inner = BlockSizes::uniform(4, 8);
  const BlockSizes cols = BlockSizes::uniform(1400, 8);  // a dense C row of 700 KB
  const BlockLayout la{rows, inner}, lb{inner, cols}, lc{rows, cols};
  Panel a = make_panel(la, 81, [](int i, int k) { return (i + k) % 3 != 2; });
  const Panel b = make_panel(lb, 82, [](int k, int j) { return (k * 5 + j) % 3 != 0; });
  const PanelView bv = b.view();
  // The same B with the second and the second-to-last block of every row swapped (the row's span,
  // from its first and last block, stays; its order does not).
  std::vector<std::int64_t> scols(bv.cols, bv.cols + bv.nblocks), soffsets(bv.offsets, bv.offsets + bv.nblocks);
  for (int r = 0; r < bv.nrows; ++r) {
    const std::int64_t lo = bv.row_ptr[r] + 1, hi = bv.row_ptr[r + 1] - 2;
    ASSERT_LT(lo, hi);
    std::swap(scols[static_cast<std::size_t>(lo)], scols[static_cast<std::size_t>(hi)]);
    std::swap(soffsets[static_cast<std::size_t>(lo)], soffsets[static_cast<std::size_t>(hi)]);
  }
  PanelView b_shuffled = bv;
  b_shuffled.cols = scols.data();
  b_shuffled.offsets = soffsets.data();
  b_shuffled.index = nullptr;
  PanelView b_no_row0 = bv;  // k = 0 has no B row: A's blocks of column 0 have nothing to meet
  b_no_row0.nrows = bv.nrows - 1;
  b_no_row0.row_ids = bv.row_ids + 1;
  b_no_row0.row_ptr = bv.row_ptr + 1;
  b_no_row0.index = nullptr;
  const std::int64_t c_values = rows.total() * cols.total();
  struct Case {
    std::string name;
    PanelView b;
    bool sorted;
    int threads;
    std::int64_t expected_values;  // > 0: room reserved, one pass on one thread
    bool device = false;           // a backend that keeps C on a device: not tiled
  };
  const std::vector<Case> cases = {
      {"sorted, two passes", bv, true, 1, 0},
      {"sorted, one pass", bv, true, 1, c_values},
      {"sorted, 2 threads", bv, true, 2, 0},
      {"shuffled, two passes", b_shuffled, false, 1, 0},
      {"shuffled, one pass", b_shuffled, false, 1, c_values},
      {"shuffled, 2 threads", b_shuffled, false, 2, 0},
      {"no B row 0, one pass", b_no_row0, true, 1, c_values},
      {"device backend", bv, true, 1, 0, true},
  };
  const PanelView av = a.view();
  std::map<std::int64_t, int> a_row_of;  // A offset -> its CSR row
  for (int r = 0; r < av.nrows; ++r)
    for (std::int64_t q = av.row_ptr[r]; q < av.row_ptr[r + 1]; ++q) a_row_of[av.offsets[q]] = r;
  for (const Case& cs : cases) {
    SCOPED_TRACE(cs.name);
    std::vector<double> ref(static_cast<std::size_t>(c_values), 0.0);
    test::dense_gemm(rows.total(), cols.total(), inner.total(), 1.0, dense_of(av, la), dense_of(cs.b, lb), 1.0, ref);
    std::int64_t expect_products = 0;
    for (std::int64_t q = 0; q < av.nblocks; ++q)
      for (int r = 0; r < cs.b.nrows; ++r)
        if (cs.b.row_ids[r] == av.cols[q]) expect_products += cs.b.row_ptr[r + 1] - cs.b.row_ptr[r];
    test::DeviceLike<EntryRecordingKernel> device;
    EntryRecordingKernel host;
    Kernel& kernel = cs.device ? static_cast<Kernel&>(device) : host;
    EntryRecordingKernel& k = cs.device ? device.inner : host;
    LocalProduct lp(Panel(std::vector<int>{0, 1, 2}).view(), lc, kernel, cs.threads, {}, {}, 1.0, cs.expected_values);
    lp.multiply(av, la, cs.b, lb);
    const Panel c = lp.finish();
    EXPECT_LE(test::relative_error(dense_of(c.view(), lc), ref), 1e-13);
    EXPECT_EQ(lp.stats().products, expect_products);
    ASSERT_EQ(k.entries.size(), static_cast<std::size_t>(expect_products));
    std::map<std::int64_t, std::vector<std::int64_t>> a_of_c;  // per C block, its products' A offsets
    std::vector<int> switches(3, 0);                           // per A row, how often the A block changes
    for (std::size_t e = 0; e < k.entries.size(); ++e) {
      a_of_c[k.entries[e].c].push_back(k.entries[e].a);
      if (e == 0 || k.entries[e].a != k.entries[e - 1].a)
        ++switches[static_cast<std::size_t>(a_row_of.at(k.entries[e].a))];
    }
    if (cs.sorted) {
      for (const auto& [c_off, as] : a_of_c)
        EXPECT_TRUE(std::is_sorted(as.begin(), as.end())) << "C block at " << c_off;  // A's offsets ascend with k
    }
    if (cs.threads == 1) {  // a row's A blocks come round once per tile: more runs than A blocks
      for (int r = 0; r < 3; ++r) {
        if (cs.device)
          EXPECT_EQ(switches[static_cast<std::size_t>(r)], av.row_ptr[r + 1] - av.row_ptr[r]) << "row " << r;
        else
          EXPECT_GT(switches[static_cast<std::size_t>(r)], av.row_ptr[r + 1] - av.row_ptr[r]) << "row " << r;
      }
    }
  }
  // Filtering: A's block (1, 2) made small enough that all its products are skipped.
  const std::int64_t small = a.find(1, 2);
  ASSERT_GE(small, 0);
  for (int e = 0; e < 64; ++e) a.data()[static_cast<std::size_t>(a.offset(small) + e)] *= 1e-12;
  std::vector<double> ref(static_cast<std::size_t>(c_values), 0.0);
  {
    Panel a_without = make_panel(la, 81, [](int i, int kk) { return (i + kk) % 3 != 2 && !(i == 1 && kk == 2); });
    test::dense_gemm(rows.total(), cols.total(), inner.total(), 1.0, dense_of(a_without.view(), la), dense_of(bv, lb),
                     1.0, ref);
  }
  EntryRecordingKernel k;
  LocalProduct lp(Panel(std::vector<int>{0, 1, 2}).view(), lc, k, 1, std::vector<double>(3, 1e-6));
  lp.multiply(a.view(), la, bv, lb);
  EXPECT_EQ(lp.stats().skipped, bv.row_ptr[3] - bv.row_ptr[2]);
  const Panel c = lp.finish();
  EXPECT_LE(test::relative_error(dense_of(c.view(), lc), ref), 1e-13);
}

// A row whose products are few for the columns they span touches at most one block a product:
// 42 products over 1,300 columns of blocks of 8 are at most 21 KB of C, not the span's 650 KB,
// so the row is not cut into tiles, and each A block's products run together.
TEST(LocalProduct, SparseRowsSpanningManyColumnsAreNotCutIntoTiles) {
  const BlockSizes rows = BlockSizes::uniform(3, 8), inner = BlockSizes::uniform(4, 8);
  const BlockSizes cols = BlockSizes::uniform(1400, 8);
  const BlockLayout la{rows, inner}, lb{inner, cols}, lc{rows, cols};
  const Panel a = make_panel(la, 83, [](int i, int k) { return (i + k) % 4 != 3; });
  const Panel b = make_panel(lb, 84, [](int k, int j) { return (j + 31 * k) % 100 == 0; });  // 14 a row
  const PanelView av = a.view(), bv = b.view();
  for (int r = 0; r < bv.nrows; ++r)
    ASSERT_GE(bv.cols[bv.row_ptr[r + 1] - 1] - bv.cols[bv.row_ptr[r]], 1200) << "the premise: B rows span wide";
  std::vector<double> ref(static_cast<std::size_t>(rows.total() * cols.total()), 0.0);
  test::dense_gemm(rows.total(), cols.total(), inner.total(), 1.0, dense_of(av, la), dense_of(bv, lb), 1.0, ref);
  for (const std::int64_t expected : {std::int64_t{0}, rows.total() * cols.total()}) {  // two passes, one pass
    SCOPED_TRACE(expected > 0 ? "one pass" : "two passes");
    EntryRecordingKernel k;
    LocalProduct lp(Panel(std::vector<int>{0, 1, 2}).view(), lc, k, 1, {}, {}, 1.0, expected);
    lp.multiply(av, la, bv, lb);
    const Panel c = lp.finish();
    EXPECT_LE(test::relative_error(dense_of(c.view(), lc), ref), 1e-13);
    std::int64_t runs = 0;  // runs of entries with one A block
    for (std::size_t e = 0; e < k.entries.size(); ++e) runs += e == 0 || k.entries[e].a != k.entries[e - 1].a ? 1 : 0;
    EXPECT_EQ(runs, av.nblocks);
  }
}
