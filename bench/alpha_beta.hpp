#pragma once
// The alpha-beta (latency-bandwidth) model of one message, t = alpha + beta n, measured by a
// ping-pong between two ranks and fitted by least squares; shared by plexus-nboverlap-bench and
// plexus-symmcube-bench.
//
// Ping-pong: for every size from min_bytes to max_bytes (doubling), warmup + reps repetitions,
// each after a sleepy barrier of MPI_COMM_WORLD and made of enough round trips to move 1 MiB (at
// least 1, at most 100); one-way time = round trip / 2, its median over the counted repetitions
// is the point. Two fits: ordinary (absolute residuals: the large messages decide) and relative
// (residuals divided by t: every size counts alike). The model uses the relative fit.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "bench_util.hpp"

namespace plexus::bench {

/// Least squares of t = alpha + beta n, residuals weighted by w; {alpha, beta}.
inline std::pair<double, double> fit(const std::vector<double>& n, const std::vector<double>& t,
                                     const std::vector<double>& w) {
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const double ww = w[i] * w[i];
    sw += ww;
    sx += ww * n[i];
    sy += ww * t[i];
    sxx += ww * n[i] * n[i];
    sxy += ww * n[i] * t[i];
  }
  const double d = sw * sxx - sx * sx;
  if (d == 0) return {0, 0};
  const double beta = (sw * sxy - sx * sy) / d;
  return {(sy - beta * sx) / sw, beta};
}

/// alpha (seconds per message) and beta (seconds per byte); known once measured.
struct AlphaBeta {
  double alpha = 0, beta = 0;
  bool known = false;
  double p2p(double n) const { return alpha + beta * n; }
};

struct PingPongSettings {
  int rank_a = 0, rank_b = 1;  ///< the two ranks of MPI_COMM_WORLD that exchange the messages
  std::int64_t min_bytes = 8, max_bytes = 16 << 20;
  int reps = 20, warmup = 3;
  int poll_us = 1000;          ///< the other ranks wait in sleepy_barrier
  std::string tag = "bench";   ///< progress lines "[tag   t s] ping-pong ..." on stderr (rank 0)
  double t_start = 0;          ///< MPI_Wtime() the progress times count from
};

/// Runs the ping-pong on every rank of MPI_COMM_WORLD (collective) and returns, on rank 0, the
/// JSON of the points and both fits (null elsewhere); every rank gets the relative fit in `model`.
inline json pingpong(const PingPongSettings& s, AlphaBeta& model) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::vector<std::int64_t> sizes = doubling(s.min_bytes, s.max_bytes);
  const int a = s.rank_a, b = s.rank_b;
  const bool me_a = rank == a, me_b = rank == b;
  std::vector<char> msg(static_cast<std::size_t>(s.max_bytes), 1);
  json points = json::array();
  std::vector<double> xs, ts;
  for (std::size_t si = 0; si < sizes.size(); ++si) {
    const std::int64_t n = sizes[si];
    // Enough round trips per repetition to time small messages: at least 1 MiB or 100 trips.
    const int trips = static_cast<int>(std::clamp<std::int64_t>((1 << 20) / n, 1, 100));
    std::vector<double> one_way;
    for (int r = -s.warmup; r < s.reps; ++r) {
      sleepy_barrier(MPI_COMM_WORLD, s.poll_us);
      if (!me_a && !me_b) continue;
      const double t0 = MPI_Wtime();
      for (int k = 0; k < trips; ++k) {
        if (me_a) {
          MPI_Send(msg.data(), static_cast<int>(n), MPI_BYTE, b, 7, MPI_COMM_WORLD);
          MPI_Recv(msg.data(), static_cast<int>(n), MPI_BYTE, b, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
          MPI_Recv(msg.data(), static_cast<int>(n), MPI_BYTE, a, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          MPI_Send(msg.data(), static_cast<int>(n), MPI_BYTE, a, 7, MPI_COMM_WORLD);
        }
      }
      if (r >= 0) one_way.push_back((MPI_Wtime() - t0) / (2.0 * trips));
    }
    if (rank == 0) {
      const Stats st = stats_of(one_way);
      points.push_back({{"bytes", n},
                        {"round_trips_per_repetition", trips},
                        {"one_way_seconds_min", st.min},
                        {"one_way_seconds_median", st.median},
                        {"one_way_seconds_mean", st.mean},
                        {"bandwidth_bytes_per_second_median", number(double(n) / st.median)}});
      xs.push_back(double(n));
      ts.push_back(st.median);
      if (si + 1 == sizes.size() || n >= (1 << 20))
        std::fprintf(stderr, "[%s %6.1f s] ping-pong %s: %.3g us one way\n", s.tag.c_str(), MPI_Wtime() - s.t_start,
                     human(n).c_str(), st.median * 1e6);
    }
  }
  json out;
  if (rank == 0) {
    const auto [a_abs, b_abs] = fit(xs, ts, std::vector<double>(xs.size(), 1.0));
    std::vector<double> w(ts.size());
    for (std::size_t i = 0; i < ts.size(); ++i) w[i] = 1.0 / ts[i];
    const auto [a_rel, b_rel] = fit(xs, ts, w);
    model.alpha = a_rel;
    model.beta = b_rel;
    model.known = true;
    double worst = 0;
    for (std::size_t i = 0; i < xs.size(); ++i)
      worst = std::max(worst, std::fabs(a_rel + b_rel * xs[i] - ts[i]) / ts[i]);
    out = {{"ranks", {a, b}},
           {"note", "one-way time = round trip / 2, median over the repetitions; the model uses the relative fit"},
           {"points", points},
           {"fit_ordinary", {{"alpha_seconds", a_abs}, {"beta_seconds_per_byte", b_abs},
                             {"bandwidth_bytes_per_second", number(1.0 / b_abs)}}},
           {"fit_relative", {{"alpha_seconds", a_rel}, {"beta_seconds_per_byte", b_rel},
                             {"bandwidth_bytes_per_second", number(1.0 / b_rel)},
                             {"max_relative_residual", worst}}},
           {"alpha_seconds", a_rel},
           {"beta_seconds_per_byte", b_rel}};
  }
  // Every rank learns the model (only rank 0 uses it, but keep the ranks alike).
  double ab[2] = {model.alpha, model.beta};
  MPI_Bcast(ab, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  model.alpha = ab[0];
  model.beta = ab[1];
  model.known = true;
  return out;
}

}  // namespace plexus::bench
