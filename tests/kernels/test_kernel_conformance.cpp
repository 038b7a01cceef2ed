// The local backend conformance suite (Ginkgo's pattern: one test suite, every backend).
//
// Every kernel the registry finds (core's `reference`, the in-tree plugins and whatever
// PLEXUS_PLUGIN_PATH adds), with its default parameters, plus the specs of
// PLEXUS_CONFORMANCE_EXTRA (comma-separated name[:Key=Value...], e.g. "cpu:Backend=blas"), runs
// every case below through the session interface (begin, stage, grow, process, unstage, finish)
// and through core's LocalProduct, against an independent dense triple loop and against the
// `reference` kernel. PLEXUS_CONFORMANCE_ONLY (same syntax) replaces the list: that is how a
// third-party backend runs the suite on itself (installed as plexus-kernel-conformance).
//
// This file: the raw stacks through a session, and the instantiation; the fixture is in
// kernel_conformance.hpp, the cases through LocalProduct in test_kernel_conformance_local.cpp.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernel_conformance.hpp"

namespace plexus::test::kernel_conformance {


TEST_P(BackendConformance, RawStackOddSizes) {
  RawProblem p = random_stack(3000, kOddSizes, 11);
  const std::vector<double> expect = dense_stack(p);
  EXPECT_GT(rel_error(p.c, expect), 1e-3) << "the stack changes nothing";
  auto k = kernel();
  EXPECT_LE(rel_error(run_session(*k, p), expect), kTol);
  EXPECT_LE(rel_error(run_session(*k, p, 7), expect), kTol) << "in slices of 7";
}

TEST_P(BackendConformance, RawStackLargeBlocks) {
  // Large shapes (beyond small-matrix code paths) mixed with small ones inside one stack.
  RawProblem p = random_stack(120, {1, 23, 65, 80, 100}, 12);
  auto k = kernel();
  EXPECT_LE(rel_error(run_session(*k, p), dense_stack(p)), kTol);
}

TEST_P(BackendConformance, RawStackUniformRuns) {
  // Long runs of one shape, then a switch (dispatch caches).
  auto k = kernel();
  for (int s : {1, 5, 6, 13, 23, 32, 64}) {
    RawProblem p = random_stack(200, {s}, 100 + s);
    EXPECT_LE(rel_error(run_session(*k, p), dense_stack(p)), kTol) << "size " << s;
  }
}

TEST_P(BackendConformance, RawStackSmallBlocksSharingA) {
  // Stacks as core orders them (runs of products sharing their A block) of every small size up to
  // 9, where kernels that keep A in registers take blocks of up to 8; without and with marked first
  // products (whose blocks start at zero in the oracle where the backend's first products write).
  auto k = kernel();
  for (const std::vector<int>& sizes : {std::vector<int>{6}, std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9}}) {
    for (bool marked : {false, true}) {
      RawProblem p = plexus::test::shared_a_stack(400, 24, sizes, sizes.size() + 71);
      RawProblem oracle = p;
      if (marked) {
        mark_first_products(p.stack);
        if (k->first_product_writes())
          for (const StackEntry& e : p.stack)
            if (e.first != 0) std::fill_n(oracle.c.begin() + e.c, std::int64_t{e.m} * e.n, 0.0);
      }
      const std::vector<double> expect = dense_stack(oracle);
      ASSERT_GT(rel_error(p.c, expect), 1e-3) << "the stack changes nothing";
      EXPECT_LE(rel_error(run_session(*k, p), expect), kTol) << sizes.size() << " sizes, marked " << marked;
      EXPECT_LE(rel_error(run_session(*k, p, 5), expect), kTol)
          << sizes.size() << " sizes, marked " << marked << ", in slices of 5";
    }
  }
}

TEST_P(BackendConformance, EmptyStackAndZeroSizes) {
  auto k = kernel();
  const std::vector<double> a(4, 1.0), b(4, 1.0), c(4, 2.0);
  auto s = k->begin(to_data(c), 1);
  s->stage(raw_view(a), raw_view(b));
  s->process(nullptr, 0, 0);
  const StackEntry zero_k{.m = 2, .n = 2, .k = 0, .first = 0, .a = 0, .b = 0, .c = 0};
  s->process(&zero_k, 1, 0);
  s->unstage();
  EXPECT_EQ(to_vector(s->finish()), c);
}

TEST_P(BackendConformance, SessionWithoutTicksReturnsC) {
  auto k = kernel();
  const std::vector<double> c = {1.5, -2.0, 3.25};
  EXPECT_EQ(to_vector(k->begin(to_data(c), 1)->finish()), c);
  EXPECT_TRUE(k->begin(MatrixData{}, 2)->finish().empty());
}

TEST_P(BackendConformance, ConcurrentSlotsOnDisjointBlocks) {
  // Slots process at the same time, each on C blocks of its own, in slices so that they switch
  // shapes concurrently. The parts' C areas are laid end to end in one session.
  constexpr int kParts = 4, kSlots = 2;
  std::vector<RawProblem> parts;
  RawProblem all;
  std::vector<std::size_t> c_base;
  for (int t = 0; t < kParts; ++t) {
    RawProblem p = random_stack(1500, kOddSizes, 200 + t);
    c_base.push_back(all.c.size());
    for (StackEntry e : p.stack) {
      e.a += static_cast<std::int64_t>(all.a.size());
      e.b += static_cast<std::int64_t>(all.b.size());
      e.c += static_cast<std::int64_t>(all.c.size());
      all.stack.push_back(e);
    }
    all.a.insert(all.a.end(), p.a.begin(), p.a.end());
    all.b.insert(all.b.end(), p.b.begin(), p.b.end());
    all.c.insert(all.c.end(), p.c.begin(), p.c.end());
    parts.push_back(std::move(p));
  }
  c_base.push_back(all.c.size());
  const std::vector<double> expect = dense_stack(all);
  auto k = kernel();
  auto s = k->begin(to_data(all.c), kSlots);
  s->stage(raw_view(all.a), raw_view(all.b));
  std::vector<std::size_t> first(kParts + 1, 0);
  for (int t = 0; t < kParts; ++t) first[t + 1] = first[t] + parts[t].stack.size();
  std::string failure;
  int team = 0;
#pragma omp parallel num_threads(kSlots)
  {
    const int slot = omp_get_thread_num();
#pragma omp single
    team = omp_get_num_threads();
    try {
      for (int t = slot; t < kParts; t += omp_get_num_threads())
        for (std::size_t i = first[t]; i < first[t + 1]; i += 100)
          s->process(all.stack.data() + i, static_cast<std::int64_t>(std::min<std::size_t>(100, first[t + 1] - i)), slot);
    } catch (const std::exception& e) {
#pragma omp critical(conformance_failure)
      failure = e.what();
    }
  }
  ASSERT_EQ(failure, "");
  s->unstage();
  const std::vector<double> got = to_vector(s->finish());
  for (int t = 0; t < kParts; ++t) {
    const std::vector<double> g(got.begin() + c_base[t], got.begin() + c_base[t + 1]);
    const std::vector<double> x(expect.begin() + c_base[t], expect.begin() + c_base[t + 1]);
    EXPECT_LE(rel_error(g, x), kTol) << "part " << t;
  }
  if (team < kSlots) GTEST_SKIP() << "OpenMP gave " << team << " thread(s): the slots did not run concurrently";
}

TEST_P(BackendConformance, MarkedFirstProductsWriteOnlyWhereTheKernelSaysSo) {
  // A product marked first writes its block (C = A * B, whatever C held) on a backend whose
  // first_product_writes() is true; any other backend ignores the mark and adds.
  RawProblem p = random_stack(2000, kOddSizes, 51);
  mark_first_products(p.stack);
  RawProblem zero = p;  // the blocks that get products start at zero
  for (const StackEntry& e : p.stack) std::fill_n(zero.c.begin() + e.c, std::int64_t{e.m} * e.n, 0.0);
  const std::vector<double> added = dense_stack(p);
  const std::vector<double> written = dense_stack(zero);
  ASSERT_GT(rel_error(added, written), 1e-3) << "C's start values make no difference: writing and adding agree";
  auto k = kernel();
  const std::vector<double>& expect = k->first_product_writes() ? written : added;
  EXPECT_LE(rel_error(run_session(*k, p), expect), kTol);
  EXPECT_LE(rel_error(run_session(*k, p, 7), expect), kTol) << "in slices of 7";
  // A marked product with k = 0 writes A * B = 0 where marks write, and changes nothing elsewhere.
  const std::vector<double> a(4, 1.0), b(4, 1.0), c(4, 2.0);
  auto s = k->begin(to_data(c), 1);
  s->stage(raw_view(a), raw_view(b));
  const StackEntry zero_k{.m = 2, .n = 2, .k = 0, .first = 1, .a = 0, .b = 0, .c = 0};
  s->process(&zero_k, 1, 0);
  s->unstage();
  EXPECT_EQ(to_vector(s->finish()), k->first_product_writes() ? std::vector<double>(4, 0.0) : c);
}

/// `blocks` new C blocks of `shapes` (m, n), one after the other in C, each taking 1 to 6 products
/// (k from `ks`; k = 200 for the second product into a block of 40 rows): the first at the block's
/// place in the stack, the others near it or, one in five, anywhere after it. Marked as core marks them.
RawProblem new_blocks_near_and_far(const std::vector<std::pair<int, int>>& shapes, const std::vector<int>& ks,
                                   int blocks, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  RawProblem p;
  struct Product {
    double at;  // where it goes in the stack's order
    StackEntry e;
  };
  std::vector<Product> products;
  std::uniform_int_distribution<std::size_t> shape_of(0, shapes.size() - 1), k_of(0, ks.size() - 1);
  std::uniform_int_distribution<int> count_of(1, 6), far(0, 4);
  std::uniform_real_distribution<double> near(0.0, 12.0), anywhere(0.0, 1.0);
  for (int blk = 0; blk < blocks; ++blk) {
    const auto [m, n] = shapes[shape_of(rng)];
    const auto c = static_cast<std::int64_t>(p.c.size());
    p.c.resize(p.c.size() + std::size_t(m) * n);
    for (int q = 0, count = count_of(rng); q < count; ++q) {
      const int k = m == 40 && q == 1 ? 200 : ks[k_of(rng)];
      StackEntry e{.m = m, .n = n, .k = k, .first = 0, .a = 0, .b = 0, .c = c};
      e.a = static_cast<std::int64_t>(p.a.size());
      p.a.resize(p.a.size() + std::size_t(m) * k);
      e.b = static_cast<std::int64_t>(p.b.size());
      p.b.resize(p.b.size() + std::size_t(k) * n);
      const double at = q == 0 ? blk : far(rng) == 0 ? blk + anywhere(rng) * (blocks - blk) : blk + near(rng);
      products.push_back({at, e});
    }
  }
  std::stable_sort(products.begin(), products.end(), [](const Product& x, const Product& y) { return x.at < y.at; });
  for (const Product& x : products) p.stack.push_back(x.e);
  std::uniform_real_distribution<double> val(-1.0, 1.0);
  for (double& x : p.a) x = val(rng);
  for (double& x : p.b) x = val(rng);
  for (double& x : p.c) x = val(rng);
  mark_first_products(p.stack);
  return p;
}

TEST_P(BackendConformance, ManyNewBlocksWithProductsNearAndFar) {
  // A one-pass multiply's new C blocks, megabytes of them, at offsets of any alignment: most of a
  // block's products follow its first one closely (as within a C row's tile), some come much
  // later in the stack, some in a later process() call (a backend that keeps new blocks aside
  // for a while, in a cache-resident copy of a few hundred KiB or a device batch, must still see
  // each as new only once). Blocks of 40 x 33 with k = 200 take a host library's path for the
  // largest products; thousands of tiny blocks (9 x 1, 1 x 12) are more than a backend could keep
  // track of one by one.
  auto k = kernel();
  const std::pair<const char*, RawProblem> cases[] = {
      {"1,200 mixed blocks",
       new_blocks_near_and_far({{12, 5}, {23, 23}, {40, 33}, {9, 30}, {6, 6}}, {4, 13, 23, 70}, 1200, 71)},
      {"4,000 tiny blocks", new_blocks_near_and_far({{9, 1}, {1, 12}}, {1, 3, 9}, 4000, 72)},
  };
  for (const auto& [what, p] : cases) {
    RawProblem zero = p;  // every block is new: written by its first product where marks write
    std::fill(zero.c.begin(), zero.c.end(), 0.0);
    const std::vector<double> expect = dense_stack(k->first_product_writes() ? zero : p);
    EXPECT_LE(rel_error(run_session(*k, p, p.stack.size()), expect), kTol)
        << what << " (" << p.c.size() << " values of C), one process() call";
    EXPECT_LE(rel_error(run_session(*k, p, 7), expect), kTol) << what << ", in slices of 7";
    EXPECT_LE(rel_error(run_session(*k, p, 1000), expect), kTol) << what << ", in slices of 1000";
  }
}

/// Two ticks of one session: tick 1's stack, then C grows and tick 2's stack writes into the new
/// blocks, the first product into each marked; the panels of each tick are overwritten as soon
/// as unstage() has returned. Returns what finish() gave and the oracle's C.
std::pair<std::vector<double>, std::vector<double>> grow_between_two_ticks(Kernel& k) {
  RawProblem p1 = random_stack(500, kOddSizes, 31), p2 = random_stack(500, kOddSizes, 32);
  const std::int64_t n1 = static_cast<std::int64_t>(p1.c.size());
  // Tick 2 writes into C blocks placed after tick 1's area, the first product into each marked.
  RawProblem p2_shifted = p2;
  for (StackEntry& e : p2_shifted.stack) e.c += n1;
  mark_first_products(p2_shifted.stack);
  std::vector<double> expect = dense_stack(p1);
  expect.resize(expect.size() + p2.c.size(), 0.0);
  {
    RawProblem zero = p2;
    std::fill(zero.c.begin(), zero.c.end(), 0.0);
    const std::vector<double> second = dense_stack(zero);
    std::copy(second.begin(), second.end(), expect.begin() + n1);
  }
  auto s = k.begin(to_data(p1.c), 1);
  // One tick on copies of the panels, overwritten with NaN once unstage() has returned.
  auto tick = [&](const RawProblem& panels, const std::vector<StackEntry>& stack) {
    std::vector<double> a = panels.a, b = panels.b;
    s->stage(raw_view(a), raw_view(b));
    s->process(stack.data(), static_cast<std::int64_t>(stack.size()), 0);
    s->unstage();
    std::fill(a.begin(), a.end(), std::numeric_limits<double>::quiet_NaN());
    std::fill(b.begin(), b.end(), std::numeric_limits<double>::quiet_NaN());
  };
  tick(p1, p1.stack);
  s->grow(n1);  // no growth
  s->grow(n1 + static_cast<std::int64_t>(p2.c.size()));
  tick(p2, p2_shifted.stack);
  return {to_vector(s->finish()), expect};
}

TEST_P(BackendConformance, GrowthAndTicksKeepC) {
  // C grows between ticks; new values start at zero, or are written by their first products (as
  // core marks them) on a backend whose first products write; the panels of a tick may be
  // overwritten as soon as unstage() has returned (the backend must not read them later).
  auto k = kernel();
  const auto [got, expect] = grow_between_two_ticks(*k);
  ASSERT_EQ(got.size(), expect.size());
  EXPECT_LE(rel_error(got, expect), kTol);
}

TEST_P(BackendConformance, SessionsInARowOnOneKernel) {
  // A kernel serves one multiply after another: a session starts from its own C and panels,
  // whatever an earlier session of the same kernel left (a backend that keeps its buffers
  // between sessions must not show an earlier C in a later one's growth). The first session's
  // C (8 blocks per shape) is larger than all of the second's (3 and 3 more after growth), so
  // every value of the second lies where the first's were.
  auto k = kernel();
  RawProblem big = random_stack(3000, kOddSizes, 33, 8);
  const std::vector<double> big_expect = dense_stack(big);
  EXPECT_LE(rel_error(run_session(*k, big), big_expect), kTol) << "first session";
  const auto [got, expect] = grow_between_two_ticks(*k);
  ASSERT_EQ(got.size(), expect.size());
  ASSERT_GT(big.c.size(), expect.size());
  EXPECT_LE(rel_error(got, expect), kTol) << "second session, C grown";
  EXPECT_LE(rel_error(run_session(*k, big, 7), big_expect), kTol) << "third session";
}

TEST_P(BackendConformance, DeviceMemoryIsReturned) {
  // Whatever a backend holds in device memory for its sessions (during them, and kept between
  // them) is given back when the kernel is destroyed; a host backend holds none.
  using plexus::MemorySpace;
  const std::int64_t before = plexus::memory::current_total(MemorySpace::Device);
  plexus::memory::reset_peak_total(MemorySpace::Device);
  RawProblem p = random_stack(300, kOddSizes, 41);
  bool host = false;
  {
    auto k = kernel();
    host = k->memory_space() == MemorySpace::Host;
    EXPECT_LE(rel_error(run_session(*k, p), dense_stack(p)), kTol);
    EXPECT_LE(rel_error(run_session(*k, p), dense_stack(p)), kTol) << "second session";
  }
  EXPECT_EQ(plexus::memory::current_total(MemorySpace::Device), before);
  const std::int64_t held = plexus::memory::peak_total(MemorySpace::Device) - before;
  if (host) {
    EXPECT_EQ(held, 0) << "a host backend counted device memory";
  } else {
    // C, A and B were resident on the device at once.
    const auto bytes = static_cast<std::int64_t>(sizeof(double) * (p.a.size() + p.b.size() + p.c.size()));
    EXPECT_GE(held, bytes) << "a device backend must count what it holds";
  }
}

std::string spec_name(const testing::TestParamInfo<Spec>& info) {
  std::string n;
  for (char ch : info.param.text) n += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return n + "_" + std::to_string(info.index);
}

INSTANTIATE_TEST_SUITE_P(EveryBackend, BackendConformance, testing::ValuesIn(backends()), spec_name);

}  // namespace plexus::test::kernel_conformance
