// Tests of what only the `cpu` kernel plugin has (its parameters, its two backends, its block
// norm), loaded through the registry as a user would load it. What every local backend must do
// is in the conformance suite (test_kernel_conformance.cpp), which runs the cpu kernel too.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "dense_rule.hpp"   // plugins/kernels_cpu: the rules of DenseMinSize = -1
#include "dgemm_share.hpp"  // and the measured share of dgemm they depend on
#include "plexus/error.hpp"
#include "plexus/kernel.hpp"
#include "plexus/layout.hpp"
#include "plexus/local_multiply.hpp"
#include "plexus/panel.hpp"
#include "plexus/parameters.hpp"
#include "plexus/plugin.hpp"
#include "plexus/registry.hpp"
#include "raw_stacks.hpp"

#ifndef PLEXUS_KERNELS_CPU_PATH
#error "PLEXUS_KERNELS_CPU_PATH must name the built plugin"
#endif
#ifndef PLEXUS_HAVE_LIBXSMM
#define PLEXUS_HAVE_LIBXSMM 0
#endif

namespace {

using plexus::test::RawProblem;
using plexus::test::random_stack;
using plexus::test::rel_error;

using plexus::Kernel;
using plexus::StackEntry;

constexpr double kTol = 1e-13;

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

std::string error_text(const plexus::Error& e) { return e.where() + ": " + e.what(); }

// ---- raw stacks ------------------------------------------------------------------------------

std::vector<double> run_stack(Kernel& kernel, const RawProblem& p) {
  auto& k = dynamic_cast<plexus::HostKernel&>(kernel);  // the cpu kernel is a host backend
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

TEST(KernelsCpu, BackendsAgree) {
  // Mixed sizes in random order, and runs sharing A (as core's stacks come) of the sizes the
  // register kernels take (auto, on a CPU with AVX-512F or AVX2) and one beyond.
  for (const RawProblem& p : {random_stack(2000, {1, 5, 6, 13, 23, 32, 65}, 13),
                              plexus::test::shared_a_stack(300, 40, {2, 5, 6, 8, 9}, 14)}) {
    auto blas = make_cpu(1, "blas");
    const std::vector<double> with_blas = run_stack(*blas, p);
    ASSERT_GT(rel_error(p.c, with_blas), 1e-3) << "the stack changes nothing";
    auto autok = make_cpu(1, "auto");
    EXPECT_LE(rel_error(run_stack(*autok, p), with_blas), kTol);
#if PLEXUS_HAVE_LIBXSMM
    auto xsmm = make_cpu(1, "libxsmm");
    EXPECT_LE(rel_error(run_stack(*xsmm, p), with_blas), kTol);
#endif
  }
#if !PLEXUS_HAVE_LIBXSMM
  try {
    make_cpu(1, "libxsmm");
    FAIL() << "Backend=libxsmm accepted by a build without libxsmm";
  } catch (const plexus::Error& e) {
    EXPECT_NE(error_text(e).find("Backend"), std::string::npos) << error_text(e);
    EXPECT_NE(error_text(e).find("libxsmm"), std::string::npos) << error_text(e);
  }
#endif
}

// What this CPU reports, asked independently of the plugin.
struct CpuFeatures {
  bool avx512 = false, avx2 = false;
};
CpuFeatures cpu_features() {
  CpuFeatures f;
#if defined(__x86_64__) && defined(__GNUC__)
  f.avx512 = __builtin_cpu_supports("avx512f") != 0;
  f.avx2 = __builtin_cpu_supports("avx2") != 0 && __builtin_cpu_supports("fma") != 0;
#endif
  return f;
}

TEST(KernelsCpu, RegisterKernelsFollowTheCpu) {
  // Backend=auto takes small blocks in register kernels where the CPU has AVX-512F or AVX2 (the
  // descriptor says so), and Backend=avx512 / avx2 are refused, naming what is missing, where it
  // has not. Each set the CPU has computes the same as dgemm, on the stacks core makes (runs that
  // share A) and on mixed ones.
  load_plugin_once();
  const CpuFeatures cpu = cpu_features();
  const plexus::ComponentEntry& entry = plexus::Registry::global().get(plexus::ComponentKind::Kernel, "cpu");
  EXPECT_EQ(entry.descriptor.summary.find("register kernels") != std::string::npos, cpu.avx512 || cpu.avx2)
      << entry.descriptor.summary;
  std::vector<RawProblem> problems = {plexus::test::shared_a_stack(1500, 40, {1, 2, 3, 4, 5, 6, 7, 8, 9}, 15),
                                      random_stack(1500, {1, 3, 4, 5, 6, 8, 13}, 16)};
  // Every kernel of both sets runs: each is compiled per (m, n, k), for sizes 1 to 8.
  std::set<std::tuple<int, int, int>> mnk;
  for (const StackEntry& e : problems[0].stack)
    if (e.m <= 8 && e.n <= 8 && e.k <= 8) mnk.insert({e.m, e.n, e.k});
  ASSERT_EQ(mnk.size(), 512U) << "the stack misses some (m, n, k) of the register kernels";
  // The same with marked first products (dgemm writes them with beta = 0, as the register kernels
  // start from zero) and with empty products among the runs (k = 0: a marked one zeroes its block).
  RawProblem marked = problems[0];
  plexus::test::mark_first_products(marked.stack);
  for (std::size_t at = 10; at < marked.stack.size(); at += 97) {
    const StackEntry& e = marked.stack[at];
    marked.stack.insert(marked.stack.begin() + static_cast<std::ptrdiff_t>(at),
                        StackEntry{.m = e.m, .n = e.n, .k = 0, .first = static_cast<int>(at % 2), .a = 0, .b = 0,
                                   .c = e.c});
  }
  problems.push_back(std::move(marked));
  int ran = 0;
  for (const auto& [backend, has, needs] : {std::tuple<std::string, bool, std::string>{"avx512", cpu.avx512, "AVX-512F"},
                                            {"avx2", cpu.avx2, "AVX2 and FMA"}}) {
    if (!has) {
      try {
        make_cpu(1, backend);
        ADD_FAILURE() << "Backend=" << backend << " accepted on a CPU without " << needs;
      } catch (const plexus::UnavailableError& e) {  // right parameters, wrong machine: suites skip it
        EXPECT_NE(error_text(e).find("Backend"), std::string::npos) << error_text(e);
        // What the CPU lacks, or (a build for another architecture) that there are none.
        EXPECT_TRUE(error_text(e).find(needs) != std::string::npos ||
                    error_text(e).find("no register kernels") != std::string::npos)
            << error_text(e);
      }
      continue;
    }
    ++ran;
    auto k = make_cpu(1, backend);
    auto blas = make_cpu(1, "blas");
    for (const RawProblem& p : problems) {
      const std::vector<double> with_blas = run_stack(*blas, p);
      ASSERT_GT(rel_error(p.c, with_blas), 1e-3) << "the stack changes nothing";
      EXPECT_LE(rel_error(run_stack(*k, p), with_blas), kTol) << "Backend=" << backend;
    }
  }
  if (ran == 0) GTEST_SKIP() << "neither AVX-512F nor AVX2 on this CPU: no register kernels to run";
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
  {
    plexus::ParameterList p("cpu");
    p.set("DenseMinSize", -2);
    try {
      plexus::Registry::global().make_kernel("cpu", p, "Kernel/cpu");
      FAIL() << "DenseMinSize=-2 accepted";
    } catch (const plexus::InputError& e) {
      EXPECT_NE(error_text(e).find("DenseMinSize"), std::string::npos) << error_text(e);
    }
  }
  for (double share : {0.0, -0.5, -2.0}) {
    plexus::ParameterList p("cpu");
    p.set("DgemmShare", share);
    try {
      plexus::Registry::global().make_kernel("cpu", p, "Kernel/cpu");
      FAIL() << "DgemmShare=" << share << " accepted";
    } catch (const plexus::InputError& e) {
      EXPECT_NE(error_text(e).find("DgemmShare"), std::string::npos) << error_text(e);
    }
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

// DenseMinSize: a dense tick goes to dgemm whole where the harmonic mean of a thread's rows (M over
// the threads, or over the block rows where fewer), columns N and inner size K reaches the size
// (HostKernel::dense_min_size), and as block products below it; C is the dense product either
// way. `rows` block rows of m, `inner` k blocks of k and `cols` block columns of n; harmonic() is
// the tick's on one thread.
struct DenseCase {
  int rows, m, inner, k, cols, n;
  double harmonic() const { return 3.0 / (1.0 / (rows * m) + 1.0 / (inner * k) + 1.0 / (cols * n)); }
};

// C = C0 / 2 + A B in one tick on `k` by `threads` threads (the reference kernel's result, and its
// dense ticks).
std::pair<std::vector<double>, std::int64_t> dense_case_product(const DenseCase& dc, Kernel& k, int threads = 1) {
  const plexus::BlockLayout c_layout{plexus::BlockSizes::uniform(dc.rows, dc.m),
                                     plexus::BlockSizes::uniform(dc.cols, dc.n)};
  const plexus::BlockLayout a_layout{c_layout.rows, plexus::BlockSizes::uniform(dc.inner, dc.k)};
  const plexus::BlockLayout b_layout{a_layout.cols, c_layout.cols};
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> val(-1.0, 1.0);
  auto full = [&](int nrows, int ncols, int m, int n) {
    std::vector<int> rows(static_cast<std::size_t>(nrows));
    for (int r = 0; r < nrows; ++r) rows[static_cast<std::size_t>(r)] = r;
    plexus::Panel p(rows);
    for (int r = 0; r < nrows; ++r)
      for (int c = 0; c < ncols; ++c) {
        double* v = p.append_block(r, c, m * n);
        for (int i = 0; i < m * n; ++i) v[i] = val(rng);
      }
    return p;
  };
  const plexus::Panel a = full(dc.rows, dc.inner, dc.m, dc.k), b = full(dc.inner, dc.cols, dc.k, dc.n),
                      c0 = full(dc.rows, dc.cols, dc.m, dc.n);
  plexus::LocalProduct lp(c0.view(), c_layout, k, threads, {}, {}, 0.5);
  lp.multiply(a.view(), a_layout, b.view(), b_layout);
  const auto dense = lp.stats().dense_ticks;
  const plexus::Panel c = lp.finish();
  const plexus::PanelView v = c.view();
  return {std::vector<double>(v.data, v.data + v.data_size), dense};
}

// The cpu kernel with this DenseMinSize and, for its rule by the blocks, dgemm at `share` of the
// block products' rate (1: as on the machines the rules were measured on, whatever this one does).
std::unique_ptr<Kernel> cpu_with_dense_size(int size, const std::string& backend = "auto", double share = 1.0) {
  plexus::ParameterList p("cpu");
  p.set("Threads", 1);
  p.set("DenseMinSize", size);
  p.set("Backend", backend);
  p.set("DgemmShare", share);
  return plexus::Registry::global().make_kernel("cpu", p, "Kernel/cpu");
}

// Each (DenseMinSize, case) against the reference kernel: C agrees, and the tick is dense or not
// (the product on `threads` threads).
void check_dense_cases(const std::vector<std::tuple<int, DenseCase, std::int64_t>>& cases,
                       const std::string& backend = "auto", int threads = 1, double share = 1.0) {
  plexus::ReferenceKernel ref;
  for (const auto& [size, dc, dense] : cases) {
    SCOPED_TRACE("DenseMinSize " + std::to_string(size) + ", tick of harmonic mean " + std::to_string(dc.harmonic()) +
                 " on one thread, here " + std::to_string(threads) + " thread(s)");
    const auto [expect, ref_dense] = dense_case_product(dc, ref);
    EXPECT_EQ(ref_dense, 0);
    auto k = cpu_with_dense_size(size, backend, share);
    const auto [c, ticks] = dense_case_product(dc, *k, threads);
    EXPECT_EQ(ticks, dense);
    ASSERT_EQ(c.size(), expect.size());
    double err = 0, norm = 0;
    for (std::size_t i = 0; i < c.size(); ++i) {
      err = std::max(err, std::abs(c[i] - expect[i]));
      norm = std::max(norm, std::abs(expect[i]));
    }
    EXPECT_LE(err, kTol * dc.inner * dc.k * norm);
  }
}

// A given size: from it on, whatever the blocks. A tick of M = 40 (5 block rows of 8), K = 48,
// N = 60: the harmonic mean is 3 / (1/40 + 1/48 + 1/60) = 48.
TEST(KernelsCpu, DenseTicksFromTheirSizeOn) {
  load_plugin_once();
  const DenseCase tick{5, 8, 4, 12, 5, 12};
  ASSERT_DOUBLE_EQ(tick.harmonic(), 48.0);
  for (int size : {0, 1, 48, 49, 5000}) {
    auto k = cpu_with_dense_size(size);
    for (const plexus::DenseBlocks& b : {plexus::DenseBlocks{8, 12, 12}, plexus::DenseBlocks{32, 32, 32}})
      EXPECT_EQ(dynamic_cast<const plexus::HostKernel&>(*k).dense_min_size(b), size) << size;
  }
  check_dense_cases({{0, tick, 0}, {1, tick, 1}, {48, tick, 1}, {49, tick, 0}});
}

// The size is the harmonic mean of the GEMM one thread runs: its rows are M over the product's
// threads (or over A's block rows, where fewer). The tick above on 2 threads: m = 20, a harmonic
// mean of 3 / (1/20 + 1/48 + 1/60) = 240/7 (34.3); on 4 threads m = 10, 240/11 (21.8); on 8 (more
// threads than its 5 block rows) one block row of 8 each, 3 / (1/8 + 1/48 + 1/60) = 240/13 (18.5).
TEST(KernelsCpu, DenseTicksByTheRowsOfAThread) {
  load_plugin_once();
  const DenseCase tick{5, 8, 4, 12, 5, 12};
  check_dense_cases({{48, tick, 0}, {35, tick, 0}, {34, tick, 1}}, "auto", 2);
  check_dense_cases({{22, tick, 0}, {21, tick, 1}}, "auto", 4);
  check_dense_cases({{19, tick, 0}, {18, tick, 1}}, "auto", 8);
}

// The cpu kernel with the rule by the blocks (DenseMinSize = -1) of `backend`'s instruction set, or
// nullptr (the test skips) where this CPU or build lacks it.
std::unique_ptr<Kernel> cpu_by_blocks(const std::string& backend) {
  load_plugin_once();
  try {
    return cpu_with_dense_size(-1, backend);
  } catch (const plexus::UnavailableError&) {
    return nullptr;
  }
}

// AVX-512F's rule (and that of CPUs with neither set): 36 times the blocks' mean size (the harmonic
// mean of their mean rows, columns and inner size) where the mean rows are a whole multiple of 8,
// 30 times otherwise.
template <class SizeOf>
void expect_avx512_rule(SizeOf size_of) {
  EXPECT_EQ(size_of({32, 32, 32}), 36 * 32);
  EXPECT_EQ(size_of({16, 16, 16}), 36 * 16);
  EXPECT_EQ(size_of({12, 12, 12}), 30 * 12);
  EXPECT_EQ(size_of({23, 23, 23}), 30 * 23);
  EXPECT_EQ(size_of({6, 6, 6}), 30 * 6);
  EXPECT_EQ(size_of({8, 12, 12}), std::llround(36 * 3.0 / (1.0 / 8 + 2.0 / 12)));
  EXPECT_EQ(size_of({12, 8, 8}), std::llround(30 * 3.0 / (1.0 / 12 + 2.0 / 8)));
  EXPECT_EQ(size_of({8, 2, 2}), 96);
  EXPECT_EQ(size_of({9, 2, 2}), std::llround(30 * 3.0 / (1.0 / 9 + 1.0)));
}

// AVX2's rule: 36 times the mean size where the mean rows are a whole multiple of 4 above 8, a
// harmonic mean of 144 otherwise.
template <class SizeOf>
void expect_avx2_rule(SizeOf size_of) {
  EXPECT_EQ(size_of({32, 32, 32}), 36 * 32);
  EXPECT_EQ(size_of({16, 16, 16}), 36 * 16);
  EXPECT_EQ(size_of({12, 12, 12}), 36 * 12);
  EXPECT_EQ(size_of({12, 8, 8}), std::llround(36 * 3.0 / (1.0 / 12 + 2.0 / 8)));
  for (const plexus::DenseBlocks& b :
       {plexus::DenseBlocks{23, 23, 23}, plexus::DenseBlocks{6, 6, 6}, plexus::DenseBlocks{8, 8, 8},
        plexus::DenseBlocks{8, 12, 12}, plexus::DenseBlocks{13, 23, 23}, plexus::DenseBlocks{2, 2, 2}})
    EXPECT_EQ(size_of(b), 144) << b.rows << " x " << b.cols << " x " << b.inner;
}

// The kernel's DenseMinSize for given blocks, as a callable for the expect_*_rule checks.
auto size_of_kernel(const Kernel& k) {
  return [&k](const plexus::DenseBlocks& b) { return dynamic_cast<const plexus::HostKernel&>(k).dense_min_size(b); };
}

// Each set's rule as the cpu kernel computes it (dense_rule.hpp), on any CPU; blocks without a
// positive size never go dense.
TEST(KernelsCpu, DenseRuleOfEachInstructionSet) {
  using plexus_kernels_cpu::dense_size_by_blocks;
  using plexus_kernels_cpu::SmallIsa;
  expect_avx512_rule([](const plexus::DenseBlocks& b) { return dense_size_by_blocks(b, SmallIsa::Avx512); });
  expect_avx512_rule([](const plexus::DenseBlocks& b) { return dense_size_by_blocks(b, std::nullopt); });
  expect_avx2_rule([](const plexus::DenseBlocks& b) { return dense_size_by_blocks(b, SmallIsa::Avx2); });
  for (const auto isa :
       {std::optional<SmallIsa>(SmallIsa::Avx512), std::optional<SmallIsa>(SmallIsa::Avx2), std::optional<SmallIsa>()})
    EXPECT_EQ(dense_size_by_blocks({0, 8, 8}, isa), 0);
}

TEST(KernelsCpu, DenseTicksByTheBlocksUnderAvx512) {
  const auto k = cpu_by_blocks("avx512");
  if (!k) GTEST_SKIP() << "no AVX-512F register kernels on this CPU or in this build";
  expect_avx512_rule(size_of_kernel(*k));
  // Blocks of 2 from 60: a tick of 30 x 32 x 32 blocks (harmonic mean 62.6) goes dense, one of
  // 25 x 25 x 25 (50) does not. Blocks of 8 x 2 x 2 (mean size 2.67, rows a multiple of 8) from 96:
  // a tick of 30 x 48 x 48 of them (120) goes dense, one of 30 x 32 x 32 (84.7, dense were the
  // rows not a multiple of 8: 80) does not.
  check_dense_cases({{-1, DenseCase{30, 2, 32, 2, 32, 2}, 1},
                     {-1, DenseCase{25, 2, 25, 2, 25, 2}, 0},
                     {-1, DenseCase{30, 8, 48, 2, 48, 2}, 1},
                     {-1, DenseCase{30, 8, 32, 2, 32, 2}, 0}},
                    "avx512");
}

TEST(KernelsCpu, DenseTicksByTheBlocksUnderAvx2) {
  const auto k = cpu_by_blocks("avx2");
  if (!k) GTEST_SKIP() << "no AVX2 register kernels on this CPU or in this build";
  expect_avx2_rule(size_of_kernel(*k));
  // Blocks of 2 from 144: a tick of 75 x 75 x 75 blocks (150) goes dense, one of 70 x 70 x 70
  // (140) does not. Blocks of 12 x 2 x 2 (mean size 2.77, rows a multiple of 4 above 8) from 100:
  // a tick of 30 x 48 x 48 of them (127) goes dense, one of 30 x 32 x 32 (88) does not.
  check_dense_cases({{-1, DenseCase{75, 2, 75, 2, 75, 2}, 1},
                     {-1, DenseCase{70, 2, 70, 2, 70, 2}, 0},
                     {-1, DenseCase{30, 12, 48, 2, 48, 2}, 1},
                     {-1, DenseCase{30, 12, 32, 2, 32, 2}, 0}},
                    "avx2");
}

// The default (DenseMinSize = -1, Backend = auto) follows the widest set the CPU has: AVX-512F's
// rule where it has that set or neither.
TEST(KernelsCpu, DenseTicksByTheBlocksByDefaultFollowTheWidestSet) {
  load_plugin_once();
  plexus::ParameterList p("cpu");
  p.set("DgemmShare", 1.0);
  const auto by_default = plexus::Registry::global().make_kernel("cpu", p, "Kernel/cpu");
  if (cpu_by_blocks("avx512") || !cpu_by_blocks("avx2"))
    expect_avx512_rule(size_of_kernel(*by_default));
  else
    expect_avx2_rule(size_of_kernel(*by_default));
}

// Where dgemm is slow (below 0.6 of the block products' rate), blocks whose products the kernel runs
// itself go dense only where small: never from a mean size of 20, from 320 times it where the mean
// rows are a whole multiple of 8, and otherwise by their set's rule; where it runs them through
// dgemm, by their set's rule whatever dgemm's rate.
TEST(KernelsCpu, DenseRuleWhereDgemmIsSlow) {
  using plexus_kernels_cpu::dense_size_by_blocks;
  using plexus_kernels_cpu::dense_size_for;
  using plexus_kernels_cpu::SmallIsa;
  for (const auto isa : {std::optional<SmallIsa>(SmallIsa::Avx512), std::optional<SmallIsa>(SmallIsa::Avx2),
                         std::optional<SmallIsa>()}) {
    const auto slow = [isa](const plexus::DenseBlocks& b) { return dense_size_for(b, isa, 0.5, true); };
    for (const plexus::DenseBlocks& b : {plexus::DenseBlocks{32, 32, 32}, plexus::DenseBlocks{23, 23, 23},
                                         plexus::DenseBlocks{20, 20, 20}, plexus::DenseBlocks{13, 32, 32}})
      EXPECT_EQ(slow(b), 0) << b.rows << " x " << b.cols << " x " << b.inner;
    EXPECT_EQ(slow({16, 16, 16}), 320 * 16);
    EXPECT_EQ(slow({8, 8, 8}), 320 * 8);
    EXPECT_EQ(slow({8, 12, 12}), std::llround(320 * 3.0 / (1.0 / 8 + 2.0 / 12)));
    for (const plexus::DenseBlocks& b :
         {plexus::DenseBlocks{13, 13, 13}, plexus::DenseBlocks{6, 6, 6}, plexus::DenseBlocks{12, 16, 16}})
      EXPECT_EQ(slow(b), dense_size_by_blocks(b, isa)) << b.rows << " x " << b.cols << " x " << b.inner;
    EXPECT_EQ(slow({0, 8, 8}), 0);
    // At 0.6 and above, and for products that go to dgemm anyway, the set's rule.
    for (const plexus::DenseBlocks& b : {plexus::DenseBlocks{32, 32, 32}, plexus::DenseBlocks{8, 8, 8}}) {
      EXPECT_EQ(dense_size_for(b, isa, 0.6, true), dense_size_by_blocks(b, isa));
      EXPECT_EQ(dense_size_for(b, isa, 1.0, true), dense_size_by_blocks(b, isa));
      EXPECT_EQ(dense_size_for(b, isa, 0.5, false), dense_size_by_blocks(b, isa));
    }
    EXPECT_EQ(dense_size_for({32, 32, 32}, isa, 0.59, true), 0);
  }
}

// Whether the cpu kernel (Backend = auto) runs products of blocks of 8 itself: in its register
// kernels or through libxsmm.
bool cpu_owns_blocks_of_8() {
  return PLEXUS_HAVE_LIBXSMM != 0 || cpu_by_blocks("avx512") != nullptr || cpu_by_blocks("avx2") != nullptr;
}

// The kernel with DgemmShare given below 0.6 follows that rule: a tick of 40 x 40 x 40 blocks of 8
// (harmonic mean 320) goes dense with dgemm at the block products' rate (both sets' rules: from 288
// and from 144) and stays block products with dgemm at half of it (from 2560), where the kernel
// runs those products itself; blocks of 32 never go dense where libxsmm runs them.
TEST(KernelsCpu, DenseTicksWhereDgemmIsSlow) {
  load_plugin_once();
  const bool own8 = cpu_owns_blocks_of_8();
  const DenseCase tick{40, 8, 40, 8, 40, 8};
  ASSERT_DOUBLE_EQ(tick.harmonic(), 320.0);
  check_dense_cases({{-1, tick, 1}}, "auto", 1, 1.0);
  check_dense_cases({{-1, tick, own8 ? 0 : 1}}, "auto", 1, 0.5);
  const auto slow = cpu_with_dense_size(-1, "auto", 0.5);
  const auto size_of = size_of_kernel(*slow);
  EXPECT_EQ(size_of({8, 8, 8}), own8 ? 2560 : size_of_kernel(*cpu_with_dense_size(-1, "auto", 1.0))({8, 8, 8}));
  if (PLEXUS_HAVE_LIBXSMM != 0) {
    EXPECT_EQ(size_of({32, 32, 32}), 0);
  }
  // Blocks of 96 go to dgemm one by one: their set's rule (36 times 96 under either), whatever
  // dgemm's rate.
  EXPECT_EQ(size_of({96, 96, 96}), 36 * 96);
}

// The measured share: positive and finite on any machine, and a kernel that measures it (the
// default) gives the same blocks the same size every time, one of the two rules' sizes.
TEST(KernelsCpu, DgemmShareMeasured) {
  load_plugin_once();
  plexus::ParameterList p("cpu");
  p.set("Threads", 1);
  const auto k = plexus::Registry::global().make_kernel("cpu", p, "Kernel/cpu");
  const double share = plexus_kernels_cpu::measure_dgemm_share(dynamic_cast<plexus::HostKernel&>(*k));
  EXPECT_TRUE(std::isfinite(share));
  EXPECT_GT(share, 0.0);
  const auto size_of = size_of_kernel(*k);
  const std::int64_t first = size_of({32, 32, 32});
  EXPECT_EQ(size_of({32, 32, 32}), first);
  const std::int64_t classic = size_of_kernel(*cpu_with_dense_size(-1, "auto", 1.0))({32, 32, 32});
  const std::int64_t slow = size_of_kernel(*cpu_with_dense_size(-1, "auto", 0.5))({32, 32, 32});
  EXPECT_TRUE(first == classic || first == slow) << first << " against " << classic << " and " << slow;
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
    EXPECT_NEAR(dynamic_cast<plexus::HostKernel&>(*k).block_norm(x.data(), n), r, 1e-14 * (1 + r)) << n;
  }
}

}  // namespace
