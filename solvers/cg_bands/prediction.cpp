#include "prediction.hpp"

#include <algorithm>

namespace plexus::cg_bands {

Prediction predict_sweep(const logp::Parameters& p, int ranks, const SweepRecord& sweep, double bytes_per_pair) {
  Prediction out;
  for (const auto& [bytes, calls] : sweep.allreduce_sizes)
    out.allreduce_seconds += static_cast<double>(calls) * logp::allreduce_seconds(p, ranks, static_cast<double>(bytes));
  out.alltoall_seconds = static_cast<double>(sweep.alltoalls) * logp::alltoall_seconds(p, ranks, bytes_per_pair);
  return out;
}

double sweep_seconds_at(const logp::Parameters& p, int ranks, int measured_ranks, const SweepRecord& sweep,
                        double transpose_bytes, double compute_seconds) {
  const double r = ranks;
  return compute_seconds * measured_ranks / r + predict_sweep(p, ranks, sweep, transpose_bytes / (r * r)).total();
}

Saturation saturation(const logp::Parameters& p, int measured_ranks, const SweepRecord& sweep, double transpose_bytes,
                      double compute_seconds, int max_ranks) {
  Saturation best;
  best.seconds = sweep_seconds_at(p, 1, measured_ranks, sweep, transpose_bytes, compute_seconds);
  for (int r = 2; r <= std::max(1, max_ranks); ++r) {
    const double t = sweep_seconds_at(p, r, measured_ranks, sweep, transpose_bytes, compute_seconds);
    if (t < best.seconds) best = {r, t};
  }
  return best;
}

}  // namespace plexus::cg_bands
