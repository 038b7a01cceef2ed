// The "sign" solver: the density matrix P = S^-1/2 (I - sign(K - mu I))/2 S^-1/2 of a Kohn-Sham
// matrix H with overlap S, K = S^-1/2 H S^-1/2 (PASC'17 DBCSR paper, Eqs. 1-3), through the
// run's multiply algorithm and kernel; mu given or found so that Tr(P S) = Electrons/2.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "density.hpp"
#include "plexus/error.hpp"
#include "plexus/log.hpp"
#include "plexus/plugin.hpp"

namespace {

using namespace plexus;
namespace dm = plexus::density;

class SignSolver final : public Solver {
 public:
  explicit SignSolver(const ParameterList& p)
      : settings_(dm::Settings::from(p, "sign")), order_(p.get<int>("Order")) {}

  std::string name() const override { return "sign"; }

  void check(const Context& ctx) const override { dm::check_output(ctx, settings_); }

  SolverResult run(SolverContext& sc) override {
    dm::Start run(sc, settings_);
    Context& ctx = run.ctx;
    const dm::Settings& s = run.s;
    dm::Trace& rec = run.rec;
    const dm::Orthogonal& o = run.o;
    const double n = static_cast<double>(o.n);
    const double occupied = s.electrons / 2.0;

    // One evaluation of sign(K - mu I): its X, and the number of levels below mu, Tr((I - X)/2).
    int evaluations = 0, iterations_total = 0;
    auto evaluate = [&](double mu, dm::IterationOptions opts) {
      const std::size_t first = rec.history.size();
      auto r = dm::sign(ctx, *o.k, mu, o.bounds, order_, opts, rec);
      ++evaluations;
      iterations_total += r.iterations;
      for (std::size_t i = first; i < rec.history.size(); ++i) {
        rec.history[i]["stage"] = 2;
        rec.history[i]["evaluation"] = evaluations;
        rec.history[i]["mu"] = mu;
      }
      return r;
    };
    auto count_of = [&](const dm::SignResult& r) { return 0.5 * (n - trace(ctx, *r.x)); };

    double mu = s.mu;
    dm::SignResult x;
    if (s.full()) {
      // Every level occupied: X = -I (mu above the spectrum), no iteration.
      x.x = dm::identity(ctx, *o.k);
      scale(ctx, *x.x, -1.0);
      x.converged = true;
      mu = std::numeric_limits<double>::quiet_NaN();
    } else if (s.mu_given) {
      x = evaluate(mu, s.iteration);
    } else {
      // A search for mu inside the spectral bounds, where 0 and n levels lie below it: the number
      // of levels below mu rises with it. Each step interpolates the counts at the interval's ends
      // linearly (regula falsi), and after a step that did not halve the interval, bisects once: no
      // more than twice bisection's steps. An evaluation stops as soon as its iterate tells the
      // side (count_target: its count is then an estimate, good enough to interpolate); one that
      // meets a level close to mu and converges slowly is kept unconverged when the count still
      // tells it. (h2o-32: 7 evaluations of 171 steps in all by bisection alone and run to
      // convergence; docs/solvers.md has the figures now.)
      double lo = o.bounds.min, hi = o.bounds.max, count_lo = 0, count_hi = n;
      const double width = hi - lo;
      bool bisect = false;
      for (;;) {
        const double t = bisect ? 0.5 : std::clamp((occupied - count_lo) / (count_hi - count_lo), 0.05, 0.95);
        mu = lo + t * (hi - lo);
        const double before = hi - lo;
        dm::IterationOptions opts = s.iteration;
        opts.keep_unconverged = true;
        opts.quiet = true;
        opts.count_target = occupied;
        x = evaluate(mu, opts);
        const double count = count_of(x);
        rec.history.back()["side"] = x.side;
        rec.history.back()["count"] = count;
        if (dm::speaks(ctx, s.iteration))
          log().info("sign: mu = {:.8f} -> {}{:.4f} levels below it (want {}), {} iterations{}", mu,
                     x.side != 0 ? "about " : "", count, occupied, x.iterations,
                     x.side > 0    ? " (more, for certain)"
                     : x.side < 0  ? " (fewer, for certain)"
                     : x.converged ? ""
                                   : " (not converged)");
        if (x.converged && std::abs(count - occupied) < 0.5) break;
        if (x.side < 0 || (x.side == 0 && count < occupied - 0.5)) {
          lo = mu;
          count_lo = std::min(count, occupied - 0.5);
        } else if (x.side > 0 || count > occupied + 0.5) {
          hi = mu;
          count_hi = std::max(count, occupied + 0.5);
        } else {
          throw InputError("sign/Electrons", "no chemical potential gives " +
                                                 std::to_string(static_cast<long>(occupied)) +
                                                 " occupied levels: a level lies at mu = " + std::to_string(mu) +
                                                 " (no gap at the Fermi level; give sign/Mu, or raise "
                                                 "sign/MaxIterations)");
        }
        bisect = !bisect && hi - lo > 0.5 * before;
        if (hi - lo < 1e-12 * width)
          throw InputError("sign/Electrons", "no chemical potential gives " +
                                                 std::to_string(static_cast<long>(occupied)) +
                                                 " occupied levels (the search closed at mu = " + std::to_string(mu) +
                                                 "): degenerate levels at the Fermi level");
      }
    }
    const double count = count_of(x);
    if (s.mu_given && (count < 0.5 || count > n - 0.5))
      throw InputError("sign/Mu", "sign/Mu = " + std::to_string(mu) + " lies outside the spectrum: " +
                                      (count < 0.5 ? "no level is" : "every level is") + " occupied");
    if (s.mu_given && s.electrons > 0 && std::abs(count - occupied) >= 0.5 && dm::speaks(ctx, s.iteration))
      log().warn("sign: {:.4f} levels lie below sign/Mu = {}, but sign/Electrons = {} fills {}", count, mu,
                 s.electrons, occupied);

    // D = (I - X)/2 in the orthogonal basis.
    scale(ctx, *x.x, -0.5);
    add_on_diag(ctx, *x.x, 0.5);
    SolverResult result;
    dm::finish(ctx, o, *x.x, s, rec, result);
    auto& f = result.figures;
    f["mu"] = mu;
    f["iterations"] = x.iterations;
    f["sign_evaluations"] = evaluations;
    f["sign_iterations_total"] = iterations_total;
    f["residual"] = x.residual;
    f["occupied_levels"] = count;
    f["converged"] = x.converged ? 1 : 0;
    if (dm::speaks(ctx, s.iteration))
      log().info("sign: mu = {:.8f} ({} evaluation{}), energy 2 Tr(PH) = {:.10f}, Tr(PS) = {:.8f}", mu, evaluations,
                 evaluations == 1 ? "" : "s", f["energy"], f["trace_PS"]);
    result.operations = run.scope.take();
    return result;
  }

 private:
  dm::Settings settings_;
  int order_;
};

ParameterListPtr valid_parameters() {
  auto v = Teuchos::rcp(new ParameterList("sign"));
  dm::declare_common(*v);
  declare_int(*v, "Order", 2,
              "order of the Newton-Schulz sign iteration: 2 (X <- X(3I - X^2)/2, two multiplies a step) or 3 "
              "(X <- X(15I - 10X^2 + 3X^4)/8, three)",
              2, 3);
  return v;
}

const PluginDescriptor& describe() {
  static const PluginDescriptor d = [] {
    PluginDescriptor p;
    p.name = "solver_sign";
    p.version = "0.1.0";
    ComponentDescriptor c;
    c.kind = ComponentKind::Solver;
    c.name = "sign";
    c.summary =
        "density matrix by the matrix sign iteration (S^-1/2 by Newton-Schulz, mu given or found by a search that "
        "stops each evaluation once its side is certain); "
        "figures: energy, trace_PS, mu, iterations, idempotency_error";
    c.valid_parameters = valid_parameters;
    c.make_solver = [](const ParameterList& p) -> std::unique_ptr<Solver> { return std::make_unique<SignSolver>(p); };
    p.components.push_back(std::move(c));
    return p;
  }();
  return d;
}

}  // namespace

PLEXUS_PLUGIN(describe)
