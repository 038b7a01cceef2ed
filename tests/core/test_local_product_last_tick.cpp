// The last tick's filter (LocalProduct::filter_last_tick): a product told that its next tick is its
// last drops C's small blocks as that tick completes C's rows, and its panel is then the one the
// product makes without it, filtered afterwards as the multiply's driver filters
// (without_small_blocks): the same blocks with the same values to the last bit, laid out in C's
// order, on any number of threads. Where the tick cannot (a C that is not empty, a device backend),
// nothing is dropped and filtered() says so.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "local_product_testing.hpp"
#include "plexus/error.hpp"
#include "plexus/kernel.hpp"
#include "plexus/local_multiply.hpp"
#include "plexus/panel.hpp"

using namespace plexus;

using test::expect_same_blocks;
using test::make_panel;
using test::WritingFirstKernel;

namespace {

// A and B over `count` block rows and columns of the given sizes, with gaps in their patterns
// (A's row 5 empty, so C's row 5 gets nothing), and A's rows scaled over four orders of magnitude
// so that C's block norms spread and a threshold between them drops some blocks of most rows.
struct Operands {
  BlockSizes s;
  BlockLayout l;
  Panel a, b;
  std::vector<int> rows;
  Operands(int count, std::vector<int> sizes)
      : s(BlockSizes::cyclic(count, sizes)),
        l{s, s},
        a(make_panel(l, 41, [](int i, int j) { return i != 5 && (i + j) % 3 != 0; })),
        b(make_panel(l, 42, [](int i, int j) { return (i * j + 1) % 4 != 0; })) {
    for (int r = 0; r < a.nrows(); ++r)
      for (std::int64_t q = a.row_begin(r); q < a.row_end(r); ++q) {
        const std::int64_t n = std::int64_t{s.size(r)} * s.size(static_cast<int>(a.view().cols[q]));
        for (std::int64_t e = 0; e < n; ++e)
          a.data()[static_cast<std::size_t>(a.offset(q) + e)] *= std::pow(10.0, -(r % 4));
      }
    for (int i = 0; i < count; ++i) rows.push_back(i);
  }
};

// C = A * B into an empty C on one thread, without the last tick's filter (row_eps: on-the-fly
// filtering, as a filtered multiply has it too).
Panel unfiltered_product(const Operands& o, const std::vector<double>& row_eps, int threads = 1) {
  ReferenceKernel k;
  LocalProduct lp(Panel(o.rows).view(), o.l, k, threads, row_eps);
  lp.multiply(o.a.view(), o.l, o.b.view(), o.l);
  EXPECT_FALSE(lp.filtered());
  return lp.finish();
}

// The blocks lie one after the other in C's order, (row, column), as the driver's filter lays them out.
void expect_in_order(const Panel& p, const BlockSizes& s) {
  const PanelView v = p.view();
  std::int64_t at = 0;
  for (int r = 0; r < v.nrows; ++r)
    for (std::int64_t q = v.row_ptr[r]; q < v.row_ptr[r + 1]; ++q) {
      ASSERT_EQ(v.offsets[q], at) << "block " << q;
      at += std::int64_t{s.size(static_cast<int>(v.row_ids[r]))} * s.size(static_cast<int>(v.cols[q]));
    }
  EXPECT_EQ(at, v.data_size);
}

// C's block norms, sorted.
std::vector<double> sorted_norms(const Panel& c, const BlockLayout& l) {
  std::vector<double> n = block_norms(c.view(), l);
  std::sort(n.begin(), n.end());
  return n;
}

}  // namespace

// Thresholds that drop none, about a tenth, about half and all of C's blocks; no room reserved
// for C (a product that would otherwise take two passes), room that C outgrows (the kept blocks'
// area then grows by extrapolating from the blocks kept so far) and room that holds C; with and
// without on-the-fly filtering; small blocks (tens of thousands of products: many stacks, so many
// points where rows are filtered) and mixed ones; one thread and several (each computes into a
// work area of its own, and their kept blocks are joined in C's order), on a kernel whose first
// products add into zeroed blocks (the work areas are zeroed again as they are reused) and on one
// whose first products write.
TEST(LocalProductLastTick, DropsWhatTheDriversFilterDropsToTheLastBit) {
  ReferenceKernel adding;
  WritingFirstKernel writing;
  for (const auto& [count, sizes] : {std::pair<int, std::vector<int>>{40, {2, 3}}, {12, {1, 5, 13}}}) {
    const Operands o(count, sizes);
    const Panel full = unfiltered_product(o, {});
    const std::vector<double> norms = sorted_norms(full, o.l);
    ASSERT_GT(norms.size(), 100u);
    const std::int64_t values = full.view().data_size;
    for (const double eps : {norms.front() / 2, norms[norms.size() / 10], norms[norms.size() / 2], norms.back() * 2}) {
      for (const bool on_the_fly : {false, true}) {
        const std::vector<double> row_eps =
            on_the_fly ? std::vector<double>(static_cast<std::size_t>(count), eps / count) : std::vector<double>{};
        const Panel before = unfiltered_product(o, row_eps);
        std::int64_t dropped = 0;
        const std::optional<Panel> after = without_small_blocks(before.view(), o.l, eps, dropped, 1);
        for (const std::int64_t expected : {std::int64_t{0}, std::int64_t{1}, values / 8, 2 * values})
          for (HostKernel* k : std::vector<HostKernel*>{&adding, &writing})
            for (const int threads : {1, 2, 3}) {
              SCOPED_TRACE("blocks of " + std::to_string(sizes.front()) + "..., eps " + std::to_string(eps) +
                           (on_the_fly ? ", on the fly" : "") + ", C's room " + std::to_string(expected) + ", " +
                           k->name() + ", " + std::to_string(threads) + " threads");
              LocalProduct lp(Panel(o.rows).view(), o.l, *k, threads, row_eps, {}, 1.0, expected);
              lp.filter_last_tick(eps);
              lp.multiply(o.a.view(), o.l, o.b.view(), o.l);
              EXPECT_TRUE(lp.filtered());
              const Panel got = lp.finish();
              expect_same_blocks(got, after ? *after : before, o.s);
              expect_in_order(got, o.s);
              EXPECT_EQ(got.view().nblocks, before.view().nblocks - dropped);
            }
      }
    }
  }
}

// More threads than C has rows: threads without rows (the first among them, whose area is C's own,
// which takes the others' blocks) keep nothing, and C is the others' blocks joined.
TEST(LocalProductLastTick, ThreadsWithoutRowsKeepNothing) {
  const Operands o(3, {4, 5});
  const Panel before = unfiltered_product(o, {});
  const std::vector<double> norms = sorted_norms(before, o.l);
  ASSERT_GE(norms.size(), 4u);
  const double eps = norms[norms.size() / 2];
  std::int64_t dropped = 0;
  const std::optional<Panel> after = without_small_blocks(before.view(), o.l, eps, dropped, 1);
  ASSERT_TRUE(after.has_value());
  ASSERT_GT(dropped, 0);
  for (const int threads : {4, 5}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    ReferenceKernel k;
    LocalProduct lp(Panel(o.rows).view(), o.l, k, threads, {}, {}, 1.0, 0);
    lp.filter_last_tick(eps);
    lp.multiply(o.a.view(), o.l, o.b.view(), o.l);
    EXPECT_TRUE(lp.filtered());
    const Panel got = lp.finish();
    expect_same_blocks(got, *after, o.s);
    expect_in_order(got, o.s);
  }
}

// Where the tick cannot filter as it goes (C not empty, a device backend; on one thread and on
// two), it drops nothing and says so: the caller filters.
TEST(LocalProductLastTick, LeavesCWholeWhereItCannotFilterAsItGoes) {
  const Operands o(12, {1, 5, 13});
  const Panel full = unfiltered_product(o, {});
  const std::vector<double> norms = sorted_norms(full, o.l);
  const double eps = norms[norms.size() / 2];
  const std::int64_t room = 2 * full.view().data_size;
  const Panel start = make_panel(o.l, 43, [](int i, int j) { return i == j; });
  struct Way {
    std::string name;
    int threads;
    const Panel* c_start;
    std::int64_t room;
    bool device;
  };
  const Panel empty(o.rows);
  for (const Way& way :
       {Way{"C not empty", 1, &start, room, false}, Way{"C not empty, two threads", 2, &start, room, false},
        Way{"device", 1, &empty, room, true}, Way{"device, two threads", 2, &empty, room, true}}) {
    SCOPED_TRACE(way.name);
    test::DeviceLike<ReferenceKernel> device;
    ReferenceKernel host;
    Kernel& k = way.device ? static_cast<Kernel&>(device) : host;
    LocalProduct lp(way.c_start->view(), o.l, k, way.threads, {}, {}, 1.0, way.room);
    lp.filter_last_tick(eps);
    lp.multiply(o.a.view(), o.l, o.b.view(), o.l);
    EXPECT_FALSE(lp.filtered());
    const Panel got = lp.finish();
    ReferenceKernel k2;
    LocalProduct plain(way.c_start->view(), o.l, k2, 1, {});
    plain.multiply(o.a.view(), o.l, o.b.view(), o.l);
    expect_same_blocks(got, plain.finish(), o.s);
  }
}

// A tick after the last would add to blocks the last may have dropped; a threshold must be a
// finite number above 0; and nothing is declared once the last tick has run or C is finished.
TEST(LocalProductLastTick, RejectsATickAfterTheLastAndABadThreshold) {
  const Operands o(12, {1, 5, 13});
  ReferenceKernel k;
  {
    LocalProduct lp(Panel(o.rows).view(), o.l, k, 1, {}, {}, 1.0, 1000);
    for (const double bad : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()})
      EXPECT_THROW(lp.filter_last_tick(bad), Error) << bad;
    lp.multiply(o.a.view(), o.l, o.b.view(), o.l);  // before the declaration: any number of ticks
    lp.filter_last_tick(1e-3);
    lp.multiply(o.a.view(), o.l, o.b.view(), o.l);
    EXPECT_FALSE(lp.filtered());  // C was not empty before that tick
    EXPECT_THROW(lp.multiply(o.a.view(), o.l, o.b.view(), o.l), Error);
    EXPECT_THROW(lp.filter_last_tick(1e-3), Error);
  }
  {
    LocalProduct lp(Panel(o.rows).view(), o.l, k, 1, {}, {}, 1.0, 1000);
    lp.filter_last_tick(1e-3);
    lp.multiply(Panel(o.rows).view(), o.l, o.b.view(), o.l);  // an empty A: a tick all the same
    EXPECT_THROW(lp.multiply(o.a.view(), o.l, o.b.view(), o.l), Error);
    lp.finish();
    EXPECT_THROW(lp.filter_last_tick(1e-3), Error);
  }
}
