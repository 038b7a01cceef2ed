// Purification (canonical, TRS4, McWeeny) of an orthogonalised Kohn-Sham matrix (density.hpp).
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "density.hpp"
#include "iteration.hpp"
#include "plexus/error.hpp"
#include "plexus/progress.hpp"

namespace plexus::density {

using namespace detail;

PurifyResult purify(Context& ctx, const DistMatrix& F, Purification method, double occupied, double mu,
                    const Bounds& bounds, const IterationOptions& o, Trace& rec) {
  const double n = static_cast<double>(F.nrows());
  const double width = bounds.max - bounds.min;
  PLEXUS_CHECK(width > 0, "purification: empty spectral bounds");
  auto d = std::make_shared<DistMatrix>(copy(ctx, F, "D"));
  const char* label = method == Purification::Canonical ? "canonical"
                      : method == Purification::Trs4    ? "trs4"
                                                        : "mcweeny";
  // The scalar map every level takes: x0 = a e + b, then each step's polynomial. The level that
  // ends at 1/2 is the chemical potential the iteration found (inside the gap once converged).
  double a = 0, b = 0;
  std::vector<std::function<double(double)>> steps;
  switch (method) {
    case Purification::Canonical: {
      // Palser-Manolopoulos: D0 = lambda/n (mu_bar I - F) + N/n I, its trace N, its spectrum in [0, 1].
      const double mu_bar = trace(ctx, F) / n;
      const double lambda = std::min(occupied / (bounds.max - mu_bar), (n - occupied) / (mu_bar - bounds.min));
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
      steps.push_back(
          [c, by](double x) { return ((c <= 0.5 ? (1.0 - 2.0 * c) * x : 0.0) + (1.0 + c) * x * x - x * x * x) / by; });
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
        steps.push_back([gamma](double x) { return x * x * (gamma + (4 - 2 * gamma) * x + (gamma - 3) * x * x); });
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

}  // namespace plexus::density
