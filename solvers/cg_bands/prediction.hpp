#pragma once
// The LogGP prediction of a sweep's communication (Hoefler, Rehm and Janisch's Eqs. 22-24, 26 as
// docs/cg_bands.md derives them): every allreduce of the sweep at t_red(P, its bytes), every
// all-to-all of the FFT at t_a2a(P, bytes per pair); and the rank count at which a sweep is
// fastest when the computation shrinks as 1/P and the communication does not.
#include "cg.hpp"
#include "plexus/logp.hpp"

namespace plexus::cg_bands {

struct Prediction {
  double allreduce_seconds = 0;
  double alltoall_seconds = 0;
  double total() const { return allreduce_seconds + alltoall_seconds; }
};

/// The communication of `sweep` on `ranks` ranks, each all-to-all moving `bytes_per_pair`.
Prediction predict_sweep(const logp::Parameters& p, int ranks, const SweepRecord& sweep, double bytes_per_pair);

/// A sweep as it would take on `ranks` ranks: `compute_seconds` measured on `measured_ranks` ranks
/// scaled by measured_ranks / ranks, the same collectives, and all-to-alls of transpose_bytes /
/// ranks^2 a pair (transpose_bytes = 16 x sticks x Nz: every stick's column, spread over the ranks
/// both as sticks and as planes).
double sweep_seconds_at(const logp::Parameters& p, int ranks, int measured_ranks, const SweepRecord& sweep,
                        double transpose_bytes, double compute_seconds);

/// "Eq. 26": the rank count in [1, max_ranks] with the shortest predicted sweep (the first, if
/// several), and that sweep's time.
struct Saturation {
  int ranks = 1;
  double seconds = 0;
};
Saturation saturation(const logp::Parameters& p, int measured_ranks, const SweepRecord& sweep, double transpose_bytes,
                      double compute_seconds, int max_ranks);

}  // namespace plexus::cg_bands
