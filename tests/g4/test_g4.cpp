// The g4 solver on every rank count: both modes agree (L1/L2 relative errors, PASC'21 Eqs. 2-3)
// for every sub-ring size that divides the rank count and 1 or 2 threads; G4 equals a serial
// recomputation of the whole sum, written here directly from the formula; the storage per rank is
// ceil(T/S) complex elements as the memory tracker counts it; distributed mode needs less peak
// memory than replicated mode when G4 dominates; HDF5 round trip and error handling.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <complex>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "g4_hdf5.hpp"
#include "g4_model.hpp"
#include "plexus/context.hpp"
#include "plexus/error.hpp"
#include "plexus/kernel.hpp"
#include "plexus/memory.hpp"
#include "plexus/registry.hpp"
#include "plexus/solver.hpp"

using namespace plexus;
namespace fs = std::filesystem;

namespace {

bool ring_available() { return std::string(PLEXUS_RING_PATH).size() > 0 && fs::exists(PLEXUS_RING_PATH); }

void load_plugins() {
  static bool loaded = false;
  if (loaded) return;
  Registry::global().load_file(PLEXUS_G4_PATH);
  Registry::global().load_file(PLEXUS_CANNON_PATH);
  if (ring_available()) Registry::global().load_file(PLEXUS_RING_PATH);
  loaded = true;
}

/// A strategy: "cannon" (the core default circulate: one ring of all ranks, one thread) or the
/// ring with a sub-ring size and a thread count.
struct StrategySpec {
  std::string name = "cannon";
  int subring = 0, threads = 1;
  std::string describe() const {
    return name == "ring" ? "ring S=" + std::to_string(subring) + " k=" + std::to_string(threads) : name;
  }
};

std::unique_ptr<CommStrategy> make_strategy(const StrategySpec& s) {
  load_plugins();
  ParameterList p(s.name);
  if (s.name == "ring") {
    p.set("SubRingSize", s.subring);
    p.set("Threads", s.threads);
  }
  return Registry::global().make_comm(s.name, p, "Communication/" + s.name);
}

struct G4Run {
  SolverResult result;
  std::vector<double> g4;  // the whole G4 (2 doubles per element) from the result matrix, every rank
};

/// Runs the g4 solver through the registry with "Key=Value" parameters of its sublist.
G4Run run_g4(const StrategySpec& s, const std::vector<std::string>& params, bool gather = true,
             plexus::StepDetail steps = plexus::StepDetail::Every) {
  load_plugins();
  ParameterList sub("g4");
  for (const auto& kv : params) apply_override(sub, kv);
  if (!gather) apply_override(sub, "ResultMatrix=false");
  auto solver = Registry::global().make_solver("g4", sub, "g4");
  Context context(MPI_COMM_WORLD, make_strategy(s), std::make_shared<ReferenceKernel>());
  SolverContext ctx;
  ctx.context = &context;
  ctx.quiet = true;
  ctx.steps = steps;
  G4Run r;
  r.result = solver->run(ctx);
  if (gather) {
    EXPECT_TRUE(r.result.result != nullptr);
    if (r.result.result) r.g4 = r.result.result->to_dense();
  }
  r.result.result.reset();  // it lives on the context's grid, released here
  context.release();
  return r;
}

/// (L1, L2) relative errors of b against a.
std::pair<double, double> rel_errors(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  g4::ErrorSums e;
  e.add(a.data(), b.data(), static_cast<std::int64_t>(std::min(a.size(), b.size()) / 2));
  return {e.l1(), e.l2()};
}

/// The strategies a rank count allows: the core default, and the ring with every sub-ring size in
/// {1, 2, 3} dividing it, with `threads` threads (the ring only, when threads > 1).
std::vector<StrategySpec> strategies(int threads) {
  std::vector<StrategySpec> out;
  if (threads == 1) out.push_back({"cannon", 0, 1});
  if (!ring_available()) return out;
  const int p = plexus::mpi::size(MPI_COMM_WORLD);
  for (int s : {1, 2, 3})
    if (p % s == 0) out.push_back({"ring", s, threads});
  return out;
}

std::vector<std::string> tiny(const std::string& mode, int measurements = 3) {
  return {"Lx=2", "Ly=2", "Nw=3", "Measurements=" + std::to_string(measurements), "Seed=11", "Mode=" + mode};
}

// ---- the serial reference, written directly from the formula ----------------------------------

/// K = kx + Lx*ky + Lx*Ly*w (the documented flattening); differences componentwise modulo.
struct Coords {
  int lx, ly, nw;
  int diff(int a, int b) const {
    const int ax = a % lx, ay = (a / lx) % ly, aw = a / (lx * ly);
    const int bx = b % lx, by = (b / lx) % ly, bw = b / (lx * ly);
    const int x = ((ax - bx) % lx + lx) % lx, y = ((ay - by) % ly + ly) % ly, w = ((aw - bw) % nw + nw) % nw;
    return x + lx * y + lx * ly * w;
  }
};

/// G4(K1,K2,K3) = sum over ranks, threads, measurements and s of G_s(K3-K2, K3-K1) G_{-s}(K2, K1).
std::vector<double> serial_g4(int lx, int ly, int nw, int ranks, int threads, int measurements, int seed) {
  const Coords c{lx, ly, nw};
  const int N = lx * ly * nw;
  g4::Model model{lx, ly, nw};
  std::vector<std::complex<double>> g4(static_cast<std::size_t>(N) * N * N);
  std::vector<double> buf(static_cast<std::size_t>(4 * N * N));
  for (int r = 0; r < ranks; ++r)
    for (int t = 0; t < threads; ++t)
      for (int m = 0; m < measurements; ++m) {
        g4::generate(model, static_cast<std::uint64_t>(seed), r, t, m, buf.data());
        auto G = [&](int spin, int a, int b) {
          const std::size_t at = static_cast<std::size_t>(spin) * 2 * N * N + 2 * (static_cast<std::size_t>(a) * N + b);
          return std::complex<double>(buf[at], buf[at + 1]);
        };
        for (int k1 = 0; k1 < N; ++k1)
          for (int k2 = 0; k2 < N; ++k2)
            for (int k3 = 0; k3 < N; ++k3) {
              std::complex<double> sum = 0;
              for (int s = 0; s < 2; ++s) sum += G(s, c.diff(k3, k2), c.diff(k3, k1)) * G(1 - s, k2, k1);
              g4[(static_cast<std::size_t>(k1) * N + k2) * N + k3] += sum;
            }
      }
  std::vector<double> out(2 * g4.size());
  for (std::size_t i = 0; i < g4.size(); ++i) {
    out[2 * i] = g4[i].real();
    out[2 * i + 1] = g4[i].imag();
  }
  return out;
}

/// A directory for this test's files, the same on every rank; removed at the end.
struct TempDir {
  fs::path path;
  TempDir() {
    long long pid = plexus::mpi::rank(MPI_COMM_WORLD) == 0 ? static_cast<long long>(::getpid()) : 0;
    MPI_Bcast(&pid, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    path = fs::temp_directory_path() / ("plexus-test-g4-" + std::to_string(pid));
    if (plexus::mpi::rank(MPI_COMM_WORLD) == 0) fs::create_directories(path);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  ~TempDir() {
    MPI_Barrier(MPI_COMM_WORLD);
    if (plexus::mpi::rank(MPI_COMM_WORLD) == 0) fs::remove_all(path);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

}  // namespace

// ---- the model ----------------------------------------------------------------------------------

TEST(G4Model, SlicesAreBalancedAndCoverEverything) {
  for (std::int64_t total : {1, 7, 12, 1728}) {
    for (int parts : {1, 2, 3, 4, 6, 13}) {
      std::int64_t at = 0;
      for (int p = 0; p < parts; ++p) {
        const g4::Slice s = g4::slice_of(total, parts, p);
        EXPECT_EQ(s.begin, at);
        EXPECT_EQ(s.begin, p * (total / parts) + std::min<std::int64_t>(p, total % parts));
        EXPECT_LE(s.size(), g4::max_slice(total, parts));
        EXPECT_GE(s.size(), total / parts);
        at = s.end;
      }
      EXPECT_EQ(at, total);
    }
  }
}

TEST(G4Model, DifferencesAreComponentwiseModulo) {
  const g4::Model m{3, 2, 4};
  const Coords c{3, 2, 4};
  for (int a = 0; a < m.n(); ++a)
    for (int b = 0; b < m.n(); ++b) {
      EXPECT_EQ(m.minus(a, b), c.diff(a, b));
      EXPECT_EQ(m.plus(m.minus(a, b), b), a);
    }
  EXPECT_EQ(m.index(2, 1, 3), 2 + 3 * 1 + 6 * 3);
}

TEST(G4Model, GeneratorIsDeterministicAndDependsOnEveryKey) {
  const g4::Model m{2, 1, 3};
  std::vector<double> a(static_cast<std::size_t>(m.buffer_doubles())), b(a.size());
  g4::generate(m, 5, 1, 0, 2, a.data());
  g4::generate(m, 5, 1, 0, 2, b.data());
  EXPECT_EQ(a, b);
  const std::vector<std::array<int, 4>> others = {{6, 1, 0, 2}, {5, 0, 0, 2}, {5, 1, 1, 2}, {5, 1, 0, 3}};
  for (const auto& o : others) {
    g4::generate(m, static_cast<std::uint64_t>(o[0]), o[1], o[2], o[3], b.data());
    EXPECT_NE(a, b);
  }
  for (double v : a) {
    EXPECT_GE(v, -1.0);
    EXPECT_LT(v, 1.0);
  }
}

// ---- results ------------------------------------------------------------------------------------

TEST(G4, ModesAgreeForEverySubRingSizeAndThreadCount) {
  for (int threads : {1, 2}) {
    if (threads > 1 && !ring_available()) {
      if (plexus::mpi::rank(MPI_COMM_WORLD) == 0) std::printf("[  SKIPPED ] threads=2: plugin comm_ring not built (%s)\n", PLEXUS_RING_PATH);
      continue;
    }
    // The reference: replicated mode with the same number of threads (threads add measurements).
    const StrategySpec ref_strategy = threads == 1 ? StrategySpec{"cannon", 0, 1} : StrategySpec{"ring", 0, threads};
    const G4Run ref = run_g4(ref_strategy, tiny("replicated"));
    for (const StrategySpec& s : strategies(threads)) {
      SCOPED_TRACE(s.describe());
      for (const std::string mode : {"distributed", "replicated"}) {
        const G4Run r = run_g4(s, tiny(mode));
        const auto [l1, l2] = rel_errors(ref.g4, r.g4);
        EXPECT_LT(l1, 5e-7) << mode;
        EXPECT_LT(l2, 5e-7) << mode;
        EXPECT_LT(l1, 1e-13) << mode << ": expected rounding-level differences";
        EXPECT_NEAR(r.result.figures.at("g4_l1_norm"), ref.result.figures.at("g4_l1_norm"),
                    1e-12 * ref.result.figures.at("g4_l1_norm"));
        EXPECT_NEAR(r.result.figures.at("g4_l2_norm"), ref.result.figures.at("g4_l2_norm"),
                    1e-12 * ref.result.figures.at("g4_l2_norm"));
        EXPECT_EQ(r.result.figures.at("threads"), threads);
        if (mode == "distributed") {
          EXPECT_EQ(r.result.figures.at("sub_ring_size"), s.name == "ring" ? s.subring : plexus::mpi::size(MPI_COMM_WORLD));
          EXPECT_EQ(r.result.figures.at("measurements_total"), 3.0 * threads * plexus::mpi::size(MPI_COMM_WORLD));
        }
        EXPECT_EQ(r.result.reports.size(), 3u);
      }
    }
  }
}

TEST(G4, EqualsSerialRecomputationOfTheWholeSum) {
  // Lx=2, Ly=3, Nw=2: N = 12, differences wrap in every component.
  std::vector<std::pair<StrategySpec, std::string>> cases = {{{"cannon", 0, 1}, "replicated"},
                                                             {{"cannon", 0, 1}, "distributed"}};
  if (ring_available()) {
    cases.push_back({{"ring", plexus::mpi::size(MPI_COMM_WORLD) % 2 == 0 ? 2 : 1, 2}, "distributed"});
    cases.push_back({{"ring", 1, 2}, "replicated"});
  }
  const std::vector<double> one_thread = serial_g4(2, 3, 2, plexus::mpi::size(MPI_COMM_WORLD), 1, 2, 4);
  const std::vector<double> two_threads = serial_g4(2, 3, 2, plexus::mpi::size(MPI_COMM_WORLD), 2, 2, 4);
  for (const auto& [s, mode] : cases) {
    SCOPED_TRACE(s.describe() + " " + mode);
    const G4Run r = run_g4(s, {"Lx=2", "Ly=3", "Nw=2", "Measurements=2", "Seed=4", "Mode=" + mode});
    const auto [l1, l2] = rel_errors(s.threads == 1 ? one_thread : two_threads, r.g4);
    EXPECT_LT(l1, 1e-13);
    EXPECT_LT(l2, 1e-13);
  }
}

TEST(G4, OperationsCarryTheCollectivesModel) {
  // Every measurement's circulate and the final reduction are operation reports whose predicted
  // volume (the collectives' model) is the counted one.
  std::vector<StrategySpec> specs = strategies(1);
  if (ring_available()) specs.push_back({"ring", plexus::mpi::size(MPI_COMM_WORLD) % 2 == 0 ? 2 : 1, 2});
  for (const StrategySpec& s : specs) {
    for (const std::string mode : {"distributed", "replicated"}) {
      SCOPED_TRACE(s.describe() + " " + mode);
      const G4Run r = run_g4(s, {"Lx=2", "Ly=3", "Nw=2", "Measurements=3", "Mode=" + mode}, false);
      const auto& ops = r.result.operations;
      ASSERT_EQ(ops.size(), 4u);  // three measurements, one reduction
      for (std::size_t i = 0; i + 1 < ops.size(); ++i)
        EXPECT_EQ(ops[i].operation, mode == "distributed" ? "circulate" : "accumulate");
      EXPECT_EQ(ops.back().operation, mode == "distributed" ? "reduce_across_rings" : "allreduce");
      for (const auto& op : ops) {
        SCOPED_TRACE(op.operation);
        const auto& other = op.traffic[static_cast<std::size_t>(mpi::Role::Other)];
        if (op.predicted.empty()) {
          EXPECT_EQ(other.bytes_received, 0) << "traffic without a prediction";
          continue;
        }
        EXPECT_EQ(op.predicted.at("bytes_received"), static_cast<double>(other.bytes_received));
        EXPECT_EQ(op.predicted.at("bytes_sent"), static_cast<double>(other.bytes_sent));
        EXPECT_EQ(op.predicted.at("messages_received"), static_cast<double>(other.messages_received));
      }
      const bool ring_of_one = s.name == "ring" && s.subring == 1;
      if (mode == "distributed" && plexus::mpi::size(MPI_COMM_WORLD) > 1 && !ring_of_one) {
        EXPECT_GT(ops.front().traffic[static_cast<std::size_t>(mpi::Role::Other)].bytes_received, 0);
      }
    }
  }
}

// A run that keeps its measurements as totals (what the program asks for, so that a run of any
// length does not grow by a report a measurement) holds what every measurement's reports and
// operations add up to, and the same G4.
TEST(G4, TotalsHoldWhatEveryMeasurementAddsUpTo) {
  std::vector<StrategySpec> specs = strategies(1);
  if (ring_available()) specs.push_back({"ring", plexus::mpi::size(MPI_COMM_WORLD) % 2 == 0 ? 2 : 1, 2});
  const int M = 4;
  for (const StrategySpec& s : specs) {
    for (const std::string mode : {"distributed", "replicated"}) {
      SCOPED_TRACE(s.describe() + " " + mode);
      const std::vector<std::string> params{"Lx=2", "Ly=3", "Nw=2", "Measurements=4", "Mode=" + mode};
      const G4Run every = run_g4(s, params, true, plexus::StepDetail::Every);
      const G4Run totals = run_g4(s, params, true, plexus::StepDetail::Totals);
      // (Threads add arrivals in any order: rounding-level differences.)
      const auto [l1, l2] = rel_errors(every.g4, totals.g4);
      EXPECT_LT(l1, 1e-13);
      EXPECT_LT(l2, 1e-13);
      // Steps: each measurement's seconds; the rest summed.
      EXPECT_TRUE(totals.result.reports.empty());
      const plexus::StepTotals& t = totals.result.step_totals;
      ASSERT_EQ(t.count(), static_cast<std::size_t>(M));
      for (int i = 0; i < M; ++i) {
        EXPECT_GT(t.seconds[static_cast<std::size_t>(i)], 0.0);
        EXPECT_LE(t.beyond[static_cast<std::size_t>(i)], t.seconds[static_cast<std::size_t>(i)]);
      }
      const plexus::StepTotals e = every.result.steps();
      ASSERT_EQ(e.count(), static_cast<std::size_t>(M));
      EXPECT_EQ(t.sum.flops, e.sum.flops);
      EXPECT_EQ(t.sum.ticks, e.sum.ticks);
      EXPECT_EQ(t.sum.strategy, e.sum.strategy);
      EXPECT_EQ(t.sum.bytes_sent(), e.sum.bytes_sent());
      EXPECT_EQ(t.sum.messages_sent(), e.sum.messages_sent());
      for (int k = 0; k < mpi::kRoles; ++k)
        EXPECT_EQ(t.sum.traffic[static_cast<std::size_t>(k)].bytes_received,
                  e.sum.traffic[static_cast<std::size_t>(k)].bytes_received);
      // Operations: one circulate (or accumulate) standing for the M of them, and the reduction.
      const auto& ops = totals.result.operations;
      ASSERT_EQ(ops.size(), 2u);
      ASSERT_EQ(every.result.operations.size(), static_cast<std::size_t>(M + 1));
      plexus::OperationReport sum = every.result.operations.front();
      for (int i = 1; i < M; ++i) sum.accumulate(every.result.operations[static_cast<std::size_t>(i)]);
      EXPECT_EQ(ops[0].operation, sum.operation);
      EXPECT_EQ(ops[0].count, M);
      EXPECT_EQ(ops[0].bytes_received(), sum.bytes_received());
      EXPECT_EQ(ops[0].predicted.size(), sum.predicted.size());
      for (const auto& [name, v] : sum.predicted) EXPECT_DOUBLE_EQ(ops[0].predicted.at(name), v) << name;
      EXPECT_DOUBLE_EQ(ops[0].extra.at("threads"), sum.extra.at("threads"));
      EXPECT_EQ(ops[1].operation, every.result.operations.back().operation);
      EXPECT_EQ(ops[1].bytes_received(), every.result.operations.back().bytes_received());
    }
  }
}

TEST(G4, SelfCheckFiguresAreTiny) {
  const G4Run r = run_g4({"cannon", 0, 1}, {"Lx=2", "Ly=1", "Nw=3", "Measurements=2", "Check=true"}, false);
  EXPECT_LT(r.result.figures.at("check_l1_error"), 1e-13);
  EXPECT_LT(r.result.figures.at("check_l2_error"), 1e-13);
  EXPECT_EQ(r.result.result, nullptr);  // ResultMatrix=false
}

// ---- memory -------------------------------------------------------------------------------------

TEST(G4, StoragePerRankIsCountedByTheTracker) {
  const g4::Model m{2, 2, 3};
  const std::int64_t total = m.elements();
  std::vector<StrategySpec> specs = strategies(1);
  if (ring_available()) specs.push_back({"ring", 1, 2});
  for (const StrategySpec& s : specs) {
    for (const std::string mode : {"distributed", "replicated"}) {
      SCOPED_TRACE(s.describe() + " " + mode);
      const std::int64_t before = memory::current(memory::Category::Solver);
      memory::reset_peak(memory::Category::Solver);
      const G4Run r = run_g4(s, tiny(mode), false);
      const int S = s.name == "ring" ? (s.subring == 0 ? plexus::mpi::size(MPI_COMM_WORLD) : s.subring) : plexus::mpi::size(MPI_COMM_WORLD);
      const std::int64_t expected =
          mode == "distributed" ? 16 * g4::max_slice(total, S) : 16 * total * s.threads;  // one copy per thread
      EXPECT_EQ(memory::peak(memory::Category::Solver) - before, expected);
      EXPECT_EQ(r.result.figures.at("storage_bytes_per_rank"), static_cast<double>(expected));
      EXPECT_EQ(memory::current(memory::Category::Solver), before) << "G4 storage is released after the run";
    }
  }
}

TEST(G4, DistributedPeakIsLowerWhenG4Dominates) {
  const int p = plexus::mpi::size(MPI_COMM_WORLD);
  if (p == 1) GTEST_SKIP() << "one rank: both modes hold all of G4";
  // N = 24: G4 is 216 KiB; a measurement's buffer 18 KiB (the default circulate gathers p of them).
  const std::vector<std::string> params = {"Lx=2", "Ly=2", "Nw=6", "Measurements=1"};
  auto peak_of = [&](const StrategySpec& s, const std::string& mode, double* figure) {
    memory::reset_peak_total();
    const std::int64_t before = memory::current_total();
    auto ps = params;
    ps.push_back("Mode=" + mode);
    const G4Run r = run_g4(s, ps, false);
    *figure = r.result.figures.at("peak_memory_per_rank");
    std::int64_t peak = memory::peak_total() - before;
    MPI_Allreduce(MPI_IN_PLACE, &peak, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    return peak;
  };
  std::vector<StrategySpec> specs = {{"cannon", 0, 1}};
  if (ring_available()) specs.push_back({"ring", 0, 1});
  for (const StrategySpec& s : specs) {
    SCOPED_TRACE(s.describe());
    double fig_rep = 0, fig_dist = 0;
    const std::int64_t rep = peak_of(s, "replicated", &fig_rep);
    const std::int64_t dist = peak_of(s, "distributed", &fig_dist);
    const g4::Model m{2, 2, 6};
    EXPECT_GE(rep, 16 * m.elements());
    EXPECT_LT(dist, rep);
    EXPECT_LT(fig_dist, fig_rep);
    if (plexus::mpi::rank(MPI_COMM_WORLD) == 0)
      std::printf("  %s on %d ranks: peak tracked memory per rank: replicated %lld B, distributed %lld B\n",
                  s.describe().c_str(), p, static_cast<long long>(rep), static_cast<long long>(dist));
  }
}

// ---- HDF5 ---------------------------------------------------------------------------------------

TEST(G4Hdf5, RoundTripAndDiffOfTwoRuns) {
  TempDir dir;
  const std::string a = dir.file("dist.h5"), b = dir.file("repl.h5");
  StrategySpec s{"cannon", 0, 1};
  if (ring_available() && plexus::mpi::size(MPI_COMM_WORLD) % 2 == 0) s = {"ring", 2, 1};
  auto params = tiny("distributed");
  params.push_back("OutputFile=" + a);
  const G4Run ra = run_g4(s, params);
  params = tiny("replicated");
  params.push_back("OutputFile=" + b);
  const G4Run rb = run_g4({"cannon", 0, 1}, params);
  MPI_Barrier(MPI_COMM_WORLD);

  // Read back on every rank: exactly the values the run computed.
  g4::G4File fa(a);
  EXPECT_EQ(fa.n(), 12);
  EXPECT_EQ(fa.read_all(), ra.g4);
  EXPECT_EQ(fa.int_attribute("Lx"), 2);
  EXPECT_EQ(fa.int_attribute("Nw"), 3);
  EXPECT_EQ(fa.int_attribute("Measurements"), 3);
  EXPECT_EQ(fa.int_attribute("Seed"), 11);
  EXPECT_EQ(fa.int_attribute("ranks"), plexus::mpi::size(MPI_COMM_WORLD));
  EXPECT_EQ(fa.int_attribute("threads"), 1);
  EXPECT_EQ(fa.int_attribute("sub_ring_size"), s.name == "ring" ? 2 : plexus::mpi::size(MPI_COMM_WORLD));
  EXPECT_EQ(fa.string_attribute("Mode"), "distributed");
  EXPECT_EQ(fa.string_attribute("strategy"), s.name);
  const auto xml = fa.string_attribute("parameters");
  ASSERT_TRUE(xml.has_value());
  EXPECT_NE(xml->find("Measurements"), std::string::npos);
  EXPECT_FALSE(fa.int_attribute("no-such-attribute").has_value());
  // A part read from the middle (crossing K1 and K2 boundaries).
  std::vector<double> part(2 * 150);
  fa.read(100, 150, part.data());
  EXPECT_TRUE(std::equal(part.begin(), part.end(), ra.g4.begin() + 200));

  g4::G4File fb(b);
  EXPECT_EQ(fb.read_all(), rb.g4);
  EXPECT_EQ(fb.string_attribute("Mode"), "replicated");
  EXPECT_EQ(fb.int_attribute("sub_ring_size"), 0);

  const g4::FileDiff d = g4::diff_files(b, a, 77);  // small chunks: the chunked reader
  EXPECT_EQ(d.elements, 1728);
  EXPECT_LT(d.sums.l1(), 1e-13);
  EXPECT_LT(d.sums.l2(), 1e-13);
  const g4::FileDiff same = g4::diff_files(a, a);
  EXPECT_EQ(same.sums.l1(), 0.0);
  // No temporary file is left next to the outputs.
  for (const auto& e : fs::directory_iterator(dir.path))
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(G4Hdf5, TinyG4OnManyRanks) {
  // More ranks than K1 rows and one-element slices: N = 2, G4 has 8 elements.
  TempDir dir;
  const std::string f = dir.file("small.h5");
  const G4Run r = run_g4({"cannon", 0, 1}, {"Lx=1", "Ly=1", "Nw=2", "Measurements=1", "OutputFile=" + f});
  MPI_Barrier(MPI_COMM_WORLD);
  g4::G4File in(f);
  EXPECT_EQ(in.n(), 2);
  EXPECT_EQ(in.read_all(), r.g4);
  const auto [l1, l2] = rel_errors(serial_g4(1, 1, 2, plexus::mpi::size(MPI_COMM_WORLD), 1, 1, 1), r.g4);
  EXPECT_LT(l1, 1e-13);
  EXPECT_LT(l2, 1e-13);
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(G4Hdf5, WriterWithUnevenRangesAndLongText) {
  // The writer on its own: rank 0 holds nothing, the last rank the larger part; a text longer than
  // an attribute may be becomes a dataset of the same name.
  TempDir dir;
  const std::string f = dir.file("uneven.h5");
  const g4::Model m{3, 1, 2};  // N = 6
  const std::int64_t total = m.elements();
  std::vector<double> all(static_cast<std::size_t>(2 * total));
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = 0.25 * static_cast<double>(i) - 3.0;
  const int p = plexus::mpi::size(MPI_COMM_WORLD), me = plexus::mpi::rank(MPI_COMM_WORLD);
  g4::Slice mine{0, 0};
  if (p == 1) {
    mine = {0, total};
  } else if (me > 0) {  // ranks 1..p-1 split [0, total) unevenly: the last takes the rest
    const std::int64_t step = total / (2 * (p - 1)) + 1;
    mine = {std::min(total, (me - 1) * step), me == p - 1 ? total : std::min(total, me * step)};
  }
  g4::Attributes a;
  a.ints = {{"answer", 42}};
  a.strings = {{"long", std::string(g4::kMaxAttributeBytes + 1234, 'x')}, {"short", "hello"}, {"empty", ""}};
  g4::write_hdf5(MPI_COMM_WORLD, f, m, all.data() + 2 * mine.begin, mine, a);
  MPI_Barrier(MPI_COMM_WORLD);
  g4::G4File in(f);
  EXPECT_EQ(in.read_all(), all);
  EXPECT_EQ(in.int_attribute("answer"), 42);
  EXPECT_EQ(in.string_attribute("short"), "hello");
  EXPECT_EQ(in.string_attribute("empty"), "");
  const auto text = in.string_attribute("long");
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(text->size(), g4::kMaxAttributeBytes + 1234);
  EXPECT_EQ(text->find_first_not_of('x'), std::string::npos);
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(G4Hdf5, ErrorsReachEveryRank) {
  TempDir dir;
  // A file that cannot be created: every rank throws the same InputError (no hang).
  const std::string bad = dir.file("no-such-dir/g4.h5");
  std::string message;
  try {
    run_g4({"cannon", 0, 1}, {"Lx=1", "Ly=1", "Nw=2", "Measurements=1", "OutputFile=" + bad}, false);
  } catch (const InputError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("cannot create the HDF5 file"), std::string::npos) << message;
  EXPECT_NE(message.find("no-such-dir/g4.h5"), std::string::npos) << message;
  int len = static_cast<int>(message.size()), min_len = 0, max_len = 0;
  MPI_Allreduce(&len, &min_len, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&len, &max_len, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(min_len, max_len) << "the same message on every rank";

  // Reader errors.
  auto reader_error = [](const std::string& path) {
    try {
      g4::G4File f(path);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(reader_error(dir.file("missing.h5")).find("no such file"), std::string::npos);
  if (plexus::mpi::rank(MPI_COMM_WORLD) == 0) std::ofstream(dir.file("text.h5")) << "not HDF5\n";
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_NE(reader_error(dir.file("text.h5")).find("is not an HDF5 file"), std::string::npos);

  // Shape mismatch between two G4 files.
  const std::string n2 = dir.file("n2.h5"), n3 = dir.file("n3.h5");
  run_g4({"cannon", 0, 1}, {"Lx=1", "Ly=1", "Nw=2", "Measurements=1", "OutputFile=" + n2}, false);
  run_g4({"cannon", 0, 1}, {"Lx=1", "Ly=1", "Nw=3", "Measurements=1", "OutputFile=" + n3}, false);
  MPI_Barrier(MPI_COMM_WORLD);
  std::string shape;
  try {
    g4::diff_files(n2, n3);
  } catch (const InputError& e) {
    shape = e.what();
  }
  EXPECT_NE(shape.find("shape mismatch"), std::string::npos) << shape;
  MPI_Barrier(MPI_COMM_WORLD);
}
