// The local backend conformance suite, continued: every backend through core's LocalProduct
// (mixed sizes, several ticks, dense blocks, many stacks, empty panels, filtering, C scaled) and
// the block norms of staged panels, against an independent dense product. The fixture is in
// kernel_conformance.hpp; the instantiation over the backends in test_kernel_conformance.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kernel_conformance.hpp"

namespace plexus::test::kernel_conformance {

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

/// Whether a tick has products and dense panels: every A row has blocks in the same columns, every
/// B row among those columns blocks in the same columns (a tick a backend's
/// HostKernel::dense_min_size may take whole). With `host`, only if it takes it: the harmonic mean
/// of a thread's rows (M over the product's `threads`, or over A's block rows where fewer),
/// columns N and inner size K (the k blocks both panels hold) reaches its size for their blocks'
/// mean sizes.
bool dense_tick(const LocalCase& lc, const Tick& t, const plexus::HostKernel* host, int threads) {
  const PanelView a = t.a.view(), b = t.b.view();
  if (a.nrows == 0 || b.nrows == 0) return false;
  const std::vector<std::int64_t> a_cols(a.cols + a.row_ptr[0], a.cols + a.row_ptr[1]);
  std::vector<std::int64_t> b_cols;
  bool dense = !a_cols.empty(), products = false;
  for (int r = 0; r < a.nrows; ++r)
    dense = dense && std::vector<std::int64_t>(a.cols + a.row_ptr[r], a.cols + a.row_ptr[r + 1]) == a_cols;
  double K = 0, nk = 0;
  for (int r = 0; r < b.nrows; ++r) {
    if (std::find(a_cols.begin(), a_cols.end(), b.row_ids[r]) == a_cols.end()) continue;
    const std::vector<std::int64_t> cols(b.cols + b.row_ptr[r], b.cols + b.row_ptr[r + 1]);
    if (!products) b_cols = cols;
    products = true;
    dense = dense && cols == b_cols && !cols.empty();
    K += lc.al.cols.size(static_cast<int>(b.row_ids[r]));
    nk += 1;
  }
  if (!dense || !products) return false;
  if (host == nullptr) return true;
  double M = 0, N = 0;
  for (int r = 0; r < a.nrows; ++r) M += lc.cl.rows.size(static_cast<int>(a.row_ids[r]));
  for (const std::int64_t j : b_cols) N += lc.cl.cols.size(static_cast<int>(j));
  const plexus::DenseBlocks blocks{M / a.nrows, N / static_cast<double>(b_cols.size()), K / nk};
  const std::int64_t size = host->dense_min_size(blocks);
  const double m = M / std::min(threads, a.nrows);
  return size > 0 && 3.0 / (1.0 / m + 1.0 / N + 1.0 / K) >= static_cast<double>(size);
}

/// The ticks with products whose panels are dense (whether a backend takes them or not).
std::int64_t dense_ticks(const LocalCase& lc) {
  std::int64_t n = 0;
  for (const Tick& t : lc.ticks) n += dense_tick(lc, t, nullptr, 1) ? 1 : 0;
  return n;
}

/// f(crow, norm) for each product of a tick: the C row (its index in c_rows) and the product of
/// its blocks' Frobenius norms, as dense_accumulate compares it with the row's threshold.
template <class F>
void for_each_product_norm(const LocalCase& lc, const Tick& t, F&& f) {
  const PanelView a = t.a.view(), b = t.b.view();
  for (int ra = 0; ra < a.nrows; ++ra) {
    const int gi = static_cast<int>(a.row_ids[ra]);
    const auto crow =
        static_cast<std::size_t>(std::lower_bound(lc.c_rows.begin(), lc.c_rows.end(), gi) - lc.c_rows.begin());
    const int m = lc.al.rows.size(gi);
    for (std::int64_t ab = a.row_ptr[ra]; ab < a.row_ptr[ra + 1]; ++ab) {
      const int gk = static_cast<int>(a.cols[ab]);
      const int kk = lc.al.cols.size(gk);
      const double an = frob(a.data + a.offsets[ab], m * kk);
      const int rb = row_of(b, gk);
      if (rb < 0) continue;
      for (std::int64_t bb = b.row_ptr[rb]; bb < b.row_ptr[rb + 1]; ++bb)
        f(crow, an * frob(b.data + b.offsets[bb], kk * lc.bl.cols.size(static_cast<int>(b.cols[bb]))));
    }
  }
}

/// Whether on-the-fly filtering at `row_eps` (none: no filtering) keeps every product of a tick,
/// by dense_accumulate's rule.
bool keeps_every_product(const LocalCase& lc, const Tick& t, const std::vector<double>& row_eps) {
  if (row_eps.empty()) return true;
  bool all = true;
  for_each_product_norm(lc, t, [&](std::size_t crow, double norm) { all = all && !(norm < row_eps[crow]); });
  return all;
}

/// The dense ticks a backend computes whole: none on a device backend; on a host backend those it
/// takes by its sizes with `threads` threads, where filtering (if any) would skip none of their
/// products.
std::int64_t expected_dense_ticks(const LocalCase& lc, const Kernel& k, const std::vector<double>& row_eps,
                                  int threads) {
  const auto* host = dynamic_cast<const plexus::HostKernel*>(&k);
  if (host == nullptr) return 0;
  std::int64_t n = 0;
  for (const Tick& t : lc.ticks) n += dense_tick(lc, t, host, threads) && keeps_every_product(lc, t, row_eps) ? 1 : 0;
  return n;
}

/// The ticks whose B is dense (plexus::DenseLayout::of): those a caller may hand over as one dense
/// matrix.
std::int64_t dense_b_ticks(const LocalCase& lc) {
  std::int64_t n = 0;
  for (const Tick& t : lc.ticks) n += plexus::DenseLayout::of(t.b.view(), lc.bl) ? 1 : 0;
  return n;
}

/// Runs the case on a backend through LocalProduct; returns the dense result and the stats.
/// `dense_b`: each tick whose B is dense gets it as one dense matrix (LocalProduct::multiply's
/// second form), its blocks' values at b.data overwritten with NaN so that a read of them shows.
/// `expected_values`: C's room reserved (LocalProduct's hint; 0: none).
std::pair<std::vector<double>, plexus::LocalMultiplyStats> run_local(const LocalCase& lc, Kernel& k,
                                                                     const std::vector<double>& row_eps, int threads,
                                                                     double c_scale = 1.0, bool dense_b = false,
                                                                     std::int64_t expected_values = 0) {
  plexus::LocalProduct lp(lc.c_start.view(), lc.cl, k, threads, row_eps, {}, c_scale, expected_values);
  EXPECT_EQ(lp.threads(), threads);
  for (const Tick& t : lc.ticks) {
    const std::optional<plexus::DenseLayout> d = dense_b ? plexus::DenseLayout::of(t.b.view(), lc.bl) : std::nullopt;
    if (!d) {
      lp.multiply(t.a.view(), lc.al, t.b.view(), lc.bl);
      continue;
    }
    std::vector<double> dense(static_cast<std::size_t>(d->K * d->N), 0.0);
    d->copy_in(t.b.view(), lc.bl, dense.data());
    const std::vector<double> poisoned(static_cast<std::size_t>(t.b.view().data_size), std::nan(""));
    PanelView b = t.b.view();
    b.data = poisoned.data();
    lp.multiply(t.a.view(), lc.al, b, lc.bl, dense.data(), *d);
  }
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

/// The case on the spec's backend (at 1, its own and 3 threads) and the reference kernel against
/// the dense loop, filtered at `row_eps` (none: unfiltered): C, the products, the skipped ones
/// and the dense ticks.
void check_products(const LocalCase& lc, const std::vector<double>& row_eps, const Spec& spec, double c_scale,
                    bool must_skip) {
  Expected ex;
  ex.c = dense_of(lc.c_start.view(), lc.cl);
  for (double& x : ex.c) x *= c_scale;
  for (const Tick& t : lc.ticks) dense_accumulate(ex, t.a, lc.al, t.b, lc.bl, lc.c_rows, lc.cl, row_eps);
  if (must_skip && !lc.ticks.empty() && lc.ticks[0].a.nblocks() > 0 && lc.ticks[0].b.nblocks() > 0) {
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
    EXPECT_EQ(stats.dense_ticks, expected_dense_ticks(lc, *k, row_eps, threads)) << "ticks computed as dense products";
    // B given as one dense matrix where it is dense: the same C to the last bit (the same dense
    // tick, or B's blocks copied back out of it and the same stacks), the same counts.
    const auto [given_c, given_stats] = run_local(lc, *k, row_eps, threads, c_scale, true);
    EXPECT_EQ(given_c, c) << "B given dense";
    EXPECT_EQ(given_stats.products, stats.products);
    EXPECT_EQ(given_stats.skipped, stats.skipped);
    EXPECT_EQ(given_stats.dense_ticks, stats.dense_ticks);
  }
  // With room reserved for C (as much as a dense C), several threads of a host backend each place
  // C's new blocks in a slab of the room as they stack their products (one thread's one pass is
  // the same placing without slabs; a device backend places first whatever the room).
  if (dynamic_cast<const plexus::HostKernel*>(k.get()) != nullptr) {
    SCOPED_TRACE("room reserved, threads 3");
    const auto [c, stats] = run_local(lc, *k, row_eps, 3, c_scale, false, lc.cl.rows.total() * lc.cl.cols.total());
    EXPECT_LE(rel_error(c, ref_c), kTol) << "vs reference kernel";
    EXPECT_EQ(stats.products, ex.products);
    EXPECT_EQ(stats.skipped, ex.skipped);
  }
  EXPECT_EQ(ref_stats.dense_ticks, 0) << "the reference kernel computes block products only";
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
  check_products(lc, row_eps, spec, c_scale, filter);
}

/// Thresholds that filtering keeps every product of the case by: half the smallest product norm of
/// any tick, on every row.
std::vector<double> below_every_product(const LocalCase& lc) {
  double smallest = HUGE_VAL;
  for (const Tick& t : lc.ticks)
    for_each_product_norm(lc, t, [&](std::size_t, double norm) { smallest = std::min(smallest, norm); });
  return std::vector<double>(lc.c_rows.size(), smallest / 2);
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

// Dense panels over several ticks into a C that has a third of its blocks (the others are created
// by the first tick: written, not added), and ticks that miss one block of A or of B (block
// products, between dense ticks); C scaled.
TEST_P(BackendConformance, LocalProductDenseTicks) {
  LocalCase lc = make_case("dense ticks", 10, 9, 10, 1.0, 1.0, 0.3, 4, 25, true);
  // Tick 1 without one block of A, tick 2 without one of B: not dense.
  auto without = [](const Panel& p, const BlockLayout& layout, std::int64_t drop) {
    std::vector<int> rows;
    for (int r = 0; r < p.nrows(); ++r) rows.push_back(p.row_id(r));
    Panel out(rows);
    for (int r = 0; r < p.nrows(); ++r)
      for (std::int64_t blk = p.row_begin(r); blk < p.row_end(r); ++blk)
        if (blk != drop)
          out.append_block(r, p.col(blk), p.data().data() + p.offset(blk),
                           layout.rows.size(p.row_id(r)) * layout.cols.size(p.col(blk)));
    return out;
  };
  lc.ticks[1].a = without(lc.ticks[1].a, lc.al, 17);
  lc.ticks[2].b = without(lc.ticks[2].b, lc.bl, 40);
  ASSERT_EQ(dense_ticks(lc), 2);
  ASSERT_EQ(dense_b_ticks(lc), 3);  // B given dense (check_products) in a dense tick and with A not dense
  check_case(lc, false, GetParam());
  check_case(lc, false, GetParam(), 2.0);
  check_case(lc, true, GetParam(), -0.5);
  // Filtering that drops no product: a dense tick computes them all, so its ticks may still go
  // dense (on a backend that takes them: expected_dense_ticks).
  SCOPED_TRACE("filtered below every product");
  const std::vector<double> keep_all = below_every_product(lc);
  ASSERT_GT(keep_all.front(), 0.0);
  check_products(lc, keep_all, GetParam(), 0.5, false);
}

TEST_P(BackendConformance, LocalProductManyStacks) {
  // More products per thread than one stack holds (core flushes full stacks mid-row).
  const LocalCase lc = make_case("many stacks", 40, 40, 40, 0.6, 0.6, 0.1, 2, 24, false);
  check_case(lc, false, GetParam());
}

TEST_P(BackendConformance, LocalProductEmptyPanels) {
  const Spec& s = GetParam();
  for (auto [name, da, db, dc, seed] :
       {std::make_tuple("empty A", 0.0, 0.5, 0.4, 31), std::make_tuple("empty B", 0.5, 0.0, 0.4, 32),
        std::make_tuple("empty C start", 0.5, 0.5, 0.0, 33), std::make_tuple("all empty", 0.0, 0.0, 0.0, 34)}) {
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

// A dense B's layout: blocks in ascending k and columns whatever the panel's order, a round trip
// through the dense matrix, and panels that are not dense or not within the layout.
TEST(DenseLayout, PlacesEveryBlockAndCopiesBothWays) {
  const BlockLayout bl{BlockSizes({4, 1, 3, 2}), BlockSizes({2, 5, 1})};
  std::mt19937_64 rng(5);
  const Panel b = random_panel({0, 2, 3}, bl, 1.0, rng);
  const std::optional<plexus::DenseLayout> d = plexus::DenseLayout::of(b.view(), bl);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->K, 4 + 3 + 2);
  EXPECT_EQ(d->N, 2 + 5 + 1);
  EXPECT_EQ(d->row_at, (std::vector<std::int64_t>{0, -1, 4, 7}));
  EXPECT_EQ(d->col_at, (std::vector<std::int64_t>{0, 2, 7}));
  std::vector<double> dense(static_cast<std::size_t>(d->K * d->N), -7.0);
  d->copy_in(b.view(), bl, dense.data());
  // Each value at its place: block (k, j)'s (i, l) at (row_at[k] + i, col_at[j] + l).
  const PanelView v = b.view();
  for (int r = 0; r < v.nrows; ++r)
    for (std::int64_t blk = v.row_ptr[r]; blk < v.row_ptr[r + 1]; ++blk) {
      const int m = bl.rows.size(static_cast<int>(v.row_ids[r])), n = bl.cols.size(static_cast<int>(v.cols[blk]));
      for (int l = 0; l < n; ++l)
        for (int i = 0; i < m; ++i)
          EXPECT_EQ(dense[static_cast<std::size_t>((d->col_at[static_cast<std::size_t>(v.cols[blk])] + l) * d->K +
                                                   d->row_at[static_cast<std::size_t>(v.row_ids[r])] + i)],
                    v.data[v.offsets[blk] + i + std::int64_t{l} * m]);
    }
  EXPECT_EQ(std::count(dense.begin(), dense.end(), -7.0), 0) << "every place written";
  std::vector<double> back(static_cast<std::size_t>(v.data_size), 0.0);
  d->copy_out(dense.data(), v, bl, back.data());
  EXPECT_EQ(back, std::vector<double>(v.data, v.data + v.data_size));
  // Two panels that split B's rows fill the same matrix.
  const Panel top = random_panel({0}, bl, 1.0, rng), rest = random_panel({2, 3}, bl, 1.0, rng);
  EXPECT_NO_THROW(d->copy_in(top.view(), bl, dense.data()));
  EXPECT_NO_THROW(d->copy_in(rest.view(), bl, dense.data()));
  // Not dense: a row without one of the others' columns; nothing at all.
  Panel gap({0, 2});
  gap.append_block(0, 0, std::vector<double>(8, 1.0).data(), 8);
  gap.append_block(0, 1, std::vector<double>(20, 1.0).data(), 20);
  gap.append_block(1, 0, std::vector<double>(6, 1.0).data(), 6);
  EXPECT_FALSE(plexus::DenseLayout::of(gap.view(), bl));
  EXPECT_FALSE(plexus::DenseLayout::of(Panel(std::vector<int>{}).view(), bl));
  // Rows of 2, 3 and 1 blocks: as many blocks as three rows of 2, and still not dense.
  Panel uneven({0, 2, 3});
  uneven.append_block(0, 0, std::vector<double>(8, 1.0).data(), 8);
  uneven.append_block(0, 1, std::vector<double>(20, 1.0).data(), 20);
  uneven.append_block(1, 0, std::vector<double>(6, 1.0).data(), 6);
  uneven.append_block(1, 1, std::vector<double>(15, 1.0).data(), 15);
  uneven.append_block(1, 2, std::vector<double>(3, 1.0).data(), 3);
  uneven.append_block(2, 0, std::vector<double>(4, 1.0).data(), 4);
  ASSERT_EQ(uneven.nblocks(), 6);
  EXPECT_FALSE(plexus::DenseLayout::of(uneven.view(), bl));
  // A panel with a row outside the layout, or a row short of its columns, is refused.
  const Panel other = random_panel({1}, bl, 1.0, rng);
  EXPECT_THROW(d->copy_in(other.view(), bl, dense.data()), plexus::Error);
  EXPECT_THROW(d->copy_in(gap.view(), bl, dense.data()), plexus::Error);
}

}  // namespace plexus::test::kernel_conformance
