// The density-matrix solvers' shared iterations (see density.hpp).
#include "density.hpp"

#include <mpi.h>
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "plexus/error.hpp"
#include "plexus/log.hpp"
#include "plexus/matrix_market.hpp"
#include "plexus/output.hpp"
#include "plexus/progress.hpp"
#include "plexus/timers.hpp"

namespace plexus::density {

namespace {

std::string num(double v) { return fmt::format("{:.3g}", v); }

// C = alpha A B through the context's multiply algorithm, filtered on the fly and after: C
// holds no block below FilterEps, so the iterations filter again only what sums make (a filter
// after a product read all of it and waited for every rank, and dropped nothing).
void mul(Context& ctx, const IterationOptions& o, Trace& rec, double alpha, const DistMatrix& A,
         const DistMatrix& B, DistMatrix& C) {
  MultiplyOptions m;
  m.filter_eps = o.filter_eps;
  rec.reports.push_back(multiply(ctx, Trans::N, Trans::N, alpha, A, B, 0.0, C, m));
}

std::shared_ptr<DistMatrix> like(const DistMatrix& X, const std::string& name) {
  auto m = std::make_shared<DistMatrix>(create_like(X, name));
  m->finalize();
  return m;
}

std::shared_ptr<DistMatrix> identity_like(Context& ctx, const DistMatrix& X, const std::string& name) {
  auto m = like(X, name);
  add_on_diag(ctx, *m, 1.0);
  return m;
}

// An iterate made by sums (add, add_on_diag), not by mul() alone.
void filter_iterate(Context& ctx, const IterationOptions& o, DistMatrix& X) {
  if (o.filter_eps > 0) filter(ctx, X, o.filter_eps);
}

// One iteration's figures: its own time (the phase "density: <label> iteration", from the log's
// construction to done()) and its multiplies (volume, waits, flops), the same on every rank
// (maxima of times, sums of volumes).
class IterationLog {
 public:
  IterationLog(Context& ctx, Trace& rec, const std::string& label)
      : ctx_(ctx), trace_(rec), first_(rec.reports.size()), timer_("density: " + label + " iteration") {}

  std::map<std::string, double>& done(int iteration, double residual, const DistMatrix& x) {
    double mine[2] = {timer_.stop(), 0};
    double sums[2] = {0, 0};  // flops, data bytes received
    for (std::size_t i = first_; i < trace_.reports.size(); ++i) {
      const auto& r = trace_.reports[i];
      sums[0] += r.flops;
      for (const auto& role : r.traffic) sums[1] += static_cast<double>(role.bytes_received);
      mine[1] = std::max(mine[1], r.wait_seconds());
    }
    double maxima[2] = {0, 0};
    mpi::check(MPI_Allreduce(mine, maxima, 2, MPI_DOUBLE, MPI_MAX, ctx_.comm()), "MPI_Allreduce");
    mpi::check(MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, ctx_.comm()), "MPI_Allreduce");
    std::map<std::string, double> row;
    row["iteration"] = iteration;  // within its iteration (S^-1/2, one sign evaluation, ...)
    row["residual"] = residual;
    row["occupancy"] = x.occupancy();
    row["seconds"] = maxima[0];
    row["multiplies"] = static_cast<double>(trace_.reports.size() - first_);
    row["flops"] = sums[0];
    row["bytes_received"] = sums[1];
    row["wait_seconds_max"] = maxima[1];
    trace_.history.push_back(std::move(row));
    return trace_.history.back();
  }

 private:
  Context& ctx_;
  Trace& trace_;
  std::size_t first_;
  timers::Scoped timer_;
};

void say_iteration(Context& ctx, const IterationOptions& o, const std::string& label,
                   const std::map<std::string, double>& row) {
  if (!speaks(ctx, o)) return;
  log().info("{} {:>3}: residual {:.3e}, occupancy {:.3f}, {:.3f} s, {} multiplies", label,
             static_cast<int>(row.at("iteration")), row.at("residual"), row.at("occupancy"), row.at("seconds"),
             static_cast<int>(row.at("multiplies")));
}

// Convergence bookkeeping shared by the iterations: below the tolerance; or, with filtering, the
// residual has stopped falling in the quadratic regime (the filtering's floor). The measure r is
// ||E||_F / sqrt(n), an average over the levels, so one slow level adds only 1/sqrt(n) to it; the
// quadratic regime is therefore judged on ||E||_F^2 = n r^2, in "levels": below 1/4, every level
// has |x^2 - 1| < 1/2 and converges quadratically from there, so a residual that then falls by
// less than half is the floor, not a slow level (those stay above it on large n).
struct Convergence {
  explicit Convergence(double n) : n_(n) {}
  bool reached(double r, const IterationOptions& o) {
    if (r < o.tolerance) return true;
    if (o.filter_eps > 0 && n_ * previous_ * previous_ < 0.25 && r > 0.5 * previous_) stalled_ = true;
    previous_ = r;
    return stalled_;
  }

 private:
  double n_;
  double previous_ = std::numeric_limits<double>::infinity();
  bool stalled_ = false;
};

// After step `it` of an iteration, its measure r: whether the iteration ends here, converged
// (`done`) or at MaxIterations with KeepUnconverged (warned); at MaxIterations otherwise, an error
// carrying the last residual. `what` names the iteration in the error, `label` in the warning.
bool ends(Context& ctx, const IterationOptions& o, bool done, int it, double r, const std::string& what,
          const std::string& label) {
  if (done) return true;
  if (it < o.max_iterations) return false;
  if (!o.keep_unconverged) {
    const std::string where = o.solver + "/MaxIterations";
    throw Error(where, what + " did not converge within " + where + " = " + std::to_string(o.max_iterations) +
                           " iterations: the last residual is " + num(r) + " (tolerance " + num(o.tolerance) +
                           "); raise MaxIterations or Tolerance, or set KeepUnconverged to go on with the last "
                           "iterate");
  }
  if (speaks(ctx, o)) log().warn("{}: not converged after {} iterations (residual {:.3e}); going on", label, it, r);
  return true;
}

double residual_of_square(Context& ctx, DistMatrix& x2_minus_i, double n) {
  return norm(ctx, x2_minus_i) / std::sqrt(n);
}

}  // namespace

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

PurifyResult purify(Context& ctx, const DistMatrix& F, Purification method, double occupied, double mu,
                    const Bounds& bounds, const IterationOptions& o, Trace& rec) {
  const double n = static_cast<double>(F.nrows());
  const double width = bounds.max - bounds.min;
  PLEXUS_CHECK(width > 0, "purification: empty spectral bounds");
  auto d = std::make_shared<DistMatrix>(copy(ctx, F, "D"));
  const char* label = method == Purification::Canonical ? "canonical" : method == Purification::Trs4 ? "trs4" : "mcweeny";
  // The scalar map every level takes: x0 = a e + b, then each step's polynomial. The level that
  // ends at 1/2 is the chemical potential the iteration found (inside the gap once converged).
  double a = 0, b = 0;
  std::vector<std::function<double(double)>> steps;
  switch (method) {
    case Purification::Canonical: {
      // Palser-Manolopoulos: D0 = lambda/n (mu_bar I - F) + N/n I, its trace N, its spectrum in [0, 1].
      const double mu_bar = trace(ctx, F) / n;
      const double lambda =
          std::min(occupied / (bounds.max - mu_bar), (n - occupied) / (mu_bar - bounds.min));
      scale(ctx, *d, -lambda / n);
      add_on_diag(ctx, *d, lambda / n * mu_bar + occupied / n);
      a = -lambda / n;
      b = lambda / n * mu_bar + occupied / n;
      break;
    }
    case Purification::Trs4:
      // X0 = (max I - F) / (max - min): the spectrum in [0, 1], the lowest levels near 1.
      scale(ctx, *d, -1.0 / width);
      add_on_diag(ctx, *d, bounds.max / width);
      a = -1.0 / width;
      b = bounds.max / width;
      break;
    case Purification::McWeeny: {
      // D0 = I/2 - (F - mu I) / (2 b): levels below mu above 1/2.
      const double half = std::max(mu - bounds.min, bounds.max - mu);
      scale(ctx, *d, -0.5 / half);
      add_on_diag(ctx, *d, 0.5 + 0.5 * mu / half);
      a = -0.5 / half;
      b = 0.5 + 0.5 * mu / half;
      break;
    }
  }
  auto d2 = like(F, "D^2");
  auto d3 = like(F, "D^3");
  auto next = like(F, "next");
  // Canonical and McWeeny need D^2 and D^3 each iteration: the algorithm's fused operation when it
  // has one. TRS4 needs D^2 and one product of its own.
  const bool cubes = method != Purification::Trs4;
  MultiplyOptions mo;
  mo.filter_eps = o.filter_eps;
  PurifyResult out;
  Convergence conv(n);
  progress::Stage iterations("purification iteration", 0);  // the progress line: iterations until converged
  for (int it = 1;; ++it) {
    iterations.done(it - 1);
    IterationLog iter(ctx, rec, label);
    if (cubes) {
      if (square_and_cube(ctx, *d, *d2, *d3, rec.reports, mo)) ++out.fused;
    } else {
      mul(ctx, o, rec, 1.0, *d, *d, *d2);
    }
    const double r = 4.0 * norm(ctx, combine(ctx, 1.0, *d2, -1.0, *d, "D^2 - D")) / std::sqrt(n);
    if (!std::isfinite(r))
      throw Error(label, std::string("the purification diverged (residual ") + num(r) + " at iteration " +
                             std::to_string(it) + ")");
    const bool done = conv.reached(r, o);
    const double tr1 = trace(ctx, *d), tr2 = trace(ctx, *d2);
    if (cubes) {
      const double tr3 = trace(ctx, *d3);
      double c = 0.5;  // McWeeny: D <- 3D^2 - 2D^3 (also the last step of canonical, squaring the error)
      if (method == Purification::Canonical && !done) {
        const double denom = tr1 - tr2;
        c = denom > 0 ? (tr2 - tr3) / denom : 0.5;
        if (!(c >= 0 && c <= 1)) c = 0.5;  // rounding near convergence: the McWeeny step
      }
      // c <= 1/2: [(1 - 2c) D + (1 + c) D^2 - D^3] / (1 - c); else [(1 + c) D^2 - D^3] / c.
      const double by = c <= 0.5 ? 1.0 - c : c;
      *next = combine(ctx, -1.0 / by, *d3, (1.0 + c) / by, *d2, "next");
      if (c <= 0.5 && c != 0.5) add(ctx, 1.0, *next, (1.0 - 2.0 * c) / by, *d);
      steps.push_back([c, by](double x) { return ((c <= 0.5 ? (1.0 - 2.0 * c) * x : 0.0) + (1.0 + c) * x * x - x * x * x) / by; });
    } else {
      // TRS4: F(X) = X^2 (4X - 3X^2), G(X) = X^2 (I - X)^2, gamma = (N - Tr F)/Tr G.
      const double tr3 = dot(ctx, *d, *d2);  // Tr(X X^2) of a symmetric X
      const double tr4 = dot(ctx, *d2, *d2);
      const double trf = 4 * tr3 - 3 * tr4;
      const double trg = tr2 - 2 * tr3 + tr4;
      const double gamma = done ? -1.0 : trg > 0 ? (occupied - trf) / trg : 3.0;
      if (done) {
        // The last step: McWeeny's 3X^2 - 2X^3, squaring the error.
        mul(ctx, o, rec, -2.0, *d, *d2, *next);
        add(ctx, 1.0, *next, 3.0, *d2);
        steps.push_back([](double x) { return 3 * x * x - 2 * x * x * x; });
      } else if (gamma > 6) {
        *next = combine(ctx, 2.0, *d, -1.0, *d2, "next");  // 2X - X^2
        steps.push_back([](double x) { return 2 * x - x * x; });
      } else if (gamma < 0) {
        *next = copy(ctx, *d2, "next");  // X^2
        steps.push_back([](double x) { return x * x; });
      } else {
        steps.push_back(
            [gamma](double x) { return x * x * (gamma + (4 - 2 * gamma) * x + (gamma - 3) * x * x); });
        // X^2 (gamma I + (4 - 2 gamma) X + (gamma - 3) X^2)
        *d3 = combine(ctx, gamma - 3.0, *d2, 4.0 - 2.0 * gamma, *d, "T");
        add_on_diag(ctx, *d3, gamma);
        mul(ctx, o, rec, 1.0, *d2, *d3, *next);
      }
    }
    std::swap(d, next);
    filter_iterate(ctx, o, *d);
    auto& row = iter.done(it, r, *d);
    row["trace"] = tr1;
    say_iteration(ctx, o, label, row);
    out.iterations = it;
    out.residual = r;
    out.converged = done;
    if (ends(ctx, o, done, it, r, std::string("the ") + label + " purification", label)) break;
  }
  d->set_name("D");
  out.d = d;
  // mu: bisection on the level e whose image is 1/2 (the composed map falls as e rises).
  auto image = [&](double e) {
    double x = a * e + b;
    for (const auto& f : steps) x = f(x);
    return x;
  };
  double lo = bounds.min, hi = bounds.max;
  for (int i = 0; i < 200 && hi - lo > 1e-14 * width; ++i) {
    const double mid = 0.5 * (lo + hi);
    (image(mid) > 0.5 ? lo : hi) = mid;
  }
  out.mu = 0.5 * (lo + hi);
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
