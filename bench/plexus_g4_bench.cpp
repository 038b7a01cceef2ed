// plexus-g4-bench: the g4 accumulator (PASC'21) timed on the ranks it runs on, in every
// configuration the job allows:
//   replicated                      every rank holds all of G4 (no circulation)
//   distributed, core default       circulate = MPI_Allgatherv over all ranks (strategy `cannon`)
//   distributed, ring S             DCA++'s pipelined ring with sub-rings of S, for every S dividing
//                                   the rank count (and --threads k rings per rank)
// For each: seconds per measurement (slowest rank), the final reduction, G4 storage and peak
// tracked memory per rank (memory tracker, max over ranks), peak RSS per rank (getrusage: the
// process's peak so far, so run one configuration per job to read it per configuration), bytes
// sent per rank per measurement, and |G4| (all rows must agree). Writes JSON; asserts nothing.
//
//   mpiexec -n P plexus-g4-bench [--lx 4] [--ly 4] [--nw 8] [--measurements 4] [--threads 1]
//        [--configs replicated,default,ring] [--subrings 1,2,...] [--json FILE] [--quick]
#include <mpi.h>
#include <sys/resource.h>

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
#include "plexus/comm_strategy.hpp"
#include "plexus/context.hpp"
#include "plexus/kernel.hpp"
#include "plexus/error.hpp"
#include "plexus/memory.hpp"
#include "plexus/parameters.hpp"
#include "plexus/registry.hpp"
#include "plexus/solver.hpp"

namespace {

using json = plexus::bench::json;
using plexus::bench::number;

struct Options {
  int lx = 4, ly = 4, nw = 8, measurements = 4, threads = 1;
  std::vector<std::string> configs = {"replicated", "default", "ring"};
  std::vector<int> subrings;  // empty: every divisor of the rank count
  std::string json;
  bool quick = false, check = false;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

int to_int(const std::string& option, const std::string& v) {
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || x < 0 || x > 1 << 30)
    throw plexus::InputError(option, option + " needs a non-negative integer, got '" + v + "'");
  return static_cast<int>(x);
}

constexpr const char* kUsage =
    "Usage: mpiexec -n P plexus-g4-bench [--lx X] [--ly Y] [--nw W] [--measurements M] [--threads k]\n"
    "                      [--configs replicated,default,ring] [--subrings S1,S2,...] [--json FILE]\n"
    "                      [--quick] [--check]\n"
    "  --check  re-read the JSON file and check it and its metadata (needs --json)\n"
    "See bench/README.md.\n";

/// The options; `help` is set (and nothing else read) for -h or --help.
Options parse(int argc, char** argv, bool& help) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw plexus::InputError(a, a + " needs a value");
      return argv[++i];
    };
    if (a == "--lx")
      o.lx = to_int(a, value());
    else if (a == "--ly")
      o.ly = to_int(a, value());
    else if (a == "--nw")
      o.nw = to_int(a, value());
    else if (a == "--measurements")
      o.measurements = to_int(a, value());
    else if (a == "--threads")
      o.threads = to_int(a, value());
    else if (a == "--configs")
      o.configs = split(value());
    else if (a == "--subrings") {
      o.subrings.clear();
      for (const auto& s : split(value())) o.subrings.push_back(to_int(a, s));
    } else if (a == "--json")
      o.json = value();
    else if (a == "--check")
      o.check = true;
    else if (a == "--quick") {
      o.quick = true;
      o.lx = 2;
      o.ly = 2;
      o.nw = 3;
      o.measurements = 2;
    } else if (a == "-h" || a == "--help") {
      help = true;
      return o;
    } else {
      throw plexus::InputError(a, "unknown option '" + a + "' (see --help)");
    }
  }
  for (const auto& c : o.configs)
    if (c != "replicated" && c != "default" && c != "ring")
      throw plexus::InputError("--configs", "unknown configuration '" + c + "' (replicated, default, ring)");
  if (o.check && (o.json.empty() || o.json == "-"))
    throw plexus::InputError("--check", "--check needs --json FILE (a file it can read back)");
  if (o.lx < 1 || o.ly < 1 || o.nw < 1 || o.measurements < 1 || o.threads < 1)
    throw plexus::InputError("options", "sizes, measurements and threads must be at least 1");
  return o;
}

struct Row {
  std::string label, mode, strategy;
  int subring = 0, threads = 1;
  double seconds_per_measurement = 0, accumulate_seconds = 0, reduce_seconds = 0;
  double storage = 0, peak = 0, peak_buffer = 0, rss = 0, sent_per_measurement = 0, gflops = 0;
  double l1 = 0, l2 = 0;
  json strategy_parameters, solver_parameters;  // the lists as validated (defaults filled in)
};

double peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) * 1024.0;
}

Row run_one(const Options& o, const std::string& config, int subring, MPI_Comm comm) {
  auto& reg = plexus::Registry::global();
  Row row;
  row.mode = config == "replicated" ? "replicated" : "distributed";
  row.strategy = config == "ring" ? "ring" : "cannon";
  plexus::ParameterList sp(row.strategy);
  if (config == "ring") {
    sp.set("SubRingSize", subring);
    sp.set("Threads", o.threads);
  }
  auto strategy = reg.make_comm(row.strategy, sp, "Communication/" + row.strategy);
  plexus::ParameterList g("g4");
  g.set("Lx", o.lx);
  g.set("Ly", o.ly);
  g.set("Nw", o.nw);
  g.set("Measurements", o.measurements);
  g.set("Mode", row.mode);
  g.set("ResultMatrix", false);
  auto solver = reg.make_solver("g4", g, "g4");
  row.strategy_parameters = plexus::bench::parameters_json(sp);
  row.solver_parameters = plexus::bench::parameters_json(g);
  plexus::Context context(comm, std::move(strategy), std::make_shared<plexus::ReferenceKernel>());
  plexus::SolverContext ctx;
  ctx.context = &context;
  ctx.quiet = true;
  MPI_Barrier(comm);
  plexus::SolverResult r = solver->run(ctx);
  r.result.reset();
  context.release();
  const auto& f = r.figures;
  row.threads = static_cast<int>(f.at("threads"));
  row.subring = static_cast<int>(f.at("sub_ring_size"));
  row.label = config == "replicated" ? "replicated"
              : config == "default"  ? "distributed, core default circulate (S=" + std::to_string(row.subring) + ")"
                                     : "distributed, ring S=" + std::to_string(row.subring) +
                                          (row.threads > 1 ? " k=" + std::to_string(row.threads) : "");
  // Per measurement of one thread: the time of a step divided by the threads circulating in it.
  row.accumulate_seconds = f.at("accumulate_seconds");
  row.seconds_per_measurement = row.accumulate_seconds / (double(o.measurements) * row.threads);
  row.reduce_seconds = f.at("reduce_seconds");
  row.storage = f.at("storage_bytes_per_rank");
  row.peak = f.at("peak_memory_per_rank");
  row.peak_buffer = f.at("peak_buffer_per_rank");
  double sent = 0, flops = 0;
  for (const auto& rep : r.reports) {
    sent += static_cast<double>(rep.bytes_sent());
    flops += rep.flops;
  }
  double local[2] = {sent / double(r.reports.size()), peak_rss_bytes()}, global[2] = {0, 0};
  MPI_Allreduce(local, global, 2, MPI_DOUBLE, MPI_MAX, comm);
  MPI_Allreduce(MPI_IN_PLACE, &flops, 1, MPI_DOUBLE, MPI_SUM, comm);
  row.sent_per_measurement = global[0];
  row.rss = global[1];
  row.gflops = flops / row.accumulate_seconds * 1e-9;
  row.l1 = f.at("g4_l1_norm");
  row.l2 = f.at("g4_l2_norm");
  return row;
}

std::string mib(double b) { return fmt::format("{:.2f}", b / (1024.0 * 1024.0)); }

/// A count of bytes as a JSON integer (null when not finite).
json bytes(double v) { return std::isfinite(v) ? json(std::llround(v)) : json(nullptr); }

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
  if (const int rc = plexus::bench::start("plexus-g4-bench", kUsage, [&](bool& help) {
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
    const bool have_ring = reg.find(plexus::ComponentKind::Comm, "ring") != nullptr;
    std::vector<int> subrings = o.subrings;
    if (subrings.empty())
      for (int s = 1; s <= size; ++s)
        if (size % s == 0) subrings.push_back(s);
    std::vector<Row> rows;
    for (const auto& c : o.configs) {
      if (c == "ring") {
        if (!have_ring) {
          if (rank == 0) std::fprintf(stderr, "plexus-g4-bench: no 'ring' strategy loaded; ring rows left out\n");
          continue;
        }
        for (int s : subrings) {
          if (s < 1 || size % s != 0) {
            if (rank == 0) std::fprintf(stderr, "plexus-g4-bench: S=%d does not divide %d ranks; left out\n", s, size);
            continue;
          }
          rows.push_back(run_one(o, c, s, MPI_COMM_WORLD));
        }
      } else {
        rows.push_back(run_one(o, c, 0, MPI_COMM_WORLD));
      }
    }
    if (rank == 0) {
      const long long N = static_cast<long long>(o.lx) * o.ly * o.nw;
      const double g4_bytes = 16.0 * double(N) * double(N) * double(N);
      std::printf(
          "plexus-g4-bench: %d rank%s, N = %lld (%dx%d x %d), G4 %s MiB, %d measurement%s per rank and thread\n\n",
          size, size == 1 ? "" : "s", N, o.lx, o.ly, o.nw, mib(g4_bytes).c_str(), o.measurements,
          o.measurements == 1 ? "" : "s");
      std::printf("%-44s %12s %10s %9s %12s %12s %12s %12s %10s\n", "configuration", "s/measure", "reduce s", "GFLOP/s",
                  "G4 MiB/rank", "peak MiB", "RSS MiB", "sent/meas", "|G4|_2 rel");
      for (const auto& r : rows)
        std::printf("%-44s %12.5g %10.4g %9.3f %12s %12s %12s %12s %10.2e\n", r.label.c_str(),
                    r.seconds_per_measurement, r.reduce_seconds, r.gflops, mib(r.storage).c_str(), mib(r.peak).c_str(),
                    mib(r.rss).c_str(), mib(r.sent_per_measurement).c_str(),
                    rows.front().l2 > 0 ? std::fabs(r.l2 - rows.front().l2) / rows.front().l2 : 0.0);
      json doc;
      doc["benchmark"] = "plexus-g4-bench";
      doc["ranks"] = size;
      doc["lx"] = o.lx;
      doc["ly"] = o.ly;
      doc["nw"] = o.nw;
      doc["n"] = N;
      doc["g4_bytes"] = bytes(g4_bytes);
      doc["measurements_per_rank_and_thread"] = o.measurements;
      doc["rows"] = json::array();
      json lists = json::object();
      for (const Row& r : rows) {
        doc["rows"].push_back({{"label", r.label},
                               {"mode", r.mode},
                               {"strategy", r.strategy},
                               {"sub_ring_size", r.subring},
                               {"threads", r.threads},
                               {"seconds_per_measurement", number(r.seconds_per_measurement)},
                               {"accumulate_seconds", number(r.accumulate_seconds)},
                               {"reduce_seconds", number(r.reduce_seconds)},
                               {"gflops", number(r.gflops)},
                               {"storage_bytes_per_rank", bytes(r.storage)},
                               {"peak_memory_bytes_per_rank", bytes(r.peak)},
                               {"peak_buffer_bytes_per_rank", bytes(r.peak_buffer)},
                               {"peak_rss_bytes_per_rank", bytes(r.rss)},
                               {"bytes_sent_per_rank_per_measurement", bytes(r.sent_per_measurement)},
                               {"g4_l1_norm", number(r.l1)},
                               {"g4_l2_norm", number(r.l2)}});
        lists["Communication/" + r.strategy + " (" + r.label + ")"] = r.strategy_parameters;
        lists["g4 (" + r.label + ")"] = r.solver_parameters;
      }
      plexus::bench::RunInfo info;
      info.benchmark = "plexus-g4-bench";
      info.command_line = plexus::bench::command_line(argc, argv);
      info.ranks = size;
      // No grid: the ranks form one ring (or sub-rings: sub_ring_size in the rows).
      info.threads_set = o.threads;  // rings per rank (the ring strategy's Threads)
      info.options = {{"lx", o.lx},
                      {"ly", o.ly},
                      {"nw", o.nw},
                      {"measurements", o.measurements},
                      {"threads", o.threads},
                      {"configs", o.configs},
                      {"subrings", subrings},  // as run: every divisor of the rank count when not given
                      {"json", o.json},
                      {"quick", o.quick},
                      {"check", o.check}};
      info.parameter_lists = lists;
      info.warm_up = 0;
      info.rounds = nullptr;  // every configuration runs once (its measurements timed together)
      doc["metadata"] = plexus::bench::run_metadata(info);
      plexus::bench::write_json(doc, o.json);
      if (o.check && plexus::bench::check_verdict(plexus::bench::check_metadata_file(o.json, "plexus-g4-bench", size),
                                                  o.json, "plexus-g4-bench") != 0)
        code = 1;
    }
    MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plexus-g4-bench: error on rank %d: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return code;
}
