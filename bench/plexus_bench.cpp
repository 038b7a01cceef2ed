// plexus-bench: the three problem classes of the PASC'17 DBCSR paper (H2O-DFT-LS-like, S-E-like,
// dense), scaled to one rank of a small machine, multiplied through the full path (generator,
// registry, `cannon` strategy, `cpu` kernel). In the same run it measures the yardsticks the
// figures are judged against: libxsmm's rate on cache-resident blocks of the same size and
// OpenBLAS DGEMM on one core, once per round between a class's multiplies (yardsticks.hpp). It also
// records what the operating system charges here (os_costs.hpp).
// Writes JSON; never asserts on speed.
//
//   plexus-bench [--quick] [--scale S] [--repeat R] [--classes h2o,se,dense] [--dgemm-n N]
//                [--backend B] [--json FILE] [--check]
#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "os_costs.hpp"
#include "plexus/comm_strategy.hpp"
#include "plexus/distribution.hpp"
#include "plexus/error.hpp"
#include "plexus/generator.hpp"
#include "plexus/kernel.hpp"
#include "plexus/matrix.hpp"
#include "plexus/parameters.hpp"
#include "plexus/registry.hpp"
#include "yardsticks.hpp"

namespace {

using json = plexus::bench::json;
using plexus::bench::number;
using plexus::bench::yardsticks::Clock;
using plexus::bench::yardsticks::Dgemm;
using plexus::bench::yardsticks::seconds_since;
using plexus::bench::yardsticks::Yardsticks;

// ---- problem classes --------------------------------------------------------------------------------

struct ProblemClass {
  std::string name;
  std::string description;
  int block = 0;
  double occupancy = 0;
  bool symmetric = false;
  int nblocks = 0;          // full size
  int quick_nblocks = 0;    // --quick
  double target_xsmm = 0;   // target fraction of libxsmm in-cache (0: none)
  double target_dgemm = 0;  // target fraction of DGEMM (0: none)
  int bandwidth = -1;       // locality: blocks only where |i-j| <= bandwidth (scaled with --scale); -1: none
  int quick_bandwidth = -1;
};

// Issue 16's targets: h2o and se at 0.85 of libxsmm's in-cache rate, dense at 0.9 of DGEMM.
constexpr double kTargetXsmm = 0.85, kTargetDgemm = 0.9;

// " (target 0.85)", or nothing for no target.
std::string target_text(double target) {
  if (target <= 0) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, " (target %.2g)", target);
  return buf;
}

std::vector<ProblemClass> classes() {
  return {
      {"h2o", "H2O-DFT-LS-like: blocks 23, occupancy 10%, symmetric", 23, 0.10, true, 450, 24, kTargetXsmm, 0},
      {"se", "S-E-like: blocks 6, banded |i-j| <= 66 with half the band present (occupancy about 1%)", 6, 0.5, false,
       6600, 200, kTargetXsmm, 0, 66, 4},
      {"dense", "dense: blocks 32, full", 32, 1.0, false, 80, 6, 0, kTargetDgemm},
  };
}

struct Run {
  double seconds = 0, kernel_seconds = 0, stack_seconds = 0, flops = 0;
  std::int64_t products = 0;
  std::vector<double> times;  // every repetition's seconds, in order
  double gflops() const { return seconds > 0 ? flops / seconds / 1e9 : 0; }
};

/// The cpu kernel on `threads` threads with Kernel/cpu/Backend `backend`; `p` gets its parameters
/// as validated (defaults filled in).
std::unique_ptr<plexus::Kernel> make_cpu(int threads, const std::string& backend, plexus::ParameterList& p) {
  p.set("Threads", threads);
  p.set("Backend", backend);
  return plexus::Registry::global().make_kernel("cpu", p, "Kernel/cpu");
}

std::unique_ptr<plexus::CommStrategy> make_cannon(plexus::ParameterList& p) {
  return plexus::Registry::global().make_comm("cannon", p, "Communication/cannon");
}

/// One multiply C = A*B into a fresh C; keeps the best (shortest) run in `best` and every run's
/// seconds in `best.times`.
void multiply_once(plexus::CommStrategy& strategy, plexus::Kernel& kernel, const plexus::DistMatrix& a,
                   const plexus::DistMatrix& b, Run& best, std::unique_ptr<plexus::DistMatrix>& result) {
  result.reset();  // the previous result of this thread count is no longer needed
  auto c = std::make_unique<plexus::DistMatrix>("C", a.distribution_ptr(),
                                                plexus::BlockLayout{a.layout().rows, b.layout().cols});
  c->finalize();
  const plexus::MultiplyReport rep = strategy.multiply(1.0, a, b, 0.0, *c, kernel, plexus::MultiplyOptions{});
  best.times.push_back(rep.seconds);
  if (best.seconds == 0 || rep.seconds < best.seconds) {
    best.seconds = rep.seconds;
    best.kernel_seconds = rep.kernel_seconds;
    best.stack_seconds = rep.stack_seconds;
    best.flops = rep.flops;
    best.products = rep.products;
  }
  result = std::move(c);
}

std::string loadavg() {
  std::ifstream f("/proc/loadavg");
  std::string one;
  f >> one;
  return f ? one : std::string("unknown");
}

/// Compares sampled blocks of C with sums of A(i,k)*B(k,j) computed here; returns the largest
/// relative error (Frobenius, per block).
double spot_check(const plexus::DistMatrix& a, const plexus::DistMatrix& b, const plexus::DistMatrix& c, int samples) {
  const plexus::BlockLayout& la = a.layout();
  const plexus::BlockLayout& lb = b.layout();
  std::mt19937_64 rng(99);
  std::uniform_int_distribution<int> row(0, la.rows.count() - 1), col(0, lb.cols.count() - 1);
  double worst = 0;
  for (int s = 0; s < samples; ++s) {
    const int i = row(rng), j = col(rng);
    const int m = la.rows.size(i), n = lb.cols.size(j);
    std::vector<double> expect(static_cast<std::size_t>(m) * n, 0.0);
    for (int kb = 0; kb < la.cols.count(); ++kb) {
      const double* ab = a.get_block(i, kb);
      const double* bb = b.get_block(kb, j);
      if (!ab || !bb) continue;
      const int k = la.cols.size(kb);
      for (int jj = 0; jj < n; ++jj)
        for (int l = 0; l < k; ++l)
          for (int ii = 0; ii < m; ++ii)
            expect[ii + static_cast<std::size_t>(jj) * m] += ab[ii + static_cast<std::size_t>(l) * m] * bb[l + jj * k];
    }
    const double* got = c.get_block(i, j);
    double d = 0, r = 0;
    for (std::size_t x = 0; x < expect.size(); ++x) {
      const double g = got ? got[x] : 0.0;
      d += (g - expect[x]) * (g - expect[x]);
      r += expect[x] * expect[x];
    }
    worst = std::max(worst, r > 0 ? std::sqrt(d / r) : std::sqrt(d));
  }
  return worst;
}

/// Relative Frobenius difference of two matrices on the same distribution (local blocks; one rank).
double relative_difference(const plexus::DistMatrix& x, const plexus::DistMatrix& y) {
  if (x.local_nblocks() != y.local_nblocks()) return INFINITY;
  const plexus::PanelView v = x.local().view();
  const plexus::BlockLayout& l = x.layout();
  double d = 0, r = 0;
  for (int row = 0; row < v.nrows; ++row) {
    const int i = static_cast<int>(v.row_ids[row]);
    for (std::int64_t blk = v.row_ptr[row]; blk < v.row_ptr[row + 1]; ++blk) {
      const int j = static_cast<int>(v.cols[blk]);
      const double* xv = v.data + v.offsets[blk];
      const double* yv = y.get_block(i, j);
      if (!yv) return INFINITY;
      for (std::int64_t e = 0, n = std::int64_t{l.rows.size(i)} * l.cols.size(j); e < n; ++e) {
        d += (xv[e] - yv[e]) * (xv[e] - yv[e]);
        r += yv[e] * yv[e];
      }
    }
  }
  return r > 0 ? std::sqrt(d / r) : std::sqrt(d);
}

struct Options {
  bool quick = false, check = false;
  bool os_costs_only = false;  // --os-costs: the operating system's costs alone, no MPI
  double scale = 1.0;
  int repeat = 2;
  std::vector<std::string> classes{"h2o", "se", "dense"};
  std::string json;
  std::string backend = "auto";  // Kernel/cpu/Backend
  int dgemm_n = 2000;
  std::vector<std::string> command;  // the command line, for the metadata
};

constexpr const char* kUsage =
    "usage: plexus-bench [--quick] [--scale S] [--repeat R] [--classes h2o,se,dense] [--dgemm-n N]\n"
    "                    [--backend auto|avx512|avx2|libxsmm|blas] [--json FILE] [--check]\n"
    "       plexus-bench --os-costs [--json FILE]\n"
    "  --backend B the cpu kernel's Backend (default auto)\n"
    "  --scale S   multiplies the number of block rows/cols of every class (flops grow ~S^3)\n"
    "  --json FILE writes the figures as JSON (default: JSON on stdout after the summary)\n"
    "  --check     re-reads the JSON file and checks that it is well-formed and complete\n"
    "  --os-costs  only what the operating system charges (a system call, a switch between two\n"
    "              processes on one core, a fresh page; about 0.3 s, without MPI), as JSON\n"
    "              {\"os_costs\": {...}}; bench/scaling_bench.py records it this way\n";

[[noreturn]] void usage(const std::string& msg) {
  std::cerr << "plexus-bench: " << msg << "\n" << kUsage;
  std::exit(2);
}

/// The options; a bad value is a plexus::bench::UsageError (main says it with the usage).
Options parse(int argc, char** argv) {
  Options o;
  o.command = plexus::bench::command_line(argc, argv);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage("missing value after " + a);
      return argv[++i];
    };
    if (a == "--quick") {
      o.quick = true;
    } else if (a == "--check") {
      o.check = true;
    } else if (a == "--scale") {
      o.scale = plexus::bench::to_positive(a, value());
    } else if (a == "--repeat") {
      o.repeat = static_cast<int>(plexus::bench::to_int(a, value(), 1, 1000000));
    } else if (a == "--dgemm-n") {
      o.dgemm_n = static_cast<int>(plexus::bench::to_int(a, value(), 1, 100000));
    } else if (a == "--backend") {
      o.backend = value();
    } else if (a == "--json") {
      o.json = value();
    } else if (a == "--classes") {
      o.classes.clear();
      std::stringstream ss(value());
      for (std::string c; std::getline(ss, c, ',');)
        if (!c.empty()) o.classes.push_back(c);
    } else if (a == "--os-costs") {
      o.os_costs_only = true;
    } else if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      std::exit(0);
    } else {
      usage("unknown argument " + a);
    }
  }
  if (o.check && (o.json.empty() || o.json == "-")) usage("--check needs --json FILE (a file it can read back)");
  // Before anything is measured: a path it could not write would lose the whole run at its end.
  plexus::bench::check_json_path_or_exit("plexus-bench", o.json);
  if (o.os_costs_only) {
    // Only --json goes with it: every other option is about the classes, which it does not run.
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--json")
        ++i;
      else if (a != "--os-costs")
        usage("--os-costs takes only --json FILE, not " + a);
    }
  }
  if (o.quick) {
    o.repeat = 1;
    o.dgemm_n = std::min(o.dgemm_n, 256);
  }
  return o;
}

/// Re-reads the JSON and checks the fields every consumer relies on, and the metadata. Returns an
/// error or "".
std::string check_json(const std::string& path, const std::vector<std::string>& expected_classes, int ranks) {
  std::ifstream in(path);
  if (!in) return "cannot open " + path;
  json root;
  try {
    root = json::parse(in);
  } catch (const std::exception& e) {
    return std::string("not well-formed JSON: ") + e.what();
  }
  using plexus::bench::has_path;
  for (const char* key : {"benchmark", "machine.threads", "machine.os_costs.syscall_us", "yardsticks.dgemm_gflops"})
    if (!has_path(root, key)) return std::string("missing ") + key;
  if (!root.contains("classes") || !root["classes"].is_array()) return "missing classes";
  std::vector<std::string> seen;
  for (const json& c : root["classes"]) {
    seen.push_back(c.value("name", ""));
    for (const char* key : {"block_size", "nblocks", "flops", "threads_1.gflops", "threads_1.seconds",
                            "threads_2.gflops", "speedup_2_threads", "fraction_of_dgemm", "fraction_of_dgemm_per_round",
                            "dgemm.gflops_per_round", "kernel_incache.gflops_1_thread", "check.max_rel_error"})
      if (!has_path(c, key)) return "class " + seen.back() + ": missing " + key;
    for (const json* g : {&c["threads_1"]["gflops"], &c["kernel_incache"]["gflops_1_thread"]})
      if (!g->is_number() || !(g->get<double>() > 0)) return "class " + seen.back() + ": no rate measured";
    if (c["check"].value("passed", false) != true) return "class " + seen.back() + ": result check failed";
  }
  if (seen != expected_classes) return "classes in the file differ from those run";
  return plexus::bench::check_metadata(root, "plexus-bench", ranks);
}

void print_os_costs(std::FILE* out, const plexus::bench::OsCosts& os) {
  std::fprintf(out,
               "operating system: a system call %.2f us, a switch between two processes on one core %.2f us, a "
               "fresh 4 KB page %.2f us (fresh memory on huge pages %.2f GB/s)\n",
               os.syscall_us, os.process_switch_us, os.fresh_page_us, os.fresh_huge_gb_per_s);
}

json os_costs_json(const plexus::bench::OsCosts& os) {
  return {{"syscall_us", number(os.syscall_us)},
          {"process_switch_us", number(os.process_switch_us)},
          {"fresh_page_us", number(os.fresh_page_us)},
          {"fresh_huge_gb_per_s", number(os.fresh_huge_gb_per_s)}};
}

int run(const Options& opt, const plexus::bench::OsCosts& os) {
  plexus::Registry::global().load_default();
  plexus::ParameterList cannon_params("cannon"), cpu1_params("cpu"), cpu2_params("cpu");
  auto strategy = make_cannon(cannon_params);
  auto k1 = make_cpu(1, opt.backend, cpu1_params);
  auto& host_k1 = dynamic_cast<plexus::HostKernel&>(*k1);  // the cpu kernel works on host memory
  auto k2 = make_cpu(2, opt.backend, cpu2_params);
  const auto grid = plexus::Grid::create(MPI_COMM_WORLD, 1, 1);
  const double yard_seconds = opt.quick ? 0.02 : 0.5;

  std::printf("plexus-bench%s: one rank, %d OpenMP threads available, cannon strategy, cpu kernel (Backend=%s)\n",
              opt.quick ? " (quick)" : "", omp_get_max_threads(), opt.backend.c_str());
  Dgemm dgemm_yardstick(opt.dgemm_n);
  std::vector<double> dgemm_seconds;  // the first round's, before any class
  for (int r = 0; r < (opt.quick ? 1 : 3); ++r) dgemm_seconds.push_back(dgemm_yardstick.seconds());
  double dgemm = dgemm_yardstick.gflops(*std::min_element(dgemm_seconds.begin(), dgemm_seconds.end()));
  const std::string dgemm_kernels = plexus::bench::yardsticks::dgemm_kernels();
  std::printf(
      "OpenBLAS DGEMM n=%d, one core (OpenBLAS's %s kernels): %.2f GFLOP/s (before the classes; each class "
      "measures it again between its multiplies)\n",
      opt.dgemm_n, dgemm_kernels.c_str(), dgemm);
  print_os_costs(stdout, os);

  json js;
  js["benchmark"] = "plexus-bench";
  js["description"] = "PASC'17 DBCSR problem classes on one rank: cannon strategy, cpu kernel";
  js["quick"] = opt.quick;
  js["scale"] = number(opt.scale);
  js["repeat"] = opt.repeat;
#if PLEXUS_HAVE_LIBXSMM
  const std::string libxsmm_target = libxsmm_get_target_arch();
#else
  const std::string libxsmm_target = "none";
#endif
  js["machine"] = {{"threads", omp_get_max_threads()},
                   {"ranks", 1},
                   {"libxsmm_target", libxsmm_target},
                   {"os_costs", os_costs_json(os)}};
  js["targets"] = {{"h2o_se_fraction_of_libxsmm", kTargetXsmm},
                   {"dense_fraction_of_dgemm", kTargetDgemm},
                   {"speedup_2_threads", 1.8}};
  js["classes"] = json::array();

  std::vector<std::string> run_classes;
  std::vector<std::string> per_repetition;  // JSON pointers to the per-repetition times
  bool all_passed = true;
  for (const std::string& name : opt.classes) {
    const auto all = classes();
    const auto it = std::find_if(all.begin(), all.end(), [&](const ProblemClass& c) { return c.name == name; });
    if (it == all.end()) throw plexus::InputError("--classes", "unknown class '" + name + "' (h2o, se, dense)");
    const ProblemClass& pc = *it;
    run_classes.push_back(pc.name);
    const int nblk =
        std::max(1, static_cast<int>(std::lround((opt.quick ? pc.quick_nblocks : pc.nblocks) * opt.scale)));

    const auto t_gen = Clock::now();
    const auto dist = plexus::Distribution::block_cyclic(grid, nblk, nblk);
    const plexus::BlockLayout layout{plexus::BlockSizes::uniform(nblk, pc.block),
                                     plexus::BlockSizes::uniform(nblk, pc.block)};
    const int band = (opt.quick ? pc.quick_bandwidth : pc.bandwidth) < 0
                         ? -1
                         : static_cast<int>(std::lround((opt.quick ? pc.quick_bandwidth : pc.bandwidth) * opt.scale));
    plexus::GeneratorSpec sa{pc.occupancy, pc.symmetric, false, 17, band};
    plexus::GeneratorSpec sb{pc.occupancy, pc.symmetric, false, 29, band};
    const plexus::DistMatrix a = plexus::generate_random("A", dist, layout, sa);
    const plexus::DistMatrix b = plexus::generate_random("B", dist, layout, sb);
    const double gen_seconds = seconds_since(t_gen);

    // Interleaved, best of `repeat` each: load from other processes hits both alike.
    const std::string load_before = loadavg();
    Run r1, r2;
    Yardsticks yard;
    std::unique_ptr<plexus::DistMatrix> c1, c2;
    if (!opt.quick) {  // one untimed round first: C's memory mapped, libxsmm's kernels generated
      Run warm;
      multiply_once(*strategy, *k1, a, b, warm, c1);
      multiply_once(*strategy, *k2, a, b, warm, c2);
    }
    for (int rep = 0; rep < opt.repeat; ++rep) {
      c2.reset();
      multiply_once(*strategy, *k1, a, b, r1, c1);
      multiply_once(*strategy, *k2, a, b, r2, c2);
      yard.measure(pc.block, yard_seconds, dgemm_yardstick, host_k1);
    }
    const double xsmm1 = Yardsticks::best(yard.xsmm1), xsmm2 = Yardsticks::best(yard.xsmm2);
    const double kernel_incache = Yardsticks::best(yard.kernel1);
    const double class_dgemm = Yardsticks::best(yard.dgemm);
    dgemm = std::max(dgemm, class_dgemm);
    // Each round's 1-thread multiply against that round's yardsticks: how far the headline
    // fractions (best against best) could move with the machine's state.
    std::vector<double> round_xsmm, round_dgemm;
    for (std::size_t r = 0; r < r1.times.size() && r < yard.xsmm1.size(); ++r) {
      round_xsmm.push_back(r1.flops / r1.times[r] / 1e9 / yard.xsmm1[r]);
      round_dgemm.push_back(r1.flops / r1.times[r] / 1e9 / yard.dgemm[r]);
    }
    const auto [xsmm_lo, xsmm_hi] = std::minmax_element(round_xsmm.begin(), round_xsmm.end());
    const auto [dgemm_lo, dgemm_hi] = std::minmax_element(round_dgemm.begin(), round_dgemm.end());
    const double err_block = spot_check(a, b, *c1, opt.quick ? 10 : 12);
    const double err_threads = relative_difference(*c2, *c1);
    const std::string load_after = loadavg();
    const bool passed = err_block <= 1e-12 && err_threads <= 1e-13;
    all_passed = all_passed && passed;

    const double g1 = r1.gflops(), g2 = r2.gflops();
    const double frac_xsmm = g1 / xsmm1, frac_dgemm = g1 / class_dgemm, speedup = g2 / g1;
    const double kernel_g1 = r1.kernel_seconds > 0 ? r1.flops / r1.kernel_seconds / 1e9 : 0;

    std::printf(
        "\n%-5s %s\n"
        "      %d x %d blocks of %d (%lld rows), A/B occupancy %.3g, C occupancy %.3g, %lld products, %.3g GFLOP\n"
        "      libxsmm in-cache %d^3: %.2f GFLOP/s (1 thread), %.2f GFLOP/s (2 threads); DGEMM %.2f GFLOP/s\n"
        "      the cpu kernel on the same blocks: %.2f GFLOP/s (1 thread; %.2f of libxsmm's)\n"
        "      1 thread : %.3f s, %.2f GFLOP/s (kernel %.3f s = %.2f GFLOP/s, stacks %.3f s, rest %.3f s)\n"
        "      2 threads: %.3f s, %.2f GFLOP/s, speedup %.2fx (target 1.8)\n"
        "      fraction of libxsmm in-cache %.2f%s, of DGEMM %.2f%s; check %s (block %.1e, threads %.1e)\n"
        "      round by round: of libxsmm in-cache %.2f-%.2f, of DGEMM %.2f-%.2f\n",
        pc.name.c_str(), pc.description.c_str(), nblk, nblk, pc.block, static_cast<long long>(layout.rows.total()),
        a.occupancy(), c1->occupancy(), static_cast<long long>(r1.products), r1.flops / 1e9, pc.block, xsmm1, xsmm2,
        class_dgemm, kernel_incache, kernel_incache / xsmm1, r1.seconds, g1, r1.kernel_seconds, kernel_g1,
        r1.stack_seconds, r1.seconds - r1.kernel_seconds - r1.stack_seconds, r2.seconds, g2, speedup, frac_xsmm,
        target_text(pc.target_xsmm).c_str(), frac_dgemm, target_text(pc.target_dgemm).c_str(),
        passed ? "passed" : "FAILED", err_block, err_threads, *xsmm_lo, *xsmm_hi, *dgemm_lo, *dgemm_hi);

    if (!opt.quick && r1.seconds < 0.5)
      std::printf("      note: the 1-thread multiply took less than 0.5 s; raise --scale for steadier figures\n");

    json cj;
    cj["name"] = pc.name;
    cj["description"] = pc.description;
    cj["block_size"] = pc.block;
    cj["nblocks"] = nblk;
    cj["rows"] = layout.rows.total();
    cj["bandwidth"] = band;
    cj["occupancy_a"] = number(a.occupancy());
    cj["occupancy_b"] = number(b.occupancy());
    cj["occupancy_c"] = number(c1->occupancy());
    cj["products"] = r1.products;
    cj["flops"] = number(r1.flops);
    cj["generate_seconds"] = number(gen_seconds);
    cj["loadavg_before"] = load_before;
    cj["loadavg_after"] = load_after;
    cj["libxsmm_incache"] = {{"gflops_1_thread", number(xsmm1)},
                             {"gflops_2_threads", number(xsmm2)},
                             {"gflops_1_thread_per_round", yard.xsmm1},
                             {"gflops_2_threads_per_round", yard.xsmm2}};
    cj["kernel_incache"] = {{"gflops_1_thread", number(kernel_incache)},
                            {"gflops_1_thread_per_round", yard.kernel1},
                            {"over_libxsmm_incache", number(kernel_incache / xsmm1)}};
    cj["dgemm"] = {{"gflops", number(class_dgemm)}, {"gflops_per_round", yard.dgemm}};
    for (int t = 1; t <= 2; ++t) {
      const Run& r = t == 1 ? r1 : r2;
      cj[t == 1 ? "threads_1" : "threads_2"] = {
          {"seconds", number(r.seconds)},
          {"gflops", number(r.gflops())},
          {"kernel_seconds", number(r.kernel_seconds)},
          {"stack_seconds", number(r.stack_seconds)},
          {"kernel_gflops", number(r.kernel_seconds > 0 ? r.flops / r.kernel_seconds / 1e9 : 0)},
          {"seconds_per_repetition", r.times}};
    }
    cj["speedup_2_threads"] = number(speedup);
    cj["multiply_at_least_half_second"] = r1.seconds >= 0.5;
    cj["fraction_of_libxsmm_incache"] = number(frac_xsmm);
    cj["fraction_of_dgemm"] = number(frac_dgemm);
    cj["fraction_of_libxsmm_incache_per_round"] = round_xsmm;
    cj["fraction_of_dgemm_per_round"] = round_dgemm;
    json targets = json::object();
    if (pc.target_xsmm > 0) {
      targets["fraction_of_libxsmm_incache"] = pc.target_xsmm;
      targets["fraction_met"] = frac_xsmm >= pc.target_xsmm;
    }
    if (pc.target_dgemm > 0) {
      targets["fraction_of_dgemm"] = pc.target_dgemm;
      targets["fraction_met"] = frac_dgemm >= pc.target_dgemm;
    }
    targets["speedup_2_threads"] = 1.8;
    targets["speedup_met"] = speedup >= 1.8;
    cj["targets"] = targets;
    cj["check"] = {{"max_rel_error", number(std::max(err_block, err_threads))}, {"passed", passed}};
    const std::string at = "/classes/" + std::to_string(js["classes"].size());
    per_repetition.push_back(at + "/threads_1/seconds_per_repetition");
    per_repetition.push_back(at + "/threads_2/seconds_per_repetition");
    js["classes"].push_back(std::move(cj));
    std::fflush(stdout);
  }

  js["yardsticks"] = {{"dgemm_n", opt.dgemm_n},
                      {"dgemm_gflops", number(dgemm)},
                      {"dgemm_kernels", dgemm_kernels},
                      {"dgemm_warmup", 1},
                      {"dgemm_seconds_per_repetition", dgemm_seconds}};
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  plexus::bench::RunInfo info;
  info.benchmark = "plexus-bench";
  info.command_line = opt.command;
  info.ranks = ranks;
  info.grid = grid->describe();
  info.threads_set = json::array({1, 2});  // the cpu kernel's Threads, one multiply each
  info.options = {{"quick", opt.quick},     {"check", opt.check}, {"scale", opt.scale},     {"repeat", opt.repeat},
                  {"classes", opt.classes}, {"json", opt.json},   {"dgemm_n", opt.dgemm_n}, {"backend", opt.backend}};
  info.parameter_lists = {{"Communication/cannon", plexus::bench::parameters_json(cannon_params)},
                          {"Kernel/cpu (threads_1)", plexus::bench::parameters_json(cpu1_params)},
                          {"Kernel/cpu (threads_2)", plexus::bench::parameters_json(cpu2_params)}};
  info.warm_up = opt.quick ? 0 : 1;  // one untimed round of each class's multiplies; then interleaved, best of repeat
  info.rounds = opt.repeat;
  info.per_repetition_times = per_repetition;
  js["metadata"] = plexus::bench::run_metadata(info);
  plexus::bench::write_json(js, opt.json);
  if (opt.check &&
      plexus::bench::check_verdict(check_json(opt.json, run_classes, ranks), opt.json, "plexus-bench") != 0)
    return 1;
  if (!all_passed) {
    std::fprintf(stderr, "plexus-bench: a result check failed (see above)\n");
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // The options first (a usage error exits before MPI starts), then the operating system's costs,
  // whose measurement forks: before MPI_Init.
  Options opt;
  try {
    opt = parse(argc, argv);
  } catch (const plexus::bench::UsageError& e) {
    usage(e.what());
  }
  const plexus::bench::OsCosts os = plexus::bench::measure_os_costs();
  if (opt.os_costs_only) {
    print_os_costs(stderr, os);
    try {
      plexus::bench::write_json({{"benchmark", "plexus-bench"}, {"os_costs", os_costs_json(os)}}, opt.json);
    } catch (const plexus::Error& e) {
      std::fprintf(stderr, "plexus-bench: %s: %s\n", e.where().c_str(), e.what());
      return 1;
    }
    return 0;
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rc = 0;
  try {
    rc = run(opt, os);
  } catch (const plexus::Error& e) {
    std::fprintf(stderr, "plexus-bench: %s: %s\n", e.where().c_str(), e.what());
    rc = 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plexus-bench: %s\n", e.what());
    rc = 1;
  }
  MPI_Finalize();
  return rc;
}
