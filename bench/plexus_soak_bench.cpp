// plexus-soak-bench: does a rank's memory stay flat over many multiplies?
//
// For each strategy (cannon, rma25d, ring by default) it builds the problem once (the built-in
// random generator: --blocks block rows of --block-size, --occupancy), then runs --multiplies
// multiplies C = A*B through the context, exactly as `plexus run` does, and samples on every
// rank, before the first multiply and after every --every multiplies:
//   * VmRSS (/proc/self/status), the resident set the operating system sees;
//   * the memory tracker's current host bytes and its pool of freed blocks;
//   * the heap as malloc sees it (mallinfo2: bytes obtained from the system and bytes free in it),
//     which tells fragmentation (free but resident) from growth of what is in use.
// Per strategy and rank the JSON gets the series, first/last/max RSS, the least-squares slope of
// RSS in KB per 1,000 multiplies over the samples after --warmup multiplies, and the tracked peak
// (max over the multiplies of MultiplyReport::peak_memory_bytes). The norm of C after the first
// and after the last multiply must agree (same inputs, same result), and all strategies must give
// the same norm to rounding: the exit status says whether they do. Nothing about speed or memory
// is asserted.
//
//   mpiexec -n P plexus-soak-bench [--strategies cannon,rma25d,ring] [--multiplies N] [--every K]
//        [--warmup W] [--blocks B] [--block-size S] [--occupancy X] [--kernel cpu] [--threads T]
//        [--clear-log] [--json FILE] [--quick]
#include <malloc.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "plexus/algebra.hpp"
#include "plexus/comm_strategy.hpp"
#include "plexus/context.hpp"
#include "plexus/error.hpp"
#include "plexus/kernel.hpp"
#include "plexus/memory.hpp"
#include "plexus/mpi.hpp"
#include "plexus/parameters.hpp"
#include "plexus/problem.hpp"
#include "plexus/registry.hpp"

namespace {

using json = plexus::bench::json;
using plexus::bench::number;

struct Options {
  std::vector<std::string> strategies = {"cannon", "rma25d", "ring"};
  int multiplies = 1000, every = 50, warmup = -1;  // warmup -1: a tenth of the run, at least one sample interval
  int blocks = 80, block_size = 23;
  double occupancy = 0.1;
  std::string kernel = "cpu";
  int threads = 0;  // kernel threads (0: the kernel's default)
  bool clear_log = false;
  bool quick = false, check = false;
  std::string json;
};

const char* kUsage =
    "Usage: mpiexec -n P plexus-soak-bench [options]\n"
    "Runs many multiplies per strategy and samples every rank's memory (RSS, tracked, heap).\n"
    "  --strategies LIST  comma-separated strategies, run one after another (default cannon,rma25d,ring)\n"
    "  --multiplies N     multiplies per strategy (default 1000)\n"
    "  --every K          sample every K multiplies (default 50)\n"
    "  --warmup W         the slope is fitted to the samples after W multiplies (default N/10, >= K)\n"
    "  --blocks B         block rows = block columns of A, B, C (default 80)\n"
    "  --block-size S     block size (default 23)\n"
    "  --occupancy X      fraction of blocks present in A and B (default 0.1)\n"
    "  --kernel NAME      kernel (default cpu; reference if cpu is not built)\n"
    "  --threads T        kernel threads, cpu kernel only (default 0: OpenMP's default)\n"
    "  --clear-log        clear the context's operation log at every sample (default: keep it, as plexus run does;\n"
    "                     it holds the latest 1,000 operations and a total per kind)\n"
    "  --json FILE        write the JSON there (default: stdout after the summary)\n"
    "  --quick            20 x 20 blocks of 5, 40 multiplies, a sample every 10\n"
    "  --check            re-read the JSON file and check it and its metadata (needs --json)\n"
    "See bench/README.md.\n";

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

int to_int(const std::string& option, const std::string& v, int lowest) {
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || x < lowest || x > (1L << 30))
    throw plexus::InputError(option, option + " needs an integer >= " + std::to_string(lowest) + ", got '" + v + "'");
  return static_cast<int>(x);
}

/// The options; `help` is set (and nothing else read) for -h or --help.
Options parse(int argc, char** argv, bool& help) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw plexus::InputError(a, a + " needs a value");
      return argv[++i];
    };
    if (a == "--strategies") {
      o.strategies = split(value());
    } else if (a == "--multiplies") {
      o.multiplies = to_int(a, value(), 1);
    } else if (a == "--every") {
      o.every = to_int(a, value(), 1);
    } else if (a == "--warmup") {
      o.warmup = to_int(a, value(), 0);
    } else if (a == "--blocks") {
      o.blocks = to_int(a, value(), 1);
    } else if (a == "--block-size") {
      o.block_size = to_int(a, value(), 1);
    } else if (a == "--occupancy") {
      const std::string v = value();
      char* end = nullptr;
      o.occupancy = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(o.occupancy > 0.0 && o.occupancy <= 1.0))
        throw plexus::InputError(a, "--occupancy needs a number in (0, 1], got '" + v + "'");
    } else if (a == "--kernel") {
      o.kernel = value();
    } else if (a == "--threads") {
      o.threads = to_int(a, value(), 0);
    } else if (a == "--clear-log") {
      o.clear_log = true;
    } else if (a == "--json") {
      o.json = value();
    } else if (a == "--check") {
      o.check = true;
    } else if (a == "--quick") {
      o.quick = true;
      o.blocks = 20;
      o.block_size = 5;
      o.multiplies = 40;
      o.every = 10;
    } else if (a == "-h" || a == "--help") {
      help = true;
      return o;
    } else {
      throw plexus::InputError(a, "unknown option '" + a + "' (see --help)");
    }
  }
  if (o.strategies.empty()) throw plexus::InputError("--strategies", "--strategies needs at least one strategy");
  if (o.check && (o.json.empty() || o.json == "-"))
    throw plexus::InputError("--check", "--check needs --json FILE (a file it can read back)");
  if (o.warmup < 0) o.warmup = std::max(o.every, o.multiplies / 10);
  return o;
}

// One sample of this rank's memory, in KB (RSS, heap) and bytes (tracker).
struct Sample {
  double rss_kb = 0, heap_kb = 0, heap_free_kb = 0, tracked = 0, pooled = 0;
};

double vm_rss_kb() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr);
  return std::nan("");
}

Sample sample() {
  Sample s;
  s.rss_kb = vm_rss_kb();
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  const struct mallinfo2 mi = mallinfo2();
  s.heap_kb = static_cast<double>(mi.arena + mi.hblkhd) / 1024.0;  // sbrk/arena heaps and mmapped chunks
  s.heap_free_kb = static_cast<double>(mi.fordblks) / 1024.0;      // free bytes inside the heaps
#else
  s.heap_kb = s.heap_free_kb = std::nan("");
#endif
  s.tracked = static_cast<double>(plexus::memory::current_total());
  s.pooled = static_cast<double>(plexus::memory::pooled_bytes());
  return s;
}

// Least-squares slope of y over x (per unit of x); NaN with fewer than two points.
double slope(const std::vector<double>& x, const std::vector<double>& y) {
  const auto n = static_cast<double>(x.size());
  if (x.size() < 2) return std::nan("");
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    mx += x[i];
    my += y[i];
  }
  mx /= n;
  my /= n;
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
  }
  return sxx > 0 ? sxy / sxx : std::nan("");
}

// What one rank measured for one strategy (rank 0 gathers them).
struct RankSeries {
  std::vector<double> rss_kb, heap_kb, heap_free_kb, tracked, pooled;
  double tracked_peak = 0, buffer_peak = 0;
};

struct StrategyResult {
  std::string strategy, grid;
  json strategy_parameters, kernel_parameters, problem_parameters;  // as validated (defaults filled in)
  double seconds = 0, norm_first = 0, norm_last = 0;
  std::vector<int> at;  // multiplies done at each sample
  std::vector<RankSeries> ranks;
};

// Gathers a series of doubles of equal length from every rank to rank 0.
std::vector<std::vector<double>> gather(const std::vector<double>& mine, MPI_Comm comm) {
  const int size = plexus::mpi::size(comm), rank = plexus::mpi::rank(comm);
  const int n = static_cast<int>(mine.size());
  std::vector<double> all(rank == 0 ? static_cast<std::size_t>(n) * size : 0);
  plexus::mpi::check(MPI_Gather(mine.data(), n, MPI_DOUBLE, all.data(), n, MPI_DOUBLE, 0, comm), "MPI_Gather");
  std::vector<std::vector<double>> out;
  if (rank == 0)
    for (int r = 0; r < size; ++r)
      out.emplace_back(all.begin() + std::int64_t{r} * n, all.begin() + std::int64_t{r + 1} * n);
  return out;
}

StrategyResult run_strategy(const Options& o, const std::string& name, MPI_Comm comm) {
  auto& reg = plexus::Registry::global();
  plexus::ParameterList sp(name);
  std::shared_ptr<plexus::CommStrategy> strategy = reg.make_comm(name, sp, "Communication/" + name);
  plexus::ParameterList kp(o.kernel);
  if (o.kernel == "cpu") kp.set("Threads", o.threads);
  std::shared_ptr<plexus::Kernel> kernel = reg.make_kernel(o.kernel, kp, "Kernel/" + o.kernel);
  StrategyResult res;
  res.strategy = name;
  res.strategy_parameters = plexus::bench::parameters_json(sp);
  res.kernel_parameters = plexus::bench::parameters_json(kp);
  RankSeries mine;
  {
    plexus::Context context(comm, strategy, kernel);
    plexus::ParameterList problem("Problem");
    problem.set("Blocks", o.blocks);
    problem.set("BlockSizes", std::to_string(o.block_size));
    problem.set("Occupancy", o.occupancy);
    {
      auto m = plexus::build_problem(problem, context, false);
      res.problem_parameters = plexus::bench::parameters_json(problem);
      res.grid = m.a->grid().describe();
      auto take = [&](int done) {
        const Sample s = sample();
        res.at.push_back(done);
        mine.rss_kb.push_back(s.rss_kb);
        mine.heap_kb.push_back(s.heap_kb);
        mine.heap_free_kb.push_back(s.heap_free_kb);
        mine.tracked.push_back(s.tracked);
        mine.pooled.push_back(s.pooled);
      };
      MPI_Barrier(comm);
      const double t0 = MPI_Wtime();
      take(0);
      for (int rep = 1; rep <= o.multiplies; ++rep) {
        const plexus::MultiplyReport r =
            plexus::multiply(context, plexus::Trans::N, plexus::Trans::N, 1.0, *m.a, *m.b, 0.0, *m.c);
        mine.tracked_peak = std::max(mine.tracked_peak, static_cast<double>(r.peak_memory_bytes));
        mine.buffer_peak = std::max(mine.buffer_peak, static_cast<double>(r.peak_buffer_bytes));
        if (rep == 1) res.norm_first = m.c->frobenius_norm();  // collective
        if (rep % o.every == 0 || rep == o.multiplies) {
          if (o.clear_log) context.clear_log();
          take(rep);
        }
      }
      res.norm_last = m.c->frobenius_norm();
      res.seconds = MPI_Wtime() - t0;
    }  // the matrices go before the context's communicators
    context.release();
  }
  double peaks[2] = {mine.tracked_peak, mine.buffer_peak};
  std::vector<double> all_peaks(static_cast<std::size_t>(2 * plexus::mpi::size(comm)));
  plexus::mpi::check(MPI_Gather(peaks, 2, MPI_DOUBLE, all_peaks.data(), 2, MPI_DOUBLE, 0, comm), "MPI_Gather");
  const auto rss = gather(mine.rss_kb, comm), heap = gather(mine.heap_kb, comm),
             heap_free = gather(mine.heap_free_kb, comm), tracked = gather(mine.tracked, comm),
             pooled = gather(mine.pooled, comm);
  for (std::size_t r = 0; r < rss.size(); ++r) {
    RankSeries s;
    s.rss_kb = rss[r];
    s.heap_kb = heap[r];
    s.heap_free_kb = heap_free[r];
    s.tracked = tracked[r];
    s.pooled = pooled[r];
    s.tracked_peak = all_peaks[2 * r];
    s.buffer_peak = all_peaks[2 * r + 1];
    res.ranks.push_back(std::move(s));
  }
  return res;
}

/// A whole number of KB or bytes as a JSON integer (null when not finite).
json whole(double v) { return std::isfinite(v) ? json(std::llround(v)) : json(nullptr); }

/// A series of KB or bytes, each a JSON integer or null.
json series(const std::vector<double>& v) {
  json out = json::array();
  for (double x : v) out.push_back(whole(x));
  return out;
}

/// A slope in KB per 1,000 multiplies, to a tenth (null when not finite).
json tenth(double v) { return std::isfinite(v) ? json(std::round(v * 10) / 10) : json(nullptr); }

// Slope of y (KB) per 1,000 multiplies over the samples taken after `warmup` multiplies.
double slope_per_1000(const std::vector<int>& at, const std::vector<double>& y, int warmup) {
  std::vector<double> xs, ys;
  for (std::size_t i = 0; i < at.size(); ++i)
    if (at[i] >= warmup) {
      xs.push_back(at[i]);
      ys.push_back(y[i]);
    }
  return 1000.0 * slope(xs, ys);
}

// The first sample taken after `warmup` multiplies.
double value_at(const std::vector<int>& at, const std::vector<double>& y, int warmup) {
  for (std::size_t i = 0; i < at.size(); ++i)
    if (at[i] >= warmup) return y[i];
  return y.back();
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // The command line and --json first, the same verdict on every rank: a bad one ends the job
  // cleanly, before any work.
  Options o;
  if (const int rc = plexus::bench::start("plexus-soak-bench", kUsage, [&](bool& help) {
        o = parse(argc, argv, help);
        return o.json;
      });
      rc >= 0) {
    MPI_Finalize();
    return rc;
  }
  int code = 0;
  try {
    auto& reg = plexus::Registry::global();
    reg.load_default();
    if (o.kernel == "cpu" && reg.find(plexus::ComponentKind::Kernel, "cpu") == nullptr) o.kernel = "reference";
    std::vector<StrategyResult> results;
    for (const auto& s : o.strategies) {
      if (reg.find(plexus::ComponentKind::Comm, s) == nullptr) {
        if (rank == 0) std::fprintf(stderr, "plexus-soak-bench: strategy '%s' is not loaded; left out\n", s.c_str());
        continue;
      }
      results.push_back(run_strategy(o, s, MPI_COMM_WORLD));
      if (rank == 0) {
        std::printf("%s: %d multiplies in %.1f s\n", s.c_str(), o.multiplies, results.back().seconds);
        std::fflush(stdout);
      }
    }
    if (rank == 0) {
      // Checks: the same C after the first and the last multiply, and the same C from every strategy.
      bool ok = !results.empty();
      const double ref = results.empty() ? 0.0 : results.front().norm_last;
      for (const auto& r : results) {
        if (!(std::fabs(r.norm_first - r.norm_last) <= 1e-12 * std::fabs(r.norm_first))) ok = false;
        if (!(std::fabs(r.norm_last - ref) <= 1e-10 * std::fabs(ref))) ok = false;
      }
      // The environment that changes what malloc, OpenMP and the tracker's pool do.
      json env = json::object();
      for (const char* name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_ARENA_MAX", "OMP_NUM_THREADS", "OMP_WAIT_POLICY",
                               "PLEXUS_MEMORY_POOL_MB"}) {
        const char* v = std::getenv(name);
        env[name] = v ? json(v) : json(nullptr);
      }
      std::printf(
          "\nplexus-soak-bench: %d ranks, %d x %d blocks of %d, occupancy %g, kernel %s, %d multiplies per "
          "strategy, samples every %d, slope after %d%s\n",
          size, o.blocks, o.blocks, o.block_size, o.occupancy, o.kernel.c_str(), o.multiplies, o.every, o.warmup,
          o.clear_log ? ", log cleared at samples" : "");
      std::printf("%-8s %4s %10s %10s %10s %10s %14s %12s %12s %12s\n", "strategy", "rank", "first MB", "warm MB",
                  "last MB", "max MB", "KB/1000 mult", "tracked MB", "heap MB", "heap free MB");
      for (const auto& r : results)
        for (std::size_t q = 0; q < r.ranks.size(); ++q) {
          const RankSeries& s = r.ranks[q];
          std::printf("%-8s %4zu %10.1f %10.1f %10.1f %10.1f %14.1f %12.2f %12.1f %12.1f\n", r.strategy.c_str(), q,
                      s.rss_kb.front() / 1024, value_at(r.at, s.rss_kb, o.warmup) / 1024, s.rss_kb.back() / 1024,
                      *std::max_element(s.rss_kb.begin(), s.rss_kb.end()) / 1024,
                      slope_per_1000(r.at, s.rss_kb, o.warmup), s.tracked_peak / (1024.0 * 1024.0),
                      s.heap_kb.back() / 1024, s.heap_free_kb.back() / 1024);
        }
      std::printf("check: %s (C after the first and the last multiply, and across strategies)\n", ok ? "ok" : "FAILED");
      if (!ok) code = 1;

      json doc;
      doc["benchmark"] = "plexus-soak-bench";
      doc["ranks"] = size;
      doc["multiplies"] = o.multiplies;
      doc["every"] = o.every;
      doc["warmup"] = o.warmup;
      doc["problem"] = {{"blocks", o.blocks}, {"block_size", o.block_size}, {"occupancy", o.occupancy}};
      doc["kernel"] = o.kernel;
      doc["kernel_threads"] = o.threads;
      doc["log_cleared"] = o.clear_log;
      doc["environment"] = env;
      doc["check_ok"] = ok;
      doc["strategies"] = json::array();
      std::string grids;  // "cannon 2x2, rma25d 2x1x2, ...": the metadata's grid where the strategies' differ
      json lists = json::object();
      for (const StrategyResult& r : results) {
        json ranks = json::array();
        for (std::size_t q = 0; q < r.ranks.size(); ++q) {
          const RankSeries& s = r.ranks[q];
          ranks.push_back({{"rank", q},
                           {"rss_first_kb", whole(s.rss_kb.front())},
                           {"rss_last_kb", whole(s.rss_kb.back())},
                           {"rss_max_kb", whole(*std::max_element(s.rss_kb.begin(), s.rss_kb.end()))},
                           {"rss_at_warmup_kb", whole(value_at(r.at, s.rss_kb, o.warmup))},
                           {"rss_slope_kb_per_1000", tenth(slope_per_1000(r.at, s.rss_kb, o.warmup))},
                           {"heap_slope_kb_per_1000", tenth(slope_per_1000(r.at, s.heap_kb, o.warmup))},
                           {"tracked_peak_bytes", whole(s.tracked_peak)},
                           {"buffer_peak_bytes", whole(s.buffer_peak)},
                           {"rss_kb", series(s.rss_kb)},
                           {"heap_kb", series(s.heap_kb)},
                           {"heap_free_kb", series(s.heap_free_kb)},
                           {"tracked_bytes", series(s.tracked)},
                           {"pooled_bytes", series(s.pooled)}});
        }
        doc["strategies"].push_back({{"strategy", r.strategy},
                                     {"grid", r.grid},
                                     {"seconds", number(r.seconds)},
                                     {"norm_first", number(r.norm_first)},
                                     {"norm_last", number(r.norm_last)},
                                     {"samples_at", r.at},
                                     {"ranks", ranks}});
        if (!grids.empty()) grids += ", ";
        grids += r.strategy + " " + r.grid;
        lists["Communication/" + r.strategy] = r.strategy_parameters;
        lists["Kernel/" + o.kernel + " (" + r.strategy + ")"] = r.kernel_parameters;
        lists["Problem (" + r.strategy + ")"] = r.problem_parameters;
      }
      plexus::bench::RunInfo info;
      info.benchmark = "plexus-soak-bench";
      info.command_line = plexus::bench::command_line(argc, argv);
      info.ranks = size;
      bool same = true;
      for (const auto& r : results) same = same && r.grid == results.front().grid;
      info.grid = same && !results.empty() ? results.front().grid : grids;  // "2x2" where they agree
      info.threads_set = o.kernel == "cpu" ? json(o.threads) : json(nullptr);  // 0: the kernel's default
      info.options = {{"strategies", o.strategies}, {"multiplies", o.multiplies}, {"every", o.every},
                      {"warmup", o.warmup},         {"blocks", o.blocks},         {"block_size", o.block_size},
                      {"occupancy", o.occupancy},   {"kernel", o.kernel},         {"threads", o.threads},
                      {"clear_log", o.clear_log},   {"json", o.json},             {"quick", o.quick},
                      {"check", o.check}};
      info.parameter_lists = lists;
      info.warm_up = o.warmup;  // multiplies before the samples the slopes are fitted to
      info.rounds = nullptr;    // one timed run of o.multiplies multiplies per strategy
      doc["metadata"] = plexus::bench::run_metadata(info);
      plexus::bench::write_json(doc, o.json);
      if (o.check && plexus::bench::check_verdict(plexus::bench::check_metadata_file(o.json, "plexus-soak-bench", size),
                                                  o.json, "plexus-soak-bench") != 0)
        code = 1;
    }
    MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plexus-soak-bench: error on rank %d: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return code;
}
