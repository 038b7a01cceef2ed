// The density-matrix solvers' shared parts (see density.hpp): S^-1/2, the sign iteration, the
// set-up in the orthogonal basis and the outputs (purification: purify.cpp).
#include "density.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "iteration.hpp"
#include "plexus/error.hpp"
#include "plexus/log.hpp"
#include "plexus/matrix_market.hpp"
#include "plexus/output.hpp"
#include "plexus/progress.hpp"
#include "plexus/timers.hpp"

namespace plexus::density {

using namespace detail;

bool speaks(const Context& ctx, const IterationOptions& o) { return !o.quiet && ctx.rank() == 0; }

Bounds gershgorin(Context& ctx, const DistMatrix& X) {
  const BlockSizes& rows = X.layout().rows;
  const BlockSizes& cols = X.layout().cols;
  const auto n = static_cast<std::size_t>(rows.total());
  // diag and off-diagonal absolute row sums, summed over the ranks' blocks.
  std::vector<double> sums(2 * n, 0.0);
  const Panel& p = X.local();
  for (int r = 0; r < p.nrows(); ++r) {
    const int br = p.row_id(r);
    const int m = rows.size(br);
    const std::int64_t r0 = rows.offset(br);
    for (std::int64_t b = p.row_begin(r); b < p.row_end(r); ++b) {
      const int bc = p.col(b);
      const int k = cols.size(bc);
      const std::int64_t c0 = cols.offset(bc);
      const double* v = p.data().data() + p.offset(b);
      for (int j = 0; j < k; ++j)
        for (int i = 0; i < m; ++i) {
          const auto gi = static_cast<std::size_t>(r0 + i);
          if (r0 + i == c0 + j)
            sums[gi] += v[i + static_cast<std::size_t>(j) * m];
          else
            sums[n + gi] += std::abs(v[i + static_cast<std::size_t>(j) * m]);
        }
    }
  }
  allreduce(ctx, sums);
  Bounds b{std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()};
  for (std::size_t i = 0; i < n; ++i) {
    b.min = std::min(b.min, sums[i] - sums[n + i]);
    b.max = std::max(b.max, sums[i] + sums[n + i]);
  }
  return b;
}

double asymmetry(Context& ctx, const DistMatrix& X) {
  DistMatrix t = transpose(ctx, X);
  const double nx = norm(ctx, X);
  add(ctx, 1.0, t, -1.0, X);
  return nx > 0 ? norm(ctx, t) / nx : 0.0;
}

InverseSqrt inverse_sqrt(Context& ctx, const DistMatrix& S, const IterationOptions& o, Trace& rec) {
  const double n = static_cast<double>(S.nrows());
  const Bounds b = gershgorin(ctx, S);
  if (!(b.max > 0))
    throw InputError("Problem/FileS", "S is not positive definite: its Gershgorin bounds [" + num(b.min) + ", " +
                                          num(b.max) + "] hold no positive eigenvalue");
  const double c = b.max;
  auto y = std::make_shared<DistMatrix>(copy(ctx, S, "S^1/2"));
  scale(ctx, *y, 1.0 / c);
  auto z = identity_like(ctx, S, "S^-1/2");
  auto t = like(S, "T");
  auto next = like(S, "next");
  InverseSqrt out;
  Convergence conv(n);
  progress::Stage iterations("S^-1/2 iteration", 0);  // the progress line: iterations until converged
  for (int it = 1;; ++it) {
    iterations.done(it - 1);
    IterationLog iter(ctx, rec, "S^-1/2");
    mul(ctx, o, rec, 1.0, *z, *y, *t);  // T = Z Y
    add_on_diag(ctx, *t, -1.0);
    const double r = residual_of_square(ctx, *t, n);  // ||ZY - I|| / sqrt(n)
    // Positive definite S: the eigenvalues of Z Y stay in (0, 1], so this is below 1 throughout.
    if (!std::isfinite(r) || r >= 1.0)
      throw InputError("Problem/FileS", "S is not positive definite: the Newton-Schulz iteration for S^-1/2 diverges "
                                        "(||I - Z Y||_F / sqrt(n) = " + num(r) + " at iteration " +
                                        std::to_string(it) + "; it stays below 1 for a positive definite S)");
    const bool done = conv.reached(r, o);
    // T = 3I - Z Y = 2I - (Z Y - I); the update also follows a converged check (squaring its error).
    scale(ctx, *t, -1.0);
    add_on_diag(ctx, *t, 2.0);
    mul(ctx, o, rec, 0.5, *y, *t, *next);  // Y <- Y T / 2
    std::swap(y, next);
    mul(ctx, o, rec, 0.5, *t, *z, *next);  // Z <- T Z / 2
    std::swap(z, next);                    // Y and Z come filtered from mul(), as every product here
    say_iteration(ctx, o, "S^-1/2", iter.done(it, r, *z));
    out.iterations = it;
    out.residual = r;
    if (ends(ctx, o, done, it, r,
             "the Newton-Schulz iteration for S^-1/2 (S may be singular or nearly so: a tiny eigenvalue converges "
             "last)",
             "S^-1/2"))
      break;
  }
  scale(ctx, *z, 1.0 / std::sqrt(c));
  scale(ctx, *y, std::sqrt(c));
  z->set_name("S^-1/2");
  y->set_name("S^1/2");
  out.inv_sqrt = z;
  out.sqrt = y;
  return out;
}

SignResult sign(Context& ctx, const DistMatrix& K, double mu, const Bounds& bounds, int order,
                const IterationOptions& o, Trace& rec, const std::string& label) {
  PLEXUS_CHECK(order == 2 || order == 3, "sign: order must be 2 or 3");
  const double n = static_cast<double>(K.nrows());
  const double scale_by = std::max(mu - bounds.min, bounds.max - mu);
  PLEXUS_CHECK(scale_by > 0, "sign: empty spectral bounds");
  auto x = std::make_shared<DistMatrix>(copy(ctx, K, "X"));
  add_on_diag(ctx, *x, -mu);
  scale(ctx, *x, 1.0 / scale_by);
  auto x2 = like(K, "X^2");
  auto x4 = like(K, "X^4");
  auto next = like(K, "next");
  SignResult out;
  Convergence conv(n);
  progress::Stage iterations(label + " iteration", 0);  // the progress line: iterations until converged
  for (int it = 1;; ++it) {
    iterations.done(it - 1);
    IterationLog iter(ctx, rec, label);
    mul(ctx, o, rec, 1.0, *x, *x, *x2);
    add_on_diag(ctx, *x2, -1.0);  // X^2 - I
    const double r = residual_of_square(ctx, *x2, n);
    if (!std::isfinite(r))
      throw Error(label, "the sign iteration diverged (residual " + num(r) + " at iteration " + std::to_string(it) + ")");
    const bool done = conv.reached(r, o);
    if (!done && std::isfinite(o.count_target)) {
      // The side of a wanted count, before convergence. Both iterations map [-1, 1] onto itself,
      // monotonically (the derivatives 3(1 - x^2)/2 and 15(1 - x^2)^2/8), and X0's spectrum lies in
      // it: each level keeps its sign. It adds (1 - x)/2 to (n - Tr X)/2 now and 0 or 1 in the
      // end, at most (1 - |x|)/2 <= (1 - x^2)/2 away, and those bounds sum to -Tr(X^2 - I)/2.
      const double count = 0.5 * (n - trace(ctx, *x)), slack = -0.5 * trace(ctx, *x2);
      out.side = count - slack > o.count_target + 0.5 ? 1 : count + slack < o.count_target - 0.5 ? -1 : 0;
      if (out.side != 0) {
        say_iteration(ctx, o, label, iter.done(it, r, *x));
        out.iterations = it;
        out.residual = r;
        break;
      }
    }
    if (order == 2) {
      // X <- X (3I - X^2)/2 = X (2I - (X^2 - I))/2
      scale(ctx, *x2, -1.0);
      add_on_diag(ctx, *x2, 2.0);
      mul(ctx, o, rec, 0.5, *x, *x2, *next);
    } else {
      // X <- X (15I - 10X^2 + 3X^4)/8; with E = X^2 - I: 15 - 10(E+1) + 3(E+1)^2 = 8 - 4E + 3E^2.
      mul(ctx, o, rec, 3.0 / 8.0, *x2, *x2, *x4);  // 3E^2/8
      add(ctx, 1.0, *x4, -0.5, *x2);                   // - 4E/8
      add_on_diag(ctx, *x4, 1.0);                      // + 8/8
      mul(ctx, o, rec, 1.0, *x, *x4, *next);
    }
    std::swap(x, next);  // filtered by mul()
    say_iteration(ctx, o, label, iter.done(it, r, *x));
    out.iterations = it;
    out.residual = r;
    out.converged = done;
    if (ends(ctx, o, done, it, r, "the sign iteration", label)) break;
  }
  x->set_name("sign");
  out.x = x;
  return out;
}

void declare_common(ParameterList& v) {
  const int imax = std::numeric_limits<int>::max();
  const double dmax = std::numeric_limits<double>::max();
  declare_int(v, "Electrons", 0,
              "number of electrons (spin-restricted: Electrons/2 occupied orbitals; even, at most 2n); 0: not given "
              "(then Mu is)",
              0, imax);
  declare_string(v, "Mu", "",
                 "chemical potential (Hartree) used as given; empty: found from Electrons");
  declare_double(v, "FilterEps", 0.0,
                 "blocks of Frobenius norm below it are dropped, on the fly in every multiply and from every iterate "
                 "(0: no filtering)",
                 0.0, dmax);
  declare_double(v, "Tolerance", 1e-9,
                 "convergence: ||X^2 - I||_F / sqrt(n) below it (X the sign iterate, or I - 2D); with FilterEps > 0 "
                 "also when the residual stops falling at the filtering's floor",
                 0.0, 1.0, true);
  declare_int(v, "MaxIterations", 100, "iterations of each iteration (S^-1/2, sign, purification) before giving up",
              1, imax);
  declare_bool(v, "KeepUnconverged", false,
               "when an iteration does not converge within MaxIterations: warn and go on with the last iterate "
               "(false: stop with an error carrying the last residual)");
  declare_string(v, "OutputFile", "", "write the density matrix P to this Matrix Market file (empty: no output)");
}

std::shared_ptr<DistMatrix> identity(Context& ctx, const DistMatrix& like_this) {
  return identity_like(ctx, like_this, "I");
}

Settings Settings::from(const ParameterList& p, const std::string& solver) {
  Settings s;
  s.solver = solver;
  s.iteration.solver = solver;
  s.iteration.filter_eps = p.get<double>("FilterEps");
  s.iteration.tolerance = p.get<double>("Tolerance");
  s.iteration.max_iterations = p.get<int>("MaxIterations");
  s.iteration.keep_unconverged = p.get<bool>("KeepUnconverged");
  s.electrons = p.get<int>("Electrons");
  s.output = p.get<std::string>("OutputFile");
  const std::string mu = p.get<std::string>("Mu");
  if (!mu.empty()) {
    char* end = nullptr;
    s.mu = std::strtod(mu.c_str(), &end);
    while (end && *end == ' ') ++end;
    if (end == mu.c_str() || (end && *end != '\0') || !std::isfinite(s.mu))
      throw InputError(solver + "/Mu", solver + "/Mu = '" + mu + "' is not a number (the chemical potential in Hartree)");
    s.mu_given = true;
  }
  if (s.electrons % 2 != 0)
    throw InputError(solver + "/Electrons", solver + "/Electrons = " + std::to_string(s.electrons) +
                                                " is odd; the solvers are spin-restricted (two electrons per orbital)");
  if (s.electrons == 0 && !s.mu_given)
    throw InputError(solver + "/Electrons", solver + ": give " + solver + "/Electrons (the chemical potential is then "
                                            "found) or " + solver + "/Mu");
  return s;
}

Orthogonal orthogonalise(Context& ctx, const ParameterList& problem, Settings& s, Trace& rec) {
  Orthogonal o;
  timers::Scoped read("density: read", &o.read_seconds);
  auto m = build_hamiltonian(problem, ctx);
  o.h = m.h;
  o.s = m.s;
  o.n = o.h->nrows();
  s.n = o.n;
  if (s.electrons > 2 * o.n)
    throw InputError(s.solver + "/Electrons", s.solver + "/Electrons = " + std::to_string(s.electrons) +
                                                  " is more than the " + std::to_string(2 * o.n) +
                                                  " that " + std::to_string(o.n) + " orbitals hold");
  // Symmetric to rounding: CP2K's files are (M + M^T)/2 or one triangle mirrored.
  constexpr double kSymmetric = 1e-10;
  for (const auto& [mat, where] : {std::pair{o.h, "Problem/FileH"}, std::pair{o.s, "Problem/FileS"}}) {
    if (!mat) continue;
    const double a = asymmetry(ctx, *mat);
    if (a > kSymmetric)
      throw InputError(where, mat->name() + " is not symmetric: ||" + mat->name() + " - " + mat->name() +
                                  "^T||_F / ||" + mat->name() + "||_F = " + num(a) + " (at most " + num(kSymmetric) +
                                  " is taken as symmetric)");
  }
  read.stop();
  o.solve = std::make_unique<timers::Scoped>("density: solve");
  if (o.s) {
    timers::Scoped inverse("density: S^-1/2");
    auto inv = inverse_sqrt(ctx, *o.s, s.iteration, rec);
    const double inverse_seconds = inverse.stop();
    o.z = inv.inv_sqrt;
    if (speaks(ctx, s.iteration))
      log().info("{}: S^-1/2 in {} Newton-Schulz iterations ({:.3f} s, residual {:.3e})", s.solver, inv.iterations,
                 inverse_seconds, inv.residual);
    auto zh = like(*o.h, "Z H");
    mul(ctx, s.iteration, rec, 1.0, *o.z, *o.h, *zh);
    o.k = like(*o.h, "K");
    mul(ctx, s.iteration, rec, 1.0, *zh, *o.z, *o.k);  // filtered by mul()
  } else {
    o.k = o.h;
  }
  o.bounds = gershgorin(ctx, *o.k);
  if (!(o.bounds.max > o.bounds.min) && !s.full())
    throw InputError(s.solver + "/Electrons",
                     s.solver + "/Electrons = " + std::to_string(s.electrons) + " (or Mu) cannot be met: every level of " +
                         std::string(o.s ? "S^-1/2 H S^-1/2" : "H") + " lies at " + num(o.bounds.min) +
                         " (its Gershgorin bounds meet): no gap separates occupied from empty levels, so only "
                         "Electrons = 2n (P = S^-1) has one density matrix");
  if (s.mu_given && (s.mu <= o.bounds.min || s.mu >= o.bounds.max))
    throw InputError(s.solver + "/Mu", s.solver + "/Mu = " + num(s.mu) + " is outside the spectrum of " +
                                           (o.s ? "S^-1/2 H S^-1/2" : "H") + " (within [" + num(o.bounds.min) + ", " +
                                           num(o.bounds.max) + "]): no level or every level would be occupied");
  return o;
}

namespace {
Context& context_of(const SolverContext& sc) {
  PLEXUS_CHECK(sc.problem && sc.context, "density solver: incomplete solver context");
  return *sc.context;
}
Settings quiet_as(Settings s, bool quiet) {
  s.iteration.quiet = quiet;
  return s;
}
}  // namespace

Start::Start(SolverContext& sc, const Settings& settings)
    : ctx(context_of(sc)),
      scope(ctx.log_scope()),
      s(quiet_as(settings, sc.quiet)),
      o(orthogonalise(ctx, *sc.problem, s, rec)) {
  for (auto& row : rec.history) row["stage"] = 1;
}

void check_output(const Context& ctx, const Settings& s) {
  if (!s.output.empty() && ctx.rank() == 0) output::check(s.output, s.solver + "/OutputFile");
}

void finish(Context& ctx, const Orthogonal& o, const DistMatrix& d, const Settings& s, Trace& rec,
            SolverResult& result) {
  std::shared_ptr<DistMatrix> p;
  if (o.z) {
    auto zd = like(d, "Z D");
    mul(ctx, s.iteration, rec, 1.0, *o.z, d, *zd);
    p = like(d, "P");
    mul(ctx, s.iteration, rec, 1.0, *zd, *o.z, *p);  // filtered by mul()
  } else {
    p = std::make_shared<DistMatrix>(copy(ctx, d, "P"));
  }
  p->set_name("P");
  auto& f = result.figures;
  f["energy"] = 2.0 * dot(ctx, *p, *o.h);
  f["trace_PS"] = o.s ? dot(ctx, *p, *o.s) : trace(ctx, *p);
  {
    // ||P S P - P||_F, computed as written (an independent check of the orthogonalisation).
    auto sp = like(*p, "S P");
    if (o.s)
      mul(ctx, s.iteration, rec, 1.0, *o.s, *p, *sp);
    else
      *sp = copy(ctx, *p, "S P");
    auto psp = like(*p, "P S P");
    mul(ctx, s.iteration, rec, 1.0, *p, *sp, *psp);
    add(ctx, 1.0, *psp, -1.0, *p);
    f["idempotency_error"] = norm(ctx, *psp);
  }
  f["occupancy_P"] = p->occupancy();
  {
    // The solve's time (after reading) against its multiplies': what the solver itself costs.
    PLEXUS_CHECK(o.solve, "density::finish: the solve's timer was not started (orthogonalise starts it)");
    double times[3] = {o.read_seconds, o.solve->stop(), 0};
    for (const auto& r : rec.reports) times[2] += r.seconds;
    mpi::check(MPI_Allreduce(MPI_IN_PLACE, times, 3, MPI_DOUBLE, MPI_MAX, ctx.comm()), "MPI_Allreduce");
    f["read_seconds"] = times[0];
    f["solve_seconds"] = times[1];
    f["multiply_seconds"] = times[2];
    f["overhead_fraction"] = times[1] > 0 ? (times[1] - times[2]) / times[1] : 0.0;
  }
  f["n"] = static_cast<double>(o.n);
  f["spectrum_min"] = o.bounds.min;
  f["spectrum_max"] = o.bounds.max;
  if (!s.output.empty()) {
    write_matrix_market(*p, s.output);
    if (speaks(ctx, s.iteration)) log().info("{}: wrote P to '{}'", s.solver, s.output);
  }
  result.result = p;
  result.reports = std::move(rec.reports);
  result.history = std::move(rec.history);
}

}  // namespace plexus::density
