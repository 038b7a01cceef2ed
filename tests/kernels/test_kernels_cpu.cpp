// Unit tests of the `cpu` kernel plugin, loaded through the registry as a user would load it,
// against core's ReferenceKernel and an independent dense triple loop.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "plexus/error.hpp"
#include "plexus/kernel.hpp"
#include "plexus/layout.hpp"
#include "plexus/local_multiply.hpp"
#include "plexus/panel.hpp"
#include "plexus/parameters.hpp"
#include "plexus/plugin.hpp"
#include "plexus/registry.hpp"

#ifndef PLEXUS_KERNELS_CPU_PATH
#error "PLEXUS_KERNELS_CPU_PATH must name the built plugin"
#endif
#ifndef PLEXUS_HAVE_LIBXSMM
#define PLEXUS_HAVE_LIBXSMM 0
#endif

namespace {

using plexus::BlockLayout;
using plexus::BlockSizes;
using plexus::Kernel;
using plexus::Panel;
using plexus::StackEntry;

constexpr double kTol = 1e-13;
const std::vector<int> kOddSizes = {1, 5, 13, 23, 32};

void load_plugin_once() {
  static bool loaded = [] {
    plexus::Registry::global().load_file(PLEXUS_KERNELS_CPU_PATH);
    return true;
  }();
  (void)loaded;
}

std::unique_ptr<Kernel> make_cpu(int threads, const std::string& backend = "auto") {
  load_plugin_once();
  plexus::ParameterList p("cpu");
  p.set("Threads", threads);
  p.set("Backend", backend);
  return plexus::Registry::global().make_kernel("cpu", p, "Kernel/cpu");
}

double rel_error(const std::vector<double>& x, const std::vector<double>& ref) {
  EXPECT_EQ(x.size(), ref.size());
  double d = 0, r = 0;
  for (std::size_t i = 0; i < std::min(x.size(), ref.size()); ++i) {
    d += (x[i] - ref[i]) * (x[i] - ref[i]);
    r += ref[i] * ref[i];
  }
  return r > 0 ? std::sqrt(d / r) : std::sqrt(d);
}

std::string error_text(const plexus::Error& e) { return e.where() + ": " + e.what(); }

// ---- raw stacks ------------------------------------------------------------------------------

struct RawProblem {
  std::vector<StackEntry> stack;
  std::vector<double> a, b, c;
};

/// `count` products with m, n, k drawn from `sizes`; C blocks of equal shape are shared by
/// several products so that accumulation into one block is exercised. `c_slots_per_shape` C
/// blocks per (m, n).
RawProblem random_stack(int count, const std::vector<int>& sizes, std::uint64_t seed, int c_slots_per_shape = 3) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> val(-1.0, 1.0);
  std::uniform_int_distribution<std::size_t> pick(0, sizes.size() - 1);
  RawProblem p;
  std::map<std::pair<int, int>, std::vector<std::int64_t>> c_slots;
  for (int s = 0; s < count; ++s) {
    StackEntry e{sizes[pick(rng)], sizes[pick(rng)], sizes[pick(rng)], 0, 0, 0};
    e.a = static_cast<std::int64_t>(p.a.size());
    p.a.resize(p.a.size() + std::size_t(e.m) * e.k);
    e.b = static_cast<std::int64_t>(p.b.size());
    p.b.resize(p.b.size() + std::size_t(e.k) * e.n);
    auto& slots = c_slots[{e.m, e.n}];
    if (static_cast<int>(slots.size()) < c_slots_per_shape) {
      slots.push_back(static_cast<std::int64_t>(p.c.size()));
      p.c.resize(p.c.size() + std::size_t(e.m) * e.n);
    }
    e.c = slots[std::uniform_int_distribution<std::size_t>(0, slots.size() - 1)(rng)];
    p.stack.push_back(e);
  }
  for (double& x : p.a) x = val(rng);
  for (double& x : p.b) x = val(rng);
  for (double& x : p.c) x = val(rng);
  return p;
}

std::vector<double> run_stack(Kernel& k, const RawProblem& p) {
  std::vector<double> c = p.c;
  k.process(p.stack.data(), static_cast<std::int64_t>(p.stack.size()), p.a.data(), p.b.data(), c.data());
  return c;
}

TEST(KernelsCpu, Descriptor) {
  load_plugin_once();
  const plexus::ComponentEntry& entry = plexus::Registry::global().get(plexus::ComponentKind::Kernel, "cpu");
  EXPECT_EQ(entry.descriptor.name, "cpu");
  EXPECT_FALSE(entry.descriptor.summary.empty());
  ASSERT_TRUE(entry.descriptor.valid_parameters);
  plexus::ParameterListPtr valid = entry.descriptor.valid_parameters();
  EXPECT_TRUE(valid->isParameter("Threads"));
  EXPECT_TRUE(valid->isParameter("Backend"));
  EXPECT_EQ(valid->get<int>("Threads"), 0);
  EXPECT_EQ(valid->get<std::string>("Backend"), "auto");

  auto k = make_cpu(0);
  EXPECT_EQ(k->name(), "cpu");
  EXPECT_EQ(k->threads(), omp_get_max_threads());
  EXPECT_EQ(make_cpu(1)->threads(), 1);
  EXPECT_EQ(make_cpu(2)->threads(), 2);

  // Defaults are filled in by the registry.
  plexus::ParameterList p("cpu");
  auto d = plexus::Registry::global().make_kernel("cpu", p, "Kernel/cpu");
  EXPECT_EQ(p.get<int>("Threads"), 0);
  EXPECT_EQ(p.get<std::string>("Backend"), "auto");
}

TEST(KernelsCpu, RawStackOddSizes) {
  plexus::ReferenceKernel ref;
  RawProblem p = random_stack(3000, kOddSizes, 11);
  const std::vector<double> expect = run_stack(ref, p);
  for (const char* backend : {"auto", "blas"}) {
    auto k = make_cpu(1, backend);
    const std::vector<double> got = run_stack(*k, p);
    EXPECT_LE(rel_error(got, expect), kTol) << "Backend=" << backend;
    EXPECT_GT(rel_error(p.c, expect), 1e-3) << "the stack changed nothing";
  }
}

TEST(KernelsCpu, RawStackLargeBlocksUseDgemm) {
  plexus::ReferenceKernel ref;
  // Shapes above 64^3 go to dgemm; mixed with small ones so the path switches inside a stack.
  RawProblem p = random_stack(120, {1, 23, 65, 80, 100}, 12);
  const std::vector<double> expect = run_stack(ref, p);
  for (const char* backend : {"auto", "blas"}) {
    auto k = make_cpu(1, backend);
    EXPECT_LE(rel_error(run_stack(*k, p), expect), kTol) << "Backend=" << backend;
  }
}

TEST(KernelsCpu, RawStackUniformRuns) {
  // Long runs of one shape (the last-hit fast path), then switches.
  plexus::ReferenceKernel ref;
  for (int s : {1, 5, 6, 13, 23, 32, 64}) {
    RawProblem p = random_stack(200, {s}, 100 + s);
    const std::vector<double> expect = run_stack(ref, p);
    auto k = make_cpu(1);
    EXPECT_LE(rel_error(run_stack(*k, p), expect), kTol) << "size " << s;
  }
}

TEST(KernelsCpu, EmptyStackAndZeroSizes) {
  auto k = make_cpu(1);
  std::vector<double> a(4, 1.0), b(4, 1.0), c(4, 2.0);
  k->process(nullptr, 0, a.data(), b.data(), c.data());
  EXPECT_EQ(c, std::vector<double>(4, 2.0));
  StackEntry zero_k{2, 2, 0, 0, 0, 0};
  k->process(&zero_k, 1, a.data(), b.data(), c.data());
  EXPECT_EQ(c, std::vector<double>(4, 2.0));
}

TEST(KernelsCpu, ConcurrentProcessOnDisjointBlocks) {
  // process() is called from several threads at once, each on its own C blocks: the per-thread
  // dispatch caches must not interfere.
  plexus::ReferenceKernel ref;
  constexpr int kParts = 4;
  std::vector<RawProblem> parts;
  std::vector<std::vector<double>> expect;
  for (int t = 0; t < kParts; ++t) {
    parts.push_back(random_stack(1500, kOddSizes, 200 + t));
    expect.push_back(run_stack(ref, parts.back()));
  }
  auto k = make_cpu(2);
  std::vector<std::vector<double>> got(kParts);
  for (int t = 0; t < kParts; ++t) got[t] = parts[t].c;
#pragma omp parallel for num_threads(2) schedule(static, 1)
  for (int t = 0; t < kParts; ++t) {
    const RawProblem& p = parts[t];
    // In slices, so that both threads switch shapes and dispatch concurrently.
    for (std::size_t s = 0; s < p.stack.size(); s += 100) {
      const std::int64_t n = static_cast<std::int64_t>(std::min<std::size_t>(100, p.stack.size() - s));
      k->process(p.stack.data() + s, n, p.a.data(), p.b.data(), got[t].data());
    }
  }
  for (int t = 0; t < kParts; ++t) EXPECT_LE(rel_error(got[t], expect[t]), kTol) << "part " << t;
}

TEST(KernelsCpu, BackendsAgree) {
  RawProblem p = random_stack(2000, {1, 5, 6, 13, 23, 32, 65}, 13);
  auto blas = make_cpu(1, "blas");
  const std::vector<double> with_blas = run_stack(*blas, p);
#if PLEXUS_HAVE_LIBXSMM
  auto xsmm = make_cpu(1, "libxsmm");
  EXPECT_LE(rel_error(run_stack(*xsmm, p), with_blas), kTol);
  auto autok = make_cpu(1, "auto");
  EXPECT_LE(rel_error(run_stack(*autok, p), with_blas), kTol);
#else
  try {
    make_cpu(1, "libxsmm");
    FAIL() << "Backend=libxsmm accepted by a build without libxsmm";
  } catch (const plexus::Error& e) {
    EXPECT_NE(error_text(e).find("Backend"), std::string::npos) << error_text(e);
    EXPECT_NE(error_text(e).find("libxsmm"), std::string::npos) << error_text(e);
  }
#endif
}

TEST(KernelsCpu, BadParametersRefused) {
  load_plugin_once();
  {
    plexus::ParameterList p("cpu");
    p.set("Backend", std::string("cuda"));
    try {
      plexus::Registry::global().make_kernel("cpu", p, "Kernel/cpu");
      FAIL() << "Backend=cuda accepted";
    } catch (const plexus::InputError& e) {
      EXPECT_NE(error_text(e).find("Backend"), std::string::npos) << error_text(e);
    }
  }
  {
    plexus::ParameterList p("cpu");
    p.set("Threads", -1);
    try {
      plexus::Registry::global().make_kernel("cpu", p, "Kernel/cpu");
      FAIL() << "Threads=-1 accepted";
    } catch (const plexus::InputError& e) {
      EXPECT_NE(error_text(e).find("Threads"), std::string::npos) << error_text(e);
    }
  }
  {
    plexus::ParameterList p("cpu");
    p.set("Threads", 5000);
    EXPECT_THROW(plexus::Registry::global().make_kernel("cpu", p, "Kernel/cpu"), plexus::InputError);
  }
  // The factory checks on its own too (for callers that bypass validation).
  const auto& d = plexus::Registry::global().get(plexus::ComponentKind::Kernel, "cpu").descriptor;
  {
    plexus::ParameterList p("cpu");
    p.set("Threads", -1);
    p.set("Backend", std::string("auto"));
    try {
      d.make_kernel(p);
      FAIL() << "factory accepted Threads=-1";
    } catch (const plexus::InputError& e) {
      EXPECT_NE(error_text(e).find("Threads"), std::string::npos) << error_text(e);
    }
  }
  {
    plexus::ParameterList p("cpu");
    p.set("Threads", 1);
    p.set("Backend", std::string("cuda"));
    try {
      d.make_kernel(p);
      FAIL() << "factory accepted Backend=cuda";
    } catch (const plexus::InputError& e) {
      EXPECT_NE(error_text(e).find("Backend"), std::string::npos) << error_text(e);
    }
  }
}

TEST(KernelsCpu, BlockNorm) {
  auto k = make_cpu(1);
  plexus::ReferenceKernel ref;
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> val(-1.0, 1.0);
  for (int n : {0, 1, 7, 25, 529, 1024}) {
    std::vector<double> x(n);
    for (double& v : x) v = val(rng);
    const double r = ref.block_norm(x.data(), n);
    EXPECT_NEAR(k->block_norm(x.data(), n), r, 1e-14 * (1 + r)) << n;
  }
}

// ---- through LocalProduct ------------------------------------------------------------------------

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

/// Dense column-major copy (global rows x global cols of the layout) of a panel.
std::vector<double> to_dense(const plexus::PanelView& p, const BlockLayout& layout) {
  const std::int64_t nr = layout.rows.total(), nc = layout.cols.total();
  std::vector<double> d(std::size_t(nr * nc), 0.0);
  for (int r = 0; r < p.nrows; ++r) {
    const int gr = static_cast<int>(p.row_ids[r]);
    const int m = layout.rows.size(gr);
    const std::int64_t r0 = layout.rows.offset(gr);
    for (std::int64_t blk = p.row_ptr[r]; blk < p.row_ptr[r + 1]; ++blk) {
      const int gc = static_cast<int>(p.cols[blk]);
      const int n = layout.cols.size(gc);
      const std::int64_t c0 = layout.cols.offset(gc);
      const double* v = p.data + p.offsets[blk];
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) d[std::size_t((c0 + j) * nr + r0 + i)] = v[i + std::int64_t{j} * m];
    }
  }
  return d;
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

/// Runs the case with a kernel; returns the dense result and the stats.
std::pair<std::vector<double>, plexus::LocalMultiplyStats> run_local(const LocalCase& lc, Kernel& k,
                                                                     const std::vector<double>& row_eps, int threads) {
  plexus::LocalProduct lp(lc.c_start.view(), lc.cl, threads, row_eps);
  EXPECT_EQ(lp.threads(), threads);
  for (const Tick& t : lc.ticks) lp.multiply(t.a.view(), lc.al, t.b.view(), lc.bl, k);
  plexus::LocalMultiplyStats stats = lp.stats();
  Panel c = lp.finish();
  const plexus::PanelView v = c.view();
  EXPECT_EQ(v.nrows, static_cast<int>(lc.c_rows.size()));
  for (int r = 0; r < v.nrows; ++r) {
    EXPECT_EQ(v.row_ids[r], lc.c_rows[r]);
    for (std::int64_t blk = v.row_ptr[r]; blk + 1 < v.row_ptr[r + 1]; ++blk) EXPECT_LT(v.cols[blk], v.cols[blk + 1]);
  }
  return {to_dense(v, lc.cl), stats};
}

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

void check_case(const LocalCase& lc, bool filter) {
  SCOPED_TRACE(lc.name + (filter ? " (filtered)" : " (unfiltered)"));
  // Thresholds come from the first tick's products (later ticks are cut wherever they fall,
  // away from ties by the random scaling).
  std::vector<double> row_eps;
  if (filter) {
    row_eps = lc.ticks.empty() ? std::vector<double>(lc.c_rows.size(), 0.5)
                               : choose_eps(lc.ticks[0].a, lc.al, lc.ticks[0].b, lc.bl, lc.c_rows);
  }
  Expected ex;
  ex.c = to_dense(lc.c_start.view(), lc.cl);
  for (const Tick& t : lc.ticks) dense_accumulate(ex, t.a, lc.al, t.b, lc.bl, lc.c_rows, lc.cl, row_eps);
  if (filter && !lc.ticks.empty() && lc.ticks[0].a.nblocks() > 0 && lc.ticks[0].b.nblocks() > 0) {
    EXPECT_GT(ex.skipped, 0) << "the thresholds should skip something";
    EXPECT_GT(ex.products, 0);
  }

  plexus::ReferenceKernel ref;
  const auto [ref_c, ref_stats] = run_local(lc, ref, row_eps, 1);
  EXPECT_LE(rel_error(ref_c, ex.c), kTol) << "reference kernel vs dense loop";
  for (int threads : {1, 2}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    auto k = make_cpu(threads);
    ASSERT_EQ(k->threads(), threads);
    const auto [c, stats] = run_local(lc, *k, row_eps, k->threads());
    EXPECT_LE(rel_error(c, ref_c), kTol) << "cpu vs reference kernel";
    EXPECT_LE(rel_error(c, ex.c), kTol) << "cpu vs dense loop";
    EXPECT_EQ(stats.products, ex.products);
    EXPECT_EQ(stats.skipped, ex.skipped);
  }
}

TEST(KernelsCpuLocalProduct, MixedSizesOneTick) {
  const LocalCase lc = make_case("mixed", 23, 17, 19, 0.4, 0.4, 0.3, 1, 21, true);
  check_case(lc, false);
  check_case(lc, true);
}

TEST(KernelsCpuLocalProduct, MixedSizesSeveralTicks) {
  const LocalCase lc = make_case("ticks", 20, 15, 21, 0.3, 0.35, 0.2, 3, 22, true);
  check_case(lc, false);
  check_case(lc, true);
}

TEST(KernelsCpuLocalProduct, DenseBlocks) {
  const LocalCase lc = make_case("dense", 11, 10, 9, 1.0, 1.0, 1.0, 1, 23, false);
  check_case(lc, false);
  check_case(lc, true);
}

TEST(KernelsCpuLocalProduct, EmptyPanels) {
  {
    LocalCase lc = make_case("empty A", 12, 9, 10, 0.0, 0.5, 0.4, 1, 31, true);
    check_case(lc, false);
    check_case(lc, true);
  }
  {
    LocalCase lc = make_case("empty B", 12, 9, 10, 0.5, 0.0, 0.4, 1, 32, true);
    check_case(lc, false);
    check_case(lc, true);
  }
  {
    LocalCase lc = make_case("empty C start", 12, 9, 10, 0.5, 0.5, 0.0, 2, 33, true);
    check_case(lc, false);
    check_case(lc, true);
  }
  {
    LocalCase lc = make_case("all empty", 12, 9, 10, 0.0, 0.0, 0.0, 1, 34, true);
    check_case(lc, false);
    check_case(lc, true);
  }
  {
    // A over no rows at all, and a multiply with no ticks.
    LocalCase lc = make_case("A without rows", 12, 9, 10, 0.5, 0.5, 0.4, 1, 35, true);
    lc.ticks[0].a = Panel(std::vector<int>{});
    check_case(lc, false);
    lc.ticks.clear();
    check_case(lc, false);
  }
}

}  // namespace
