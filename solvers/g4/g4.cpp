// The "g4" solver: DCA++'s two-particle accumulator (Wei et al., PASC'21) in two modes.
//
//   replicated   every rank (and every thread) holds all of G4 and adds its own measurements;
//                at the end the threads' copies are summed into the first, and the ranks' copies
//                with the run's collectives' allreduce (every rank ends with the sum).
//   distributed  every rank owns one contiguous slice of G4 of its (sub-)ring; each measurement's
//                G_up/G_down buffer visits every rank of the ring through the collectives'
//                circulate, and each arrival updates only the local slice. Each sub-ring holds
//                one complete G4; the sub-rings are summed at the end with reduce_across_rings.
//
// The solver runs the collectives' circulate_threads() threads per rank, each with its own measurements
// and, in distributed mode, its own ring channel. See docs/g4.md.
#include <mpi.h>
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "g4_accounting.hpp"
#include "g4_hdf5.hpp"
#include "g4_model.hpp"
#include "g4_result.hpp"
#include "plexus/error.hpp"
#include "plexus/log.hpp"
#include "plexus/memory.hpp"
#include "plexus/mpi.hpp"
#include "plexus/output.hpp"
#include "plexus/parameters.hpp"
#include "plexus/plugin.hpp"
#include "plexus/progress.hpp"
#include "plexus/solver.hpp"
#include "plexus/timers.hpp"

namespace {

using plexus::Error;
using plexus::InputError;
using plexus::SolverArray;
using plexus::g4::keep_steps;
using plexus::g4::Model;
using plexus::g4::record_operations;
using plexus::g4::Slice;
using plexus::g4::staged;
using plexus::g4::ThreadMeasurements;
namespace memory = plexus::memory;
namespace mpi = plexus::mpi;

constexpr int kMaxN = 4096;  // N = Lx*Ly*Nw; G4 of N = 4096 is 1 TiB

std::string bytes_text(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024.0 && u < 4) {
    b /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} {}", b, units[u]) : fmt::format("{:.2f} {}", b, units[u]);
}

// How the collectives' rings lie over the ranks: this rank's position, how many rings, and the
// writer of each ring position (the lowest rank holding it: after the final reduction every ring
// holds the same complete G4). Made by one thread before any thread circulates (a strategy may
// split comm on first use). Collective over comm; rings of different sizes, or a position no rank
// holds, throw on every rank.
struct Rings {
  plexus::Collectives::RingPosition ring;
  int count = 1;
  std::vector<int> writer_of;
};
Rings rings_of(plexus::Collectives& coll, MPI_Comm comm) {
  const int P = mpi::size(comm);
  Rings out;
  const plexus::Collectives::RingPosition ring = coll.ring_position(comm);
  int sizes[2] = {ring.size, -ring.size};
  mpi::check(MPI_Allreduce(MPI_IN_PLACE, sizes, 2, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
  if (sizes[0] != -sizes[1] || ring.size < 1 || ring.position < 0 || ring.position >= ring.size)
    throw Error("g4", "collectives '" + coll.name() + "' gives rings of different sizes (" + std::to_string(-sizes[1]) +
                          " to " + std::to_string(sizes[0]) + "); the distributed accumulator needs equal rings");
  out.ring = ring;
  out.count = P / ring.size;
  std::vector<int> positions(static_cast<std::size_t>(P));
  mpi::check(MPI_Allgather(&ring.position, 1, MPI_INT, positions.data(), 1, MPI_INT, comm), "MPI_Allgather");
  out.writer_of.assign(static_cast<std::size_t>(ring.size), -1);
  for (int r = P - 1; r >= 0; --r) out.writer_of[static_cast<std::size_t>(positions[static_cast<std::size_t>(r)])] = r;
  for (int p = 0; p < ring.size; ++p)
    if (out.writer_of[static_cast<std::size_t>(p)] < 0)
      throw Error("g4", "collectives '" + coll.name() + "': no rank holds ring position " + std::to_string(p));
  return out;
}

class G4Solver final : public plexus::Solver {
 public:
  explicit G4Solver(const plexus::ParameterList& p)
      : sublist_(p),
        measurements_(p.get<int>("Measurements")),
        distributed_(p.get<std::string>("Mode") == "distributed"),
        seed_(p.get<int>("Seed")),
        output_(p.get<std::string>("OutputFile")),
        check_(p.get<bool>("Check")),
        tolerance_(p.get<double>("Tolerance")),
        result_matrix_(p.get<bool>("ResultMatrix")) {
    model_.lx = p.get<int>("Lx");
    model_.ly = p.get<int>("Ly");
    model_.nw = p.get<int>("Nw");
    const std::int64_t n = std::int64_t{model_.lx} * model_.ly * model_.nw;
    if (n > kMaxN)
      throw InputError("g4/Lx", "g4: N = Lx*Ly*Nw = " + std::to_string(n) + " exceeds " + std::to_string(kMaxN) +
                                    " (G4 holds N^3 complex numbers)");
  }

  std::string name() const override { return "g4"; }

  // Known before any work: the output path, and what the collectives can do.
  void check(const plexus::Context& ctx) const override {
    // HDF5 writes a regular file (through a temporary renamed into place by rank 0).
    if (!output_.empty() && ctx.rank() == 0 &&
        plexus::output::check(output_, "g4/OutputFile").kind != plexus::output::Kind::File)
      throw InputError("g4/OutputFile", "g4/OutputFile = '" + output_ +
                                            "' is not a regular file path: the HDF5 output cannot go to a device, "
                                            "a pipe or standard output");
    check_collectives(ctx);
  }

  // The collectives must circulate on at least one thread, and several threads need
  // MPI_THREAD_MULTIPLE (the same answer on every rank).
  static void check_collectives(const plexus::Context& ctx) {
    const plexus::Collectives& coll = ctx.collectives();
    const int threads = coll.circulate_threads();
    if (threads < 1)
      throw InputError("Communication/Collectives", "g4: collectives '" + coll.name() + "' report " +
                                                        std::to_string(threads) + " circulating threads");
    if (threads > 1) {
      int provided = MPI_THREAD_SINGLE;
      MPI_Query_thread(&provided);
      if (provided < MPI_THREAD_MULTIPLE)
        throw InputError("Communication/Collectives",
                         "g4: " + std::to_string(threads) + " circulating threads of collectives '" + coll.name() +
                             "' need MPI_THREAD_MULTIPLE (initialise MPI with MPI_Init_thread)");
    }
  }

  plexus::SolverResult run(plexus::SolverContext& ctx) override;

 private:
  void check_against_recomputation(const plexus::SolverContext& ctx, int threads, const std::vector<int>& minus,
                                   const double* mine_data, Slice mine, plexus::SolverResult& result) const;

  plexus::ParameterList sublist_;
  Model model_;
  int measurements_;
  bool distributed_;
  int seed_;
  std::string output_;
  bool check_;
  double tolerance_;
  bool result_matrix_;
};

plexus::SolverResult G4Solver::run(plexus::SolverContext& ctx) {
  PLEXUS_CHECK(ctx.context, "g4: the solver context has no context");
  check_collectives(*ctx.context);  // callers other than the program may not have checked
  plexus::LogScope scope = ctx.context->log_scope(ctx.steps);  // Totals: one report per kind of operation
  const plexus::MultiplyAlgorithm& strategy = ctx.context->multiply_algorithm();
  plexus::Collectives& coll = ctx.context->collectives();
  const MPI_Comm comm = ctx.context->comm();
  const int rank = mpi::rank(comm), P = mpi::size(comm);
  const Model& m = model_;
  const std::int64_t total = m.elements();
  const int M = measurements_;

  // ---- threads and rings ------------------------------------------------------------------
  const int threads = coll.circulate_threads();
  const Rings layout = rings_of(coll, comm);
  const plexus::Collectives::RingPosition ring = layout.ring;
  const int S = ring.size, rings = layout.count;
  const std::vector<int>& writer_of = layout.writer_of;

  if (rank == 0 && !ctx.quiet)
    plexus::log().info(
        "g4: {} mode, N = {} ({}x{} cluster x {} frequencies), G4 {}; {} measurement{} x {} thread{} x {} rank{}; "
        "strategy '{}', collectives '{}'{}",
        distributed_ ? "distributed" : "replicated", m.n(), m.lx, m.ly, m.nw, bytes_text(16.0 * double(total)), M,
        M == 1 ? "" : "s", threads, threads == 1 ? "" : "s", P, P == 1 ? "" : "s", strategy.name(), coll.name(),
        distributed_
            ? ", rings of " + std::to_string(S) + " (" + std::to_string(rings) + " ring" + (rings == 1 ? "" : "s") + ")"
            : std::string());

  // ---- storage ----------------------------------------------------------------------------
  memory::reset_peak(memory::Category::Solver);
  memory::reset_peak(memory::Category::CommBuffer);
  memory::reset_peak_total();
  const std::int64_t solver_before = memory::current(memory::Category::Solver);
  const std::vector<int> minus = m.minus_table();
  std::vector<SolverArray<double>> acc;  // replicated: one full G4 per thread; distributed: the slice
  Slice slice{0, total};
  if (distributed_) {
    slice = plexus::g4::slice_of(total, S, ring.position);
    acc.emplace_back();
    // ceil(T/S) complex elements on every position (the last ones use one element less).
    acc[0].resize(static_cast<std::size_t>(2 * plexus::g4::max_slice(total, S)), 0.0);
  } else {
    acc.resize(static_cast<std::size_t>(threads));
    for (auto& a : acc) a.resize(static_cast<std::size_t>(2 * total), 0.0);
  }
  const std::int64_t storage_bytes = memory::current(memory::Category::Solver) - solver_before;

  // ---- accumulation -----------------------------------------------------------------------
  // Distributed: threads add arrivals to the one slice under striped locks: the slice is cut in
  // `stripes` parts with a mutex each, and thread t starts at stripe t*stripes/threads, so threads
  // work on different parts at once and never on the same part together.
  const int stripes = threads > 1 ? static_cast<int>(std::clamp<std::int64_t>(slice.size() / 4096, 1, 64)) : 1;
  std::vector<std::mutex> locks(static_cast<std::size_t>(stripes));
  std::vector<std::int64_t> arrivals(static_cast<std::size_t>(threads), 0);
  const bool every = ctx.steps == plexus::StepDetail::Every;
  std::vector<ThreadMeasurements> per(static_cast<std::size_t>(threads), ThreadMeasurements(M, every));
  const std::int64_t buffer_doubles = m.buffer_doubles();

  auto arrival = [&](int t, std::span<const double> buf) {
    if (static_cast<std::int64_t>(buf.size()) != buffer_doubles)
      throw Error("g4", "a circulated buffer of " + std::to_string(buf.size()) + " doubles arrived; expected " +
                            std::to_string(buffer_doubles));
    ++arrivals[static_cast<std::size_t>(t)];
    for (int j = 0; j < stripes; ++j) {
      const int st = (j + t * stripes / threads) % stripes;
      const Slice part = plexus::g4::slice_of(slice.size(), stripes, st);
      if (part.size() == 0) continue;
      std::unique_lock<std::mutex> lock(locks[static_cast<std::size_t>(st)], std::defer_lock);
      if (threads > 1) lock.lock();
      plexus::g4::accumulate(m, minus.data(), buf.data(), slice.begin + part.begin, slice.begin + part.end,
                             acc[0].data() + 2 * part.begin);
    }
  };
  plexus::progress::Stage measurements("g4 measurement", M);  // the progress line: thread 0's measurements
  auto body = [&](int t) {
    std::vector<double> buf;
    const plexus::Collectives::ArrivalFn on_arrival = [&, t](std::span<const double> b, int) { arrival(t, b); };
    for (int i = 0; i < M; ++i) {
      if (t == 0) measurements.done(i);
      const double t0 = mpi::now();
      buf.resize(static_cast<std::size_t>(buffer_doubles));
      plexus::g4::generate(m, static_cast<std::uint64_t>(seed_), rank, t, i, buf.data());
      ThreadMeasurements& tm = per[static_cast<std::size_t>(t)];
      const auto at = static_cast<std::size_t>(i);
      if (distributed_) {
        mpi::Traffic traffic;
        coll.circulate(comm, buf, on_arrival, traffic, t);
        const auto counts = traffic.all_counts();
        for (int k = 0; k < mpi::kRoles; ++k) {
          tm.total[static_cast<std::size_t>(k)] += counts[static_cast<std::size_t>(k)];
          tm.wait[at] += counts[static_cast<std::size_t>(k)].wait_seconds;
        }
        if (every) tm.traffic[at] = counts;
      } else {
        plexus::g4::accumulate(m, minus.data(), buf.data(), 0, total, acc[static_cast<std::size_t>(t)].data());
      }
      tm.seconds[at] = mpi::now() - t0;
    }
  };
  // The phases below are timed on the main thread; each thread's measurements (tm.seconds above)
  // are timed by that thread itself (timers.hpp: phase timers belong to the main thread).
  double accumulate_seconds = 0;
  {
    const plexus::timers::Scoped timer("g4: accumulate", &accumulate_seconds);
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(threads));
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t)
      pool.emplace_back([&, t] {
        try {
          body(t);
        } catch (...) {
          errors[static_cast<std::size_t>(t)] = std::current_exception();
        }
      });
    try {
      body(0);
    } catch (...) {
      errors[0] = std::current_exception();
    }
    for (auto& th : pool) th.join();
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
  }
  if (distributed_)
    for (int t = 0; t < threads; ++t)
      if (arrivals[static_cast<std::size_t>(t)] != std::int64_t{M} * S)
        throw Error("g4", "collectives '" + coll.name() + "' delivered " +
                              std::to_string(arrivals[static_cast<std::size_t>(t)]) + " buffers to thread " +
                              std::to_string(t) + "; expected " + std::to_string(std::int64_t{M} * S) +
                              " (every buffer of the ring once per measurement)");
  const std::int64_t peak_accumulate = memory::peak_total();
  const std::int64_t peak_buffers = memory::peak(memory::Category::CommBuffer);

  // ---- final reduction --------------------------------------------------------------------
  mpi::Traffic reduce_traffic;
  double reduce_seconds = 0;
  std::optional<plexus::timers::Scoped> reduce_timer(std::in_place, "g4: reduce", &reduce_seconds);
  if (!distributed_) {
    for (std::size_t t = 1; t < acc.size(); ++t) {
      for (std::size_t j = 0; j < acc[0].size(); ++j) acc[0][j] += acc[t][j];
      SolverArray<double>().swap(acc[t]);
    }
    acc.resize(1);
    if (P > 1)
      staged(acc[0].data(), 2 * total, 2 * total,
             [&](std::vector<double>& v) { coll.allreduce(v, comm, reduce_traffic); });
  } else if (rings > 1) {
    staged(acc[0].data(), 2 * slice.size(), 2 * plexus::g4::max_slice(total, S),
           [&](std::vector<double>& v) { coll.reduce_across_rings(comm, v, reduce_traffic); });
  }
  reduce_timer.reset();
  const std::int64_t peak_run = memory::peak_total();

  // What this rank holds and what it answers for (norms, check, output): replicated: part `rank`
  // of P of G4; distributed: its slice if it is the writer of its ring position, else nothing.
  const double* held = acc[0].data();
  Slice mine{0, 0};
  const double* mine_data = held;
  if (!distributed_) {
    mine = plexus::g4::slice_of(total, P, rank);
    mine_data = held + 2 * mine.begin;
  } else if (writer_of[static_cast<std::size_t>(ring.position)] == rank) {
    mine = slice;
  }

  plexus::SolverResult result;
  plexus::g4::NormSums norms;
  norms.add(mine_data, mine.size());
  double sums[2] = {norms.l1, norms.l2sq};
  mpi::check(MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, comm), "MPI_Allreduce");
  result.figures["g4_l1_norm"] = sums[0];
  result.figures["g4_l2_norm"] = std::sqrt(sums[1]);

  if (check_) check_against_recomputation(ctx, threads, minus, mine_data, mine, result);

  // ---- output -----------------------------------------------------------------------------
  double write_seconds = 0;
  if (!output_.empty()) {
    {
      const plexus::timers::Scoped timer("g4: write", &write_seconds);
      plexus::g4::Attributes a;
      a.ints = {{"Lx", m.lx},
                {"Ly", m.ly},
                {"Nw", m.nw},
                {"N", m.n()},
                {"Measurements", M},
                {"Seed", seed_},
                {"ranks", P},
                {"sub_ring_size", distributed_ ? S : 0},
                {"rings", distributed_ ? rings : 0},
                {"threads", threads}};
      a.strings = {{"Mode", distributed_ ? "distributed" : "replicated"},
                   {"strategy", strategy.name()},
                   {"layout", "G4[K1][K2][K3][re,im], K = kx + Lx*ky + Lx*Ly*w"},
                   {"parameters", plexus::to_xml(ctx.parameters ? *ctx.parameters : sublist_)}};
      plexus::g4::write_hdf5(comm, output_, m, mine_data, mine, a);
    }
    if (rank == 0 && !ctx.quiet) plexus::log().info("g4: wrote G4 to '{}'", output_);
  }

  // ---- figures and reports (identical on every rank) -------------------------------------------
  double maxes[8] = {double(storage_bytes), double(peak_accumulate),
                     double(peak_run),      double(peak_buffers),
                     accumulate_seconds,    reduce_seconds,
                     write_seconds,         double(reduce_traffic.counts(mpi::Role::Other).bytes_sent)};
  mpi::check(MPI_Allreduce(MPI_IN_PLACE, maxes, 8, MPI_DOUBLE, MPI_MAX, comm), "MPI_Allreduce");
  auto& f = result.figures;
  f["N"] = m.n();
  f["g4_elements"] = double(total);
  f["storage_bytes_per_rank"] = maxes[0];
  f["peak_memory_per_rank"] = maxes[2];
  f["peak_memory_accumulate_per_rank"] = maxes[1];
  f["peak_buffer_per_rank"] = maxes[3];
  f["seconds_per_measurement"] = maxes[4] / M;
  f["accumulate_seconds"] = maxes[4];
  f["reduce_seconds"] = maxes[5];
  f["write_seconds"] = maxes[6];
  f["reduce_bytes_sent_per_rank"] = maxes[7];
  f["measurements_total"] = double(M) * threads * P;
  f["threads"] = threads;
  f["sub_ring_size"] = distributed_ ? S : 0;
  f["rings"] = distributed_ ? rings : 0;

  const double flops = double(threads) * plexus::g4::kFlopsPerElement * double(distributed_ ? slice.size() * S : total);
  plexus::MultiplyReport step;  // what every measurement's report says beyond its time and traffic
  step.strategy = strategy.name();
  step.kernel = ctx.context->kernel().name();
  step.ticks = distributed_ ? S : 1;
  step.flops = flops;
  step.peak_buffer_bytes = peak_buffers;
  step.peak_memory_bytes = peak_accumulate;
  keep_steps(result, step, per, every);
  record_operations(*ctx.context, {&m, M, distributed_, slice, ring, rings}, per, every, reduce_traffic,
                    reduce_seconds);
  result.operations = scope.take();
  if (rank == 0 && !ctx.quiet)
    plexus::log().info(
        "g4: {:.4g} s per measurement, G4 storage {} per rank, peak tracked memory {} per rank; |G4|_1 = {:.10g}, "
        "|G4|_2 = {:.10g}",
        f["seconds_per_measurement"], bytes_text(maxes[0]), bytes_text(maxes[2]), f["g4_l1_norm"], f["g4_l2_norm"]);

  if (result_matrix_)
    result.result = plexus::g4::result_matrix(*ctx.context, m, distributed_, held,
                                              distributed_ ? slice : Slice{0, total}, writer_of, S);
  return result;
}

// The self-check (g4/Check): the part of G4 this rank answers for (`mine`, at mine_data),
// recomputed from every rank's, thread's and measurement's G; the relative errors go into the
// result's figures, and an error above g4/Tolerance throws on every rank. Collective.
void G4Solver::check_against_recomputation(const plexus::SolverContext& ctx, int threads, const std::vector<int>& minus,
                                           const double* mine_data, Slice mine, plexus::SolverResult& result) const {
  const MPI_Comm comm = ctx.context->comm();
  const int rank = mpi::rank(comm), P = mpi::size(comm);
  const Model& m = model_;
  const int M = measurements_;
  const std::int64_t buffer_doubles = m.buffer_doubles();
  std::vector<double> ref(static_cast<std::size_t>(2 * mine.size()), 0.0), g(static_cast<std::size_t>(buffer_doubles));
  if (mine.size() > 0)
    for (int r = 0; r < P; ++r)
      for (int t = 0; t < threads; ++t)
        for (int i = 0; i < M; ++i) {
          plexus::g4::generate(m, static_cast<std::uint64_t>(seed_), r, t, i, g.data());
          plexus::g4::accumulate(m, minus.data(), g.data(), mine.begin, mine.end, ref.data());
        }
  plexus::g4::ErrorSums e;
  e.add(ref.data(), mine_data, mine.size());
  double es[4] = {e.diff_l1, e.diff_l2sq, e.ref_l1, e.ref_l2sq};
  mpi::check(MPI_Allreduce(MPI_IN_PLACE, es, 4, MPI_DOUBLE, MPI_SUM, comm), "MPI_Allreduce");
  e = {es[0], es[1], es[2], es[3]};
  result.figures["check_l1_error"] = e.l1();
  result.figures["check_l2_error"] = e.l2();
  if (!(e.l1() <= tolerance_ && e.l2() <= tolerance_))
    throw Error("g4/Check", "g4: G4 differs from its recomputation: L1 relative error " + std::to_string(e.l1()) +
                                ", L2 " + std::to_string(e.l2()) + " (tolerance " + std::to_string(tolerance_) + ")");
  if (rank == 0 && !ctx.quiet)
    plexus::log().info("g4: check against a recomputation: L1 relative error {:.3e}, L2 {:.3e}", e.l1(), e.l2());
}

plexus::ParameterListPtr valid_parameters() {
  auto v = Teuchos::rcp(new plexus::ParameterList("g4"));
  const int imax = std::numeric_limits<int>::max();
  plexus::declare_int(*v, "Lx", 4, "cluster extent in x: momenta kx = 0..Lx-1, periodic", 1, kMaxN);
  plexus::declare_int(*v, "Ly", 4, "cluster extent in y: momenta ky = 0..Ly-1, periodic", 1, kMaxN);
  plexus::declare_int(*v, "Nw", 4, "number of (periodic) frequencies w; N = Lx*Ly*Nw, G4 holds N^3 complex numbers", 1,
                      kMaxN);
  plexus::declare_int(*v, "Measurements", 10, "measurements per rank and per thread", 1, imax);
  plexus::declare_choice(*v, "Mode", "distributed", {"replicated", "distributed"},
                         "replicated: every rank holds all of G4 (summed over ranks at the end); distributed: every "
                         "rank of a (sub-)ring holds one slice, the G's circulate (PASC'21)");
  plexus::declare_int(*v, "Seed", 1, "seed of the generated G's (with rank, thread and measurement index)", 0, imax);
  plexus::declare_string(*v, "OutputFile", "",
                         "write G4 to this HDF5 file (parallel, one dataset 'G4'; empty: no output)");
  plexus::declare_bool(*v, "Check", false,
                       "recompute every rank's part of G4 from all measurements and compare (doubles the work)");
  plexus::declare_double(*v, "Tolerance", 5e-7, "largest L1/L2 relative error Check accepts", 0.0,
                         std::numeric_limits<double>::max());
  plexus::declare_bool(
      *v, "ResultMatrix", true,
      "return G4 as a distributed matrix (N rows of 2N^2 doubles) so plexus compare can check results; "
      "one more copy of G4 spread over the ranks, made after the figures are taken");
  return v;
}

const plexus::PluginDescriptor& describe() {
  static const plexus::PluginDescriptor d = [] {
    plexus::PluginDescriptor p;
    p.name = "solver_g4";
    p.version = "0.1.0";
    plexus::ComponentDescriptor c;
    c.kind = plexus::ComponentKind::Solver;
    c.name = "g4";
    c.summary =
        "DCA++'s two-particle accumulator G4 (PASC'21): replicated or distributed over (sub-)rings through "
        "circulate; figures: norms, storage and peak memory per rank; HDF5 output";
    c.valid_parameters = valid_parameters;
    c.make_solver = [](const plexus::ParameterList& p) -> std::unique_ptr<plexus::Solver> {
      return std::make_unique<G4Solver>(p);
    };
    p.components.push_back(std::move(c));
    return p;
  }();
  return d;
}

}  // namespace

PLEXUS_PLUGIN(describe)
