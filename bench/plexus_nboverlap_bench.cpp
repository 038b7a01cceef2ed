// plexus-nboverlap-bench: Huang & Chow's collective micro-benchmark (IPDPS'19, section V-B,
// Figures 4 and 5) on the ranks of one job, with "nodes" emulated by groups of consecutive ranks.
//
// The job's P ranks are cut into N emulated nodes of Q = P/N consecutive ranks (node = rank / Q,
// local rank = rank % Q). For every message size n (bytes) and operation (MPI_Bcast, MPI_Reduce
// with MPI_SUM on doubles, root = node 0) three cases run, interleaved round by round:
//   blocking   the leaders (local rank 0 of every node, N ranks, "one process per node") run one
//              blocking MPI_Bcast / MPI_Reduce of n bytes on their communicator;
//   nboverlap  the same leaders, the same n bytes, through the registry's "nboverlap"
//              collectives component (NDup parts on duplicated communicators, posted at once);
//   ppn        "multiple PPN overlap" (the paper's Figure 4): Q column communicators (the ranks
//              of local rank j on every node, N ranks each) run a blocking collective at the same
//              time, each on its own n/Q bytes: the same ranks per collective (N) and the same
//              volume between nodes as the blocking case;
//   ndup1      a control, not in the paper's figure: the leaders, n bytes, the same component with
//              NDup = 1 (one MPI_Ibcast / MPI_Ireduce, then MPI_Waitall): what a single
//              nonblocking call costs next to the blocking one, without any cutting.
// Ranks that take no part in a case (the non-leaders in the first two) wait in MPI_Ibarrier,
// polled with MPI_Test and usleep (as the paper's inactive processes do), so they leave the cores
// to the others. Bandwidth as the paper: 2 (p-1) n / p / time, p = N (ranks of one collective).
//
// The alpha-beta model: a ping-pong between the leaders of nodes 0 and 1, a least-squares fit of
// the one-way time t = alpha + beta n, and the model times T_Bcast = alpha (log2 p + p - 1) +
// 2 beta (p-1) n/p, T_Reduce = 2 alpha log2 p + 2 beta (p-1) n/p and T_P2P = alpha + beta n next
// to the measured ones. JSON out; speed is never asserted. See --help and bench/README.md.
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
#include <utility>
#include <vector>

#include "alpha_beta.hpp"
#include "bench_util.hpp"
#include "plexus/collectives.hpp"
#include "plexus/comm_pool.hpp"
#include "plexus/error.hpp"
#include "plexus/mpi.hpp"
#include "plexus/parameters.hpp"
#include "plexus/registry.hpp"

namespace {

using json = nlohmann::json;
using plexus::bench::doubling;
using plexus::bench::human;
using plexus::bench::loadavg1;
using plexus::bench::machine_info;
using plexus::bench::number;
using plexus::bench::sleepy_barrier;
using plexus::bench::split;
using plexus::bench::Stats;
using plexus::bench::stats_of;
using plexus::bench::to_int;
using plexus::bench::UsageError;

const char* const kUsage =
    R"(Usage: mpiexec -n P plexus-nboverlap-bench [options]

Huang & Chow's collective micro-benchmark (IPDPS'19, Figure 5): the bandwidth of Bcast and
Reduce against message size, in three cases, on "nodes" emulated by groups of consecutive ranks.

The P ranks are cut into N nodes of Q = P/N consecutive ranks (--nodes N; P must be a multiple
of N, N >= 2). Per message size n and operation (Bcast; Reduce = MPI_SUM of doubles; root = the
first rank of node 0):
  blocking   one rank per node (local rank 0, N ranks) runs one blocking MPI_Bcast/MPI_Reduce
             of n bytes;
  nboverlap  the same ranks and bytes through the "nboverlap" collectives component (plugin
             comm_nboverlap): the data cut into up to NDup parts on duplicated communicators,
             posted at once, then waited for;
  ppn        multiple processes per node: Q communicators (the ranks with local rank j on every
             node, N each) each run a blocking collective on n/Q bytes at the same time (the
             paper's 4-PPN case: same ranks per collective, same volume between nodes);
  ndup1      a control (not in the paper's Figure 5): the leaders, n bytes, the component with
             NDup = 1, i.e. one MPI_Ibcast/MPI_Ireduce and its wait, nothing cut.
Ranks without a part in a case wait in MPI_Ibarrier polled with MPI_Test and usleep.
Time of one repetition: after a barrier of the case's ranks, the slowest of them. Bandwidth:
2 (p-1) n / p / time with p = N. The cases (and both operations) run interleaved: in each round
every (operation, case) runs once, the order rotated from round to round; --warmup rounds are
not counted. Reported: min, median and mean time, the bandwidth at each, and for nboverlap the
number of parts the component used (from its message counts) next to the part rule.

Alpha-beta: ping-pong between the leaders of nodes 0 and 1 over --pp-min..--pp-max bytes
(doubling), one-way time = round trip / 2 (median over --reps). Two least-squares fits of
t = alpha + beta n: ordinary (absolute residuals) and relative (residuals divided by t, so small
messages count); the model times use the relative fit:
  T_Bcast = alpha (log2 p + p - 1) + 2 beta (p-1) n/p,  T_Reduce = 2 alpha log2 p + 2 beta (p-1) n/p,
  T_P2P = alpha + beta n.

Options (sizes take a K, M or G suffix, powers of 1024):
  --nodes N            emulated nodes (default 2)
  --ndup K             NDup of the nboverlap component (default 4, 1..64)
  --min-part-bytes B   MinPartBytes of the component (default 16K; 0: always NDup parts)
  --min-bytes B        smallest message (default 1K); a multiple of 8
  --max-bytes B        largest message (default 16M); sizes double from --min-bytes
  --ops LIST           bcast,reduce (default both)
  --cases LIST         blocking,nboverlap,ppn,ndup1 (default all four)
  --reps R             counted repetitions per size, case and operation (default 20)
  --warmup W           uncounted rounds before them (default 3)
  --pp-min B, --pp-max B   ping-pong sizes (default 8 .. 16M); --no-pingpong skips it
  --poll-us U          sleep between two MPI_Test of a waiting rank (default 1000)
  --json FILE          write the JSON there (default: stdout, after the table)
  --check              re-read the JSON file and check its metadata (needs --json)
  --quick              tiny run for tests: 1K..64K, 3 repetitions, 1 warm-up round,
                       ping-pong 8..64K (options after --quick override it)
  -h, --help           this text
Progress lines go to stderr. See bench/README.md.
)";

struct Options {
  int nodes = 2;
  int ndup = 4;
  std::int64_t min_part_bytes = 16 * 1024;
  std::int64_t min_bytes = 1024, max_bytes = 16 << 20;
  std::vector<std::string> ops = {"bcast", "reduce"};
  std::vector<std::string> cases = {"blocking", "nboverlap", "ppn", "ndup1"};
  int reps = 20, warmup = 3;
  bool pingpong = true;
  std::int64_t pp_min = 8, pp_max = 16 << 20;
  int poll_us = 1000;
  bool quick = false, check = false;
  std::string json;
};

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
    } else if (a == "--nodes") {
      o.nodes = static_cast<int>(to_int(a, value(), 2, 1 << 20));
    } else if (a == "--ndup") {
      o.ndup = static_cast<int>(to_int(a, value(), 1, 64));
    } else if (a == "--min-part-bytes") {
      o.min_part_bytes = to_int(a, value(), 0, INT_MAX, true);
    } else if (a == "--min-bytes") {
      o.min_bytes = to_int(a, value(), 8, std::int64_t{1} << 34, true);
    } else if (a == "--max-bytes") {
      o.max_bytes = to_int(a, value(), 8, std::int64_t{1} << 34, true);
    } else if (a == "--ops") {
      o.ops = split(value());
    } else if (a == "--cases") {
      o.cases = split(value());
    } else if (a == "--reps") {
      o.reps = static_cast<int>(to_int(a, value(), 1, 1000000));
    } else if (a == "--warmup") {
      o.warmup = static_cast<int>(to_int(a, value(), 0, 1000000));
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
      o.min_bytes = 1024;
      o.max_bytes = 64 * 1024;
      o.reps = 3;
      o.warmup = 1;
      o.pp_min = 8;
      o.pp_max = 64 * 1024;
    } else {
      throw UsageError("unknown option '" + a + "' (see --help)");
    }
  }
  if (help) return o;
  for (const auto& op : o.ops)
    if (op != "bcast" && op != "reduce") throw UsageError("--ops: unknown operation '" + op + "' (bcast, reduce)");
  for (const auto& c : o.cases)
    if (c != "blocking" && c != "nboverlap" && c != "ppn" && c != "ndup1")
      throw UsageError("--cases: unknown case '" + c + "' (blocking, nboverlap, ppn, ndup1)");
  if (o.ops.empty() || o.cases.empty()) throw UsageError("--ops and --cases need at least one entry");
  if (o.check && (o.json.empty() || o.json == "-"))
    throw UsageError("--check needs --json FILE (a file it can read back)");
  if (o.min_bytes % 8 != 0 || o.max_bytes % 8 != 0)
    throw UsageError("--min-bytes and --max-bytes must be multiples of 8 (messages of doubles)");
  if (o.min_bytes > o.max_bytes) throw UsageError("--min-bytes is larger than --max-bytes");
  if (o.pp_min > o.pp_max) throw UsageError("--pp-min is larger than --pp-max");
  if (o.max_bytes / 8 > INT_MAX) throw UsageError("--max-bytes exceeds one MPI call's count of doubles");
  return o;
}

// The alpha-beta model (alpha_beta.hpp) and the collective times it gives.
struct Model : plexus::bench::AlphaBeta {
  double bcast(int p, double n) const {
    return alpha * (std::log2(double(p)) + p - 1) + 2 * beta * (p - 1) * n / p;
  }
  double reduce(int p, double n) const { return 2 * alpha * std::log2(double(p)) + 2 * beta * (p - 1) * n / p; }
};

// The communicators of the emulated nodes.
struct Layout {
  int rank = 0, size = 1, nodes = 2, ppn = 1, node = 0, local = 0;
  MPI_Comm leaders = MPI_COMM_NULL;  // local rank 0 of every node (MPI_COMM_NULL elsewhere)
  MPI_Comm column = MPI_COMM_NULL;   // the ranks with my local rank, one per node
  bool leader() const { return local == 0; }
  void make(int nodes_) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    nodes = nodes_;
    ppn = size / nodes;
    node = rank / ppn;
    local = rank % ppn;
    plexus::mpi::check(MPI_Comm_split(MPI_COMM_WORLD, local == 0 ? 0 : MPI_UNDEFINED, node, &leaders),
                       "MPI_Comm_split");
    plexus::mpi::check(MPI_Comm_split(MPI_COMM_WORLD, local, node, &column), "MPI_Comm_split");
  }
  void free() {
    if (leaders != MPI_COMM_NULL) MPI_Comm_free(&leaders);
    if (column != MPI_COMM_NULL) MPI_Comm_free(&column);
  }
};

struct Bench {
  const Options& o;
  Layout& L;
  plexus::Collectives& nb;   // NDup from the command line
  plexus::Collectives& nb1;  // NDup = 1
  plexus::mpi::Traffic traffic;
  std::vector<double> buf, in, out;  // n bytes each (the ppn case uses the first n/Q)

  Bench(const Options& opt, Layout& layout, plexus::Collectives& c, plexus::Collectives& c1)
      : o(opt), L(layout), nb(c), nb1(c1) {
    const auto cap = static_cast<std::size_t>(o.max_bytes / 8);
    buf.assign(cap, 0.0);
    in.assign(cap, 0.0);
    out.assign(cap, 0.0);
    for (std::size_t i = 0; i < cap; ++i) in[i] = static_cast<double>(L.rank + 1) + 1e-3 * static_cast<double>(i % 997);
  }

  bool takes_part(const std::string& c) const { return c == "ppn" || L.leader(); }
  MPI_Comm comm_of(const std::string& c) const { return c == "ppn" ? L.column : L.leaders; }
  // Doubles this rank sends in case c for a message of n doubles: all of them, or its node's
  // share (consecutive slices by local rank; the first n mod Q ranks one more).
  std::int64_t count_of(const std::string& c, std::int64_t n) const {
    if (c != "ppn") return n;
    return n / L.ppn + (L.local < n % L.ppn ? 1 : 0);
  }

  // One timed run of (op, case) on n doubles; returns this rank's seconds (0: no part in it), and
  // for nboverlap the number of parts used (from the component's message counts on the root).
  double run(const std::string& op, const std::string& c, std::int64_t n, int& parts) {
    parts = 0;
    if (!takes_part(c)) return 0;
    MPI_Comm comm = comm_of(c);
    const int cnt = static_cast<int>(count_of(c, n));
    const bool root = L.node == 0;
    plexus::mpi::check(MPI_Barrier(comm), "MPI_Barrier");
    const auto before = traffic.counts(plexus::mpi::Role::Other);
    const double t0 = MPI_Wtime();
    if (c == "nboverlap" || c == "ndup1") {
      plexus::Collectives& comp = c == "nboverlap" ? nb : nb1;
      if (op == "bcast")
        comp.bcast(std::span<double>(buf.data(), static_cast<std::size_t>(cnt)), 0, comm, traffic);
      else
        comp.reduce(std::span<const double>(in.data(), static_cast<std::size_t>(cnt)),
                  std::span<double>(out.data(), root ? static_cast<std::size_t>(cnt) : 0), 0, comm, traffic);
    } else if (op == "bcast") {
      plexus::mpi::check(MPI_Bcast(buf.data(), cnt, MPI_DOUBLE, 0, comm), "MPI_Bcast");
    } else {
      plexus::mpi::check(MPI_Reduce(in.data(), root ? out.data() : nullptr, cnt, MPI_DOUBLE, MPI_SUM, 0, comm),
                         "MPI_Reduce");
    }
    const double t = MPI_Wtime() - t0;
    if ((c == "nboverlap" || c == "ndup1") && root) {
      const auto& after = traffic.counts(plexus::mpi::Role::Other);
      if (op == "bcast")
        parts = static_cast<int>(after.messages_sent - before.messages_sent);
      else
        parts = static_cast<int>((after.messages_received - before.messages_received) / std::max(1, L.nodes - 1));
    }
    return t;
  }

  // Runs (op, case) once more on known data and checks the result on every rank that has one.
  bool validate(const std::string& op, const std::string& c, std::int64_t n) {
    bool ok = true;
    if (takes_part(c)) {
      const auto cnt = static_cast<std::size_t>(count_of(c, n));
      const bool root = L.node == 0;
      // The value of element i of a rank's data: distinct per node and per local rank.
      auto value = [&](int node, std::size_t i) { return 1.0 + node + 0.25 * L.local + double(i % 1009); };
      std::vector<double> keep_in;
      if (op == "bcast") {
        for (std::size_t i = 0; i < cnt; ++i) buf[i] = root ? value(0, i) : -1.0;
      } else {
        keep_in.assign(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(cnt));
        for (std::size_t i = 0; i < cnt; ++i) {
          in[i] = value(L.node, i);
          out[i] = -1.0;
        }
      }
      int parts = 0;
      run(op, c, n, parts);
      if (op == "bcast") {
        for (std::size_t i = 0; i < cnt && ok; ++i) ok = buf[i] == value(0, i);
      } else {
        if (root)
          for (std::size_t i = 0; i < cnt && ok; ++i) {
            double want = 0;
            for (int q = 0; q < L.nodes; ++q) want += value(q, i);
            ok = out[i] == want;
          }
        std::copy(keep_in.begin(), keep_in.end(), in.begin());
      }
    }
    int mine = ok ? 1 : 0, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all == 1;
  }
};

// The part rule of the nboverlap component (plugins/comm_nboverlap/parts.hpp), to set next to the
// parts it was seen to use.
int part_rule(int ndup, std::int64_t min_part_bytes, std::int64_t n) {
  if (n <= 0) return 1;
  std::int64_t k = std::min<std::int64_t>(ndup, n);
  if (min_part_bytes > 0) k = std::min<std::int64_t>(k, 8 * n / min_part_bytes);
  return static_cast<int>(std::max<std::int64_t>(k, 1));
}

// The ping-pong between the leaders of nodes 0 and 1 (alpha_beta.hpp).
json pingpong(const Options& o, const Layout& L, Model& model, double t_start) {
  plexus::bench::PingPongSettings s;
  s.rank_a = 0;
  s.rank_b = L.ppn;
  s.min_bytes = o.pp_min;
  s.max_bytes = o.pp_max;
  s.reps = o.reps;
  s.warmup = o.warmup;
  s.poll_us = o.poll_us;
  s.tag = "nboverlap-bench";
  s.t_start = t_start;
  return plexus::bench::pingpong(s, model);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // Arguments first, on every rank alike: a bad one ends the job cleanly before any work.
  Options o;
  if (const int rc = plexus::bench::start("plexus-nboverlap-bench", kUsage, [&](bool& help) {
        o = parse(argc, argv, help);
        if (!help && (size % o.nodes != 0 || size < o.nodes))
          throw UsageError(std::to_string(size) + " ranks cannot be cut into --nodes " + std::to_string(o.nodes) +
                           " nodes of equal size (the rank count must be a multiple of the node count; at least 2 "
                           "nodes)");
        return o.json;
      });
      rc >= 0) {
    MPI_Finalize();
    return rc;
  }

  int code = 0;
  Layout L;
  plexus::CommPool pool;
  try {
    auto& reg = plexus::Registry::global();
    reg.load_default();
    if (!reg.find(plexus::ComponentKind::Collectives, "nboverlap"))
      throw plexus::Error("plexus-nboverlap-bench",
                          "no 'nboverlap' collectives component was loaded (build the plexus_comm_nboverlap plugin, "
                          "or set PLEXUS_PLUGIN_PATH)");
    plexus::ParameterList params("nboverlap");
    params.set("NDup", o.ndup);
    params.set("MinPartBytes", static_cast<int>(o.min_part_bytes));
    std::unique_ptr<plexus::Collectives> nb = reg.make_collectives("nboverlap", params, "Communication/nboverlap");
    nb->bind(pool);
    plexus::ParameterList params1("nboverlap");
    params1.set("NDup", 1);
    std::unique_ptr<plexus::Collectives> nb1 = reg.make_collectives("nboverlap", params1, "Communication/nboverlap");
    nb1->bind(pool);
    L.make(o.nodes);
    const double t_start = MPI_Wtime();
    const double load_before = loadavg1();

    json doc;
    if (rank == 0) {
      doc["benchmark"] = "plexus-nboverlap-bench";
      doc["paper"] = "Huang & Chow, Overlapping communications with other communications..., IPDPS 2019, Figure 5";
      doc["machine"] = machine_info(size);
      doc["parameters"] = {{"ranks", size},
                           {"nodes", L.nodes},
                           {"ranks_per_node", L.ppn},
                           {"ranks_per_collective", L.nodes},
                           {"ndup", o.ndup},
                           {"min_part_bytes", o.min_part_bytes},
                           {"nboverlap_parameters", plexus::to_xml(params)},
                           {"min_bytes", o.min_bytes},
                           {"max_bytes", o.max_bytes},
                           {"operations", o.ops},
                           {"cases", o.cases},
                           {"repetitions", o.reps},
                           {"warmup_rounds", o.warmup},
                           {"pingpong", o.pingpong},
                           {"pingpong_min_bytes", o.pp_min},
                           {"pingpong_max_bytes", o.pp_max},
                           {"poll_us", o.poll_us},
                           {"quick", o.quick},
                           {"datatype", "MPI_DOUBLE (the paper's reduction used MPI_FLOAT)"},
                           {"root", 0}};
      json layout = json::object();
      std::vector<int> leaders;
      for (int q = 0; q < L.nodes; ++q) leaders.push_back(q * L.ppn);
      json cols = json::array();
      for (int j = 0; j < L.ppn; ++j) {
        std::vector<int> c;
        for (int q = 0; q < L.nodes; ++q) c.push_back(q * L.ppn + j);
        cols.push_back(c);
      }
      layout["node_of_rank"] = "rank / ranks_per_node (ranks of a node are consecutive)";
      layout["blocking"] = {{"communicators", json::array({leaders})},
                            {"runs", "MPI_Bcast / MPI_Reduce(MPI_SUM) of n bytes, root = rank 0"}};
      layout["nboverlap"] = {{"communicators", json::array({leaders})},
                             {"runs", "Registry 'nboverlap' component: bcast / reduce of n bytes, root 0 "
                                      "(NDup parts on duplicated communicators, posted at once, then MPI_Waitall)"}};
      layout["ppn"] = {{"communicators", cols},
                       {"runs", "every communicator at once: MPI_Bcast / MPI_Reduce of its n / ranks_per_node bytes, "
                                "root = its rank on node 0"}};
      layout["ndup1"] = {{"communicators", json::array({leaders})},
                         {"runs", "control: the 'nboverlap' component with NDup = 1 (one MPI_Ibcast / MPI_Ireduce of n "
                                  "bytes, then its wait)"}};
      layout["idle_ranks"] = "ranks without a part in a case wait in MPI_Ibarrier polled by MPI_Test + usleep(poll_us)";
      layout["time"] = "per repetition: after a barrier of the case's communicator(s), the slowest rank of the case";
      layout["bandwidth"] = "2 (p-1) n / p / time, p = ranks_per_collective";
      doc["layout"] = layout;
      std::fprintf(stderr,
                   "[nboverlap-bench] %d ranks = %d nodes x %d ranks; NDup %d, MinPartBytes %lld; %s .. %s; %d reps "
                   "+ %d warm-up rounds; load %.2f\n",
                   size, L.nodes, L.ppn, o.ndup, static_cast<long long>(o.min_part_bytes), human(o.min_bytes).c_str(),
                   human(o.max_bytes).c_str(), o.reps, o.warmup, load_before);
    }

    Model model;
    if (o.pingpong) {
      json pp = pingpong(o, L, model, t_start);
      if (rank == 0) doc["alpha_beta"] = pp;
    }

    Bench bench(o, L, *nb, *nb1);
    // The component makes its duplicated communicators on first use (collective over the leaders):
    // one uncounted call on the largest size makes all of them before anything is timed.
    if (L.leader() && std::find(o.cases.begin(), o.cases.end(), "nboverlap") != o.cases.end())
      nb->bcast(std::span<double>(bench.buf.data(), static_cast<std::size_t>(o.max_bytes / 8)), 0, L.leaders,
                bench.traffic);
    if (rank == 0) doc["nboverlap_duplicates_made"] = pool.size();
    std::vector<std::pair<std::string, std::string>> combos;
    for (const auto& op : o.ops)
      for (const auto& c : o.cases) combos.emplace_back(op, c);
    const std::vector<std::int64_t> sizes = doubling(o.min_bytes, o.max_bytes);
    json rows = json::array();
    bool all_valid = true;
    struct Line {
      std::int64_t bytes;
      std::string op, c;
      double bw_median, t_median;
      int parts;
    };
    std::vector<Line> table;
    for (std::size_t si = 0; si < sizes.size(); ++si) {
      const std::int64_t bytes = sizes[si], n = bytes / 8;
      // times[combo][rep] on this rank (0: no part), parts seen by the root.
      std::vector<std::vector<double>> times(combos.size(), std::vector<double>(static_cast<std::size_t>(o.reps), 0));
      std::vector<int> parts_seen(combos.size(), 0), parts_min(combos.size(), INT_MAX);
      const std::size_t nc = combos.size();
      for (int r = -o.warmup; r < o.reps; ++r) {
        for (std::size_t k = 0; k < nc; ++k) {
          // Rotate the order each round so that no (operation, case) always runs first.
          const std::size_t ci = (k + static_cast<std::size_t>(r + o.warmup)) % nc;
          sleepy_barrier(MPI_COMM_WORLD, o.poll_us);
          int parts = 0;
          const double t = bench.run(combos[ci].first, combos[ci].second, n, parts);
          if (r >= 0) times[ci][static_cast<std::size_t>(r)] = t;
          if ((combos[ci].second == "nboverlap" || combos[ci].second == "ndup1") && L.rank == 0) {
            parts_seen[ci] = std::max(parts_seen[ci], parts);
            parts_min[ci] = std::min(parts_min[ci], parts);
          }
        }
      }
      sleepy_barrier(MPI_COMM_WORLD, o.poll_us);
      std::vector<char> valid(nc, 1);
      for (std::size_t ci = 0; ci < nc; ++ci) {
        valid[ci] = bench.validate(combos[ci].first, combos[ci].second, n) ? 1 : 0;
        all_valid = all_valid && valid[ci];
      }
      // The slowest participant of each repetition.
      for (std::size_t ci = 0; ci < nc; ++ci) {
        std::vector<double> slowest(times[ci].size(), 0.0);
        MPI_Reduce(times[ci].data(), slowest.data(), static_cast<int>(slowest.size()), MPI_DOUBLE, MPI_MAX, 0,
                   MPI_COMM_WORLD);
        if (rank != 0) continue;
        const auto& [op, c] = combos[ci];
        const Stats s = stats_of(slowest);
        const int p = L.nodes;
        const double volume = 2.0 * (p - 1) * double(bytes) / p;
        json row = {{"operation", op},
                    {"case", c},
                    {"bytes", bytes},
                    {"ranks_per_collective", p},
                    {"bytes_per_collective", c == "ppn" ? json(double(bytes) / L.ppn) : json(bytes)},
                    {"concurrent_collectives", c == "ppn" ? L.ppn : 1},
                    {"seconds", slowest},
                    {"seconds_min", s.min},
                    {"seconds_median", s.median},
                    {"seconds_mean", s.mean},
                    {"bandwidth_bytes_per_second_at_min", number(volume / s.min)},
                    {"bandwidth_bytes_per_second_at_median", number(volume / s.median)},
                    {"bandwidth_bytes_per_second_at_mean", number(volume / s.mean)},
                    {"validated", valid[ci] == 1}};
        if (c == "nboverlap" || c == "ndup1") {
          row["parts_used"] = parts_seen[ci];
          row["parts_used_varied"] = parts_seen[ci] != parts_min[ci];
          row["parts_rule"] = c == "ndup1" ? 1 : part_rule(o.ndup, o.min_part_bytes, n);
        } else {
          row["parts_used"] = 1;
        }
        if (model.known) {
          row["model_seconds"] = op == "bcast" ? model.bcast(p, double(bytes)) : model.reduce(p, double(bytes));
          row["model_p2p_seconds"] = model.p2p(double(bytes));
          row["model_bandwidth_bytes_per_second"] = number(volume / row["model_seconds"].get<double>());
        }
        rows.push_back(row);
        table.push_back({bytes, op, c, volume / s.median, s.median, c == "nboverlap" ? parts_seen[ci] : 1});
      }
      if (rank == 0)
        std::fprintf(stderr, "[nboverlap-bench %6.1f s] %s done (%zu/%zu)%s\n", MPI_Wtime() - t_start,
                     human(bytes).c_str(), si + 1, sizes.size(), all_valid ? "" : " RESULT CHECK FAILED");
    }
    const double load_after = loadavg1();

    if (rank == 0) {
      doc["rows"] = rows;
      doc["all_validated"] = all_valid;
      doc["machine"]["loadavg_1min_before"] = load_before;
      doc["machine"]["loadavg_1min_after"] = load_after;
      doc["seconds_total"] = MPI_Wtime() - t_start;
      plexus::bench::RunInfo info;
      info.benchmark = "plexus-nboverlap-bench";
      info.command_line = plexus::bench::command_line(argc, argv);
      info.ranks = size;
      // No grid: the emulated nodes are the document's parameters.nodes and parameters.ranks_per_node.
      info.threads_set = nullptr;  // no threads are set: MPI calls only
      info.options = {{"nodes", o.nodes},
                      {"ndup", o.ndup},
                      {"min_part_bytes", o.min_part_bytes},
                      {"min_bytes", o.min_bytes},
                      {"max_bytes", o.max_bytes},
                      {"ops", o.ops},
                      {"cases", o.cases},
                      {"reps", o.reps},
                      {"warmup", o.warmup},
                      {"pingpong", o.pingpong},
                      {"pp_min", o.pp_min},
                      {"pp_max", o.pp_max},
                      {"poll_us", o.poll_us},
                      {"quick", o.quick},
                      {"check", o.check},
                      {"json", o.json}};
      info.parameter_lists = {{"Communication/nboverlap", plexus::bench::parameters_json(params)},
                              {"Communication/nboverlap (ndup1)", plexus::bench::parameters_json(params1)}};
      info.warm_up = o.warmup;  // rounds
      info.rounds = o.reps;
      for (std::size_t i = 0; i < rows.size(); ++i)
        info.per_repetition_times.push_back(fmt::format("/rows/{}/seconds", i));
      doc["metadata"] = plexus::bench::run_metadata(info);
      // The table: median time's bandwidth in MB/s (10^6 B/s, as the paper), per operation.
      std::printf("plexus-nboverlap-bench: %d ranks = %d emulated nodes x %d; p = %d per collective; NDup %d, "
                  "MinPartBytes %lld\n",
                  size, L.nodes, L.ppn, L.nodes, o.ndup, static_cast<long long>(o.min_part_bytes));
      if (model.known)
        std::printf("alpha-beta (ping-pong ranks 0-%d, relative fit): alpha = %.3g us, 1/beta = %.0f MB/s\n", L.ppn,
                    model.alpha * 1e6, 1e-6 / model.beta);
      for (const auto& op : o.ops) {
        std::printf("\n%s: bandwidth at the median time, MB/s (median time in us)%s\n", op.c_str(),
                    model.known ? "; model = alpha-beta time of one collective, us" : "");
        std::printf("%10s", "bytes");
        for (const auto& c : o.cases) std::printf(" %24s", c.c_str());
        if (std::find(o.cases.begin(), o.cases.end(), "nboverlap") != o.cases.end()) std::printf(" %5s", "parts");
        if (model.known) std::printf(" %10s %10s", "model", "model P2P");
        std::printf("\n");
        for (const auto bytes : sizes) {
          std::printf("%10s", human(bytes).c_str());
          int parts = 0;
          for (const auto& c : o.cases)
            for (const auto& l : table)
              if (l.bytes == bytes && l.op == op && l.c == c) {
                const std::string cell = fmt::format("{:.0f} ({:.4g})", l.bw_median * 1e-6, l.t_median * 1e6);
                std::printf(" %24s", cell.c_str());
                if (c == "nboverlap") parts = l.parts;
              }
          if (std::find(o.cases.begin(), o.cases.end(), "nboverlap") != o.cases.end()) std::printf(" %5d", parts);
          if (model.known)
            std::printf(" %10.4g %10.4g",
                        1e6 * (op == "bcast" ? model.bcast(L.nodes, double(bytes)) : model.reduce(L.nodes, double(bytes))),
                        1e6 * model.p2p(double(bytes)));
          std::printf("\n");
        }
      }
      plexus::bench::write_json(doc, o.json, 1);
      if (o.check &&
          plexus::bench::check_verdict(plexus::bench::check_metadata_file(o.json, "plexus-nboverlap-bench", size),
                                       o.json, "plexus-nboverlap-bench") != 0)
        code = 1;
      if (!all_valid) std::fprintf(stderr, "plexus-nboverlap-bench: a result check failed (see \"validated\")\n");
    }
    MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
    code = all_valid && code == 0 ? 0 : 1;
    // The duplicates live in the pool; release it (collective over the leaders) before the
    // communicators they were made from go.
    pool.release();
    L.free();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plexus-nboverlap-bench: error on rank %d: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return code;
}
