// plexus-symmcube-bench: Huang & Chow's SymmSquareCube benchmark (IPDPS'19, Tables I and II):
// D^2 and D^3 of a dense symmetric D in one call of the nboverlap strategy's square_and_cube, on
// the ranks of one job (8 ranks: the 2 x 2 x 2 mesh).
//
// Cases (each a strategy made by the registry with its own parameters):
//   Table I    Variant = original (Algorithm 3, GTFock), baseline (Algorithm 4), optimized
//              (Algorithm 5) with NDup = --ndup (default 4);
//   Table II   Variant = optimized with NDup = 1..6 (--ndups);
//   2.5D       Variant = optimized, Replication = 2 (Algorithm 6), NDup 1 and 4, when the strategy
//              accepts a Replication parameter (tried: an InputError from the registry means it
//              does not, and the rows say so).
// Every case runs once uncounted (its communicators are made then), then --warmup rounds that are
// not counted and --reps counted ones; in each round every case runs once, the order rotated by
// one from round to round. One call is timed on every rank after a barrier; its time is the
// slowest rank's. Reported per case: median, min and mean time, GFLOP/s (flops = the sum over the
// ranks of both reports' flops), the ratios to the baseline and to NDup = 1 of the same run, the
// bytes each rank sent and received (the reports' counted traffic), and the alpha-beta model time
// where the reports carry extra["model_latency_terms"] and extra["model_bandwidth_bytes"]:
// alpha * terms + beta * bytes per rank, the largest over the ranks (alpha, beta from a ping-pong,
// alpha_beta.hpp). After the rounds every case runs once more and its D^2 and D^3 are compared with
// D D and D (D D) by the cannon strategy; a failed check makes the exit status 1. JSON out; speed is
// never asserted. See --help, bench/README.md and docs/nboverlap-bench.md.
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "alpha_beta.hpp"
#include "bench_util.hpp"
#include "plexus/comm_strategy.hpp"
#include "plexus/distribution.hpp"
#include "plexus/error.hpp"
#include "plexus/generator.hpp"
#include "plexus/kernel.hpp"
#include "plexus/layout.hpp"
#include "plexus/matrix.hpp"
#include "plexus/mpi.hpp"
#include "plexus/multiply.hpp"
#include "plexus/parameters.hpp"
#include "plexus/registry.hpp"

namespace {

using json = nlohmann::json;
using plexus::bench::human;
using plexus::bench::loadavg1;
using plexus::bench::number;
using plexus::bench::sleepy_barrier;
using plexus::bench::split;
using plexus::bench::Stats;
using plexus::bench::stats_of;
using plexus::bench::to_int;
using plexus::bench::UsageError;

const char* const kTag = "symmcube-bench";

const char* const kUsage =
    R"(Usage: mpiexec -n P plexus-symmcube-bench [options]

Huang & Chow's SymmSquareCube benchmark (IPDPS'19, Tables I and II): D^2 and D^3 of a dense
symmetric N x N matrix D in one call of the "nboverlap" strategy (plugin comm_nboverlap,
square_and_cube), on a p x p x p mesh of the ranks (8 ranks: 2 x 2 x 2; other counts run on
the largest cube, the rest idle).

Cases:
  Table I    Variant original (Alg. 3), baseline (Alg. 4), optimized (Alg. 5, NDup = --ndup);
  Table II   Variant optimized, NDup = each of --ndups (a case in both tables runs once);
  2.5D       Variant optimized with Replication = --replication (Alg. 6), NDup = each of
             --replication-ndups, if the strategy accepts a Replication parameter; if it does
             not, the rows say so (available: false) and the run goes on.
Every case runs once uncounted, then --warmup uncounted rounds and --reps counted rounds; a
round runs every case once, the order rotated by one each round. Time of one call: after a
barrier, the slowest rank. Reported per case: median, min, mean time; GFLOP/s (the ranks' flops
from both reports, at the median and the min time); the speedup over the baseline and over
optimized NDup = 1 of the same run (GFLOP/s ratio at the median); bytes sent and received per
rank (the reports' counted traffic, max and mean over the ranks); the alpha-beta model time
(max over the ranks of alpha * model_latency_terms + beta * model_bandwidth_bytes from the
reports' extra figures, "-" where the strategy does not give them).
After the rounds each case runs once more and D^2, D^3 are compared with D D and D (D D) by the
cannon strategy (relative Frobenius error <= --tolerance); a failed check: exit status 1.

Alpha-beta: ping-pong between ranks 0 and P/2 (one-way time t = alpha + beta n, least-squares
fit with relative residuals, max(--reps, 5) repetitions per size; bench/alpha_beta.hpp).

Options (sizes take a K, M or G suffix, powers of 1024):
  --n N                  order of D (default 1024: on 8 ranks over 2 cores the local
                         products are about half of a call, communication the rest); a
                         multiple of --block
  --block B              block size (default 32): D has N/B x N/B blocks of B x B
  --occupancy X          fraction of blocks present (default 1: dense, as in the paper)
  --ndup K               NDup of the optimized case of Table I (default 4)
  --ndups LIST           NDup values of Table II (default 1,2,3,4,5,6), each 1..64
  --min-part-bytes B     MinPartBytes of every case (default 0: always NDup parts; the
                         strategy's own default is 16K)
  --replication C        Replication of the 2.5D cases (default 2; 0: no 2.5D cases; the
                         strategy's q x q x c mesh, c = 1 being Cannon on the q x q plane)
  --replication-ndups L  their NDup values (default 1,4)
  --active-ranks A       ActiveRanks of every case (default 0: the largest cube <= P)
  --kernel NAME          local kernel (default cpu)
  --threads T            its Threads parameter (cpu kernel only; default 1)
  --reps R               counted rounds (default 10)
  --warmup W             uncounted rounds before them (default 2)
  --tolerance E          largest relative error of the check (default 1e-10)
  --pp-min B, --pp-max B ping-pong sizes (default 8 .. 16M); --no-pingpong skips it (no model)
  --poll-us U            sleep between two MPI_Test in the barriers between calls (default 1000)
  --json FILE            write the JSON there (default: stdout, after the tables)
  --check                re-read the JSON file and check its metadata (needs --json)
  --quick                tiny run for tests: N 64, blocks of 8, 2 reps, 1 warm-up round,
                         ping-pong 8..64K (options after --quick override it)
  -h, --help             this text
Progress lines go to stderr. See bench/README.md and docs/nboverlap-bench.md.
)";

struct Options {
  int n = 1024, block = 32;
  double occupancy = 1.0;
  int ndup = 4;
  std::vector<int> ndups = {1, 2, 3, 4, 5, 6};
  std::int64_t min_part_bytes = 0;
  int replication = 2;
  std::vector<int> replication_ndups = {1, 4};
  int active_ranks = 0;
  std::string kernel = "cpu";
  int threads = 1;
  int reps = 10, warmup = 2;
  double tolerance = 1e-10;
  bool pingpong = true;
  std::int64_t pp_min = 8, pp_max = 16 << 20;
  int poll_us = 1000;
  bool quick = false, check = false;
  std::string json;
};

std::vector<int> int_list(const std::string& option, const std::string& v, int lo, int hi) {
  std::vector<int> out;
  for (const auto& item : split(v)) out.push_back(static_cast<int>(to_int(option, item, lo, hi)));
  if (out.empty()) throw UsageError(option + " needs at least one value, got '" + v + "'");
  return out;
}

double to_double(const std::string& option, const std::string& v, double lo, double hi) {
  std::size_t used = 0;
  double x = 0;
  try {
    x = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != v.size() || !std::isfinite(x) || x < lo || x > hi)
    throw UsageError(option + " needs a number in " + json(lo).dump() + " .. " + json(hi).dump() + ", got '" + v +
                     "'");
  return x;
}

Options parse(int argc, char** argv, bool& help) {
  Options o;
  help = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(a + " needs a value (see --help)");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      help = true;
    } else if (a == "--n") {
      o.n = static_cast<int>(to_int(a, value(), 1, 1 << 20));
    } else if (a == "--block") {
      o.block = static_cast<int>(to_int(a, value(), 1, 4096));
    } else if (a == "--occupancy") {
      o.occupancy = to_double(a, value(), 0.0, 1.0);
    } else if (a == "--ndup") {
      o.ndup = static_cast<int>(to_int(a, value(), 1, 64));
    } else if (a == "--ndups") {
      o.ndups = int_list(a, value(), 1, 64);
    } else if (a == "--min-part-bytes") {
      o.min_part_bytes = to_int(a, value(), 0, INT_MAX, true);
    } else if (a == "--replication") {
      o.replication = static_cast<int>(to_int(a, value(), 0, 1 << 20));
    } else if (a == "--replication-ndups") {
      o.replication_ndups = int_list(a, value(), 1, 64);
    } else if (a == "--active-ranks") {
      o.active_ranks = static_cast<int>(to_int(a, value(), 0, INT_MAX));
    } else if (a == "--kernel") {
      o.kernel = value();
    } else if (a == "--threads") {
      o.threads = static_cast<int>(to_int(a, value(), 0, 4096));
    } else if (a == "--reps") {
      o.reps = static_cast<int>(to_int(a, value(), 1, 1000000));
    } else if (a == "--warmup") {
      o.warmup = static_cast<int>(to_int(a, value(), 0, 1000000));
    } else if (a == "--tolerance") {
      o.tolerance = to_double(a, value(), 0.0, 1.0);
    } else if (a == "--pp-min") {
      o.pp_min = to_int(a, value(), 1, std::int64_t{1} << 34, true);
    } else if (a == "--pp-max") {
      o.pp_max = to_int(a, value(), 1, std::int64_t{1} << 34, true);
    } else if (a == "--no-pingpong") {
      o.pingpong = false;
    } else if (a == "--poll-us") {
      o.poll_us = static_cast<int>(to_int(a, value(), 0, 1000000));
    } else if (a == "--json") {
      o.json = value();
    } else if (a == "--check") {
      o.check = true;
    } else if (a == "--quick") {
      o.quick = true;
      o.n = 64;
      o.block = 8;
      o.reps = 2;
      o.warmup = 1;
      o.pp_min = 8;
      o.pp_max = 64 * 1024;
    } else {
      throw UsageError("unknown option '" + a + "' (see --help)");
    }
  }
  if (help) return o;
  if (o.n % o.block != 0)
    throw UsageError("--n " + std::to_string(o.n) + " is not a multiple of --block " + std::to_string(o.block) +
                     " (D has N/B x N/B blocks of B x B)");
  if (o.pp_min > o.pp_max) throw UsageError("--pp-min is larger than --pp-max");
  if (o.check && (o.json.empty() || o.json == "-"))
    throw UsageError("--check needs --json FILE (a file it can read back)");
  if (o.pp_max > INT_MAX) throw UsageError("--pp-max exceeds one MPI call's count of bytes");
  return o;
}

// One case of the benchmark: a strategy with its parameters, or why it could not be made.
struct Case {
  std::string label;                // "original", "optimized NDup=4", "2.5D c=2 NDup=1", ...
  std::string variant;
  int ndup = 1;
  int replication = 0;              // 0: the parameter is not given (the 3D algorithm)
  std::vector<std::string> tables;  // "I", "II", "2.5D"
  bool available = true;
  std::string unavailable_reason;
  std::string parameters_xml;
  json parameters;  // the strategy's parameters as validated (defaults filled in)
  std::unique_ptr<plexus::CommStrategy> algo;
  std::size_t operands = 0;  // index into Bench::operands (D, D2, D3 on the case's distribution)
  // This rank's figures, one entry per counted round.
  std::vector<double> seconds, square_seconds, cube_seconds, kernel_seconds, wait_seconds;
  // This rank's figures of the last counted call (every call moves the same data).
  double flops = 0, model_terms = 0, model_bytes = 0;
  bool model_known = false;
  std::int64_t bytes_sent = 0, bytes_received = 0, messages_sent = 0;
  json strategy_figures = json::object();  // rank 0's extra figures of the D^2 report
};

// D on a distribution, and the D^2 and D^3 every case on it writes.
struct Operands {
  std::shared_ptr<const plexus::Distribution> dist;
  plexus::DistMatrix d, d2, d3;
};

plexus::DistMatrix make_d(const Options& o, std::shared_ptr<const plexus::Distribution> dist) {
  plexus::GeneratorSpec g;
  g.occupancy = o.occupancy;
  g.symmetric = true;
  g.force_diagonal = true;
  g.seed = 20190520;
  const int nb = o.n / o.block;
  const plexus::BlockLayout l{plexus::BlockSizes::uniform(nb, o.block), plexus::BlockSizes::uniform(nb, o.block)};
  return plexus::generate_random("D", dist, l, g);
}

// The relative Frobenius error of x against ref (any distributions over the same grid).
double relative_error(const plexus::DistMatrix& ref, const plexus::DistMatrix& x) {
  plexus::DistMatrix diff = ref;
  diff.add(1.0, -1.0, x);
  const double r = ref.frobenius_norm();
  return r > 0 ? diff.frobenius_norm() / r : diff.frobenius_norm();
}

// An InputError as one line: "where: what", unless what already names where.
std::string reason_of(const plexus::Error& e) {
  const std::string what = e.what();
  return e.where().empty() || what.find(e.where()) != std::string::npos ? what : e.where() + ": " + what;
}

double extra_or(const plexus::MultiplyReport& r, const char* key, bool& found) {
  const auto it = r.extra.find(key);
  if (it == r.extra.end()) return 0.0;
  found = true;
  return it->second;
}

// /proc/loadavg as it reads: the 1, 5 and 15 minute load averages, running/all tasks, last pid.
std::string proc_loadavg() {
  std::ifstream in("/proc/loadavg");
  std::string line;
  std::getline(in, line);
  return line;
}

// One call of a case on its operands; this rank's figures go to c when `count` is set.
void run_case(Case& c, Operands& ops, plexus::Kernel& kernel, int poll_us, bool count) {
  sleepy_barrier(MPI_COMM_WORLD, poll_us);
  plexus::mpi::check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
  std::vector<plexus::MultiplyReport> reports;
  const double t0 = MPI_Wtime();
  const bool done = c.algo->square_and_cube(kernel, ops.d, ops.d2, ops.d3, plexus::MultiplyOptions{}, reports);
  const double t = MPI_Wtime() - t0;
  if (!done) throw plexus::Error("plexus-symmcube-bench", "the strategy of case '" + c.label + "' has no square_and_cube");
  if (reports.size() != 2)
    throw plexus::Error("plexus-symmcube-bench", "case '" + c.label + "': square_and_cube returned " +
                                                     std::to_string(reports.size()) + " reports, expected 2");
  if (!count) return;
  c.seconds.push_back(t);
  c.square_seconds.push_back(reports[0].seconds);
  c.cube_seconds.push_back(reports[1].seconds);
  c.kernel_seconds.push_back(reports[0].kernel_seconds + reports[1].kernel_seconds);
  c.wait_seconds.push_back(reports[0].wait_seconds() + reports[1].wait_seconds());
  c.flops = reports[0].flops + reports[1].flops;
  c.bytes_sent = reports[0].bytes_sent() + reports[1].bytes_sent();
  c.bytes_received = 0;
  for (const auto& r : reports)
    for (const auto& role : r.traffic) c.bytes_received += role.bytes_received + role.index_bytes_received;
  c.messages_sent = reports[0].messages_sent() + reports[1].messages_sent();
  bool found = false;
  c.model_terms = 0;
  c.model_bytes = 0;
  for (const auto& r : reports) {
    c.model_terms += extra_or(r, "model_latency_terms", found);
    c.model_bytes += extra_or(r, "model_bandwidth_bytes", found);
  }
  c.model_known = found;
  c.strategy_figures = json::object();
  for (const auto& [k, v] : reports[0].extra) c.strategy_figures[k] = v;
}

// The slowest rank of every counted call (rank 0 gets them; the others an empty vector).
std::vector<double> slowest(const std::vector<double>& mine, int rank) {
  std::vector<double> out(mine.size(), 0.0);
  MPI_Reduce(mine.data(), out.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank != 0) out.clear();
  return out;
}

double reduce_scalar(double x, MPI_Op op) {
  double out = 0;
  MPI_Allreduce(&x, &out, 1, MPI_DOUBLE, op, MPI_COMM_WORLD);
  return out;
}

std::string join(const std::vector<int>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

// "12.30" (two decimals, of the value times `scale`) or "-" for a missing number.
std::string cell(const json& v, double scale = 1.0) {
  if (!v.is_number()) return "-";
  return fmt::format("{:.2f}", v.get<double>() * scale);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // Arguments first, on every rank alike: a bad one ends the job cleanly before any work.
  Options o;
  if (const int rc = plexus::bench::start("plexus-symmcube-bench", kUsage, [&](bool& help) {
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
    if (!reg.find(plexus::ComponentKind::Comm, "nboverlap"))
      throw plexus::InputError("plexus-symmcube-bench",
                               "no 'nboverlap' strategy was loaded (build the plexus_comm_nboverlap plugin, or set "
                               "PLEXUS_PLUGIN_PATH)");
    if (!reg.find(plexus::ComponentKind::Comm, "cannon"))
      throw plexus::InputError("plexus-symmcube-bench",
                               "no 'cannon' strategy was loaded: the results are checked against it (build the "
                               "plexus_comm_cannon plugin, or set PLEXUS_PLUGIN_PATH)");
    plexus::ParameterList kp(o.kernel);
    if (o.kernel == "cpu") kp.set("Threads", o.threads);
    std::unique_ptr<plexus::Kernel> kernel = reg.make_kernel(o.kernel, kp, "Kernel/" + o.kernel);
    plexus::ParameterList cp("cannon");
    std::unique_ptr<plexus::CommStrategy> cannon = reg.make_comm("cannon", cp, "Communication/cannon");

    // The cases. A parameter the strategy does not know (Replication before Algorithm 6) is an
    // InputError from the registry, the same on every rank: the case is kept as unavailable.
    std::vector<Case> cases;
    auto add_case = [&](const std::string& label, const std::string& variant, int ndup, int replication,
                        std::vector<std::string> tables) {
      for (auto& c : cases)
        if (c.variant == variant && c.ndup == ndup && c.replication == replication) {
          for (auto& t : tables) c.tables.push_back(t);
          return;
        }
      Case c;
      c.label = label;
      c.variant = variant;
      c.ndup = ndup;
      c.replication = replication;
      c.tables = std::move(tables);
      plexus::ParameterList p("nboverlap");
      p.set("Variant", variant);
      p.set("NDup", ndup);
      p.set("MinPartBytes", static_cast<int>(o.min_part_bytes));
      p.set("ActiveRanks", o.active_ranks);
      if (replication > 0) p.set("Replication", replication);
      try {
        c.algo = reg.make_comm("nboverlap", p, "Communication/nboverlap");
        c.parameters_xml = plexus::to_xml(p);
        c.parameters = plexus::bench::parameters_json(p);
      } catch (const plexus::InputError& e) {
        c.available = false;
        c.unavailable_reason = reason_of(e);
      }
      cases.push_back(std::move(c));
    };
    add_case("original", "original", o.ndup, 0, {"I"});
    add_case("baseline", "baseline", o.ndup, 0, {"I"});
    add_case("optimized NDup=" + std::to_string(o.ndup), "optimized", o.ndup, 0, {"I"});
    for (int k : o.ndups) add_case("optimized NDup=" + std::to_string(k), "optimized", k, 0, {"II"});
    if (o.replication > 0)
      for (int k : o.replication_ndups)
        add_case("2.5D c=" + std::to_string(o.replication) + " NDup=" + std::to_string(k), "optimized", k,
                 o.replication, {"2.5D"});
    // Sort Table I first, then Table II by NDup, then 2.5D: the order of the rows and tables.
    std::stable_sort(cases.begin(), cases.end(), [](const Case& a, const Case& b) {
      auto key = [](const Case& c) {
        const int t = c.replication > 0 ? 2 : (c.variant != "optimized" ? 0 : 1);
        const int v = c.variant == "original" ? 0 : c.variant == "baseline" ? 1 : 2;
        return std::make_tuple(t, v, c.ndup);
      };
      return key(a) < key(b);
    });

    const double t_start = MPI_Wtime();
    const double load_before = loadavg1();
    const std::string proc_loadavg_before = proc_loadavg();
    json doc;
    const int nb = o.n / o.block;
    if (rank == 0) {
      doc["benchmark"] = "plexus-symmcube-bench";
      doc["paper"] =
          "Huang & Chow, Overlapping communications with other communications and its application to distributed "
          "dense matrix computations, IPDPS 2019, Tables I and II (SymmSquareCube)";
      doc["machine"] = plexus::bench::machine_info(size);
      doc["parameters"] = {{"ranks", size},
                           {"n", o.n},
                           {"block", o.block},
                           {"blocks_per_side", nb},
                           {"occupancy", o.occupancy},
                           {"matrix", "symmetric D (generate_random, symmetric, diagonal forced), values in [-1, 1)"},
                           {"ndup_table1", o.ndup},
                           {"ndups_table2", o.ndups},
                           {"min_part_bytes", o.min_part_bytes},
                           {"replication", o.replication},
                           {"replication_ndups", o.replication_ndups},
                           {"active_ranks", o.active_ranks},
                           {"kernel", o.kernel},
                           {"kernel_parameters", plexus::to_xml(kp)},
                           {"repetitions", o.reps},
                           {"warmup_rounds", o.warmup},
                           {"tolerance", o.tolerance},
                           {"pingpong", o.pingpong},
                           {"pingpong_min_bytes", o.pp_min},
                           {"pingpong_max_bytes", o.pp_max},
                           {"poll_us", o.poll_us},
                           {"quick", o.quick}};
      doc["method"] = {
          {"time", "per call: wall time of square_and_cube on every rank after a barrier; the slowest rank's"},
          {"order", "every case once per round, the order rotated by one each round; one uncounted call per case "
                    "first, then warmup_rounds uncounted rounds"},
          {"flops", "sum over the ranks of both reports' flops (2 m n k per block product computed)"},
          {"speedup", "GFLOP/s at the median time over the reference case's (baseline; optimized NDup=1)"},
          {"bytes", "per rank and call: both reports' counted traffic, data and index, all roles"},
          {"model", "per rank: alpha * sum of both reports' extra[model_latency_terms] + beta * sum of their "
                    "extra[model_bandwidth_bytes]; the largest over the ranks (null when no report has them)"},
          {"check", "after the rounds one more call per case; D^2 and D^3 against D D and D (D D) by the cannon "
                    "strategy with the same kernel, relative Frobenius error"},
          {"network", "none: every message is a shared-memory copy on this machine; there is no emulated "
                      "bandwidth-limited network yet (issue 14)"}};
      std::fprintf(stderr,
                   "[%s] %d ranks; N = %d (%d x %d blocks of %d), occupancy %g; %zu cases, %d reps + %d warm-up "
                   "rounds; load %.2f\n",
                   kTag, size, o.n, nb, nb, o.block, o.occupancy, cases.size(), o.reps, o.warmup, load_before);
    }

    plexus::bench::AlphaBeta model;
    if (o.pingpong && size >= 2) {
      plexus::bench::PingPongSettings s;
      s.rank_a = 0;
      s.rank_b = size / 2;
      s.min_bytes = o.pp_min;
      s.max_bytes = o.pp_max;
      s.reps = std::max(o.reps, 5);
      s.warmup = std::max(o.warmup, 1);
      s.poll_us = o.poll_us;
      s.tag = kTag;
      s.t_start = t_start;
      json pp = plexus::bench::pingpong(s, model);
      if (rank == 0) doc["alpha_beta"] = pp;
    } else if (rank == 0) {
      doc["alpha_beta"] = nullptr;
    }

    // The operands: D on every distribution the cases ask for (one per distinct placement), and
    // the reference D^2, D^3 by cannon on the plain block-cyclic distribution.
    auto grid = plexus::Grid::create(MPI_COMM_WORLD);
    auto proposal = plexus::Distribution::block_cyclic(grid, nb, nb);
    std::vector<std::unique_ptr<Operands>> operands;
    for (auto& c : cases) {
      if (!c.available) continue;
      auto dist = c.algo->distribution_for(proposal);
      std::size_t k = 0;
      while (k < operands.size() && !operands[k]->dist->same_maps(*dist)) ++k;
      if (k == operands.size()) {
        plexus::DistMatrix d = make_d(o, dist);
        plexus::DistMatrix d2("D2", dist, d.layout()), d3("D3", dist, d.layout());
        operands.push_back(std::make_unique<Operands>(Operands{dist, std::move(d), std::move(d2), std::move(d3)}));
      }
      c.operands = k;
    }
    const plexus::DistMatrix dref = make_d(o, proposal);
    plexus::DistMatrix e2("E2", proposal, dref.layout()), e3("E3", proposal, dref.layout());
    plexus::multiply(*cannon, *kernel, plexus::Trans::N, plexus::Trans::N, 1.0, dref, dref, 0.0, e2);
    plexus::multiply(*cannon, *kernel, plexus::Trans::N, plexus::Trans::N, 1.0, dref, e2, 0.0, e3);
    const double d_occupancy = dref.occupancy();
    if (rank == 0)
      std::fprintf(stderr, "[%s %6.1f s] operands made (%zu placements), reference D^2, D^3 by cannon\n", kTag,
                   MPI_Wtime() - t_start, operands.size());

    // One uncounted call per case: makes its communicators, and tells whether it runs at all (an
    // InputError from the strategy, the same on every rank, e.g. Replication refused for this
    // rank count, marks it unavailable).
    for (auto& c : cases) {
      if (!c.available) continue;
      try {
        run_case(c, *operands[c.operands], *kernel, o.poll_us, false);
      } catch (const plexus::InputError& e) {
        c.available = false;
        c.unavailable_reason = reason_of(e);
      }
    }
    std::vector<std::size_t> live;
    for (std::size_t i = 0; i < cases.size(); ++i)
      if (cases[i].available) live.push_back(i);
    if (rank == 0) {
      for (const auto& c : cases)
        if (!c.available) std::fprintf(stderr, "[%s] case '%s' not available: %s\n", kTag, c.label.c_str(),
                                       c.unavailable_reason.c_str());
      std::fprintf(stderr, "[%s %6.1f s] %zu cases ready\n", kTag, MPI_Wtime() - t_start, live.size());
    }

    // The rounds.
    const int rounds = o.warmup + o.reps;
    double last_progress = MPI_Wtime();
    for (int r = 0; r < rounds; ++r) {
      for (std::size_t k = 0; k < live.size(); ++k) {
        Case& c = cases[live[(k + static_cast<std::size_t>(r)) % live.size()]];
        run_case(c, *operands[c.operands], *kernel, o.poll_us, r >= o.warmup);
      }
      if (rank == 0 && (MPI_Wtime() - last_progress > 2.0 || r + 1 == rounds)) {
        last_progress = MPI_Wtime();
        std::fprintf(stderr, "[%s %6.1f s] round %d/%d done%s\n", kTag, MPI_Wtime() - t_start, r + 1, rounds,
                     r < o.warmup ? " (warm-up)" : "");
      }
    }

    // The check: one more call per case against cannon's D D and D (D D).
    bool all_valid = true;
    std::vector<double> err2(cases.size(), -1), err3(cases.size(), -1);
    for (std::size_t i : live) {
      Case& c = cases[i];
      Operands& ops = *operands[c.operands];
      ops.d2 = plexus::DistMatrix("D2", ops.dist, ops.d.layout());
      ops.d3 = plexus::DistMatrix("D3", ops.dist, ops.d.layout());
      run_case(c, ops, *kernel, o.poll_us, false);
      err2[i] = relative_error(e2, ops.d2);
      err3[i] = relative_error(e3, ops.d3);
      const bool ok = err2[i] <= o.tolerance && err3[i] <= o.tolerance;
      all_valid = all_valid && ok;
      if (rank == 0 && !ok)
        std::fprintf(stderr, "[%s] case '%s': RESULT CHECK FAILED (D^2 error %.3g, D^3 error %.3g)\n", kTag,
                     c.label.c_str(), err2[i], err3[i]);
    }
    const double load_after = loadavg1();

    // Rows: the slowest rank per call, the figures over the ranks.
    json rows = json::array();
    for (std::size_t i = 0; i < cases.size(); ++i) {
      Case& c = cases[i];
      json row = {{"label", c.label},
                  {"variant", c.variant},
                  {"ndup", c.ndup},
                  {"replication", c.replication > 0 ? json(c.replication) : json(nullptr)},
                  {"tables", c.tables},
                  {"available", c.available}};
      const char* keys[] = {"seconds", "seconds_min", "seconds_median", "seconds_mean", "gflops_at_median",
                            "gflops_at_min", "flops", "speedup_vs_baseline", "speedup_vs_ndup1",
                            "square_seconds_median", "cube_seconds_median", "kernel_seconds_median",
                            "wait_seconds_median", "bytes_sent_per_rank_max", "bytes_sent_per_rank_mean",
                            "bytes_received_per_rank_max", "messages_sent_per_rank_max", "model_seconds",
                            "model_latency_terms_at_max", "model_bandwidth_bytes_at_max", "model_over_measured",
                            "relative_error_d2", "relative_error_d3", "validated"};
      for (const char* k : keys) row[k] = nullptr;
      if (!c.available) {
        row["unavailable_reason"] = c.unavailable_reason;
        if (rank == 0) rows.push_back(row);
        continue;
      }
      const auto t = slowest(c.seconds, rank);
      const auto t2 = slowest(c.square_seconds, rank);
      const auto t3 = slowest(c.cube_seconds, rank);
      const auto tk = slowest(c.kernel_seconds, rank);
      const auto tw = slowest(c.wait_seconds, rank);
      const double flops = reduce_scalar(c.flops, MPI_SUM);
      const double sent_max = reduce_scalar(double(c.bytes_sent), MPI_MAX);
      const double sent_sum = reduce_scalar(double(c.bytes_sent), MPI_SUM);
      const double recv_max = reduce_scalar(double(c.bytes_received), MPI_MAX);
      const double msgs_max = reduce_scalar(double(c.messages_sent), MPI_MAX);
      const bool model_any = reduce_scalar(c.model_known ? 1.0 : 0.0, MPI_MAX) > 0;
      const double mine = model.known ? model.alpha * c.model_terms + model.beta * c.model_bytes : 0.0;
      // The rank with the largest model time, and its terms and bytes.
      struct {
        double v;
        int r;
      } in{mine, rank}, out{0, 0};
      MPI_Allreduce(&in, &out, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
      double at_max[2] = {c.model_terms, c.model_bytes};
      MPI_Bcast(at_max, 2, MPI_DOUBLE, out.r, MPI_COMM_WORLD);
      if (rank != 0) continue;
      const Stats s = stats_of(t);
      row["seconds"] = t;
      row["seconds_min"] = s.min;
      row["seconds_median"] = s.median;
      row["seconds_mean"] = s.mean;
      row["flops"] = flops;
      row["gflops_at_median"] = number(flops / s.median * 1e-9);
      row["gflops_at_min"] = number(flops / s.min * 1e-9);
      row["square_seconds_median"] = stats_of(t2).median;
      row["cube_seconds_median"] = stats_of(t3).median;
      row["kernel_seconds_median"] = stats_of(tk).median;
      row["wait_seconds_median"] = stats_of(tw).median;
      row["bytes_sent_per_rank_max"] = sent_max;
      row["bytes_sent_per_rank_mean"] = sent_sum / size;
      row["bytes_received_per_rank_max"] = recv_max;
      row["messages_sent_per_rank_max"] = msgs_max;
      if (model_any && model.known) {
        row["model_seconds"] = out.v;
        row["model_latency_terms_at_max"] = at_max[0];
        row["model_bandwidth_bytes_at_max"] = at_max[1];
        row["model_over_measured"] = number(out.v / s.median);
      }
      row["relative_error_d2"] = err2[i];
      row["relative_error_d3"] = err3[i];
      row["validated"] = err2[i] <= o.tolerance && err3[i] <= o.tolerance;
      row["strategy_parameters"] = c.parameters_xml;
      row["strategy_figures"] = c.strategy_figures;
      // The mesh the case ran on, as the strategy reports it (a Replication it lowered shows here).
      for (const char* k : {"mesh_side", "layers", "active_ranks"})
        row[k] = c.strategy_figures.contains(k) ? json(static_cast<int>(c.strategy_figures[k].get<double>())) : json();
      rows.push_back(row);
    }

    if (rank == 0) {
      // The speedups, against cases of the same run.
      auto find = [&](const std::string& variant, int ndup, bool any_ndup) -> const json* {
        for (const auto& row : rows)
          if (row["variant"] == variant && row["replication"].is_null() && (any_ndup || row["ndup"] == ndup) &&
              row["available"] == true)
            return &row;
        return nullptr;
      };
      const json* base = find("baseline", 0, true);
      const json* one = find("optimized", 1, false);
      for (auto& row : rows) {
        if (!row["available"].get<bool>()) continue;
        const double g = row["gflops_at_median"].is_number() ? row["gflops_at_median"].get<double>() : NAN;
        if (base && (*base)["gflops_at_median"].is_number())
          row["speedup_vs_baseline"] = number(g / (*base)["gflops_at_median"].get<double>());
        if (one && (*one)["gflops_at_median"].is_number())
          row["speedup_vs_ndup1"] = number(g / (*one)["gflops_at_median"].get<double>());
      }
      bool model_any = false;
      for (const auto& row : rows) model_any = model_any || row["model_seconds"].is_number();
      bool replication_available = false;
      std::string replication_reason;
      for (const auto& c : cases)
        if (c.replication > 0) {
          replication_available = replication_available || c.available;
          if (!c.available && replication_reason.empty()) replication_reason = c.unavailable_reason;
        }
      json mesh;  // null unless a report gave the mesh figures
      for (const auto& row : rows)
        if (row.contains("strategy_figures") && row["strategy_figures"].contains("mesh_side")) {
          const json& f = row["strategy_figures"];
          mesh = {{"mesh_side", static_cast<int>(f["mesh_side"].get<double>())},
                  {"active_ranks", f.contains("active_ranks") ? json(static_cast<int>(f["active_ranks"].get<double>()))
                                                              : json()}};
          break;
        }
      doc["mesh"] = mesh;
      doc["d_occupancy"] = d_occupancy;
      doc["replication"] = {{"asked", o.replication},
                            {"available", o.replication > 0 && replication_available},
                            {"reason", o.replication == 0 ? "not asked (--replication 0)"
                                       : replication_available ? ""
                                                               : replication_reason}};
      doc["model_terms_available"] = model_any;
      doc["rows"] = rows;
      doc["all_validated"] = all_valid;
      doc["machine"]["loadavg_1min_before"] = load_before;
      doc["machine"]["loadavg_1min_after"] = load_after;
      doc["machine"]["proc_loadavg_before"] = proc_loadavg_before;
      doc["machine"]["proc_loadavg_after"] = proc_loadavg();
      doc["seconds_total"] = MPI_Wtime() - t_start;
      plexus::bench::RunInfo info;
      info.benchmark = "plexus-symmcube-bench";
      info.command_line = plexus::bench::command_line(argc, argv);
      info.ranks = size;
      info.grid = grid->describe();  // the proposal's; the cases' meshes are in "mesh" and in the rows
      info.threads_set = o.kernel == "cpu" ? json(o.threads) : json(nullptr);
      info.options = {{"n", o.n},
                      {"block", o.block},
                      {"occupancy", o.occupancy},
                      {"ndup", o.ndup},
                      {"ndups", o.ndups},
                      {"min_part_bytes", o.min_part_bytes},
                      {"replication", o.replication},
                      {"replication_ndups", o.replication_ndups},
                      {"active_ranks", o.active_ranks},
                      {"kernel", o.kernel},
                      {"threads", o.threads},
                      {"reps", o.reps},
                      {"warmup", o.warmup},
                      {"tolerance", o.tolerance},
                      {"pingpong", o.pingpong},
                      {"pp_min", o.pp_min},
                      {"pp_max", o.pp_max},
                      {"poll_us", o.poll_us},
                      {"quick", o.quick},
                      {"check", o.check},
                      {"json", o.json}};
      info.parameter_lists = {{"Kernel/" + o.kernel, plexus::bench::parameters_json(kp)},
                              {"Communication/cannon (the check)", plexus::bench::parameters_json(cp)}};
      for (const auto& c : cases)
        if (c.parameters.is_object()) info.parameter_lists["Communication/nboverlap (" + c.label + ")"] = c.parameters;
      info.warm_up = o.warmup;  // rounds, after one uncounted call per case
      info.rounds = o.reps;
      for (std::size_t i = 0; i < rows.size(); ++i)
        if (rows[i]["seconds"].is_array()) info.per_repetition_times.push_back(fmt::format("/rows/{}/seconds", i));
      doc["metadata"] = plexus::bench::run_metadata(info);

      // The tables.
      std::printf("plexus-symmcube-bench: %d ranks", size);
      if (mesh.is_object() && mesh["mesh_side"].is_number()) {
        const int p = mesh["mesh_side"].get<int>();
        std::printf(", mesh %dx%dx%d", p, p, p);
      }
      std::printf("; D %d x %d, %d x %d blocks of %d, occupancy %.3g; kernel %s; MinPartBytes %lld; %d reps + %d "
                  "warm-up rounds; load %.2f -> %.2f\n",
                  o.n, o.n, nb, nb, o.block, d_occupancy, o.kernel.c_str(), static_cast<long long>(o.min_part_bytes),
                  o.reps, o.warmup, load_before, load_after);
      if (model.known)
        std::printf("alpha-beta (ping-pong ranks 0-%d, relative fit): alpha = %.3g us, 1/beta = %.0f MB/s\n", size / 2,
                    model.alpha * 1e6, 1e-6 / model.beta);
      else
        std::printf("alpha-beta: not measured (--no-pingpong or one rank): no model times\n");
      if (!model_any)
        std::printf("model times: '-' (the reports carry no model_latency_terms / model_bandwidth_bytes%s)\n",
                    model.known ? "" : ", or no alpha-beta");
      auto print_table = [&](const std::string& table, const std::string& title, const char* ratio_key,
                             const char* ratio_name) {
        std::printf("\n%s\n", title.c_str());
        std::printf("%-22s %10s %10s %9s %9s %11s %11s %10s %6s\n", "case", "median ms", "min ms", "GFLOP/s",
                    ratio_name, "MB sent/rk", "MB recv/rk", "model ms", "check");
        for (const auto& row : rows) {
          bool in = false;
          for (const auto& t : row["tables"]) in = in || t == table;
          if (!in) continue;
          if (!row["available"].get<bool>()) {
            std::printf("%-22s not available: %s\n", row["label"].get<std::string>().c_str(),
                        row["unavailable_reason"].get<std::string>().c_str());
            continue;
          }
          std::printf("%-22s %10s %10s %9s %9s %11s %11s %10s %6s\n", row["label"].get<std::string>().c_str(),
                      cell(row["seconds_median"], 1e3).c_str(), cell(row["seconds_min"], 1e3).c_str(),
                      cell(row["gflops_at_median"]).c_str(), cell(row[ratio_key]).c_str(),
                      cell(row["bytes_sent_per_rank_max"], 1e-6).c_str(),
                      cell(row["bytes_received_per_rank_max"], 1e-6).c_str(), cell(row["model_seconds"], 1e3).c_str(),
                      row["validated"] == true ? "ok" : "FAIL");
        }
      };
      print_table("I", "Table I: SymmSquareCube variants (time per call, slowest rank; speedup = GFLOP/s over "
                       "baseline's)",
                  "speedup_vs_baseline", "vs base");
      print_table("II", "Table II: Variant optimized, NDup = " + join(o.ndups) +
                            " (speedup = GFLOP/s over NDup=1's)",
                  "speedup_vs_ndup1", "vs NDup1");
      if (o.replication > 0) {
        if (replication_available)
          print_table("2.5D", "2.5D (Algorithm 6), Replication = " + std::to_string(o.replication) +
                                  " (speedup = GFLOP/s over optimized NDup=1's)",
                      "speedup_vs_ndup1", "vs NDup1");
        else
          std::printf("\n2.5D (Replication = %d): not available: %s\n", o.replication, replication_reason.c_str());
      }
      std::printf("\nno emulated network (issue 14): every message is a shared-memory copy on this machine\n");
      plexus::bench::write_json(doc, o.json, 1);
      if (o.check &&
          plexus::bench::check_verdict(plexus::bench::check_metadata_file(o.json, "plexus-symmcube-bench", size),
                                       o.json, "plexus-symmcube-bench") != 0)
        code = 1;
      if (!all_valid) std::fprintf(stderr, "plexus-symmcube-bench: a result check failed (see \"validated\")\n");
    }
    MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
    code = all_valid && code == 0 ? 0 : 1;
  } catch (const plexus::InputError& e) {
    // Bad input is the same on every rank: every rank ends here, rank 0 says why.
    if (rank == 0) std::fprintf(stderr, "plexus-symmcube-bench: error: %s\n", reason_of(e).c_str());
    MPI_Finalize();
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plexus-symmcube-bench: error on rank %d: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return code;
}
