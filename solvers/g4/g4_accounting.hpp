#pragma once
// What the g4 solver counts and reports (g4.cpp): each thread's measurements (time, waiting,
// traffic), the solver's steps and the operations it records from them, and the staging of its
// final reduction, whose calls the collectives' model counts alike.
#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "g4_model.hpp"
#include "plexus/collectives.hpp"
#include "plexus/context.hpp"
#include "plexus/mpi.hpp"
#include "plexus/solver.hpp"

namespace plexus::g4 {

/// What one thread keeps of its measurements: each one's seconds and waiting time, and its traffic:
/// each measurement's (StepDetail::Every), or only their sum (Totals: 16 bytes a measurement).
struct ThreadMeasurements {
  std::vector<double> seconds, wait;
  std::vector<std::array<mpi::RoleCounts, mpi::kRoles>> traffic;  // Every: per measurement
  std::array<mpi::RoleCounts, mpi::kRoles> total{};               // all measurements
  ThreadMeasurements(int measurements, bool every)
      : seconds(static_cast<std::size_t>(measurements), 0.0),
        wait(static_cast<std::size_t>(measurements), 0.0),
        traffic(every ? static_cast<std::size_t>(measurements) : 0) {}
  /// Measurement i's seconds (the slowest thread's) and waits (all threads'), over the threads.
  static double seconds_of(const std::vector<ThreadMeasurements>& per, int i) {
    double s = 0;
    for (const auto& t : per) s = std::max(s, t.seconds[static_cast<std::size_t>(i)]);
    return s;
  }
  static double wait_of(const std::vector<ThreadMeasurements>& per, int i) {
    double w = 0;
    for (const auto& t : per) w += t.wait[static_cast<std::size_t>(i)];
    return w;
  }
};

/// The measurements as the solver's steps. `step` holds what every measurement's report says
/// besides its time and traffic (one measurement's flops). Every: one report a measurement
/// (SolverResult::reports); Totals: each one's seconds and the sum of all (SolverResult::step_totals,
/// as StepTotals::add would make them).
void keep_steps(SolverResult& result, const MultiplyReport& step, const std::vector<ThreadMeasurements>& per,
                bool every);

/// What the run's operations tell of the run: its model and measurements (per thread), its mode,
/// and in distributed mode this rank's slice, ring position and the number of rings.
struct RunShape {
  const Model* model = nullptr;
  int measurements = 0;
  bool distributed = false;
  Slice slice;
  Collectives::RingPosition ring;
  int rings = 1;
};

/// The run's operations in the context's log, each with the collectives' model: per measurement
/// its circulate (distributed; all threads together) or its local accumulation (replicated), or
/// one standing for all of them (every = false), then the final reduction.
void record_operations(Context& ctx, const RunShape& run, const std::vector<ThreadMeasurements>& per, bool every,
                       const mpi::Traffic& reduce_traffic, double reduce_seconds);

/// Applies a reduction `op` (which takes a std::vector<double>, as the strategy interface does) to
/// data[0, mine) in calls of at most kStage doubles through one staging vector. Every rank makes
/// `ceil(uniform / kStage)` calls (uniform: the same on every rank), so collective calls match even
/// where `mine` differs by an element; the last calls may be short or empty.
inline constexpr std::int64_t kStage = std::int64_t{1} << 20;  // doubles per reduction call (8 MiB)
void staged(double* data, std::int64_t mine, std::int64_t uniform, const std::function<void(std::vector<double>&)>& op);

}  // namespace plexus::g4
