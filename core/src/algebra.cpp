#include "plexus/algebra.hpp"

#include <type_traits>
#include <utility>

#include "plexus/error.hpp"
#include "plexus/memory.hpp"
#include "plexus/multiply_support.hpp"

namespace plexus {

namespace {

// A recorded operation of core's matrix API.
class Recorder {
 public:
  Recorder(Context& ctx, std::string operation) : rec_(ctx, std::move(operation)) {}
  mpi::Traffic& traffic() { return rec_.traffic(); }
  // A reduction of `values` doubles over the grid of `m` (one message each way when not alone).
  void reduction(const DistMatrix& m, std::int64_t values) {
    if (m.grid().size() == 1) return;
    traffic().add_sent(mpi::Role::Other, mpi::Payload::Data, 8 * values, 1);
    traffic().add_received(mpi::Role::Other, mpi::Payload::Data, 8 * values, 1);
  }
  void done() { rec_.done(); }

 private:
  OperationRecorder rec_;
};

// `X` on `like`'s distribution: X itself, or a counted redistribution into `holder`.
const DistMatrix& aligned(const DistMatrix& X, const DistMatrix& like, std::unique_ptr<DistMatrix>& holder,
                          mpi::Traffic& traffic) {
  if (X.distribution().same_maps(like.distribution())) return X;
  holder = std::make_unique<DistMatrix>(X.redistribute(like.distribution_ptr(), traffic));
  return *holder;
}

// A scalar computed with one reduction of one double over X's grid, recorded as `op`. f may take
// the operation's Traffic (to count what it moves first).
template <class F>
double reduced(Context& ctx, const char* op, const DistMatrix& X, F&& f) {
  Recorder rec(ctx, op);
  double v = 0;
  if constexpr (std::is_invocable_v<F, mpi::Traffic&>)
    v = f(rec.traffic());
  else
    v = f();
  rec.reduction(X, 1);
  rec.done();
  return v;
}

}  // namespace

MultiplyReport multiply(Context& ctx, Trans ta, Trans tb, double alpha, const DistMatrix& A, const DistMatrix& B,
                        double beta, DistMatrix& C) {
  return multiply(ctx, ta, tb, alpha, A, B, beta, C, ctx.multiply_defaults());
}

MultiplyReport multiply(Context& ctx, Trans ta, Trans tb, double alpha, const DistMatrix& A, const DistMatrix& B,
                        double beta, DistMatrix& C, const MultiplyOptions& options) {
  MultiplyReport r =
      multiply(ctx.multiply_algorithm(), ctx.kernel(), ta, tb, alpha, A, B, beta, C, options, &ctx.product_plans());
  ctx.record(OperationReport::of(r));
  return r;
}

bool square_and_cube(Context& ctx, const DistMatrix& D, DistMatrix& D2, DistMatrix& D3,
                     std::vector<MultiplyReport>& reports, const MultiplyOptions& options) {
  const std::size_t first = reports.size();
  bool fused = ctx.multiply_algorithm().square_and_cube(ctx.kernel(), D, D2, D3, options, reports);
  if (!fused) {
    reports.resize(first);  // an algorithm that declined left nothing to count
    reports.push_back(multiply(ctx.multiply_algorithm(), ctx.kernel(), Trans::N, Trans::N, 1.0, D, D, 0.0, D2, options,
                               &ctx.product_plans()));
    reports.push_back(multiply(ctx.multiply_algorithm(), ctx.kernel(), Trans::N, Trans::N, 1.0, D, D2, 0.0, D3,
                               options, &ctx.product_plans()));
  }
  for (std::size_t i = first; i < reports.size(); ++i) ctx.record(OperationReport::of(reports[i]));
  return fused;
}

void add(Context& ctx, double alpha, DistMatrix& Y, double beta, const DistMatrix& X) {
  Recorder rec(ctx, "add");
  if (!(X.layout() == Y.layout()))
    throw Error("add", "matrices '" + Y.name() + "' and '" + X.name() + "' have different block layouts");
  std::unique_ptr<DistMatrix> moved;
  Y.add(alpha, beta, aligned(X, Y, moved, rec.traffic()), ctx.kernel().threads());
  rec.done();
}

DistMatrix combine(Context& ctx, double alpha, const DistMatrix& X, double beta, const DistMatrix& Y,
                   const std::string& name) {
  Recorder rec(ctx, "combine");
  if (!(X.layout() == Y.layout()))
    throw Error("combine", "matrices '" + X.name() + "' and '" + Y.name() + "' have different block layouts");
  std::unique_ptr<DistMatrix> moved;
  const DistMatrix& y = aligned(Y, X, moved, rec.traffic());
  DistMatrix out(name.empty() ? X.name() : name, X.distribution_ptr(), X.layout());
  out.set_local(add_panels(X.local().view(), alpha, y.local().view(), beta, X.layout(), ctx.kernel().threads()));
  rec.done();
  return out;
}

void scale(Context& ctx, DistMatrix& X, double alpha) {
  Recorder rec(ctx, "scale");
  X.scale(alpha, ctx.kernel().threads());
  rec.done();
}

void add_on_diag(Context& ctx, DistMatrix& X, double alpha) {
  Recorder rec(ctx, "add_on_diag");
  X.add_identity(alpha);
  rec.done();
}

std::int64_t filter(Context& ctx, DistMatrix& X, double eps) {
  Recorder rec(ctx, "filter");
  std::int64_t dropped = X.filter(eps, ctx.kernel().threads());
  mpi::check(MPI_Allreduce(MPI_IN_PLACE, &dropped, 1, MPI_INT64_T, MPI_SUM, X.grid().comm()), "MPI_Allreduce");
  rec.reduction(X, 1);
  rec.done();
  return dropped;
}

DistMatrix copy(Context& ctx, const DistMatrix& X, const std::string& name) {
  Recorder rec(ctx, "copy");
  DistMatrix out(name.empty() ? X.name() : name, X.distribution_ptr(), X.layout());
  out.set_local(Panel::copy_of(X.local().view(), ctx.kernel().threads()));
  rec.done();
  return out;
}

DistMatrix create_like(const DistMatrix& X, const std::string& name) {
  return DistMatrix(name, X.distribution_ptr(), X.layout());
}

DistMatrix transpose(Context& ctx, const DistMatrix& X) {
  Recorder rec(ctx, "transpose");
  DistMatrix out = transpose(X, transposed_distribution(X), rec.traffic());
  rec.done();
  return out;
}

DistMatrix redistribute(Context& ctx, const DistMatrix& X, std::shared_ptr<const Distribution> target) {
  Recorder rec(ctx, "redistribute");
  DistMatrix out = X.redistribute(std::move(target), rec.traffic());
  rec.done();
  return out;
}

double trace(Context& ctx, const DistMatrix& X) {
  return reduced(ctx, "trace", X, [&] { return X.trace(); });
}

double dot(Context& ctx, const DistMatrix& X, const DistMatrix& Y) {
  if (!(X.layout() == Y.layout()))
    throw Error("dot", "matrices '" + X.name() + "' and '" + Y.name() + "' have different block layouts");
  return reduced(ctx, "dot", X, [&](mpi::Traffic& traffic) {
    std::unique_ptr<DistMatrix> moved;
    return X.dot(aligned(Y, X, moved, traffic), ctx.kernel().threads());
  });
}

double norm(Context& ctx, const DistMatrix& X) {
  return reduced(ctx, "norm", X, [&] { return X.frobenius_norm(ctx.kernel().threads()); });
}

// ---- collectives through the context ----------------------------------------------------------

namespace {
// Runs one blocking collective of the context's component and records it with its model.
template <class F>
void recorded_collective(Context& ctx, const char* op, std::int64_t values, int root, F&& f) {
  Collectives& coll = ctx.collectives();
  OperationRecorder rec(ctx, op, coll.name());
  rec.report().predicted = coll.model(CollectiveSpec{op, values, ctx.size(), ctx.rank(), root});
  f(coll, rec.traffic());
  rec.done();
}
}  // namespace

void allreduce(Context& ctx, std::span<double> values, mpi::Role role) {
  recorded_collective(ctx, "allreduce", static_cast<std::int64_t>(values.size()), 0,
                      [&](Collectives& c, mpi::Traffic& t) { c.allreduce(values, ctx.comm(), t, role); });
}

void bcast(Context& ctx, std::span<double> values, int root, mpi::Role role) {
  if (root < 0 || root >= ctx.size())
    throw Error("bcast", "root " + std::to_string(root) + " is not a rank of the context's " +
                             std::to_string(ctx.size()));
  recorded_collective(ctx, "bcast", static_cast<std::int64_t>(values.size()), root,
                      [&](Collectives& c, mpi::Traffic& t) { c.bcast(values, root, ctx.comm(), t, role); });
}

void reduce(Context& ctx, std::span<const double> in, std::span<double> out, int root, mpi::Role role) {
  if (root < 0 || root >= ctx.size())
    throw Error("reduce", "root " + std::to_string(root) + " is not a rank of the context's " +
                              std::to_string(ctx.size()));
  recorded_collective(ctx, "reduce", static_cast<std::int64_t>(in.size()), root,
                      [&](Collectives& c, mpi::Traffic& t) { c.reduce(in, out, root, ctx.comm(), t, role); });
}

void alltoall(Context& ctx, std::span<const double> send, std::span<double> recv, mpi::Role role) {
  recorded_collective(ctx, "alltoall", static_cast<std::int64_t>(send.size()), 0,
                      [&](Collectives& c, mpi::Traffic& t) { c.alltoall(send, recv, ctx.comm(), t, role); });
}

}  // namespace plexus
