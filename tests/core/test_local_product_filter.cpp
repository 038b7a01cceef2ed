// On-the-fly filtering in the local product: the products of blocks whose norms multiply to less
// than the row's threshold are skipped, counted, and nothing else changes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
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
// Adds block A(ab) (row i, column kk) times block B(bb) (row kk, column j) into the dense
// column-major C of n = s.total() rows, at block (i, j): the reference the filter tests compare with.
void add_block_product(std::vector<double>& ref, const BlockSizes& s, const Panel& a, std::int64_t ab, const Panel& b,
                       std::int64_t bb, int i, int kk, int j) {
  const std::int64_t n = s.total();
  const int m = s.size(i), kn = s.size(kk), nn = s.size(j);
  for (int c2 = 0; c2 < nn; ++c2)
    for (int l2 = 0; l2 < kn; ++l2)
      for (int r = 0; r < m; ++r)
        ref[static_cast<std::size_t>((s.offset(j) + c2) * n + s.offset(i) + r)] +=
            a.data()[static_cast<std::size_t>(a.offset(ab) + r + l2 * m)] *
            b.data()[static_cast<std::size_t>(b.offset(bb) + l2 + c2 * kn)];
}

// Independent: the block-by-block sums of the products of two full block panels (every block
// present) that pass |a||b| >= eps (an, bn: the blocks' norms), and how many do not.
std::vector<double> filtered_reference(const BlockSizes& s, const Panel& a, const std::vector<double>& an,
                                       const Panel& b, const std::vector<double>& bn, double eps,
                                       std::int64_t& skipped) {
  const std::int64_t n = s.total();
  std::vector<double> ref(static_cast<std::size_t>(n * n), 0.0);
  skipped = 0;
  for (int i = 0; i < s.count(); ++i)
    for (int kk = 0; kk < s.count(); ++kk)
      for (int j = 0; j < s.count(); ++j) {
        const std::int64_t ab = a.find(i, kk), bb = b.find(kk, j);
        if (an[static_cast<std::size_t>(ab)] * bn[static_cast<std::size_t>(bb)] < eps) {
          ++skipped;
          continue;
        }
        add_block_product(ref, s, a, ab, b, bb, i, kk, j);
      }
  return ref;
}
}  // namespace

TEST(LocalProduct, FilteringSkipsExactlyTheSmallProducts) {
  const BlockSizes s = BlockSizes::cyclic(6, {5, 13});
  BlockLayout l{s, s};
  Panel a = make_panel(l, 7, [](int, int) { return true; });
  Panel b = make_panel(l, 8, [](int, int) { return true; });
  // Scale some blocks down so their products fall below the threshold.
  for (std::int64_t q = 0; q < a.nblocks(); q += 3)
    for (int e = 0; e < 25; ++e) a.data()[static_cast<std::size_t>(a.offset(q) + e)] *= 1e-9;
  const std::vector<double> an = block_norms(a.view(), l), bn = block_norms(b.view(), l);
  std::vector<double> eps(6, 1e-6);
  for (int threads : {1, 2}) {  // one pass, and the symbolic and numeric passes
    SCOPED_TRACE(std::to_string(threads) + " threads");
    ReferenceKernel k;
    LocalProduct lp(Panel(std::vector<int>{0, 1, 2, 3, 4, 5}).view(), l, k, threads, eps);
    lp.multiply(a.view(), l, b.view(), l);
    const std::int64_t skipped = lp.stats().skipped;
    Panel c = lp.finish();
    std::int64_t expect_skipped = 0;
    const std::vector<double> ref = filtered_reference(s, a, an, b, bn, 1e-6, expect_skipped);
    EXPECT_GT(expect_skipped, 0);
    EXPECT_EQ(skipped, expect_skipped);
    EXPECT_LE(test::relative_error(dense_of(c.view(), l), ref), 1e-13);
  }
}

// One panel as both operands (X * X) takes its norms once; a panel over the same index object with
// other values is another operand, with norms of its own. Both against the independent sums.
TEST(LocalProduct, FilteringAPanelByItselfAndByAnotherOnItsIndex) {
  const BlockSizes s = BlockSizes::cyclic(6, {5, 13});
  BlockLayout l{s, s};
  Panel a = make_panel(l, 9, [](int, int) { return true; });
  for (std::int64_t q = 0; q < a.nblocks(); q += 4)
    for (int e = 0; e < 25; ++e) a.data()[static_cast<std::size_t>(a.offset(q) + e)] *= 1e-9;
  // The same index, other values: the blocks scaled down are others.
  MatrixData other(a.data().begin(), a.data().end());
  for (std::int64_t q = 0; q < a.nblocks(); ++q)
    for (int e = 0; e < 25; ++e)
      other[static_cast<std::size_t>(a.offset(q) + e)] *= q % 4 == 0 ? 1e9 : q % 3 == 0 ? 1e-9 : 1;
  std::shared_ptr<const PanelIndex> index = a.view().held_index();
  ASSERT_TRUE(index);
  const Panel b = Panel::adopt(index, std::move(other));
  ASSERT_EQ(b.view().cols, a.view().cols);
  const std::vector<double> an = block_norms(a.view(), l), bn = block_norms(b.view(), l);
  const std::vector<double> eps(6, 1e-6);
  for (const Panel* right : {static_cast<const Panel*>(&a), &b}) {
    SCOPED_TRACE(right == &a ? "A * A" : "A * B");
    const std::vector<double>& rn = right == &a ? an : bn;
    ReferenceKernel k;
    LocalProduct lp(Panel(std::vector<int>{0, 1, 2, 3, 4, 5}).view(), l, k, 1, eps);
    lp.multiply(a.view(), l, right->view(), l);
    const std::int64_t skipped = lp.stats().skipped;
    Panel c = lp.finish();
    std::int64_t expect_skipped = 0;
    const std::vector<double> ref = filtered_reference(s, a, an, *right, rn, 1e-6, expect_skipped);
    EXPECT_GT(expect_skipped, 0);
    EXPECT_EQ(skipped, expect_skipped);
    EXPECT_LE(test::relative_error(dense_of(c.view(), l), ref), 1e-13);
  }
}

// The filter takes the products of an A block that pass as a prefix of its B row sorted by norm:
// B rows whose norms spread over orders of magnitude (so that most A blocks keep part of their
// row), and a B block whose norm is NaN (no product with it passes |a||b| >= eps). Rows of 12
// blocks and of 40 (NormOrder sorts short rows by insertion, long ones by buckets).
TEST(LocalProduct, FilteringKeepsThePartOfEachBRowThatPassesInAnyOrderOfNorms) {
  for (const int nb : {12, 40}) {
    SCOPED_TRACE(std::to_string(nb) + " block rows");
    const BlockSizes s = BlockSizes::cyclic(nb, {2, 3, 5});
    BlockLayout l{s, s};
    Panel a = make_panel(l, 31, [](int, int) { return true; });
    Panel b = make_panel(l, 32, [](int i, int j) { return (i + j) % 4 != 0; });
    auto scale = [&](Panel& p, auto&& factor) {
      for (int r = 0; r < p.nrows(); ++r)
        for (std::int64_t q = p.row_begin(r); q < p.row_end(r); ++q) {
          const int n = s.size(r) * s.size(static_cast<int>(p.view().cols[q]));
          const double f = factor(r, static_cast<int>(p.view().cols[q]));
          for (int e = 0; e < n; ++e) p.data()[static_cast<std::size_t>(p.offset(q) + e)] *= f;
        }
    };
    scale(a, [](int i, int k) { return std::pow(10.0, -((i + 2 * k) % 5)); });
    scale(b, [](int k, int j) { return std::pow(10.0, -((3 * k + j) % 7)); });
    b.data()[static_cast<std::size_t>(b.offset(b.find(1, 4)))] = std::nan("");
    const std::vector<double> an = block_norms(a.view(), l), bn = block_norms(b.view(), l);
    const double eps = 1e-3;
    const std::int64_t n = s.total();
    std::vector<double> ref(static_cast<std::size_t>(n * n), 0.0);
    std::int64_t expect_skipped = 0, partial_rows = 0;
    for (int i = 0; i < nb; ++i)
      for (int kk = 0; kk < nb; ++kk) {
        const std::int64_t ab = a.find(i, kk);
        int pass = 0, drop = 0;
        for (int j = 0; j < nb; ++j) {
          const std::int64_t bb = b.find(kk, j);
          if (bb < 0) continue;
          if (!(an[static_cast<std::size_t>(ab)] * bn[static_cast<std::size_t>(bb)] >= eps)) {
            ++drop;
            continue;
          }
          ++pass;
          add_block_product(ref, s, a, ab, b, bb, i, kk, j);
        }
        expect_skipped += drop;
        partial_rows += pass > 0 && drop > 0 ? 1 : 0;
      }
    ASSERT_GT(partial_rows, 2 * nb);  // the case this test is for: rows kept in part
    for (int threads : {1, 2}) {      // one pass, and the symbolic and numeric passes
      SCOPED_TRACE(std::to_string(threads) + " threads");
      ReferenceKernel k;
      std::vector<int> rows(static_cast<std::size_t>(nb));
      std::iota(rows.begin(), rows.end(), 0);
      LocalProduct lp(Panel(rows).view(), l, k, threads, std::vector<double>(static_cast<std::size_t>(nb), eps));
      lp.multiply(a.view(), l, b.view(), l);
      EXPECT_EQ(lp.stats().skipped, expect_skipped);
      const Panel c = lp.finish();
      const std::vector<double> got = dense_of(c.view(), l);
      for (double x : got) ASSERT_FALSE(std::isnan(x));
      EXPECT_LE(test::relative_error(got, ref), 1e-13);
    }
  }
}
