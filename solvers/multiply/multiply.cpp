// The "multiply" solver: C = alpha * A * B + beta * C, `Repetitions` times, on the problem's
// matrices, through the selected communication strategy and kernel.
#include <mpi.h>

#include <cstdio>
#include <limits>
#include <string>

#include "plexus/algebra.hpp"
#include "plexus/error.hpp"
#include "plexus/log.hpp"
#include "plexus/matrix_market.hpp"
#include "plexus/output.hpp"
#include "plexus/parameters.hpp"
#include "plexus/plugin.hpp"
#include "plexus/problem.hpp"
#include "plexus/solver.hpp"

namespace {

class MultiplySolver final : public plexus::Solver {
 public:
  explicit MultiplySolver(const plexus::ParameterList& p)
      : repetitions_(p.get<int>("Repetitions")),
        alpha_(p.get<double>("Alpha")),
        beta_(p.get<double>("Beta")),
        filter_eps_(p.get<double>("FilterEps")),
        output_(p.get<std::string>("OutputFile")) {}

  std::string name() const override { return "multiply"; }

  // The output file is checked before any work (rank 0 writes it).
  void check(const plexus::Context& ctx) const override {
    if (!output_.empty() && ctx.rank() == 0) plexus::output::check(output_, "multiply/OutputFile");
  }

  plexus::SolverResult run(plexus::SolverContext& ctx) override {
    PLEXUS_CHECK(ctx.problem && ctx.context, "multiply: incomplete solver context");
    plexus::Context& context = *ctx.context;
    const MPI_Comm comm = context.comm();
    const int rank = context.rank();
    const std::size_t mark = context.log_mark();
    auto m = plexus::build_problem(*ctx.problem, context, beta_ != 0.0);
    plexus::SolverResult result;
    plexus::MultiplyOptions options;
    options.filter_eps = filter_eps_;
    for (int rep = 0; rep < repetitions_; ++rep) {
      auto report =
          plexus::multiply(context, plexus::Trans::N, plexus::Trans::N, alpha_, *m.a, *m.b, beta_, *m.c, options);
      // Global figures for the progress line (collective, so every rank takes part).
      double flops = 0, secs = 0;
      MPI_Allreduce(&report.flops, &flops, 1, MPI_DOUBLE, MPI_SUM, comm);
      MPI_Allreduce(&report.seconds, &secs, 1, MPI_DOUBLE, MPI_MAX, comm);
      if (rank == 0 && !ctx.quiet)
        plexus::log().info("multiply {}/{}: {:.4f} s, {:.3f} GFLOP/s ({} x {} on {}, {}/{})", rep + 1, repetitions_,
                           secs, secs > 0 ? flops / secs * 1e-9 : 0.0, m.a->nrows(), m.b->ncols(),
                           m.a->grid().describe(), report.strategy, report.kernel);
      result.reports.push_back(std::move(report));
    }
    // The trace needs one blocking of rows and columns (RowBlockSizes/ColBlockSizes may differ).
    if (m.c->layout().rows == m.c->layout().cols) result.figures["trace"] = m.c->trace();
    result.figures["norm"] = m.c->frobenius_norm();
    result.figures["occupancy"] = m.c->occupancy();
    if (!output_.empty()) {
      plexus::write_matrix_market(*m.c, output_);
      if (rank == 0 && !ctx.quiet) plexus::log().info("multiply: wrote C to '{}'", output_);
    }
    result.result = m.c;
    result.operations = context.log_since(mark);
    return result;
  }

 private:
  int repetitions_;
  double alpha_, beta_, filter_eps_;
  std::string output_;
};

plexus::ParameterListPtr valid_parameters() {
  auto v = Teuchos::rcp(new plexus::ParameterList("multiply"));
  const int imax = std::numeric_limits<int>::max();
  const double dmax = std::numeric_limits<double>::max();
  plexus::declare_int(*v, "Repetitions", 3, "number of multiplies C = alpha*A*B + beta*C", 1, imax);
  plexus::declare_double(*v, "Alpha", 1.0, "alpha of C = alpha*A*B + beta*C", -dmax, dmax);
  plexus::declare_double(*v, "Beta", 0.0, "beta of C = alpha*A*B + beta*C (non-zero: C is generated too)", -dmax, dmax);
  plexus::declare_double(*v, "FilterEps", 0.0, "filter threshold (on-the-fly and of C; 0: no filtering)", 0.0, dmax);
  plexus::declare_string(*v, "OutputFile", "", "write the final C to this Matrix Market file (empty: no output)");
  return v;
}

const plexus::PluginDescriptor& describe() {
  static const plexus::PluginDescriptor d = [] {
    plexus::PluginDescriptor p;
    p.name = "solver_multiply";
    p.version = "0.1.0";
    plexus::ComponentDescriptor c;
    c.kind = plexus::ComponentKind::Solver;
    c.name = "multiply";
    c.summary = "C = alpha*A*B + beta*C, repeated; figures: trace, norm, occupancy of C";
    c.valid_parameters = valid_parameters;
    c.make_solver = [](const plexus::ParameterList& p) -> std::unique_ptr<plexus::Solver> {
      return std::make_unique<MultiplySolver>(p);
    };
    p.components.push_back(std::move(c));
    return p;
  }();
  return d;
}

}  // namespace

PLEXUS_PLUGIN(describe)
