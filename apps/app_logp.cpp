// `plexus logp`: measures the LogP/LogGP parameters on the job's ranks (plexus/logp.hpp), prints
// them, and checks the LogGP models of MPI_Allreduce and MPI_Alltoall against the same collectives
// timed on the same ranks (docs/logp.md).
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "app.hpp"
#include "app_cli.hpp"
#include "plexus/error.hpp"
#include "plexus/log.hpp"
#include "plexus/logp.hpp"
#include "plexus/mpi.hpp"
#include "plexus/output.hpp"

namespace plexus::app {

const char* const kLogpHelp =
    "Usage: plexus logp [--json FILE] [--repetitions N] [--max-bytes B]\n"
    "\n"
    "Measures the LogP/LogGP parameters between ranks 0 and 1 of the job, as Kielmann et al.'s logp-mpi\n"
    "does (plain MPI_Send/MPI_Recv; medians over N repetitions after one warm-up), for messages of\n"
    "1, 4, 16, ... bytes up to B:\n"
    "  L    latency: RTT(1)/2 - o_s - o_r, from a 1-byte ping-pong\n"
    "  o_s  send overhead: the time of MPI_Send of 1 byte on an idle network\n"
    "  o_r  receive overhead: the time of MPI_Recv of 1 byte that has already arrived\n"
    "  g    gap: the interval between back-to-back 1-byte sends (trains of n and 2n messages)\n"
    "  G    gap per byte: the slope of the gap against the message size over the largest sizes\n"
    "In LogGP a k-byte message costs o_s + (k-1) G + L + o_r, and a rank starts messages g apart.\n"
    "\n"
    "Then MPI_Allreduce and MPI_Alltoall are timed on all ranks for a few sizes (10 calls back to back\n"
    "per repetition, its slowest rank; the median) next to the models' predictions, which the cg_bands\n"
    "solver uses:\n"
    "  t_red(P, k) = R(P) (o_s + (k-1) G + L + o_r), R(P) = floor(log2 P) (+2 if P is not a power of 2)\n"
    "  t_a2a(P, k) = (P-2) max(g + (k-1) G, o_s + o_r) + o_s + (k-1) G + L + o_r\n"
    "(recursive doubling; linear or pairwise exchange: see docs/logp.md). Needs 2 ranks or more.\n"
    "Ranks sharing cores (oversubscribed) make o and g noisy: measure with one rank per core.\n"
    "\n"
    "Options:\n"
    "  --json FILE        write the parameters, the per-size samples and the collectives table as JSON\n"
    "                     (a file cg_bands and logp::read_file read; \"-\": standard output, the text\n"
    "                     then goes to standard error)\n"
    "  --repetitions N    timed repetitions per size and quantity (default 20)\n"
    "  --max-bytes B      the largest message, 1K to 1G; suffixes K, M, G (default 1M)\n"
    "  -h, --help         this text\n"
    "\n"
    "Examples:\n"
    "  mpiexec -n 2 plexus logp\n"
    "  mpiexec -n 8 plexus logp --json logp.json --repetitions 50 --max-bytes 4M\n";

namespace {

// The sizes of the collectives table: dot products and small vectors for MPI_Allreduce (recursive
// doubling in Open MPI 4.1 up to some KiB), FFT-plane blocks per pair for MPI_Alltoall.
const std::vector<std::int64_t> kAllreduceBytes = {8, 64, 512, 2048};
const std::vector<std::int64_t> kAlltoallBytes = {8, 512, 8192, 65536};

struct CollectiveRow {
  std::string operation;
  std::int64_t bytes = 0;  ///< Allreduce: the vector; Alltoall: per pair of ranks
  double measured = 0;     ///< seconds, median over repetitions of the slowest rank
  double model = 0;        ///< seconds
};

/// Prints "logp: ..." on rank 0 when more than 2 s have passed since the last line (or the start):
/// a short run stays quiet.
class ProgressLine {
 public:
  explicit ProgressLine(int rank) : rank_(rank), last_(mpi::now()) {}
  void tell(const std::string& text) {
    if (rank_ != 0 || mpi::now() - last_ < 2.0) return;
    std::fprintf(stderr, "logp: %s\n", text.c_str());
    std::fflush(stderr);
    last_ = mpi::now();
  }

 private:
  int rank_;
  double last_;
};

/// Times `op` (a collective): one warm-up, then `reps` repetitions of kBatch back-to-back calls
/// after a barrier, each repetition's mean per call on its slowest rank (the batch spreads the
/// barrier's uneven exit over many calls); the median of those. Collective over MPI_COMM_WORLD.
constexpr int kBatch = 10;
template <class Op>
double time_collective(int reps, Op&& op) {
  std::vector<double> t;
  for (int r = -1; r < reps; ++r) {
    mpi::check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    const double t0 = mpi::now();
    for (int b = 0; b < kBatch; ++b) op();
    if (r >= 0) t.push_back((mpi::now() - t0) / kBatch);
  }
  mpi::check(MPI_Allreduce(MPI_IN_PLACE, t.data(), reps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  std::sort(t.begin(), t.end());
  return reps % 2 == 1 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
}

std::vector<CollectiveRow> measure_collectives(const logp::Parameters& p, int size, int reps, ProgressLine& line) {
  std::vector<CollectiveRow> rows;
  for (std::int64_t k : kAllreduceBytes) {
    const int n = static_cast<int>(k / 8);
    std::vector<double> in(static_cast<std::size_t>(n), 1.0), out(in.size());
    CollectiveRow row{"MPI_Allreduce", k, 0, logp::allreduce_seconds(p, size, double(k))};
    row.measured = time_collective(reps, [&] {
      mpi::check(MPI_Allreduce(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
    });
    rows.push_back(row);
    line.tell("timed MPI_Allreduce of " + format_bytes(double(k)));
  }
  for (std::int64_t k : kAlltoallBytes) {
    const std::size_t total = static_cast<std::size_t>(k) * static_cast<std::size_t>(size);
    std::vector<char> in(total, 1), out(total);
    CollectiveRow row{"MPI_Alltoall", k, 0, logp::alltoall_seconds(p, size, double(k))};
    row.measured = time_collective(reps, [&] {
      mpi::check(MPI_Alltoall(in.data(), static_cast<int>(k), MPI_BYTE, out.data(), static_cast<int>(k), MPI_BYTE,
                              MPI_COMM_WORLD),
                 "MPI_Alltoall");
    });
    rows.push_back(row);
    line.tell("timed MPI_Alltoall of " + format_bytes(double(k)) + " per pair");
  }
  return rows;
}

std::string us(double seconds) { return fmt::format("{:.3f}", seconds * 1e6); }

std::string report_text(const logp::Parameters& p, const std::vector<CollectiveRow>& rows, int reps) {
  std::ostringstream os;
  os << "LogP/LogGP parameters between ranks 0 and 1 of " << p.ranks << " (plain MPI_Send/MPI_Recv, median of " << reps
     << " repetitions after a warm-up):\n"
     << "  L    " << fmt::format("{:10.3f}", p.L * 1e6) << " us     latency: RTT(1)/2 - o_s - o_r\n"
     << "  o_s  " << fmt::format("{:10.3f}", p.o_s * 1e6) << " us     send overhead (MPI_Send of 1 byte)\n"
     << "  o_r  " << fmt::format("{:10.3f}", p.o_r * 1e6)
     << " us     receive overhead (MPI_Recv of 1 byte that has arrived)\n"
     << "  g    " << fmt::format("{:10.3f}", p.g * 1e6) << " us     gap between back-to-back 1-byte messages\n"
     << "  G    " << fmt::format("{:10.4f}", p.G * 1e9) << " ns/B   gap per byte ("
     << format_bytes(p.G > 0 ? 1 / p.G : 0) << "/s)\n"
     << "A k-byte message costs o_s + (k-1) G + L + o_r; a rank starts messages at least g apart.\n";
  for (const auto& n : p.notes) os << "note: " << n << "\n";

  os << "\nper message size (us; RTT: ping-pong; model RTT = 2 (o_s + (k-1) G + L + o_r)):\n";
  std::vector<std::vector<std::string>> cells;
  for (const auto& s : p.samples)
    cells.push_back(
        {format_bytes(s.bytes), "", us(s.rtt), us(logp::pingpong_seconds(p, s.bytes)), us(s.o_s), us(s.o_r), us(s.g)});
  os << format_table({"bytes", "", "RTT", "model RTT", "o_s", "o_r", "g"}, cells, true);

  os << "\ncollectives on " << p.ranks << " ranks against the LogGP models (us per call; measured: median of " << reps
     << " repetitions of " << kBatch << " calls, each its slowest rank):\n";
  cells.clear();
  for (const auto& r : rows)
    cells.push_back({r.operation, format_bytes(double(r.bytes)) + (r.operation == "MPI_Alltoall" ? " per pair" : ""),
                     us(r.measured), us(r.model),
                     r.measured > 0 ? fmt::format("{:.2f}", r.model / r.measured) : std::string("-")});
  os << format_table({"operation", "bytes", "measured", "model", "model/measured"}, cells, true);
  os << "Allreduce (Eq. 22): recursive doubling, " << logp::allreduce_rounds(p.ranks) << " message round(s) on "
     << p.ranks << " ranks; Alltoall (Eq. 23): " << p.ranks - 1
     << " message(s) each way per rank. docs/logp.md tells where the models hold.\n";
  return os.str();
}

std::string json_text(const logp::Parameters& p, const std::vector<CollectiveRow>& rows, int reps) {
  nlohmann::json j = logp::to_json(p);
  j["repetitions"] = reps;
  nlohmann::json table = nlohmann::json::array();
  for (const auto& r : rows)
    table.push_back({{"operation", r.operation},
                     {"bytes", r.bytes},
                     {"ranks", p.ranks},
                     {"measured_seconds", r.measured},
                     {"model_seconds", r.model}});
  j["collectives"] = table;
  RunMetadata m;
  m.command = "logp";
  m.ranks = p.ranks;
  m.threads_per_rank = 1;  // the measurements run on the main thread only
  j["metadata"] = metadata_json(m);
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace

int command_logp(const Options& o, int rank, int size, const Phases& phases) {
  logp::MeasureOptions options;
  if (o.repetitions > 0) options.repetitions = o.repetitions;
  if (o.max_bytes > 0) options.max_bytes = o.max_bytes;
  int exit_code = 0;
  const bool ok = phases.setup(
      [&] {
        phases.agreed([&] {
          if (rank == 0 && !o.json.empty()) output::check(o.json, "--json");
        });
        if (size < 2)
          throw UsageError("logp",
                           "'plexus logp' measures messages between two ranks: run it on 2 ranks or more (e.g. "
                           "mpiexec -n 2 plexus logp)");
      },
      exit_code);
  if (!ok) return exit_code;

  logp::Parameters p;
  std::vector<CollectiveRow> rows;
  ProgressLine line(rank);
  const auto sizes = logp::message_sizes(options.max_bytes);
  options.on_progress = [&](int done, int total) {
    line.tell("measured " + std::to_string(done) + "/" + std::to_string(total) + " message sizes (up to " +
              format_bytes(double(sizes[static_cast<std::size_t>(done - 1)])) + ")");
  };
  phases.run([&] {
    p = logp::measure(MPI_COMM_WORLD, options);
    rows = measure_collectives(p, size, options.repetitions, line);
  });
  if (rank != 0) return 0;
  // With --json - the JSON alone goes to standard output.
  (o.json == "-" ? std::cerr : std::cout) << report_text(p, rows, options.repetitions) << std::flush;
  if (!o.json.empty()) {
    output::write_text(o.json, json_text(p, rows, options.repetitions), "--json");
    if (o.json != "-") log().info("wrote JSON to '{}'", o.json);
  }
  return 0;
}

}  // namespace plexus::app
