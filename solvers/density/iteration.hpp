#pragma once
// What the density iterations share inside the solvers' library (density.cpp: S^-1/2 and the sign
// iteration; purify.cpp: purification): products into an iterate, new matrices, each iteration's
// log line and history row, convergence and its end. Not part of density.hpp's interface.
#include <cstddef>
#include <limits>
#include <map>
#include <memory>
#include <string>

#include "density.hpp"
#include "plexus/timers.hpp"

namespace plexus::density::detail {

std::string num(double v);

// C = alpha A B through the context's multiply algorithm, filtered on the fly and after: C
// holds no block below FilterEps, so the iterations filter again only what sums make (a filter
// after a product read all of it and waited for every rank, and dropped nothing).
void mul(Context& ctx, const IterationOptions& o, Trace& rec, double alpha, const DistMatrix& A, const DistMatrix& B,
         DistMatrix& C);

std::shared_ptr<DistMatrix> like(const DistMatrix& X, const std::string& name);

std::shared_ptr<DistMatrix> identity_like(Context& ctx, const DistMatrix& X, const std::string& name);

// An iterate made by sums (add, add_on_diag), not by mul() alone.
void filter_iterate(Context& ctx, const IterationOptions& o, DistMatrix& X);

void say_iteration(Context& ctx, const IterationOptions& o, const std::string& label,
                   const std::map<std::string, double>& row);

// After step `it` of an iteration, its measure r: whether the iteration ends here, converged
// (`done`) or at MaxIterations with KeepUnconverged (warned); at MaxIterations otherwise, an error
// carrying the last residual. `what` names the iteration in the error, `label` in the warning.
bool ends(Context& ctx, const IterationOptions& o, bool done, int it, double r, const std::string& what,
          const std::string& label);

double residual_of_square(Context& ctx, DistMatrix& x2_minus_i, double n);

// One iteration's figures: its own time (the phase "density: <label> iteration", from the log's
// construction to done()) and its multiplies (volume, waits, flops), the same on every rank
// (maxima of times, sums of volumes).
class IterationLog {
 public:
  IterationLog(Context& ctx, Trace& rec, const std::string& label)
      : ctx_(ctx), trace_(rec), first_(rec.reports.size()), timer_("density: " + label + " iteration") {}

  std::map<std::string, double>& done(int iteration, double residual, const DistMatrix& x);

 private:
  Context& ctx_;
  Trace& trace_;
  std::size_t first_;
  timers::Scoped timer_;
};

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

}  // namespace plexus::density::detail
