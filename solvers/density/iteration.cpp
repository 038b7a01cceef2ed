// The density iterations' shared pieces; iteration.hpp says what each does.
#include "iteration.hpp"

#include <mpi.h>
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>

#include "plexus/error.hpp"
#include "plexus/log.hpp"
#include "plexus/mpi.hpp"

namespace plexus::density::detail {

std::string num(double v) { return fmt::format("{:.3g}", v); }

void mul(Context& ctx, const IterationOptions& o, Trace& rec, double alpha, const DistMatrix& A, const DistMatrix& B,
         DistMatrix& C) {
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

void filter_iterate(Context& ctx, const IterationOptions& o, DistMatrix& X) {
  if (o.filter_eps > 0) filter(ctx, X, o.filter_eps);
}

void say_iteration(Context& ctx, const IterationOptions& o, const std::string& label,
                   const std::map<std::string, double>& row) {
  if (!speaks(ctx, o)) return;
  log().info("{} {:>3}: residual {:.3e}, occupancy {:.3f}, {:.3f} s, {} multiplies", label,
             static_cast<int>(row.at("iteration")), row.at("residual"), row.at("occupancy"), row.at("seconds"),
             static_cast<int>(row.at("multiplies")));
}

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

std::map<std::string, double>& IterationLog::done(int iteration, double residual, const DistMatrix& x) {
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

}  // namespace plexus::density::detail
