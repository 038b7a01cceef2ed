// The "multiply" solver: C = alpha * A * B + beta * C, `Repetitions` times, on the problem's
// matrices, through the selected communication strategy and kernel.
#include <mpi.h>
#include <spdlog/fmt/fmt.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "plexus/algebra.hpp"
#include "plexus/error.hpp"
#include "plexus/log.hpp"
#include "plexus/matrix_market.hpp"
#include "plexus/output.hpp"
#include "plexus/parameters.hpp"
#include "plexus/plugin.hpp"
#include "plexus/problem.hpp"
#include "plexus/progress.hpp"
#include "plexus/solver.hpp"
#include "plexus/timers.hpp"

namespace {

// multiply/Check: the largest dense matrix it gathers, and the relative difference it accepts.
constexpr std::int64_t kCheckMaxElements = std::int64_t{1} << 22;
constexpr double kCheckTolerance = 1e-10;

// The dense reference of multiply/Check: A, B and C as they were before the multiplies, gathered
// on rank 0 (with C's block pattern for RetainSparsity), then the product computed densely.
std::string number(double v) { return fmt::format("{:.3g}", v); }

// Whether multiply n of `total` (from 1) gets its own line at info level: the first ten, then
// 20, 30, ..., 100, 200, ... (one significant digit) and the last, so that a run of thousands of
// multiplies logs a few dozen lines; the others go to the debug level.
bool logged_at_info(int n, int total) {
  if (n <= 10 || n == total) return true;
  int unit = 1;
  while (n / unit >= 10) unit *= 10;
  return n % unit == 0;
}

class DenseCheck {
 public:
  DenseCheck() = default;
  // Collective. Refuses matrices too large to gather (the same answer on every rank).
  DenseCheck(const plexus::DistMatrix& a, const plexus::DistMatrix& b, const plexus::DistMatrix& c)
      : ar_(a.nrows()), ac_(a.ncols()), br_(b.nrows()), bc_(b.ncols()), c_layout_(c.layout()) {
    for (const plexus::DistMatrix* x : {&a, &b, &c})
      if (x->nrows() * x->ncols() > kCheckMaxElements)
        throw plexus::InputError("multiply/Check", "multiply/Check gathers every matrix densely on rank 0, but " +
                                                       x->name() + " is " + std::to_string(x->nrows()) + " x " +
                                                       std::to_string(x->ncols()) + " (more than " +
                                                       std::to_string(kCheckMaxElements) + " elements)");
    a_ = a.to_dense(0);
    b_ = b.to_dense(0);
    c_ = c.to_dense(0);
    pattern_ = c.gather_blocks(0).index;
  }

  // ||C - expected||_F / ||expected||_F after `times` multiplies C = alpha op(A) op(B) + beta C.
  // Collective; every rank gets rank 0's figure.
  double relative_error(const plexus::DistMatrix& c, plexus::Trans ta, plexus::Trans tb, double alpha, double beta,
                        bool retain, int times, MPI_Comm comm) const {
    const std::vector<double> got = c.to_dense(0);
    double error = 0;
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) {
      const std::int64_t m = c.nrows(), n = c.ncols(), k = ta == plexus::Trans::N ? ac_ : ar_;
      // Element (i, l) of op(A) and (l, j) of op(B), column-major storage.
      auto opa = [&](std::int64_t i, std::int64_t l) {
        return ta == plexus::Trans::N ? a_[static_cast<std::size_t>(i + l * ar_)]
                                      : a_[static_cast<std::size_t>(l + i * ar_)];
      };
      auto opb = [&](std::int64_t l, std::int64_t j) {
        return tb == plexus::Trans::N ? b_[static_cast<std::size_t>(l + j * br_)]
                                      : b_[static_cast<std::size_t>(j + l * br_)];
      };
      std::vector<double> mask;
      if (retain) {
        mask.assign(static_cast<std::size_t>(m * n), 0.0);
        for (std::size_t q = 0; q + 1 < pattern_.size(); q += 2) {
          const int bi = static_cast<int>(pattern_[q]), bj = static_cast<int>(pattern_[q + 1]);
          for (std::int64_t j = 0; j < c_layout_.cols.size(bj); ++j)
            for (std::int64_t i = 0; i < c_layout_.rows.size(bi); ++i)
              mask[static_cast<std::size_t>(c_layout_.rows.offset(bi) + i + (c_layout_.cols.offset(bj) + j) * m)] = 1.0;
        }
      }
      // op(A) op(B) is the same in every repetition: computed once.
      std::vector<double> product(static_cast<std::size_t>(m * n));
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t i = 0; i < m; ++i) {
          double sum = 0;
          for (std::int64_t l = 0; l < k; ++l) sum += opa(i, l) * opb(l, j);
          product[static_cast<std::size_t>(i + j * m)] = sum;
        }
      std::vector<double> x = c_.empty() ? std::vector<double>(product.size(), 0.0) : c_;
      for (int t = 0; t < times; ++t)
        for (std::size_t q = 0; q < x.size(); ++q) {
          x[q] = alpha * product[q] + beta * x[q];
          if (retain) x[q] *= mask[q];
        }
      double d = 0, e = 0;
      for (std::size_t q = 0; q < x.size(); ++q) {
        d += (got[q] - x[q]) * (got[q] - x[q]);
        e += x[q] * x[q];
      }
      error = e > 0 ? std::sqrt(d / e) : std::sqrt(d);
    }
    MPI_Bcast(&error, 1, MPI_DOUBLE, 0, comm);
    return error;
  }

 private:
  std::int64_t ar_ = 0, ac_ = 0, br_ = 0, bc_ = 0;
  plexus::BlockLayout c_layout_;
  std::vector<double> a_, b_, c_;
  std::vector<std::int64_t> pattern_;
};

class MultiplySolver final : public plexus::Solver {
 public:
  explicit MultiplySolver(const plexus::ParameterList& p)
      : repetitions_(p.get<int>("Repetitions")),
        alpha_(p.get<double>("Alpha")),
        beta_(p.get<double>("Beta")),
        filter_eps_(p.get<double>("FilterEps")),
        trans_a_(p.get<std::string>("TransA") == "T" ? plexus::Trans::T : plexus::Trans::N),
        trans_b_(p.get<std::string>("TransB") == "T" ? plexus::Trans::T : plexus::Trans::N),
        retain_sparsity_(p.get<bool>("RetainSparsity")),
        reset_c_(p.get<bool>("ResetC")),
        check_(p.get<bool>("Check")),
        output_(p.get<std::string>("OutputFile")) {
    if (check_ && filter_eps_ > 0)
      throw plexus::InputError("multiply/Check",
                               "multiply/Check compares C with the exact dense product, but "
                               "multiply/FilterEps > 0 drops blocks: give one of them only");
  }

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
    plexus::LogScope scope = context.log_scope(ctx.steps);  // Totals: one report per kind of operation
    // C is generated when its values or its pattern take part: beta != 0 or RetainSparsity.
    std::optional<plexus::timers::Scoped> setup(std::in_place, "multiply solver: problem");
    auto m = plexus::build_problem(*ctx.problem, context, beta_ != 0.0 || retain_sparsity_,
                                   trans_a_ == plexus::Trans::T, trans_b_ == plexus::Trans::T);
    plexus::SolverResult result;
    plexus::MultiplyOptions options;
    options.filter_eps = filter_eps_;
    options.retain_sparsity = retain_sparsity_;
    // ResetC: every repetition starts from the generated C (a copy made before the first one).
    std::unique_ptr<plexus::DistMatrix> c0;
    if (reset_c_ && repetitions_ > 1) c0 = std::make_unique<plexus::DistMatrix>(plexus::copy(context, *m.c, "C0"));
    setup.reset();
    DenseCheck dense;
    if (check_) {
      const plexus::timers::Scoped timer("multiply solver: check");  // the dense operands (rank 0)
      dense = DenseCheck(*m.a, *m.b, *m.c);
    }
    plexus::progress::Stage steps("multiply", repetitions_);  // the progress line
    for (int rep = 0; rep < repetitions_; ++rep) {
      steps.done(rep);
      if (c0 && rep > 0) *m.c = plexus::copy(context, *c0, "C");
      auto report = plexus::multiply(context, trans_a_, trans_b_, alpha_, *m.a, *m.b, beta_, *m.c, options);
      // Global figures for the progress line (collective, so every rank takes part).
      double flops = 0, secs = 0;
      MPI_Allreduce(&report.flops, &flops, 1, MPI_DOUBLE, MPI_SUM, comm);
      MPI_Allreduce(&report.seconds, &secs, 1, MPI_DOUBLE, MPI_MAX, comm);
      if (rank == 0 && !ctx.quiet)
        plexus::log().log(logged_at_info(rep + 1, repetitions_) ? spdlog::level::info : spdlog::level::debug,
                          "multiply {}/{}: {:.4f} s, {:.3f} GFLOP/s ({} x {} on {}, {}/{})", rep + 1, repetitions_,
                          secs, secs > 0 ? flops / secs * 1e-9 : 0.0, m.c->nrows(), m.c->ncols(),
                          m.a->grid().describe(), report.strategy, report.kernel);
      result.keep(std::move(report), ctx.steps);  // Totals: its seconds, the rest summed
    }
    c0.reset();
    if (check_) {
      const plexus::timers::Scoped timer("multiply solver: check");
      // The dense product, repeated as the multiplies were, on rank 0; every rank learns the verdict.
      const double error = dense.relative_error(*m.c, trans_a_, trans_b_, alpha_, beta_, retain_sparsity_,
                                                reset_c_ ? 1 : repetitions_, comm);
      result.figures["check_relative_error"] = error;
      if (!(error <= kCheckTolerance))
        throw plexus::Error("multiply/Check", "C differs from the dense product by " + number(error) +
                                                  " (relative Frobenius norm; more than " + number(kCheckTolerance) +
                                                  ")");
      if (rank == 0 && !ctx.quiet)
        plexus::log().info("multiply: C agrees with the dense product (relative difference {:.3e})", error);
    }
    // The trace needs one blocking of rows and columns (RowBlockSizes/ColBlockSizes may differ).
    if (m.c->layout().rows == m.c->layout().cols) result.figures["trace"] = m.c->trace();
    result.figures["norm"] = m.c->frobenius_norm();
    result.figures["occupancy"] = m.c->occupancy();
    if (!output_.empty()) {
      const plexus::timers::Scoped timer("multiply solver: output");
      plexus::write_matrix_market(*m.c, output_);
      if (rank == 0 && !ctx.quiet) plexus::log().info("multiply: wrote C to '{}'", output_);
    }
    result.result = m.c;
    result.operations = scope.take();
    return result;
  }

 private:
  int repetitions_;
  double alpha_, beta_, filter_eps_;
  plexus::Trans trans_a_, trans_b_;
  bool retain_sparsity_, reset_c_, check_;
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
  plexus::declare_choice(*v, "TransA", "N", {"N", "T"}, "op(A): A ('N') or A^T ('T'; A is generated or read K x M)");
  plexus::declare_choice(*v, "TransB", "N", {"N", "T"}, "op(B): B ('N') or B^T ('T'; B is generated or read N x K)");
  plexus::declare_bool(
      *v, "RetainSparsity", false,
      "C keeps the block pattern it had before each multiply (C is then generated also when Beta = 0)");
  plexus::declare_bool(*v, "ResetC", false,
                       "every repetition starts from the generated C, as DBCSR's benchmark driver does (false: C "
                       "accumulates over the repetitions)");
  plexus::declare_bool(*v, "Check", false,
                       "compare the final C with the dense product computed on rank 0 (small problems: at most " +
                           std::to_string(kCheckMaxElements) + " elements a matrix); a relative difference above " +
                           number(kCheckTolerance) + " is an error; figure check_relative_error");
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
