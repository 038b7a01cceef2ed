// What the g4 solver counts and reports (g4_accounting.hpp).
#include "g4_accounting.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

namespace plexus::g4 {

namespace {

// The model's figures of `spec.operation` run over data staged as staged() does it, summed.
std::map<std::string, double> staged_model(const Collectives& c, CollectiveSpec spec, std::int64_t mine,
                                           std::int64_t uniform) {
  std::map<std::string, double> sum;
  const std::int64_t calls = (uniform + kStage - 1) / kStage;
  for (std::int64_t k = 0; k < calls; ++k) {
    spec.values = std::min(mine, (k + 1) * kStage) - std::min(mine, k * kStage);
    for (const auto& [name, v] : c.model(spec)) sum[name] += v;
  }
  return sum;
}

}  // namespace

void staged(double* data, std::int64_t mine, std::int64_t uniform,
            const std::function<void(std::vector<double>&)>& op) {
  const std::int64_t calls = (uniform + kStage - 1) / kStage;
  std::vector<double> stage;
  for (std::int64_t c = 0; c < calls; ++c) {
    const std::int64_t a = std::min(mine, c * kStage), b = std::min(mine, (c + 1) * kStage);
    stage.assign(data + a, data + b);
    op(stage);
    std::copy(stage.begin(), stage.begin() + (b - a), data + a);
  }
}

void keep_steps(SolverResult& result, const MultiplyReport& step, const std::vector<ThreadMeasurements>& per,
                bool every) {
  const int M = per.empty() ? 0 : static_cast<int>(per.front().seconds.size());
  if (every) {
    for (int i = 0; i < M; ++i) {
      MultiplyReport r = step;
      r.seconds = ThreadMeasurements::seconds_of(per, i);
      for (const ThreadMeasurements& tm : per)
        for (int k = 0; k < mpi::kRoles; ++k)
          r.traffic[static_cast<std::size_t>(k)] +=
              tm.traffic[static_cast<std::size_t>(i)][static_cast<std::size_t>(k)];
      result.reports.push_back(std::move(r));
    }
    return;
  }
  StepTotals& steps = result.step_totals;
  steps.sum = step;
  steps.sum.flops = step.flops * M;
  for (int i = 0; i < M; ++i) {
    const double seconds = ThreadMeasurements::seconds_of(per, i);
    steps.seconds.push_back(seconds);
    steps.beyond.push_back(seconds - ThreadMeasurements::wait_of(per, i));
    steps.sum.seconds += seconds;
  }
  for (const ThreadMeasurements& tm : per)
    for (int k = 0; k < mpi::kRoles; ++k)
      steps.sum.traffic[static_cast<std::size_t>(k)] += tm.total[static_cast<std::size_t>(k)];
}

void record_operations(Context& ctx, const RunShape& run, const std::vector<ThreadMeasurements>& per, bool every,
                       const mpi::Traffic& reduce_traffic, double reduce_seconds) {
  const Model& model = *run.model;
  const int measurements = run.measurements;
  const bool distributed = run.distributed;
  const Slice slice = run.slice;
  const Collectives::RingPosition ring = run.ring;
  const int rings = run.rings;
  const Collectives& coll = ctx.collectives();
  const int P = ctx.size(), rank = ctx.rank();
  const auto threads = static_cast<int>(per.size());
  const std::int64_t total = model.elements();
  // One operation a measurement (Every), or one that stands for all of them (Totals: what the
  // context's totals add up to from those).
  const int ops = every ? measurements : 1;
  const double per_op = every ? 1.0 : static_cast<double>(measurements);
  for (int i = 0; i < ops; ++i) {
    OperationReport op;
    op.operation = distributed ? "circulate" : "accumulate";
    op.component = distributed ? coll.name() : "g4";
    op.count = every ? 1 : measurements;
    for (int j = every ? i : 0; j < (every ? i + 1 : measurements); ++j)
      op.seconds += ThreadMeasurements::seconds_of(per, j);
    for (const ThreadMeasurements& tm : per)
      for (int k = 0; k < mpi::kRoles; ++k)
        op.traffic[static_cast<std::size_t>(k)] +=
            every ? tm.traffic[static_cast<std::size_t>(i)][static_cast<std::size_t>(k)]
                  : tm.total[static_cast<std::size_t>(k)];
    if (distributed)
      for (const auto& [name, v] : coll.model({"circulate", model.buffer_doubles(), ring.size, ring.position, 0}))
        op.predicted[name] = per_op * threads * v;
    op.extra["threads"] = per_op * threads;
    ctx.record(std::move(op));
  }
  OperationReport red;
  red.operation = distributed ? "reduce_across_rings" : "allreduce";
  red.component = coll.name();
  red.seconds = reduce_seconds;
  red.traffic = reduce_traffic.all_counts();
  if (distributed && rings > 1)
    red.predicted = staged_model(coll, {"reduce_across_rings", 0, rings, rank / ring.size, 0}, 2 * slice.size(),
                                 2 * g4::max_slice(total, ring.size));
  else if (!distributed && P > 1)
    red.predicted = staged_model(coll, {"allreduce", 0, P, rank, 0}, 2 * total, 2 * total);
  ctx.record(std::move(red));
}

}  // namespace plexus::g4
