#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dense_reference.hpp"
#include "local_product_testing.hpp"
#include "plexus/error.hpp"
#include "plexus/kernel.hpp"
#include "plexus/local_multiply.hpp"
#include "plexus/memory.hpp"
#include "plexus/timers.hpp"

using namespace plexus;

using test::dense_of;
using test::expect_same_blocks;
using test::make_panel;
using test::WritingFirstKernel;

TEST(LocalProduct, MatchesDenseProductOverSeveralPanelPairs) {
  const BlockSizes s = BlockSizes::cyclic(8, {1, 5, 13, 23, 32});
  BlockLayout la{s, s}, lb{s, s}, lc{s, s};
  Panel a1 = make_panel(la, 1, [](int i, int j) { return (i + j) % 3 == 0 && j < 4; });
  Panel a2 = make_panel(la, 2, [](int i, int j) { return (i * j) % 4 == 1 && j >= 4; });
  Panel b1 = make_panel(lb, 3, [](int i, int j) { return (i + 2 * j) % 3 != 0 && i < 4; });
  Panel b2 = make_panel(lb, 4, [](int i, int j) { return (i + j) % 2 == 0 && i >= 4; });
  Panel c0 = make_panel(lc, 5, [](int i, int j) { return i == j; });
  for (int threads : {1, 2, 3}) {
    ReferenceKernel k;
    LocalProduct lp(c0.view(), lc, k, threads, {});
    lp.multiply(a1.view(), la, b1.view(), lb);
    lp.multiply(a2.view(), la, b2.view(), lb);
    lp.multiply(Panel(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}).view(), la, b2.view(), lb);  // empty panel
    Panel c = lp.finish();
    std::vector<double> ref = dense_of(c0.view(), lc);
    const std::int64_t n = s.total();
    test::dense_gemm(n, n, n, 1.0, dense_of(a1.view(), la), dense_of(b1.view(), lb), 1.0, ref);
    test::dense_gemm(n, n, n, 1.0, dense_of(a2.view(), la), dense_of(b2.view(), lb), 1.0, ref);
    EXPECT_LE(test::relative_error(dense_of(c.view(), lc), ref), 1e-13) << threads << " threads";
    // Blocks come out sorted by (row, col) with no duplicates.
    const PanelView v = c.view();
    for (int r = 0; r < v.nrows; ++r)
      for (std::int64_t b = v.row_ptr[r] + 1; b < v.row_ptr[r + 1]; ++b) EXPECT_LT(v.cols[b - 1], v.cols[b]);
  }
}

namespace {
// Three ticks of many stacks each (over kStackCapacity products) on 40 block rows and columns of 2
// and 3, every fourth A block scaled down so that its products fall below a threshold of 0.05, and
// the C they add to.
struct ThreeTicks {
  BlockSizes s = BlockSizes::cyclic(40, {2, 3});
  BlockLayout l{s, s};
  std::vector<Panel> a, b;
  Panel c0;
};
ThreeTicks three_filtered_ticks() {
  ThreeTicks t;
  for (int k = 0; k < 3; ++k) {
    t.a.push_back(make_panel(t.l, 41 + k, [k](int i, int j) { return j % 3 == k && (i + j) % 2 == 0; }));
    t.b.push_back(make_panel(t.l, 51 + k, [k](int i, int j) { return i % 3 == k && (i * 7 + j * k) % 5 != 0; }));
    Panel& p = t.a.back();
    for (std::int64_t q = 0; q < p.nblocks(); q += 4)
      for (std::int64_t e = p.offset(q); e < (q + 1 < p.nblocks() ? p.offset(q + 1) : p.data_size()); ++e)
        p.data()[static_cast<std::size_t>(e)] *= 1e-4;
  }
  t.c0 = make_panel(t.l, 61, [](int i, int j) { return (i + 3 * j) % 11 == 0; });
  return t;
}
}  // namespace

// One thread on a host backend, with room reserved for C, takes one pass a tick, placing new C
// blocks as their first product is stacked and growing C stack by stack; more threads, or no room
// reserved, place first and grow once. Both add every block's products in the same order, so
// their C is the same to the last bit.
TEST(LocalProduct, OnePassGivesTheSameBlocksAndValuesAsTheTwoPasses) {
  const ThreeTicks ticks = three_filtered_ticks();
  const BlockSizes& s = ticks.s;
  const BlockLayout& l = ticks.l;
  const std::vector<Panel>& a = ticks.a;
  const std::vector<Panel>& b = ticks.b;
  const Panel& c0 = ticks.c0;
  std::vector<double> eps(40, 0.05);  // filtering on: some products are skipped
  // One pass needs one thread and room reserved in C (expected_values); C then grows stack by
  // stack. Otherwise the symbolic pass grows it once per tick.
  auto run = [&](int threads, std::int64_t expected, int& grows) {
    test::LoggingKernel k;
    LocalProduct lp(c0.view(), l, k, threads, eps, {}, 0.5, expected);
    for (int t = 0; t < 3; ++t)
      lp.multiply(a[static_cast<std::size_t>(t)].view(), l, b[static_cast<std::size_t>(t)].view(), l);
    EXPECT_GT(lp.stats().products, 3 * 4096);
    EXPECT_GT(lp.stats().skipped, 0);
    grows = static_cast<int>(k.logs.back().grows.size());
    Panel c = lp.finish();
    // Each new block's first product, and only it, is marked (StackEntry::first).
    EXPECT_EQ(test::expect_first_marks(k.logs.back()), c.nblocks() - c0.nblocks());
    return c;
  };
  int grows_one = 0, grows_two = 0, grows_unreserved = 0;
  const Panel one = run(1, 100000, grows_one), two = run(2, 0, grows_two), unreserved = run(1, 0, grows_unreserved);
  // The symbolic pass grows C at most once a tick; one pass grows it before each stack that has
  // new blocks, so more often here (tick 1 creates C's blocks over more than one stack).
  EXPECT_LE(grows_two, 3);
  EXPECT_EQ(grows_unreserved, grows_two);
  EXPECT_GT(grows_one, grows_two);
  ASSERT_GT(one.nblocks(), c0.nblocks());
  expect_same_blocks(one, two, s);
  expect_same_blocks(one, unreserved, s);
}

namespace {
// Three filtered ticks of many stacks each into a C with some blocks (scaled by 0.5), as in the test
// above, on `threads` threads of `kernel` with room for `expected_values` in C; the C made, and the
// calls of the phases "local multiply: place" (the symbolic pass) and "join slabs".
struct SlabRun {
  Panel c;
  double places = 0, joins = 0, reserves = 0;
  std::int64_t start_values = 0;  // C's before the ticks
};
// The calls of the symbolic pass (place), of join slabs and of reserve since the last timers::reset().
void count_phases(SlabRun& run) {
  for (const timers::Stat& st : timers::statistics(MPI_COMM_SELF)) {
    if (st.name == "local multiply: place") run.places = st.calls;
    if (st.name == "local multiply: join slabs") run.joins = st.calls;
    if (st.name == "local multiply: reserve") run.reserves = st.calls;
  }
}
SlabRun run_three_filtered_ticks(Kernel& kernel, int threads, std::int64_t expected_values) {
  const ThreeTicks ticks = three_filtered_ticks();
  const BlockLayout& l = ticks.l;
  const std::vector<Panel>& a = ticks.a;
  const std::vector<Panel>& b = ticks.b;
  const Panel& c0 = ticks.c0;
  timers::reset();
  LocalProduct lp(c0.view(), l, kernel, threads, std::vector<double>(40, 0.05), {}, 0.5, expected_values);
  for (int t = 0; t < 3; ++t)
    lp.multiply(a[static_cast<std::size_t>(t)].view(), l, b[static_cast<std::size_t>(t)].view(), l);
  EXPECT_GT(lp.stats().skipped, 0);
  SlabRun run{lp.finish()};
  count_phases(run);
  run.start_values = c0.data_size();
  return run;
}

}  // namespace

// Several threads on a host backend, with room reserved for C, take one pass each too: each into a
// slab of the room, after which each thread's new blocks move down to follow the previous thread's
// (local_product_slabs.hpp). With room enough that is the two passes' C to the last bit, its offsets
// included (both place each thread's blocks in the same order); with too little, the same blocks
// and values. On a kernel whose first products write and on one that adds into zeroed room.
TEST(LocalProduct, SeveralThreadsTakeOnePassIntoSlabsOfCsRoom) {
  const BlockSizes s = BlockSizes::cyclic(40, {2, 3});
  WritingFirstKernel writing;
  ReferenceKernel adding;
  for (Kernel* k : std::vector<Kernel*>{&writing, &adding}) {
    SCOPED_TRACE(k->name());
    const SlabRun one = run_three_filtered_ticks(*k, 1, 0);
    const std::int64_t values = one.c.data_size();
    for (int threads : {2, 3}) {
      SCOPED_TRACE(std::to_string(threads) + " threads");
      const SlabRun two = run_three_filtered_ticks(*k, threads, 0);  // no room: the two passes
      EXPECT_EQ(two.places, 3);
      EXPECT_EQ(two.joins, 0);
      expect_same_blocks(one.c, two.c, s);
      const SlabRun roomy = run_three_filtered_ticks(*k, threads, 4 * values);
      EXPECT_EQ(roomy.joins, 3);
      EXPECT_EQ(roomy.places, 0) << "every row fits its slab";
      test::expect_same_panel(roomy.c, two.c);
      // Room for a tenth of what the ticks add: the first tick's room is sized from a sample of its
      // rows (C moves once, before any slab is written); the ticks after it find C beyond what was
      // reserved and take the two passes, as one thread's ticks then grow C once each.
      const SlabRun tight = run_three_filtered_ticks(*k, threads, one.start_values + (values - one.start_values) / 10);
      EXPECT_EQ(tight.joins, 1);
      EXPECT_EQ(tight.reserves, 1);
      EXPECT_EQ(tight.places, 2);
      expect_same_blocks(one.c, tight.c, s);
    }
  }
}

// A tick whose rows fill C in more and more towards its end, into an empty C with a little room:
// every 16th row (the rows a tick samples to size the first round's room) is empty, so the first
// round gets only the room there is; each later round's room, scaled from the rows done, falls
// short of the rows left, and after three rounds the two passes take the rest. C is still the
// one-thread product's, and the dense product.
TEST(LocalProduct, SlabsThatFallShortTakeMoreRoundsThenTheTwoPasses) {
  const BlockSizes s = BlockSizes::cyclic(64, {2});
  BlockLayout l{s, s};
  Panel a = make_panel(l, 81, [](int i, int k) { return i % 16 != 0 && k <= i / 4; });
  Panel b = make_panel(l, 82, [](int k, int j) { return j <= 4 * k + 3; });
  std::vector<int> rows(64);
  for (int i = 0; i < 64; ++i) rows[static_cast<std::size_t>(i)] = i;
  const Panel empty(rows);
  const std::int64_t n = s.total();
  std::vector<double> ref(static_cast<std::size_t>(n * n), 0.0);
  test::dense_gemm(n, n, n, 1.0, dense_of(a.view(), l), dense_of(b.view(), l), 1.0, ref);
  auto run = [&](int threads, std::int64_t expected) {
    WritingFirstKernel k;
    timers::reset();
    LocalProduct lp(empty.view(), l, k, threads, {}, {}, 1.0, expected);
    lp.multiply(a.view(), l, b.view(), l);
    SlabRun r{lp.finish()};
    count_phases(r);
    EXPECT_LE(test::relative_error(dense_of(r.c.view(), l), ref), 1e-13);
    return r;
  };
  const SlabRun one = run(1, 0);
  const SlabRun two = run(2, 400);
  EXPECT_EQ(two.joins, 3);
  EXPECT_GE(two.reserves, 2);
  EXPECT_EQ(two.places, 1);
  expect_same_blocks(one.c, two.c, s);
}

// Issue 9 (RSS growing over long runs): the accumulator's scratch (stack buffers, index arrays
// sized by block counts) is counted by the tracker while in use and served from its pool, so
// one product after another reuses the same blocks instead of leaving malloc a fresh mid-size
// block to place each time. C and the panels here stay below the pool's size, so every pooled
// block is the accumulator's own scratch.
TEST(LocalProduct, RepeatedProductsReuseTheirCountedScratchFromThePool) {
  using memory::Category;
  const BlockSizes s = BlockSizes::cyclic(6, {4, 7});
  BlockLayout l{s, s};
  Panel a = make_panel(l, 11, [](int i, int j) { return (i + j) % 2 == 0; });
  Panel b = make_panel(l, 12, [](int i, int j) { return (i * j) % 3 != 1; });
  Panel c0 = make_panel(l, 13, [](int i, int j) { return i == j; });
  ASSERT_LT(static_cast<std::size_t>(c0.data_size() + a.data_size() + b.data_size()) * sizeof(double),
            memory::kPoolMinBytes);
  const std::int64_t n = s.total();
  std::vector<double> ref = dense_of(c0.view(), l);
  for (double& x : ref) x *= 0.5;  // beta = 0.5
  test::dense_gemm(n, n, n, 1.0, dense_of(a.view(), l), dense_of(b.view(), l), 1.0, ref);

  memory::trim();
  const auto limit = memory::pool_limit();
  memory::set_pool_limit(std::int64_t{64} << 20);
  const std::int64_t other = memory::current(Category::Other);
  std::int64_t pooled_after_first = -1;
  for (int round = 0; round < 6; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    memory::reset_peak(Category::Other);
    ReferenceKernel k;
    Panel c;
    {
      LocalProduct lp(c0.view(), l, k, 2, {}, {}, 0.5);
      lp.multiply(a.view(), l, b.view(), l);
      lp.multiply(a.view(), l, Panel(std::vector<int>{0, 1, 2, 3, 4, 5}).view(), l);  // empty B: no work
      c = lp.finish();
      // finish() hands the stack buffers back at once (2.5D's partial accumulators finish
      // while its own is still at work).
      EXPECT_LT(memory::current(Category::Other) - other, static_cast<std::int64_t>(memory::kPoolMinBytes));
    }
    EXPECT_LE(test::relative_error(dense_of(c.view(), l), ref), 1e-14);
    // Counted while in use (two threads' stack buffers at least), released afterwards.
    EXPECT_GE(memory::peak(Category::Other) - other, static_cast<std::int64_t>(memory::kPoolMinBytes));
    EXPECT_EQ(memory::current(Category::Other), other);
    // Returned to the pool, and the same blocks serve every later round: the pool neither grows
    // (a fresh block was allocated) nor shrinks (a pooled block is still held).
    if (round == 0) {
      pooled_after_first = memory::pooled_bytes();
      EXPECT_GE(pooled_after_first, static_cast<std::int64_t>(memory::kPoolMinBytes));
    } else {
      EXPECT_EQ(memory::pooled_bytes(), pooled_after_first);
    }
  }
  memory::trim();
  memory::set_pool_limit(limit);
}

namespace {
// The reference product, recording the C area each stack was given.
class AreaRecordingKernel final : public HostKernel {
 public:
  std::string name() const override { return "area-recording"; }
  void process(const StackEntry* stack, std::int64_t n, const double* a, const double* b, double* c) override {
    areas.push_back(c);
    reference.process(stack, n, a, b, c);
  }
  std::vector<const double*> areas;
  ReferenceKernel reference;
};
}  // namespace

TEST(LocalProduct, ExpectedValuesKeepCInPlaceAcrossTicksAndTheSlackIsGivenBack) {
  const BlockSizes s = BlockSizes::cyclic(9, {3, 5, 8});
  BlockLayout l{s, s};
  // Two ticks, each creating C blocks the other does not: C grows at both.
  Panel a1 = make_panel(l, 21, [](int i, int j) { return j == (i % 3); });
  Panel b1 = make_panel(l, 22, [](int i, int j) { return i < 3 && j < 4; });
  Panel a2 = make_panel(l, 23, [](int i, int j) { return j == 3 + (i % 2); });
  Panel b2 = make_panel(l, 24, [](int i, int j) { return i >= 3 && i < 5 && j >= 4; });
  const std::int64_t n = s.total();
  std::vector<double> ref(static_cast<std::size_t>(n * n), 0.0);
  test::dense_gemm(n, n, n, 1.0, dense_of(a1.view(), l), dense_of(b1.view(), l), 1.0, ref);
  test::dense_gemm(n, n, n, 1.0, dense_of(a2.view(), l), dense_of(b2.view(), l), 1.0, ref);
  const Panel empty(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8});

  auto run = [&](std::int64_t expected, AreaRecordingKernel& k) {
    LocalProduct lp(empty.view(), l, k, 1, {}, {}, 1.0, expected);
    lp.multiply(a1.view(), l, b1.view(), l);
    lp.multiply(a2.view(), l, b2.view(), l);
    Panel c = lp.finish();
    EXPECT_LE(test::relative_error(dense_of(c.view(), l), ref), 1e-14) << "expected_values " << expected;
    return c;
  };
  AreaRecordingKernel grown;
  const Panel c = run(0, grown);
  const std::int64_t values = c.data_size();
  ASSERT_GT(values, 0);
  // Without a hint the second tick's growth moves C (the first tick reserved only its own blocks).
  ASSERT_GE(grown.areas.size(), 2u);
  EXPECT_NE(grown.areas.front(), grown.areas.back());

  for (const std::int64_t expected : {values, 10 * values}) {
    SCOPED_TRACE("expected_values " + std::to_string(expected));
    AreaRecordingKernel k;
    const Panel hinted = run(expected, k);
    EXPECT_EQ(hinted.data_size(), values);
    // Reserved up front: every stack of both ticks saw the same area.
    ASSERT_GE(k.areas.size(), 2u);
    for (const double* area : k.areas) EXPECT_EQ(area, k.areas.front());
    // A capacity far beyond C's values is given back by finish(); an exact one is kept.
    EXPECT_LE(static_cast<std::int64_t>(hinted.data().capacity()), values + values / 4);
  }
}

namespace {
// One thread's product of two full 40 x 40 panels (blocks of 1 and 2: 40^3 products in about 16
// stacks, each placing new C blocks, 2.5 of C's 40 rows) into an empty C with `expected_values`
// of room, checked against the dense product; the C area each stack was given.
std::vector<const double*> areas_of_a_full_product(int seed, std::int64_t expected_values) {
  const BlockSizes s = BlockSizes::cyclic(40, {1, 2});
  BlockLayout l{s, s};
  Panel a = make_panel(l, seed, [](int, int) { return true; });
  Panel b = make_panel(l, seed + 1, [](int, int) { return true; });
  std::vector<int> rows(40);
  for (int i = 0; i < 40; ++i) rows[static_cast<std::size_t>(i)] = i;
  const Panel empty(rows);
  const std::int64_t n = s.total();
  std::vector<double> ref(static_cast<std::size_t>(n * n), 0.0);
  test::dense_gemm(n, n, n, 1.0, dense_of(a.view(), l), dense_of(b.view(), l), 1.0, ref);
  AreaRecordingKernel k;
  LocalProduct lp(empty.view(), l, k, 1, {}, {}, 1.0, expected_values);
  lp.multiply(a.view(), l, b.view(), l);
  const Panel c = lp.finish();
  EXPECT_LE(test::relative_error(dense_of(c.view(), l), ref), 1e-13);
  EXPECT_GE(k.areas.size(), 10u);
  return k.areas;
}
}  // namespace

// Without room reserved (a fresh C, no expected_values), one thread's tick does not grow C stack
// by stack: each growth beyond the capacity would move and copy C again. The symbolic pass sizes
// it once, so every stack of the tick sees the same area.
TEST(LocalProduct, WithoutReservedRoomATickGrowsCOnceNotStackByStack) {
  const std::vector<const double*> areas = areas_of_a_full_product(51, 0);
  for (const double* area : areas) EXPECT_EQ(area, areas.front());
}

// With room reserved, but far too little (a C that fills in well beyond what it held), the one
// pass does not move C each time a stack outgrows a half larger area: at the first stack beyond
// the room it reserves the tick's new values so far scaled to all its products, so C moves once
// (by the growth factor alone, seven times here: each move a copy of C).
TEST(LocalProduct, OnePassBeyondItsRoomReservesForTheWholeTickAtOnce) {
  const std::int64_t values = 60 * 60;  // C's: 40 block rows and columns of 1 and 2, 60 x 60
  std::vector<const double*> areas = areas_of_a_full_product(53, values / 40);  // room for a fortieth: one pass
  areas.erase(std::unique(areas.begin(), areas.end()), areas.end());
  EXPECT_LE(areas.size(), 2u);  // the extrapolation may fall short once
}

TEST(LocalProduct, ProgressIsPolledBetweenStacksOnTheCallersThreadAndItsErrorsEndTheTick) {
  const BlockSizes s = BlockSizes::cyclic(40, {2});
  BlockLayout l{s, s};
  // 40^3 / 2 products: several stacks of kStackCapacity entries on one thread.
  Panel a = make_panel(l, 31, [](int i, int j) { return (i + j) % 2 == 0; });
  Panel b = make_panel(l, 32, [](int, int) { return true; });
  const Panel empty([] {
    std::vector<int> r(40);
    for (int i = 0; i < 40; ++i) r[static_cast<std::size_t>(i)] = i;
    return r;
  }());
  const std::int64_t n = s.total();
  std::vector<double> ref(static_cast<std::size_t>(n * n), 0.0);
  test::dense_gemm(n, n, n, 1.0, dense_of(a.view(), l), dense_of(b.view(), l), 1.0, ref);
  for (int threads : {1, 3}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    ReferenceKernel k;
    LocalProduct lp(empty.view(), l, k, threads, {});
    const std::thread::id caller = std::this_thread::get_id();
    int polls = 0, elsewhere = 0;
    lp.set_progress([&] { ++(std::this_thread::get_id() == caller ? polls : elsewhere); });
    lp.multiply(a.view(), l, b.view(), l);
    EXPECT_GE(polls, 1);
    EXPECT_EQ(elsewhere, 0);
    lp.set_progress({});
    const Panel c = lp.finish();
    EXPECT_LE(test::relative_error(dense_of(c.view(), l), ref), 1e-13);
  }
  {  // one thread, from the last thread of the caller's own OpenMP region: it polls there
    int polls = 0, elsewhere = 0;
    double error = 1;
#pragma omp parallel num_threads(2)
    if (omp_get_thread_num() == omp_get_num_threads() - 1) {
      ReferenceKernel k;
      LocalProduct lp(empty.view(), l, k, 1, {});
      const std::thread::id caller = std::this_thread::get_id();
      lp.set_progress([&] { ++(std::this_thread::get_id() == caller ? polls : elsewhere); });
      lp.multiply(a.view(), l, b.view(), l);
      lp.set_progress({});
      error = test::relative_error(dense_of(lp.finish().view(), l), ref);
    }
    EXPECT_GE(polls, 1);
    EXPECT_EQ(elsewhere, 0);
    EXPECT_LE(error, 1e-13);
  }
  ReferenceKernel k;
  LocalProduct failing(empty.view(), l, k, 2, {});
  failing.set_progress([] { throw Error("test", "the transfer failed"); });
  EXPECT_THROW(failing.multiply(a.view(), l, b.view(), l), Error);
}
