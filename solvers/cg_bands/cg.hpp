#pragma once
// Band-by-band preconditioned conjugate gradient (Teter, Payne and Allan, PRB 40, 12255 (1989);
// Payne et al., RMP 64, 1045 (1992), Eqs. 5.8-5.30; Hoefler, Rehm and Janisch's Eqs. 11-18) on
// plane-wave coefficients distributed over the ranks. Every dot product is an allreduce through
// the run's collectives; xSCAL and xAXPY are local. One sweep takes `lines` line minimisations of
// every band in turn, then a Rayleigh-Ritz rotation of the bands (the subspace diagonalisation
// band-by-band CG needs, since each band is only kept orthogonal to the others).
//
// One line minimisation of band i (psi normalised, H psi known):
//    1  lambda = <psi|H psi>                        (allreduce 1)
//       zeta = -(H - lambda) psi; zeta' = zeta - sum_j <psi_j|zeta> psi_j      (nband allreduces)
//    2  |zeta'|^2: the band's residual               (allreduce 2)
//    3  E_kin = <psi|T|psi>                          (allreduce 3)
//       eta = K zeta', K the Teter polynomial of x = |k+G|^2 / E_kin
//       eta' = eta - sum_j <psi_j|eta> psi_j                               (nband allreduces)
//    4  <eta'|zeta'>; phi = eta' + gamma phi_prev, gamma the ratio to the previous line's
//    5  <psi|phi>; phi' = phi - <psi|phi> psi
//    6  |phi'|^2; phi'' = phi' / |phi'|
//       H phi''                                      (two all-to-alls)
//    7  Re <psi|H|phi''>   8  <phi''|H|phi''>: theta minimising E(psi cos theta + phi'' sin theta)
//    9  |psi_new|^2: renormalise psi and H psi
// = 9 + 2 nband allreduces of one value each (the paper's Eq. 24 per band and line); with
// `batch` the 2 nband projections are two allreduces of nband values each (9 + 2 in all).
#include <mpi.h>

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "hamiltonian.hpp"
#include "plexus/collectives.hpp"

namespace plexus::cg_bands {

struct CgOptions {
  int bands = 0;
  double tolerance = 1e-6;  ///< every band's |H psi - lambda psi| below it (Ry)
  int max_sweeps = 100;
  int lines = 1;           ///< line minimisations per band and sweep
  bool batch = false;      ///< BatchReductions
  std::uint64_t seed = 1;  ///< the starting vectors (the same on any rank count)
  bool quiet = false;      ///< no progress lines
  bool throw_on_no_convergence = true;
};

/// What a sweep did on this rank (every rank has the same counts; times are this rank's).
struct SweepRecord {
  int sweep = 0;
  double max_residual = 0;
  double seconds = 0;
  double allreduce_seconds = 0;       ///< posting to completion of every allreduce
  double alltoall_seconds = 0;        ///< of the FFT's all-to-alls
  double fft_seconds = 0;             ///< local transforms and packing
  std::int64_t cg_allreduces = 0;     ///< those of the line minimisations (Eq. 24)
  std::int64_t other_allreduces = 0;  ///< Rayleigh-Ritz and the residual check
  std::int64_t alltoalls = 0;
  /// Allreduce calls by message size in bytes (every call of the sweep).
  std::map<std::int64_t, std::int64_t> allreduce_sizes;
  std::int64_t bytes_sent = 0, bytes_received = 0;
};

struct CgResult {
  std::vector<double> eigenvalues;  ///< Ry, ascending
  std::vector<double> residuals;    ///< |H psi - lambda psi| of each band, H psi recomputed at the end
  double orthonormality_error = 0;  ///< max |<psi_i|psi_j> - delta_ij|
  int sweeps = 0;
  bool converged = false;
  std::vector<SweepRecord> history;
};

/// The bands and their H psi on this rank. Coefficients band-major: band b's local coefficients
/// are [b * n, (b + 1) * n), n = h.local_size().
class BandSolver {
 public:
  /// comm: the ranks of the dot products (the same ranks as h's FFT, its own communicator).
  BandSolver(Hamiltonian& h, const std::vector<int>& basis_indices, MPI_Comm comm, Collectives& collectives,
             CgOptions options);

  /// Runs sweeps until convergence (or max_sweeps: an Error naming the residuals, unless
  /// options.throw_on_no_convergence is false). Collective.
  CgResult solve();

  std::span<const cplx> band(int b) const;
  int bands() const { return options_.bands; }
  /// Everything the solver and its FFT sent and received so far (role Other).
  const mpi::Traffic& traffic() const { return traffic_; }

 private:
  struct Counts;
  void line(int i, bool first_line, Counts& c);
  void rayleigh_ritz(Counts& c, std::vector<double>& eigenvalues);
  std::vector<double> residuals(const std::vector<double>& eigenvalues, Counts& c);
  void project_out(std::span<cplx> v, Counts& c);
  double real_sum(double local, Counts& c, bool cg);
  cplx complex_sum(cplx local, Counts& c, bool cg);
  void sum(std::span<double> values, Counts& c, bool cg);
  std::span<cplx> band_(std::vector<cplx>& v, int b);

  Hamiltonian& h_;
  MPI_Comm comm_;
  Collectives& collectives_;
  CgOptions options_;
  std::size_t n_ = 0;
  std::vector<cplx> psi_, hpsi_;
  std::vector<cplx> zeta_, eta_, phi_, hphi_, work_;
  std::vector<cplx> previous_direction_;
  double previous_gamma_numerator_ = 0;
  mpi::Traffic traffic_;
};

}  // namespace plexus::cg_bands
