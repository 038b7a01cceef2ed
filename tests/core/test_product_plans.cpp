// Plans of local products (ProductPlans, local_multiply.hpp): a product given exactly what an
// earlier one was replays its stacks; any difference is found before the tick it concerns.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dense_reference.hpp"
#include "local_product_testing.hpp"
#include "plexus/kernel.hpp"
#include "plexus/local_multiply.hpp"
#include "plexus/memory.hpp"

using namespace plexus;

namespace {

using test::expect_same_panel;
using test::LoggingKernel;
using test::make_panel;

void expect_same_stacks(const LoggingKernel::Log& x, const LoggingKernel::Log& y) {
  EXPECT_EQ(x.grows, y.grows);
  EXPECT_EQ(x.sizes, y.sizes);
  ASSERT_EQ(x.stacks.size(), y.stacks.size());
  for (const auto& [slot, entries] : x.stacks) {
    const auto& other = y.stacks.at(slot);
    ASSERT_EQ(entries.size(), other.size()) << "slot " << slot;
    for (std::size_t e = 0; e < entries.size(); ++e) {
      const StackEntry &p = entries[e], &q = other[e];
      EXPECT_TRUE(p.m == q.m && p.n == q.n && p.k == q.k && p.first == q.first && p.a == q.a && p.b == q.b &&
                  p.c == q.c)
          << "slot " << slot << ", entry " << e;
    }
  }
}

// Three ticks over a C of 12 x 12 blocks of sizes 2 and 3, each bringing four k indices, and a
// C that starts with its diagonal.
struct Case {
  BlockSizes s = BlockSizes::cyclic(12, {2, 3});
  BlockLayout l{s, s};
  std::vector<Panel> a, b;
  Panel c0 = make_panel(l, 5, [](int i, int j) { return i == j; });
  Case() {
    for (int t = 0; t < 3; ++t) {
      a.push_back(make_panel(l, 11 + t, [t](int i, int k) { return k / 4 == t && (i + k) % 3 != 1; }));
      b.push_back(make_panel(l, 21 + t, [t](int k, int j) { return k / 4 == t && (2 * k + j) % 5 < 2; }));
    }
  }
};

// One tick of 16,000 products (four stacks) into an empty C of 40 x 40 blocks of 2.
struct BigTick {
  BlockSizes s = BlockSizes::cyclic(40, {2});
  BlockLayout l{s, s};
  Panel a = make_panel(l, 1, [](int i, int kk) { return (i + kk) % 2 == 0; });
  Panel b = make_panel(l, 2, [](int kk, int j) { return (kk * 3 + j) % 2 == 0; });
  Panel empty{rows_of(40)};
  static std::vector<int> rows_of(int n) {
    std::vector<int> rows(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) rows[static_cast<std::size_t>(i)] = i;
    return rows;
  }
};

struct Outcome {
  Panel c;
  LocalMultiplyStats stats;
};

// A product of the case's ticks (or those given) into beta * C0.
Outcome product(Kernel& kernel, const Case& k, int threads, ProductPlans* plans, std::int64_t expected = 0,
            const std::vector<std::pair<const Panel*, const Panel*>>& ticks = {}) {
  LocalProduct lp(k.c0.view(), k.l, kernel, threads, {}, {}, 0.5, expected, plans);
  if (ticks.empty())
    for (std::size_t t = 0; t < k.a.size(); ++t) lp.multiply(k.a[t].view(), k.l, k.b[t].view(), k.l);
  else
    for (const auto& [a, b] : ticks) lp.multiply(a->view(), k.l, b->view(), k.l);
  Outcome r;
  r.stats = lp.stats();
  r.c = lp.finish();
  return r;
}

}  // namespace

// A product given what an earlier one was replays every tick: the backend gets the same stacks in
// the same order with C grown at the same points, and C comes out the same to the last bit (its
// index adopted from the plan). On one thread with room for C (one pass a tick) and without (the
// symbolic pass), and on 2 and 3 threads.
TEST(ProductPlans, ARepeatedProductReplaysEveryTickAndGivesTheSameC) {
  const Case k;
  const std::int64_t n = k.s.total();
  for (const int threads : {1, 2, 3})
    for (const std::int64_t expected : {std::int64_t{0}, n * n}) {
      SCOPED_TRACE(std::to_string(threads) + " threads, expected values " + std::to_string(expected));
      LoggingKernel kernel;
      const Outcome fresh = product(kernel, k, threads, nullptr, expected);
      EXPECT_EQ(fresh.stats.ticks, 3);
      EXPECT_EQ(fresh.stats.replayed_ticks, 0);
      ProductPlans plans;
      const Outcome first = product(kernel, k, threads, &plans, expected);
      EXPECT_EQ(first.stats.replayed_ticks, 0);
      EXPECT_EQ(plans.size(), 1U);
      EXPECT_GT(plans.bytes(), 0);
      for (int again = 0; again < 2; ++again) {
        const Outcome replayed = product(kernel, k, threads, &plans, expected);
        EXPECT_EQ(replayed.stats.replayed_ticks, 3);
        EXPECT_EQ(replayed.stats.products, fresh.stats.products);
        EXPECT_EQ(replayed.stats.flops, fresh.stats.flops);
        expect_same_panel(replayed.c, fresh.c);
        expect_same_stacks(kernel.logs.back(), kernel.logs.front());
        EXPECT_EQ(test::expect_first_marks(kernel.logs.back()), replayed.c.nblocks() - k.c0.nblocks());
      }
      EXPECT_EQ(plans.size(), 1U) << "a replayed plan is kept once";
      expect_same_panel(first.c, fresh.c);
      // And C is the product: beta * C0 + sum of the ticks' A * B (a dense reference).
      std::vector<double> ref = test::dense_of(k.c0.view(), k.l);
      for (double& x : ref) x *= 0.5;
      for (std::size_t t = 0; t < 3; ++t)
        test::dense_gemm(n, n, n, 1.0, test::dense_of(k.a[t].view(), k.l), test::dense_of(k.b[t].view(), k.l), 1.0,
                         ref);
      EXPECT_LE(test::relative_error(test::dense_of(fresh.c.view(), k.l), ref), 1e-13);
    }
}

// A replayed product's C adopts the plan's index without copying it; C changed afterwards (its
// blocks cleared and one appended) changes neither the plan nor the next replay's C.
TEST(ProductPlans, AReplayedCSharesThePlansIndexUntilItChanges) {
  const Case k;
  LoggingKernel kernel;
  const Outcome fresh = product(kernel, k, 2, nullptr);
  ProductPlans plans;
  Outcome first = product(kernel, k, 2, &plans);
  EXPECT_TRUE(first.c.index_shared()) << "the recorded plan keeps the index C was given";
  Outcome replayed = product(kernel, k, 2, &plans);
  ASSERT_EQ(replayed.stats.replayed_ticks, 3);
  EXPECT_EQ(replayed.c.view().cols, first.c.view().cols) << "both hold the plan's index";
  replayed.c.clear_blocks();
  replayed.c.append_block(0, 7, k.s.size(0) * k.s.size(7));
  first.c = Panel();
  const Outcome again = product(kernel, k, 2, &plans);
  EXPECT_EQ(again.stats.replayed_ticks, 3);
  expect_same_panel(again.c, fresh.c);
  EXPECT_EQ(replayed.c.nblocks(), 1);
}

// A plan holds the index of each Panel it was given instead of a copy, and knows a view of that
// very index without comparing. A panel changed in place after the plan was recorded gets an index
// of its own (the plan's stays as it was), so its tick is built, not replayed, even where the
// change keeps every count (blocks, values); a panel with the recorded index in other arrays is
// compared and replayed.
TEST(ProductPlans, APanelChangedInPlaceAfterThePlanIsBuiltNotReplayed) {
  Case k;
  LoggingKernel kernel;
  ProductPlans plans;
  product(kernel, k, 1, &plans);
  EXPECT_TRUE(k.a[1].index_shared()) << "the plan holds tick 1's A index";
  EXPECT_EQ(product(kernel, k, 1, &plans).stats.replayed_ticks, 3);
  // In place, with the same counts: the last block of tick 1's A moves two columns on (the block
  // sizes repeat every two columns, so it keeps its size and its values' place).
  const Panel before = Panel::copy_of(k.a[1].view());
  const PanelView v = before.view();
  ASSERT_LT(v.cols[v.nblocks - 1] + 2, k.s.count());
  const PanelIndex* const held = k.a[1].view().index;
  k.a[1].clear_blocks();
  for (int r = 0; r < v.nrows; ++r)
    for (std::int64_t b = v.row_ptr[r]; b < v.row_ptr[r + 1]; ++b) {
      const int col = static_cast<int>(v.cols[b]) + (b == v.nblocks - 1 ? 2 : 0);
      k.a[1].append_block(r, col, v.data + v.offsets[b],
                          k.s.size(static_cast<int>(v.row_ids[r])) * k.s.size(static_cast<int>(v.cols[b])));
    }
  ASSERT_EQ(k.a[1].nblocks(), before.nblocks());
  ASSERT_EQ(k.a[1].data_size(), before.data_size());
  EXPECT_NE(k.a[1].view().index, held) << "the change made the panel an index of its own";
  const Outcome changed = product(kernel, k, 1, &plans);
  EXPECT_EQ(changed.stats.replayed_ticks, 1);
  expect_same_panel(changed.c, product(kernel, k, 1, nullptr).c);
  k.a[1] = before;  // the recorded index again, in a panel of its own
  const Outcome restored = product(kernel, k, 1, &plans);
  EXPECT_EQ(restored.stats.replayed_ticks, 3);
  expect_same_panel(restored.c, product(kernel, k, 1, nullptr).c);
}

// A panel whose index equals the plan's but is another object (a matrix made anew with the same
// pattern) is compared once: the plan then holds that object instead, and the next product given
// it knows it without comparing. The first object is no longer held by the plan.
TEST(ProductPlans, AnEqualIndexInAnotherObjectIsHeldFromItsFirstComparisonOn) {
  Case k;
  LoggingKernel kernel;
  ProductPlans plans;
  const Outcome first = product(kernel, k, 1, &plans);
  const Panel recorded = k.a[1];  // shares the index the plan holds
  ASSERT_TRUE(k.a[1].index_shared());
  k.a[1] = Panel::copy_of(recorded.view());  // the same blocks and offsets in an index of its own
  ASSERT_FALSE(k.a[1].index_shared());
  ASSERT_TRUE(recorded.index_shared()) << "held by the plan";
  ASSERT_NE(k.a[1].view().index, recorded.view().index);
  const Outcome again = product(kernel, k, 1, &plans);
  EXPECT_EQ(again.stats.replayed_ticks, 3);
  expect_same_panel(again.c, first.c);
  EXPECT_TRUE(k.a[1].index_shared()) << "the plan holds the equal index it compared";
  EXPECT_FALSE(recorded.index_shared()) << "and no longer the one it was recorded with";
  const Outcome third = product(kernel, k, 1, &plans);
  EXPECT_EQ(third.stats.replayed_ticks, 3);
  expect_same_panel(third.c, first.c);
}

// A tick whose panels differ from the plan's in anything (a block, or only where the values lie)
// is built, and so is every later tick; the product's C is what a product without plans makes,
// and the plan it leaves is replayed by a product given the same again. Fewer or more ticks than
// the plan: the ticks it has in common are replayed.
TEST(ProductPlans, AProductLeavesThePlanAtTheFirstTickThatDiffers) {
  const Case k;
  const Panel b1_other = make_panel(k.l, 22, [](int kk, int j) { return kk / 4 == 1 && (2 * kk + j) % 5 < 3; });
  const Panel b1_moved =
      make_panel(k.l, 22, [](int kk, int j) { return kk / 4 == 1 && (2 * kk + j) % 5 < 2; }, /*reversed=*/true);
  using Ticks = std::vector<std::pair<const Panel*, const Panel*>>;
  const Ticks recorded{{&k.a[0], &k.b[0]}, {&k.a[1], &k.b[1]}, {&k.a[2], &k.b[2]}};
  struct Variant {
    std::string what;
    Ticks ticks;
    int replayed;
  };
  const std::vector<Variant> variants{
      {"another block in tick 1", {{&k.a[0], &k.b[0]}, {&k.a[1], &b1_other}, {&k.a[2], &k.b[2]}}, 1},
      {"tick 1's blocks stored elsewhere", {{&k.a[0], &k.b[0]}, {&k.a[1], &b1_moved}, {&k.a[2], &k.b[2]}}, 1},
      {"tick 0 differs", {{&k.a[1], &k.b[1]}, {&k.a[0], &k.b[0]}, {&k.a[2], &k.b[2]}}, 0},
      {"two ticks of three", {{&k.a[0], &k.b[0]}, {&k.a[1], &k.b[1]}}, 2},
      {"a fourth tick", {{&k.a[0], &k.b[0]}, {&k.a[1], &k.b[1]}, {&k.a[2], &k.b[2]}, {&k.a[1], &b1_other}}, 3},
  };
  // Room reserved for C (expected > 0) makes one thread take one pass a tick, which notes the
  // blocks it adds only while it records: the plan it leaves must still know them.
  const std::int64_t room = k.s.total() * k.s.total();
  for (const int threads : {1, 2})
    for (const std::int64_t expected : {std::int64_t{0}, room})
      for (const auto& v : variants) {
        SCOPED_TRACE(v.what + ", " + std::to_string(threads) + " threads, " +
                     (expected > 0 ? "room reserved" : "no room reserved"));
        LoggingKernel kernel;
        ProductPlans plans;
        product(kernel, k, threads, &plans, expected, recorded);
        const Outcome left = product(kernel, k, threads, &plans, expected, v.ticks);
        EXPECT_EQ(left.stats.replayed_ticks, v.replayed);
        EXPECT_EQ(left.stats.ticks, static_cast<std::int64_t>(v.ticks.size()));
        const Outcome fresh = product(kernel, k, threads, nullptr, expected, v.ticks);
        expect_same_panel(left.c, fresh.c);
        expect_same_stacks(kernel.logs[1], kernel.logs[2]);
        EXPECT_EQ(test::expect_first_marks(kernel.logs[1]), left.c.nblocks() - k.c0.nblocks());
        EXPECT_EQ(plans.size(), 2U);
        const Outcome again = product(kernel, k, threads, &plans, expected, v.ticks);
        EXPECT_EQ(again.stats.replayed_ticks, static_cast<std::int64_t>(v.ticks.size()));
        expect_same_panel(again.c, fresh.c);
        const Outcome first = product(kernel, k, threads, &plans, expected, recorded);  // the first plan is still there
        EXPECT_EQ(first.stats.replayed_ticks, 3);
      }
}

// A plan is a candidate only for a product that starts alike: the same C rows and start pattern,
// layout, thread rows and memory space. Filtering makes no plans (the stacks depend on values).
TEST(ProductPlans, OnlyAProductThatStartsAlikeReplaysAndFilteringMakesNone) {
  const Case k;
  ReferenceKernel kernel;
  ProductPlans plans;
  product(kernel, k, 1, &plans);
  ASSERT_EQ(plans.size(), 1U);
  {  // another start pattern of C
    const Panel other = make_panel(k.l, 5, [](int i, int j) { return i == j && i != 3; });
    LocalProduct lp(other.view(), k.l, kernel, 1, {}, {}, 0.5, 0, &plans);
    for (std::size_t t = 0; t < 3; ++t) lp.multiply(k.a[t].view(), k.l, k.b[t].view(), k.l);
    EXPECT_EQ(lp.stats().replayed_ticks, 0);
    lp.finish();
  }
  {  // other rows owned by the threads
    const Outcome r = product(kernel, k, 2, &plans);
    EXPECT_EQ(r.stats.replayed_ticks, 0);
  }
  {  // filtering
    ProductPlans none;
    LocalProduct lp(k.c0.view(), k.l, kernel, 1, std::vector<double>(12, 1e-30), {}, 0.5, 0, &none);
    for (std::size_t t = 0; t < 3; ++t) lp.multiply(k.a[t].view(), k.l, k.b[t].view(), k.l);
    lp.finish();
    EXPECT_EQ(none.size(), 0U);
  }
  EXPECT_EQ(plans.size(), 3U);  // the first, and one for each product that started differently
}

// The plans stay within max_bytes, the least recently used dropped first; a plan larger than the
// limit is not kept; 0 keeps none. Their memory is tracked (Category::Other) and given back.
TEST(ProductPlans, PlansStayWithinTheirBytesAndGiveTheirMemoryBack) {
  const Case k;
  ReferenceKernel kernel;
  const std::int64_t other_before = memory::current(memory::Category::Other);
  ProductPlans plans;
  product(kernel, k, 1, &plans);
  const std::int64_t one = plans.bytes();
  ASSERT_GT(one, 0);
  EXPECT_GE(memory::current(memory::Category::Other) - other_before, one / 2) << "the plans are counted";
  // Another product (other ticks): with room for both, both are kept; the one used last survives
  // a limit that holds one.
  using Ticks = std::vector<std::pair<const Panel*, const Panel*>>;
  const Ticks other{{&k.a[2], &k.b[2]}, {&k.a[0], &k.b[0]}, {&k.a[1], &k.b[1]}};
  product(kernel, k, 1, &plans, 0, other);
  EXPECT_EQ(plans.size(), 2U);
  EXPECT_EQ(product(kernel, k, 1, &plans).stats.replayed_ticks, 3);  // now the most recently used
  plans.set_max_bytes(plans.bytes() - 1);
  EXPECT_EQ(plans.size(), 1U);
  EXPECT_LE(plans.bytes(), plans.max_bytes());
  EXPECT_EQ(product(kernel, k, 1, &plans).stats.replayed_ticks, 3);
  EXPECT_EQ(product(kernel, k, 1, &plans, 0, other).stats.replayed_ticks, 0);
  // Too large for the limit: not kept (recording stops), and the product is still right.
  ProductPlans small(one / 4);
  const Outcome r = product(kernel, k, 1, &small);
  EXPECT_EQ(small.size(), 0U);
  expect_same_panel(r.c, product(kernel, k, 1, nullptr).c);
  // 0 drops everything and keeps nothing.
  plans.set_max_bytes(0);
  EXPECT_EQ(plans.size(), 0U);
  EXPECT_EQ(plans.bytes(), 0);
  product(kernel, k, 1, &plans);
  EXPECT_EQ(plans.size(), 0U);
  EXPECT_EQ(memory::current(memory::Category::Other), other_before);
}

// Products that come round in a cycle whose plans do not all fit (the partial products of an
// iteration): the plans in use are not dropped for a new one, so as many of the cycle's products
// replay as their plans fit (two of five here), where dropping the least recently used would
// replay none. Plans no longer in use give their room to new ones: products of a new pair replay
// after a few cycles. C is right throughout.
TEST(ProductPlans, ACycleOfProductsLargerThanTheRoomReplaysAsManyAsFit) {
  const Case k;
  ReferenceKernel kernel;
  // Seven products that differ in C's start (the diagonal shifted by v): seven keys.
  std::vector<Panel> c0;
  for (int v = 0; v < 7; ++v) c0.push_back(make_panel(k.l, 5 + v, [v](int i, int j) { return (i + v) % 12 == j; }));
  auto run = [&](int v, ProductPlans* plans) {
    LocalProduct lp(c0[static_cast<std::size_t>(v)].view(), k.l, kernel, 1, {}, {}, 0.5, 0, plans);
    for (std::size_t t = 0; t < k.a.size(); ++t) lp.multiply(k.a[t].view(), k.l, k.b[t].view(), k.l);
    Outcome r;
    r.c = lp.finish();
    r.stats = lp.stats();  // with the plan kept or not (finish)
    return r;
  };
  std::vector<Panel> fresh;
  std::vector<std::int64_t> size;
  for (int v = 0; v < 7; ++v) {
    ProductPlans alone;
    fresh.push_back(run(v, &alone).c);
    ASSERT_EQ(alone.size(), 1U);
    size.push_back(alone.bytes());
  }
  const auto [small, large] = std::minmax_element(size.begin(), size.end());
  ASSERT_GT(5 * *small, 4 * *large) << "plans of about one size";
  // Room for any two plans, not for three.
  ProductPlans plans(2 * *large + *small / 2);
  std::vector<int> replayed, not_kept;  // products replayed in full, and plans not kept, per cycle
  for (int cycle = 0; cycle < 4; ++cycle) {
    int full = 0, left = 0;
    for (int v = 0; v < 5; ++v) {
      const Outcome r = run(v, &plans);
      expect_same_panel(r.c, fresh[static_cast<std::size_t>(v)]);
      if (r.stats.replayed_ticks == r.stats.ticks) ++full;
      left += static_cast<int>(r.stats.plans_not_kept);
      EXPECT_LE(plans.bytes(), plans.max_bytes());
    }
    replayed.push_back(full);
    not_kept.push_back(left);
  }
  EXPECT_EQ(replayed, (std::vector<int>{0, 2, 2, 2}));
  EXPECT_EQ(not_kept, (std::vector<int>{3, 3, 3, 3})) << "the products report their plans not kept";
  EXPECT_EQ(plans.size(), 2U);
  EXPECT_EQ(plans.declined(), 3 * 4) << "three of five products' plans declined in every cycle";
  // A new pair of products: the old plans go out of use and the new ones take their room.
  int last = 0;
  for (int cycle = 0; cycle < 8; ++cycle) {
    last = 0;
    for (int v = 5; v < 7; ++v) {
      const Outcome r = run(v, &plans);
      expect_same_panel(r.c, fresh[static_cast<std::size_t>(v)]);
      if (r.stats.replayed_ticks == r.stats.ticks) ++last;
    }
  }
  EXPECT_EQ(last, 2);
  // Shrinking the room drops plans in use too, the least recently used first.
  plans.set_max_bytes(*large);
  EXPECT_EQ(plans.size(), 1U);
  EXPECT_EQ(run(6, &plans).stats.replayed_ticks, 3);
}

// The k block sizes are part of what a tick is given: panels whose blocks lie at the same offsets
// (here a fixed stride, with room to spare) but whose k blocks differ in size are not replayed.
TEST(ProductPlans, OtherKBlockSizesAreNotReplayed) {
  const BlockSizes s = BlockSizes::cyclic(6, {2, 3});
  std::vector<int> wider = s.sizes();
  wider[2] = 4;  // k block 2 (used by A and B below): 2 -> 4 rows
  const BlockSizes k_wide(wider);
  const std::vector<BlockLayout> a_layout{{s, s}, {s, k_wide}}, b_layout{{s, s}, {k_wide, s}};
  const BlockLayout c_layout{s, s};
  const Panel c0(std::vector<int>{0, 1, 2, 3, 4, 5});
  LoggingKernel kernel;
  ProductPlans plans;
  std::vector<Panel> results;
  for (int v : {0, 1, 1}) {
    const Panel a = make_panel(a_layout[v], 3, [](int i, int kk) { return (i + kk) % 2 == 0; }, false, 64);
    const Panel b = make_panel(b_layout[v], 4, [](int kk, int j) { return (kk + 2 * j) % 3 != 1; }, false, 64);
    LocalProduct lp(c0.view(), c_layout, kernel, 1, {}, {}, 1.0, 0, &plans);
    lp.multiply(a.view(), a_layout[v], b.view(), b_layout[v]);
    EXPECT_EQ(lp.stats().replayed_ticks, results.size() == 2 ? 1 : 0) << "product " << results.size();
    results.push_back(lp.finish());
    LocalProduct fresh(c0.view(), c_layout, kernel, 1, {});
    fresh.multiply(a.view(), a_layout[v], b.view(), b_layout[v]);
    expect_same_panel(results.back(), fresh.finish());
  }
}

// The threads' rows and the memory space are part of what a product starts with: another
// partition of the rows over the same number of threads, or a device backend, do not replay a
// plan. A product that finishes without a tick leaves the plans as they were.
TEST(ProductPlans, OtherThreadRowsOrMemorySpaceAreNotReplayed) {
  const Case k;
  ReferenceKernel host;
  ProductPlans plans;
  product(host, k, 2, &plans);
  ASSERT_EQ(plans.size(), 1U);
  {
    std::vector<std::int64_t> weight(12, 1);
    weight[0] = 40;  // thread 0 gets row 0 alone
    LocalProduct lp(k.c0.view(), k.l, host, 2, {}, weight, 0.5, 0, &plans);
    for (std::size_t t = 0; t < 3; ++t) lp.multiply(k.a[t].view(), k.l, k.b[t].view(), k.l);
    EXPECT_EQ(lp.stats().replayed_ticks, 0);
    lp.finish();
  }
  test::DeviceLike<ReferenceKernel> device;
  product(device, k, 1, &plans);
  EXPECT_EQ(product(host, k, 1, &plans).stats.replayed_ticks, 0) << "a device backend's plan, on the host";
  EXPECT_EQ(product(device, k, 1, &plans).stats.replayed_ticks, 3);
  const std::size_t held = plans.size();
  {
    LocalProduct lp(k.c0.view(), k.l, host, 1, {}, {}, 0.5, 0, &plans);
    const Panel c = lp.finish();  // no tick: beta * C0
    EXPECT_EQ(c.nblocks(), k.c0.nblocks());
  }
  EXPECT_EQ(plans.size(), held);
}

// A replay grows C as a built tick would with the room reserved now: a plan recorded with room
// for C (one pass, a growth per stack) and replayed without any grows C once per tick, exactly as
// the product without plans does; the other way round, once per tick too. (A tick of 16,000
// products: four stacks.)
TEST(ProductPlans, AReplayGrowsCAsABuiltTickWouldWithTheRoomReservedNow) {
  const BigTick t;
  const BlockSizes& s = t.s;
  const BlockLayout& l = t.l;
  const Panel &a = t.a, &b = t.b, &empty = t.empty;
  const std::int64_t room = s.total() * s.total();
  for (const auto& [recorded, replayed] : {std::pair<std::int64_t, std::int64_t>{room, 0}, {0, room}}) {
    SCOPED_TRACE("recorded with room for " + std::to_string(recorded) + ", replayed with " + std::to_string(replayed));
    LoggingKernel kernel;
    ProductPlans plans;
    std::vector<Panel> c;
    for (const auto& [expected, with] : {std::pair<std::int64_t, ProductPlans*>{recorded, &plans},
                                         {replayed, &plans}, {replayed, nullptr}}) {
      LocalProduct lp(empty.view(), l, kernel, 1, {}, {}, 1.0, expected, with);
      lp.multiply(a.view(), l, b.view(), l);
      c.push_back(lp.finish());
    }
    EXPECT_GT(kernel.logs[0].sizes.at(0).size(), 2U) << "several stacks in the tick";
    EXPECT_EQ(kernel.logs[0].grows.size(), recorded > 0 ? kernel.logs[0].sizes.at(0).size() : 1U);
    EXPECT_EQ(plans.size(), 1U);
    expect_same_panel(c[1], c[2]);
    EXPECT_EQ(kernel.logs[1].grows.size(), 1U) << "one growth in the replayed tick";
    EXPECT_EQ(kernel.logs[1].grows.back(), kernel.logs[2].grows.back());
    if (replayed == 0) {
      EXPECT_EQ(kernel.logs[1].grows, kernel.logs[2].grows);
    }
  }
}

// A tick whose stacks cannot fit in the room the plans have is not recorded at all: its products
// are counted before any is stacked, and the memory a product takes with plans too small for it
// stays that of a product without plans (plus its key), not that of its record up to the room.
TEST(ProductPlans, ATickBeyondTheRoomIsNotRecordedAtAll) {
  const BigTick t;
  const BlockLayout& l = t.l;
  const Panel &a = t.a, &b = t.b, &empty = t.empty;
  ReferenceKernel kernel;
  // On one thread without room reserved for C (two passes), with room (one pass), and on two.
  // The two threads' slots run one after the other on one OpenMP thread: run at once, each
  // slot's transient scratch counts in the peak or not as they interleave (4 KiB either way in
  // 21 of 300 runs, with or without plans), and the comparison below would depend on chance.
  struct Way {
    const char* what;
    int threads;
    std::int64_t expected;
  };
  for (const Way& way : {Way{"two passes", 1, 0}, Way{"one pass", 1, l.rows.total() * l.cols.total()},
                         Way{"two threads", 2, 0}}) {
    SCOPED_TRACE(way.what);
    struct OneTeam {  // every parallel region a team of one, until the scope ends
      int levels = omp_get_max_active_levels();
      OneTeam() { omp_set_max_active_levels(0); }
      ~OneTeam() { omp_set_max_active_levels(levels); }
    } one_team;
    auto peak_of = [&](ProductPlans* plans) {
      const std::int64_t before = memory::current(memory::Category::Other);
      memory::reset_peak(memory::Category::Other);
      LocalProduct lp(empty.view(), l, kernel, way.threads, {}, {}, 1.0, way.expected, plans);
      lp.multiply(a.view(), l, b.view(), l);
      EXPECT_GT(lp.stats().products, 15000);  // 600 KB of stack entries
      const Panel c = lp.finish();
      // No plan kept: finish handed every scratch back; only C's map of rows stays with the
      // product (an int per block row of the layout).
      if (plans == nullptr || plans->size() == 0) {
        EXPECT_LE(memory::current(memory::Category::Other) - before,
                  static_cast<std::int64_t>(sizeof(int)) * l.rows.count());
      }
      return memory::peak(memory::Category::Other) - before;
    };
    const std::int64_t without = peak_of(nullptr);
    // Room for half the tick's entries: more than a stack of them (4,096 entries, 160 KiB), which
    // recording up to the room would have copied.
    ProductPlans small(300 << 10);
    const std::int64_t with_small = peak_of(&small);
    EXPECT_EQ(small.size(), 0U);
    // Its key (C's start and the threads' rows) is all it adds.
    EXPECT_LT(with_small, without + 4096) << "without plans " << without << " B";
    ProductPlans large;
    EXPECT_GT(peak_of(&large), without + 15000 * static_cast<std::int64_t>(sizeof(StackEntry)))
        << "the record is counted while it is made";
    EXPECT_EQ(large.size(), 1U);
  }
}

// Views that show no Panel's index (received images: packed words) are copied into the plan and
// compared with it word by word: the same index in other arrays replays every tick, and a block
// moved to another column of the same size (same counts, same value places) makes its tick and
// the later ones be built, with C what a product without plans makes.
TEST(ProductPlans, ViewsWithoutAnIndexObjectAreCopiedAndComparedWordByWord) {
  const Case k;
  struct Packed {
    std::vector<std::int64_t> words;
    std::vector<double> values;
    PanelView view() const {
      return PanelView::from_packed(words.data(), static_cast<std::int64_t>(words.size()), values.data());
    }
  };
  const auto pack = [](const PanelView& v) {
    Packed p;
    p.words.resize(static_cast<std::size_t>(PanelView::packed_words(v.nrows, v.nblocks)));
    v.pack_to(p.words.data());
    p.values.assign(v.data, v.data + v.data_size);
    return p;
  };
  const auto run = [&k](Kernel& kernel, const std::vector<Packed>& a, ProductPlans* plans) {
    LocalProduct lp(k.c0.view(), k.l, kernel, 1, {}, {}, 0.5, 0, plans);
    for (std::size_t t = 0; t < a.size(); ++t) {
      const PanelView v = a[t].view();
      EXPECT_EQ(v.index, nullptr);
      lp.multiply(v, k.l, k.b[t].view(), k.l);
    }
    Outcome r;
    r.stats = lp.stats();
    r.c = lp.finish();
    return r;
  };
  std::vector<Packed> a;
  for (const Panel& p : k.a) a.push_back(pack(p.view()));
  LoggingKernel kernel;
  ProductPlans plans;
  const Outcome fresh = run(kernel, a, nullptr);
  EXPECT_EQ(run(kernel, a, &plans).stats.replayed_ticks, 0);
  const std::vector<Packed> again = a;  // the same words in other arrays
  const Outcome replayed = run(kernel, again, &plans);
  EXPECT_EQ(replayed.stats.replayed_ticks, 3);
  expect_same_panel(replayed.c, fresh.c);
  // Tick 1's A: its last block two columns on (sizes repeat every two columns).
  std::vector<Packed> moved = a;
  const PanelView v = a[1].view();
  const std::size_t last_col = static_cast<std::size_t>(3 + 2 * v.nrows + 1 + v.nblocks - 1);
  ASSERT_EQ(moved[1].words[last_col], v.cols[v.nblocks - 1]);
  ASSERT_LT(v.cols[v.nblocks - 1] + 2, k.s.count());
  moved[1].words[last_col] += 2;
  const Outcome changed = run(kernel, moved, &plans);
  EXPECT_EQ(changed.stats.replayed_ticks, 1);
  expect_same_panel(changed.c, run(kernel, moved, nullptr).c);
  EXPECT_EQ(run(kernel, moved, &plans).stats.replayed_ticks, 3) << "the plan it left is the moved one's";
}
