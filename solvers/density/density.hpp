#pragma once
// What the density-matrix solvers (sign, purification) share: the iteration bookkeeping, spectral
// bounds, the inverse square root of S by Newton-Schulz, the matrix sign function, the
// purification iterations, and the common set-up (orthogonalisation) and outputs. Every step
// runs through the matrix API (plexus/algebra.hpp) on the run's context, so on any multiply
// algorithm and kernel.
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "plexus/algebra.hpp"
#include "plexus/context.hpp"
#include "plexus/matrix.hpp"
#include "plexus/parameters.hpp"
#include "plexus/problem.hpp"
#include "plexus/solver.hpp"
#include "plexus/timers.hpp"

namespace plexus::density {

/// The options every iteration takes.
struct IterationOptions {
  double filter_eps = 0;  ///< on the fly in every multiply and on every iterate (0: none)
  double tolerance = 1e-9;  ///< convergence: ||X^2 - I||_F / sqrt(n) below it
  int max_iterations = 100;
  bool keep_unconverged = false;  ///< no convergence: warn and go on with the last iterate
  bool quiet = false;             ///< no progress lines
  std::string solver = "sign";    ///< the sublist errors name (sign/MaxIterations, ...)
  /// sign() only: the number of levels below mu wanted (NaN: none). The iteration then stops as
  /// soon as the number of X's negative eigenvalues lies certainly above or below it
  /// (SignResult::side), converged or not.
  double count_target = std::numeric_limits<double>::quiet_NaN();
};

/// The record of a solve: every multiply's report and one row of figures per iteration.
struct Trace {
  std::vector<MultiplyReport> reports;
  std::vector<std::map<std::string, double>> history;
};

/// An iteration's convergence measure didn't fall below the tolerance in time (or diverged).
struct NoConvergence {
  std::string what;
  int iterations = 0;
  double residual = 0;
};

/// Spectral bounds of a symmetric matrix.
struct Bounds {
  double min = 0, max = 0;
};

/// Gershgorin's bounds: every eigenvalue lies in [min_i (a_ii - r_i), max_i (a_ii + r_i)], r_i the
/// off-diagonal absolute row sum. Collective.
Bounds gershgorin(Context& ctx, const DistMatrix& X);

/// ||X - X^T||_F / ||X||_F (0 for a zero matrix). Collective, counted.
double asymmetry(Context& ctx, const DistMatrix& X);

/// Z = S^{-1/2} and Y = S^{1/2} by Higham's coupled Newton-Schulz iteration
/// (Y0 = S/c, Z0 = I, T = 3I - Z Y, Y <- Y T / 2, Z <- T Z / 2; c a bound of S's spectrum).
struct InverseSqrt {
  std::shared_ptr<DistMatrix> inv_sqrt, sqrt;
  int iterations = 0;
  double residual = 0;  ///< ||I - Z Y||_F / sqrt(n) of the last check
};
/// Throws InputError when S is not positive definite (a bound or the iteration shows it).
InverseSqrt inverse_sqrt(Context& ctx, const DistMatrix& S, const IterationOptions& o, Trace& rec);

/// sign(K - mu I) by the Newton-Schulz sign iteration of order 2 (X <- X (3I - X^2)/2) or 3
/// (X <- X (15I - 10X^2 + 3X^4)/8) from X0 = (K - mu I)/b, b a bound of |K - mu I|'s spectrum.
struct SignResult {
  std::shared_ptr<DistMatrix> x;
  int iterations = 0;
  double residual = 0;  ///< ||X^2 - I||_F / sqrt(n) of the last check
  bool converged = false;
  /// With IterationOptions::count_target: +1 where more levels than it lie below mu, -1 where
  /// fewer, found before convergence (x is then the iterate at that point); 0 otherwise.
  int side = 0;
};
SignResult sign(Context& ctx, const DistMatrix& K, double mu, const Bounds& bounds, int order,
                const IterationOptions& o, Trace& rec, const std::string& label = "sign");

/// The purification methods on an orthogonalised F (occupied: `occupied` lowest levels; mu for
/// McWeeny's grand-canonical one).
enum class Purification { Canonical, Trs4, McWeeny };
struct PurifyResult {
  std::shared_ptr<DistMatrix> d;  ///< the density matrix in the orthogonal basis
  int iterations = 0;
  double residual = 0;  ///< 4 ||D^2 - D||_F / sqrt(n) (the sign iteration's measure, X = I - 2D)
  bool converged = false;
  int fused = 0;  ///< iterations whose D^2 and D^3 came from the algorithm's fused operation
  /// The chemical potential the iteration found: the level its polynomials map to 1/2 (inside
  /// the gap once converged; McWeeny's is the mu it was given).
  double mu = 0;
};
PurifyResult purify(Context& ctx, const DistMatrix& F, Purification method, double occupied, double mu,
                    const Bounds& bounds, const IterationOptions& o, Trace& rec);

/// The parameters both solvers declare (FilterEps, Tolerance, MaxIterations, Electrons, Mu,
/// KeepUnconverged, OutputFile).
void declare_common(ParameterList& valid);

/// The common part of a solver's settings, read from its validated sublist.
struct Settings {
  IterationOptions iteration;
  int electrons = 0;  ///< 0: not given
  bool mu_given = false;
  double mu = 0;
  std::string output;  ///< P's Matrix Market file (empty: none)
  std::string solver;  ///< "sign" or "purification": the sublist that names are reported under
  std::int64_t n = 0;  ///< the dimension, once the problem is read (orthogonalise sets it)
  static Settings from(const ParameterList& p, const std::string& solver);
  /// Every level occupied (Electrons = 2n, no Mu): D = I and P = S^-1, no iteration needed.
  bool full() const { return !mu_given && n > 0 && electrons == 2 * n; }
};

/// The identity with X's layout and distribution.
std::shared_ptr<DistMatrix> identity(Context& ctx, const DistMatrix& like_this);

/// The problem after set-up: H, S, the orthogonalisation and the orthogonalised K = Z H Z.
struct Orthogonal {
  std::shared_ptr<DistMatrix> h, s;   ///< s null: orthogonal basis
  std::shared_ptr<DistMatrix> z;      ///< S^{-1/2}, null when s is
  std::shared_ptr<DistMatrix> k;      ///< Z H Z (H itself when s is null)
  Bounds bounds;                      ///< of K
  std::int64_t n = 0;
  double read_seconds = 0;  ///< reading and checking H and S (this rank): the phase "density: read"
  /// The phase "density: solve", begun when reading ended; finish() stops it (solve_seconds).
  std::unique_ptr<timers::Scoped> solve;
};
/// Reads the problem, checks H and S (square, symmetric, the electron count), computes S^{-1/2}
/// and K. Collective; bad input throws InputError naming the parameter.
Orthogonal orthogonalise(Context& ctx, const ParameterList& problem, Settings& s, Trace& rec);

/// What a density solver's run begins with: the context, the scope of its operations, the run's settings
/// (quiet as the caller asks), the record of the run, and the orthogonalised problem (its history
/// rows marked stage 1). Collective, as orthogonalise.
struct Start {
  Start(SolverContext& sc, const Settings& settings);
  Context& ctx;
  LogScope scope;
  Settings s;
  Trace rec;
  Orthogonal o;
};

/// Solver::check of a density solver: its OutputFile, checked by rank 0 before any work.
void check_output(const Context& ctx, const Settings& s);

/// P = Z D Z (D itself in an orthogonal basis), filtered; then the figures (energy = 2 Tr(P H),
/// trace_PS, idempotency_error = ||P S P - P||_F, occupancy; read_seconds, solve_seconds,
/// multiply_seconds and overhead_fraction, the solve's time outside its multiplies, each the
/// maximum over ranks), P written when asked; fills `result` (its result matrix, reports,
/// history, figures).
void finish(Context& ctx, const Orthogonal& o, const DistMatrix& d_orthogonal, const Settings& s, Trace& rec,
            SolverResult& result);

/// Rank 0 logs unless quiet.
bool speaks(const Context& ctx, const IterationOptions& o);

}  // namespace plexus::density
