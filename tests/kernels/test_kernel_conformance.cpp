// The local backend conformance suite (Ginkgo's pattern: one test source, every backend).
//
// Every kernel the registry finds (core's `reference`, the in-tree plugins and whatever
// PLEXUS_PLUGIN_PATH adds), with its default parameters, plus the specs of
// PLEXUS_CONFORMANCE_EXTRA (comma-separated name[:Key=Value...], e.g. "cpu:Backend=blas"), runs
// every case below through the session interface (begin, stage, grow, process, unstage, finish)
// and through core's LocalProduct, against an independent dense triple loop and against the
// `reference` kernel. PLEXUS_CONFORMANCE_ONLY (same syntax) replaces the list: that is how a
// third-party backend runs the suite on itself (installed as plexus-kernel-conformance).
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "conformance_specs.hpp"
#include "core/local_product_testing.hpp"
#include "raw_stacks.hpp"
#include "plexus/error.hpp"
#include "plexus/kernel.hpp"
#include "plexus/layout.hpp"
#include "plexus/local_multiply.hpp"
#include "plexus/memory.hpp"
#include "plexus/panel.hpp"
#include "plexus/parameters.hpp"
#include "plexus/registry.hpp"

namespace {

using plexus::test::RawProblem;
using plexus::test::dense_of;
using plexus::test::dense_stack;
using plexus::test::mark_first_products;
using plexus::test::random_stack;
using plexus::test::raw_view;
using plexus::test::rel_error;

using plexus::BlockLayout;
using plexus::BlockSizes;
using plexus::Kernel;
using plexus::KernelSession;
using plexus::MatrixData;
using plexus::Panel;
using plexus::PanelView;
using plexus::StackEntry;
using plexus::test::Spec;

constexpr double kTol = 1e-13;
const std::vector<int> kOddSizes = {1, 5, 13, 23, 32};

// The backends under test.
const std::vector<Spec>& backends() {
  static const std::vector<Spec> list = [] {
    plexus::Registry::global().load_default();
    std::vector<Spec> out;
    for (const auto* e : plexus::Registry::global().list(plexus::ComponentKind::Kernel))
      out.push_back(Spec{e->descriptor.name, e->descriptor.name, {}});
    auto specs = plexus::test::specs_under_test(out);
    std::string names;
    for (const auto& s : specs) names += (names.empty() ? "" : ", ") + s.text;
    std::printf("local backends under test: %s\n", names.c_str());
    return specs;
  }();
  return list;
}

std::unique_ptr<Kernel> make(const Spec& s) {
  plexus::ParameterList p(s.name);
  for (const auto& kv : s.params) plexus::apply_override(p, kv);
  return plexus::Registry::global().make_kernel(s.name, p, "Kernel/" + s.name);
}

std::vector<double> to_vector(const MatrixData& d) { return std::vector<double>(d.begin(), d.end()); }
MatrixData to_data(const std::vector<double>& v) { return MatrixData(v.begin(), v.end()); }

// ---- raw stacks through a session -------------------------------------------------------------

/// One session, one tick, the stack in slices of `slice` entries from slot 0.
std::vector<double> run_session(Kernel& k, const RawProblem& p, std::size_t slice = 4096) {
  auto s = k.begin(to_data(p.c), 1);
  s->stage(raw_view(p.a), raw_view(p.b));
  for (std::size_t i = 0; i < p.stack.size(); i += slice)
    s->process(p.stack.data() + i, static_cast<std::int64_t>(std::min(slice, p.stack.size() - i)), 0);
  s->unstage();
  return to_vector(s->finish());
}

class BackendConformance : public testing::TestWithParam<Spec> {
 protected:
  void SetUp() override {
    // A backend that cannot run on this machine (a GPU kernel without a GPU) is skipped, saying why.
    const auto* e = plexus::Registry::global().find(plexus::ComponentKind::Kernel, GetParam().name);
    if (e != nullptr && e->descriptor.unavailable) {
      const std::string why = e->descriptor.unavailable();
      if (!why.empty()) GTEST_SKIP() << GetParam().text << " cannot run here: " << why;
    }
    // So is a variant this machine cannot run (cpu:Backend=avx512 on a CPU without AVX-512F).
    try {
      make(GetParam());
    } catch (const plexus::UnavailableError& err) {
      GTEST_SKIP() << GetParam().text << " cannot run here: " << err.what();
    }
  }
  std::unique_ptr<Kernel> kernel() const { return make(GetParam()); }
};

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

// ---- through core's LocalProduct ------------------------------------------------------------------

/// A panel over `rows` (global block-row ids) with blocks present with probability `density`
/// over the global block columns of `layout`; values uniform in [-1, 1), scaled per block by a
/// random factor spread over several decades so that filtering thresholds cut somewhere.
Panel random_panel(const std::vector<int>& rows, const BlockLayout& layout, double density, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> val(-1.0, 1.0), u(0.0, 1.0), decade(-3.0, 0.0);
  Panel p(rows);
  for (int r = 0; r < static_cast<int>(rows.size()); ++r) {
    const int m = layout.rows.size(rows[r]);
    for (int c = 0; c < layout.cols.count(); ++c) {
      if (u(rng) >= density) continue;
      const int nvals = m * layout.cols.size(c);
      const double scale = std::pow(10.0, decade(rng));
      double* v = p.append_block(r, c, nvals);
      for (int i = 0; i < nvals; ++i) v[i] = scale * val(rng);
    }
  }
  return p;
}

/// CSR row of a global block row in a view, or -1.
int row_of(const plexus::PanelView& v, int global_row) {
  const std::int64_t* end = v.row_ids + v.nrows;
  const std::int64_t* it = std::lower_bound(v.row_ids, end, std::int64_t{global_row});
  return it != end && *it == global_row ? static_cast<int>(it - v.row_ids) : -1;
}

double frob(const double* v, int n) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += v[i] * v[i];
  return std::sqrt(s);
}

struct Expected {
  std::vector<double> c;  // dense
  std::int64_t products = 0, skipped = 0;
};

/// C += A * B with a dense triple loop over the present blocks, skipping a product when
/// |A(i,k)| * |B(k,j)| < eps of C's CSR row of i.
void dense_accumulate(Expected& ex, const Panel& a_panel, const BlockLayout& al, const Panel& b_panel,
                      const BlockLayout& bl, const std::vector<int>& c_rows, const BlockLayout& cl,
                      const std::vector<double>& row_eps) {
  const plexus::PanelView a = a_panel.view(), b = b_panel.view();
  const std::int64_t nr = cl.rows.total();
  for (int ra = 0; ra < a.nrows; ++ra) {
    const int gi = static_cast<int>(a.row_ids[ra]);
    const int crow = static_cast<int>(std::lower_bound(c_rows.begin(), c_rows.end(), gi) - c_rows.begin());
    const double eps = row_eps.empty() ? 0.0 : row_eps[crow];
    const int m = al.rows.size(gi);
    for (std::int64_t ab = a.row_ptr[ra]; ab < a.row_ptr[ra + 1]; ++ab) {
      const int gk = static_cast<int>(a.cols[ab]);
      const int kk = al.cols.size(gk);
      const double* av = a.data + a.offsets[ab];
      const double an = frob(av, m * kk);
      const int rb = row_of(b, gk);
      if (rb < 0) continue;
      for (std::int64_t bb = b.row_ptr[rb]; bb < b.row_ptr[rb + 1]; ++bb) {
        const int gj = static_cast<int>(b.cols[bb]);
        const int n = bl.cols.size(gj);
        const double* bv = b.data + b.offsets[bb];
        if (an * frob(bv, kk * n) < eps) {
          ++ex.skipped;
          continue;
        }
        ++ex.products;
        const std::int64_t r0 = cl.rows.offset(gi), c0 = cl.cols.offset(gj);
        for (int j = 0; j < n; ++j)
          for (int l = 0; l < kk; ++l)
            for (int i = 0; i < m; ++i)
              ex.c[std::size_t((c0 + j) * nr + r0 + i)] += av[i + std::int64_t{l} * m] * bv[l + std::int64_t{j} * kk];
      }
    }
  }
}

/// Per-C-row thresholds chosen in the gaps between product norms, so that no product lies so
/// close to its threshold that rounding in the norm computation could decide it. Some rows get
/// 0 (no filtering), the others a threshold near the median of their product norms.
std::vector<double> choose_eps(const Panel& a_panel, const BlockLayout& al, const Panel& b_panel, const BlockLayout& bl,
                               const std::vector<int>& c_rows) {
  const plexus::PanelView a = a_panel.view(), b = b_panel.view();
  std::vector<double> eps(c_rows.size(), 0.0);
  for (int ra = 0; ra < a.nrows; ++ra) {
    const int gi = static_cast<int>(a.row_ids[ra]);
    const int crow = static_cast<int>(std::lower_bound(c_rows.begin(), c_rows.end(), gi) - c_rows.begin());
    if (crow % 3 == 2) continue;  // unfiltered row
    std::vector<double> norms;
    for (std::int64_t ab = a.row_ptr[ra]; ab < a.row_ptr[ra + 1]; ++ab) {
      const int gk = static_cast<int>(a.cols[ab]);
      const int kk = al.cols.size(gk);
      const double an = frob(a.data + a.offsets[ab], al.rows.size(gi) * kk);
      const int rb = row_of(b, gk);
      if (rb < 0) continue;
      for (std::int64_t bb = b.row_ptr[rb]; bb < b.row_ptr[rb + 1]; ++bb)
        norms.push_back(an * frob(b.data + b.offsets[bb], kk * bl.cols.size(static_cast<int>(b.cols[bb]))));
    }
    std::sort(norms.begin(), norms.end());
    if (norms.size() < 2) continue;
    // The widest relative gap around the median.
    std::size_t best = norms.size() / 2;
    double best_gap = 0;
    for (std::size_t i = norms.size() / 4; i + 1 < norms.size() && i <= 3 * norms.size() / 4; ++i) {
      const double gap = (norms[i + 1] - norms[i]) / norms[i + 1];
      if (gap > best_gap) {
        best_gap = gap;
        best = i;
      }
    }
    if (best_gap < 1e-9) continue;
    eps[crow] = 0.5 * (norms[best] + norms[best + 1]);
  }
  return eps;
}

struct Tick {
  Panel a, b;
};

struct LocalCase {
  std::string name;
  BlockLayout cl, al, bl;  // global layouts of C, A, B
  std::vector<int> c_rows;
  Panel c_start;
  std::vector<Tick> ticks;
};

LocalCase make_case(const std::string& name, int nrow_blocks, int nk_blocks, int ncol_blocks, double density_a,
                    double density_b, double density_c, int nticks, std::uint64_t seed, bool a_subset_rows) {
  std::mt19937_64 rng(seed);
  LocalCase lc;
  lc.name = name;
  const BlockSizes rows = BlockSizes::cyclic(nrow_blocks, kOddSizes);
  const BlockSizes ks = BlockSizes::cyclic(nk_blocks, {13, 1, 32, 5, 23});
  const BlockSizes cols = BlockSizes::cyclic(ncol_blocks, {23, 32, 1, 13, 5});
  lc.cl = {rows, cols};
  lc.al = {rows, ks};
  lc.bl = {ks, cols};
  // C holds every other global row plus a few more (a process row of a 2D distribution).
  for (int r = 0; r < nrow_blocks; ++r)
    if (r % 2 == 0 || r % 7 == 3) lc.c_rows.push_back(r);
  std::vector<int> a_rows;
  for (std::size_t i = 0; i < lc.c_rows.size(); ++i)
    if (!a_subset_rows || i % 4 != 1) a_rows.push_back(lc.c_rows[i]);
  std::vector<int> k_rows(nk_blocks);
  for (int i = 0; i < nk_blocks; ++i) k_rows[i] = i;
  lc.c_start = random_panel(lc.c_rows, lc.cl, density_c, rng);
  for (int t = 0; t < nticks; ++t) {
    Tick tick{random_panel(a_rows, lc.al, density_a, rng), random_panel(k_rows, lc.bl, density_b, rng)};
    lc.ticks.push_back(std::move(tick));
  }
  return lc;
}

/// Runs the case on a backend through LocalProduct; returns the dense result and the stats.
std::pair<std::vector<double>, plexus::LocalMultiplyStats> run_local(const LocalCase& lc, Kernel& k,
                                                                     const std::vector<double>& row_eps, int threads,
                                                                     double c_scale = 1.0) {
  plexus::LocalProduct lp(lc.c_start.view(), lc.cl, k, threads, row_eps, {}, c_scale);
  EXPECT_EQ(lp.threads(), threads);
  for (const Tick& t : lc.ticks) lp.multiply(t.a.view(), lc.al, t.b.view(), lc.bl);
  plexus::LocalMultiplyStats stats = lp.stats();
  Panel c = lp.finish();
  const PanelView v = c.view();
  EXPECT_EQ(v.nrows, static_cast<int>(lc.c_rows.size()));
  for (int r = 0; r < v.nrows; ++r) {
    EXPECT_EQ(v.row_ids[r], lc.c_rows[r]);
    for (std::int64_t blk = v.row_ptr[r]; blk + 1 < v.row_ptr[r + 1]; ++blk) EXPECT_LT(v.cols[blk], v.cols[blk + 1]);
  }
  return {dense_of(v, lc.cl), stats};
}

void check_case(const LocalCase& lc, bool filter, const Spec& spec, double c_scale = 1.0) {
  SCOPED_TRACE(lc.name + (filter ? " (filtered)" : " (unfiltered)") + ", c_scale " + std::to_string(c_scale));
  // Thresholds come from the first tick's products (later ticks are cut wherever they fall,
  // away from ties by the random scaling).
  std::vector<double> row_eps;
  if (filter) {
    row_eps = lc.ticks.empty() ? std::vector<double>(lc.c_rows.size(), 0.5)
                               : choose_eps(lc.ticks[0].a, lc.al, lc.ticks[0].b, lc.bl, lc.c_rows);
  }
  Expected ex;
  ex.c = dense_of(lc.c_start.view(), lc.cl);
  for (double& x : ex.c) x *= c_scale;
  for (const Tick& t : lc.ticks) dense_accumulate(ex, t.a, lc.al, t.b, lc.bl, lc.c_rows, lc.cl, row_eps);
  if (filter && !lc.ticks.empty() && lc.ticks[0].a.nblocks() > 0 && lc.ticks[0].b.nblocks() > 0) {
    EXPECT_GT(ex.skipped, 0) << "the thresholds should skip something";
    EXPECT_GT(ex.products, 0);
  }
  plexus::ReferenceKernel ref;
  const auto [ref_c, ref_stats] = run_local(lc, ref, row_eps, 1, c_scale);
  EXPECT_LE(rel_error(ref_c, ex.c), kTol) << "reference kernel vs dense loop";
  auto k = make(spec);
  for (int threads : {1, k->threads(), 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    const auto [c, stats] = run_local(lc, *k, row_eps, threads, c_scale);
    EXPECT_LE(rel_error(c, ref_c), kTol) << "vs reference kernel";
    EXPECT_LE(rel_error(c, ex.c), kTol) << "vs dense loop";
    EXPECT_EQ(stats.products, ex.products);
    EXPECT_EQ(stats.skipped, ex.skipped);
  }
}

TEST_P(BackendConformance, LocalProductMixedSizesOneTick) {
  const LocalCase lc = make_case("mixed", 23, 17, 19, 0.4, 0.4, 0.3, 1, 21, true);
  check_case(lc, false, GetParam());
  check_case(lc, true, GetParam());
  check_case(lc, false, GetParam(), -0.5);
}

TEST_P(BackendConformance, LocalProductSeveralTicks) {
  const LocalCase lc = make_case("ticks", 20, 15, 21, 0.3, 0.35, 0.2, 3, 22, true);
  check_case(lc, false, GetParam());
  check_case(lc, true, GetParam());
  check_case(lc, true, GetParam(), 2.0);
}

TEST_P(BackendConformance, LocalProductDenseBlocks) {
  const LocalCase lc = make_case("dense", 11, 10, 9, 1.0, 1.0, 1.0, 1, 23, false);
  check_case(lc, false, GetParam());
  check_case(lc, true, GetParam());
}

TEST_P(BackendConformance, LocalProductManyStacks) {
  // More products per thread than one stack holds (core flushes full stacks mid-row).
  const LocalCase lc = make_case("many stacks", 40, 40, 40, 0.6, 0.6, 0.1, 2, 24, false);
  check_case(lc, false, GetParam());
}

TEST_P(BackendConformance, LocalProductEmptyPanels) {
  const Spec& s = GetParam();
  for (auto [name, da, db, dc, seed] : {std::make_tuple("empty A", 0.0, 0.5, 0.4, 31),
                                        std::make_tuple("empty B", 0.5, 0.0, 0.4, 32),
                                        std::make_tuple("empty C start", 0.5, 0.5, 0.0, 33),
                                        std::make_tuple("all empty", 0.0, 0.0, 0.0, 34)}) {
    const LocalCase lc = make_case(name, 12, 9, 10, da, db, dc, name == std::string("empty C start") ? 2 : 1,
                                   static_cast<std::uint64_t>(seed), true);
    check_case(lc, false, s);
    check_case(lc, true, s);
  }
  // A over no rows at all, and a multiply with no ticks.
  LocalCase lc = make_case("A without rows", 12, 9, 10, 0.5, 0.5, 0.4, 1, 35, true);
  lc.ticks[0].a = Panel(std::vector<int>{});
  check_case(lc, false, s);
  lc.ticks.clear();
  lc.name = "no ticks";
  check_case(lc, false, s);
}

std::string spec_name(const testing::TestParamInfo<Spec>& info) {
  std::string n;
  for (char ch : info.param.text) n += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return n + "_" + std::to_string(info.index);
}

TEST_P(BackendConformance, NormsOfStagedPanels) {
  // A backend that computes block norms where it keeps the panels gives core's figures.
  const BlockLayout al{BlockSizes(kOddSizes), BlockSizes({23, 1, 32, 6})};
  const BlockLayout bl{BlockSizes({23, 1, 32, 6}), BlockSizes({5, 13, 2})};
  std::mt19937_64 rng(77);
  const Panel a = random_panel({0, 2, 3, 4}, al, 0.7, rng);
  const Panel b = random_panel({0, 1, 3}, bl, 0.8, rng);
  auto k = kernel();
  auto s = k->begin(MatrixData(10, 0.0), 1);
  s->stage(a.view(), b.view());
  std::vector<double> an(static_cast<std::size_t>(a.nblocks()), -1.0), bn(static_cast<std::size_t>(b.nblocks()), -1.0);
  const bool computed = s->norms(al, bl, an.data(), bn.data());
  s->unstage();
  EXPECT_EQ(to_vector(s->finish()), std::vector<double>(10, 0.0));
  if (!computed) return;  // left to core's block_norms
  const std::vector<double> ea = plexus::block_norms(a.view(), al), eb = plexus::block_norms(b.view(), bl);
  ASSERT_EQ(an.size(), ea.size());
  for (std::size_t i = 0; i < ea.size(); ++i) EXPECT_NEAR(an[i], ea[i], 1e-14 * ea[i]) << "A block " << i;
  ASSERT_EQ(bn.size(), eb.size());
  for (std::size_t i = 0; i < eb.size(); ++i) EXPECT_NEAR(bn[i], eb[i], 1e-14 * eb[i]) << "B block " << i;
}

INSTANTIATE_TEST_SUITE_P(EveryBackend, BackendConformance, testing::ValuesIn(backends()), spec_name);

}  // namespace
