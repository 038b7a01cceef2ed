// The context (communicator pool, grids, log) and the matrix API of algebra.hpp on every rank
// count and both grid orientations: each operation against the dense computation on the gathered
// matrices, and the bytes it reports against the blocks that had to move, recomputed here from
// the global block lists and the two distributions.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dense_reference.hpp"
#include "multiply_fixtures.hpp"
#include "plexus/algebra.hpp"
#include "plexus/context.hpp"
#include "plexus/generator.hpp"

using namespace plexus;

namespace {

std::unique_ptr<Context> make_context() {
  std::shared_ptr<MultiplyAlgorithm> algo = test::strategy("cannon");
  std::shared_ptr<Kernel> kern = test::kernel("cpu");
  return std::make_unique<Context>(MPI_COMM_WORLD, algo, kern);
}

// The grids of the context: MPI_Dims_create's and its transpose.
std::vector<std::shared_ptr<const Grid>> grids(Context& ctx) {
  auto g = ctx.grid();
  std::vector<std::shared_ptr<const Grid>> out{g};
  if (g->nprows() != g->npcols()) out.push_back(ctx.grid(g->npcols(), g->nprows()));
  return out;
}

DistMatrix random_matrix(const std::string& name, std::shared_ptr<const Distribution> d, std::uint64_t seed,
                         double occupancy = 0.5) {
  GeneratorSpec g;
  g.occupancy = occupancy;
  g.seed = seed;
  const BlockLayout l{BlockSizes::cyclic(d->nblkrows(), {2, 5, 3}), BlockSizes::cyclic(d->nblkcols(), {2, 5, 3})};
  return generate_random(name, d, l, g);
}

// 11 x 11 blocks on `grid` two ways: randomly permuted and block-cyclic (an operation between
// them moves one operand).
std::pair<std::shared_ptr<const Distribution>, std::shared_ptr<const Distribution>> two_ways(
    const std::shared_ptr<const Grid>& grid) {
  const int n = 11;
  return {Distribution::random_permuted(grid, n, n, 5), Distribution::block_cyclic(grid, n, n)};
}

// Data bytes this rank must receive to move X's blocks from X's distribution onto `to`.
std::int64_t bytes_to_receive(const DistMatrix& X, const Distribution& to) {
  const int me = X.grid().rank();
  std::int64_t b = 0;
  for (const auto& [ij, v] : test::blocks_of(X))
    if (to.owner(ij.first, ij.second) == me && X.distribution().owner(ij.first, ij.second) != me)
      b += 8 * static_cast<std::int64_t>(v.size());
  return b;
}

const OperationReport& last(Context& ctx, const std::string& op) {
  EXPECT_FALSE(ctx.log().empty());
  EXPECT_EQ(ctx.log().back().operation, op);
  return ctx.log().back();
}

TEST(Context, PoolsGridsAndReleasesEveryCommunicator) {
  auto ctx = make_context();
  const std::size_t base = ctx->comms().size();  // the context's own duplicate
  EXPECT_EQ(base, 1u);
  auto g1 = ctx->grid();
  auto g2 = ctx->grid();
  EXPECT_EQ(g1.get(), g2.get()) << "one grid per shape";
  EXPECT_EQ(ctx->comms().size(), base + 3) << "a grid's communicator, rows and columns";
  int same = MPI_UNEQUAL;
  MPI_Comm_compare(g1->comm(), MPI_COMM_WORLD, &same);
  EXPECT_EQ(same, MPI_CONGRUENT);
  // The row communicator holds my process row, ordered by column.
  EXPECT_EQ(mpi::size(g1->row_comm()), g1->npcols());
  EXPECT_EQ(mpi::rank(g1->row_comm()), g1->mypcol());
  EXPECT_EQ(ctx->comms().split(ctx->comm(), 0, 0, "x"), ctx->comms().split(ctx->comm(), 0, 0, "x"));
  ctx->release();
  EXPECT_EQ(ctx->comms().size(), 0u);
  EXPECT_THROW(ctx->grid(), Error);
}

TEST(Context, MeshesAndLayeredViewsComeFromThePool) {
  auto ctx = make_context();
  const int p = ctx->size();
  const std::size_t base = ctx->comms().size();
  auto mesh = ctx->grid(0, 0, p);  // 1 x 1 x p
  EXPECT_EQ(mesh->nlayers(), p);
  EXPECT_EQ(mesh->mylayer(), ctx->rank());
  EXPECT_EQ(ctx->grid(0, 0, p).get(), mesh.get()) << "one grid per shape";
  EXPECT_EQ(ctx->comms().size(), base + (p > 1 ? 5 : 3)) << "a dup, planes, fibres, rows and columns";
  auto g = ctx->grid();
  const std::size_t with_2d = ctx->comms().size();
  auto view = g->layered(g->nprows(), g->npcols());  // one group of every rank
  EXPECT_EQ(view->nlayers(), p);
  EXPECT_EQ(mpi::size(view->fibre_comm()), p);
  EXPECT_EQ(ctx->comms().size(), with_2d + (p > 1 ? 4 : 0)) << "the view's communicators, in the context's pool";
  ctx->release();
  EXPECT_EQ(ctx->comms().size(), 0u);
}

// The totals of a list of reports, summed here one kind at a time in the order each came.
std::vector<OperationReport> totals_of(const std::vector<OperationReport>& ops) {
  std::vector<OperationReport> out;
  for (const auto& op : ops) {
    OperationReport* t = nullptr;
    for (auto& o : out)
      if (o.operation == op.operation && o.component == op.component) t = &o;
    if (!t) {
      out.push_back(op);
      continue;
    }
    ++t->count;
    t->seconds += op.seconds;
    t->flops += op.flops;
    for (std::size_t r = 0; r < t->traffic.size(); ++r) {
      t->traffic[r].bytes_received += op.traffic[r].bytes_received;
      t->traffic[r].messages_received += op.traffic[r].messages_received;
    }
    t->peak_memory_bytes = std::max(t->peak_memory_bytes, op.peak_memory_bytes);
    for (const auto& [k, v] : op.predicted) t->predicted[k] += v;
    for (const auto& [k, v] : op.extra) t->extra[k] += v;
  }
  return out;
}

void expect_same_totals(const std::vector<OperationReport>& got, const std::vector<OperationReport>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(want[i].operation + "/" + want[i].component);
    EXPECT_EQ(got[i].operation, want[i].operation);
    EXPECT_EQ(got[i].component, want[i].component);
    EXPECT_EQ(got[i].count, want[i].count);
    EXPECT_DOUBLE_EQ(got[i].seconds, want[i].seconds);
    EXPECT_DOUBLE_EQ(got[i].flops, want[i].flops);
    for (std::size_t r = 0; r < want[i].traffic.size(); ++r) {
      EXPECT_EQ(got[i].traffic[r].bytes_received, want[i].traffic[r].bytes_received);
      EXPECT_EQ(got[i].traffic[r].messages_received, want[i].traffic[r].messages_received);
    }
    EXPECT_EQ(got[i].peak_memory_bytes, want[i].peak_memory_bytes);
    EXPECT_EQ(got[i].predicted, want[i].predicted);
    ASSERT_EQ(got[i].extra.size(), want[i].extra.size());
    for (const auto& [k, v] : want[i].extra) EXPECT_DOUBLE_EQ(got[i].extra.at(k), v) << k;
  }
}

TEST(Context, TheLogKeepsTheLatestOperationsTheTotalsAndTheScopesEveryOne) {
  auto ctx = make_context();
  ctx->set_log_capacity(4);
  auto d = Distribution::random_permuted(ctx->grid(), 8, 8, 3);
  DistMatrix a = random_matrix("A", d, 1, 0.6), b = random_matrix("B", d, 2, 0.6);
  DistMatrix c = create_like(a, "C");
  LogScope all = ctx->log_scope();
  LogScope summed = ctx->log_scope(StepDetail::Totals);  // one total per kind, however long the run
  std::vector<OperationReport> inner_ops;
  {
    std::optional<LogScope> inner;
    for (int k = 0; k < 9; ++k) {
      if (k == 3) inner.emplace(ctx->log_scope());  // opened late: sees only what follows
      if (k == 7) inner_ops = inner->take();        // and hands over what it has so far
      multiply(*ctx, Trans::N, Trans::N, 1.0, a, b, 0.0, c);
      scale(*ctx, c, 0.5);
      OperationReport own;  // a solver's own phase, with figures of its own
      own.operation = "phase";
      own.component = "test";
      own.seconds = 0.25 * (k + 1);
      own.peak_memory_bytes = 1000 * ((k * 7) % 5);
      own.traffic[3].bytes_received = 10 * k;
      own.predicted["bytes_received"] = 10.0 * k;
      own.extra["k"] = k;
      ctx->record(own);
    }
    EXPECT_EQ(inner_ops.size(), 12u) << "operations 3 to 6, three each";
    EXPECT_EQ(inner->operations().size(), 6u) << "what came after take()";
  }
  multiply(*ctx, Trans::N, Trans::N, 1.0, a, b, 0.0, c);  // after the inner scope closed

  // Every operation reached the open scope, in order.
  const std::vector<OperationReport>& ops = all.operations();
  ASSERT_EQ(ops.size(), 28u);
  EXPECT_EQ(ctx->recorded(), 28);
  for (std::size_t i = 0; i + 1 < ops.size(); ++i)
    EXPECT_EQ(ops[i].operation, std::vector<std::string>({"multiply", "scale", "phase"})[i % 3]) << i;
  EXPECT_EQ(ops.back().operation, "multiply");
  EXPECT_EQ(ops[3 * 3].operation, inner_ops.front().operation);
  EXPECT_DOUBLE_EQ(inner_ops.back().seconds, 0.25 * 7) << "the phase of k = 6";

  // The log holds the latest four, the oldest first.
  ASSERT_EQ(ctx->log().size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(ctx->log()[i].operation, ops[24 + i].operation);
    EXPECT_DOUBLE_EQ(ctx->log()[i].seconds, ops[24 + i].seconds);
  }
  // One total per kind, the order each kind came first, against sums taken here: the context's,
  // and a scope's that keeps totals.
  expect_same_totals(ctx->totals(), totals_of(ops));
  ASSERT_EQ(summed.operations().size(), 3u);
  expect_same_totals(summed.operations(), totals_of(ops));
  EXPECT_EQ(ctx->totals()[0].count, 10);
  EXPECT_EQ(ctx->totals()[2].peak_memory_bytes, 4000);

  // Fewer kept: the oldest go. None kept: the totals still count.
  ctx->set_log_capacity(2);
  ASSERT_EQ(ctx->log().size(), 2u);
  EXPECT_EQ(ctx->log().front().operation, ops[26].operation);
  ctx->set_log_capacity(0);
  EXPECT_TRUE(ctx->log().empty());
  scale(*ctx, c, 2.0);
  EXPECT_TRUE(ctx->log().empty());
  EXPECT_EQ(ctx->totals()[1].count, 10);
  EXPECT_EQ(all.operations().size(), 29u);

  // Cleared: the log and the totals; a scope keeps what it collected.
  ctx->clear_log();
  EXPECT_TRUE(ctx->totals().empty());
  EXPECT_EQ(ctx->recorded(), 0);
  EXPECT_EQ(all.take().size(), 29u);
  ctx->set_log_capacity(Context::kDefaultLogCapacity);
  for (int k = 0; k < 3; ++k) scale(*ctx, c, 1.0);
  EXPECT_EQ(all.operations().size(), 3u) << "collecting from empty after take()";
  expect_same_totals(ctx->totals(), totals_of(all.operations()));
  ctx->release();
}

TEST(MatrixApi, AddScaleDiagCopyCreateLike) {
  auto ctx = make_context();
  for (const auto& grid : grids(*ctx)) {
    SCOPED_TRACE("grid " + grid->describe());
    const auto [dr, dc] = two_ways(grid);
    DistMatrix y = random_matrix("Y", dr, 1), x = random_matrix("X", dc, 2);
    auto yd = y.to_dense(), xd = x.to_dense();
    const std::int64_t expect_moved = bytes_to_receive(x, *dr);
    add(*ctx, 0.5, y, -2.0, x);
    for (std::size_t q = 0; q < yd.size(); ++q) yd[q] = 0.5 * yd[q] - 2.0 * xd[q];
    EXPECT_LE(test::relative_error(y.to_dense(), yd), 1e-14);
    EXPECT_EQ(last(*ctx, "add").traffic[3].bytes_received, expect_moved) << "X redistributed onto Y, counted";

    scale(*ctx, y, -3.0);
    for (auto& v : yd) v *= -3.0;
    EXPECT_LE(test::relative_error(y.to_dense(), yd), 1e-14);

    add_on_diag(*ctx, y, 1.5);
    const std::int64_t N = y.nrows();
    for (std::int64_t i = 0; i < N; ++i) yd[static_cast<std::size_t>(i + i * N)] += 1.5;
    EXPECT_LE(test::relative_error(y.to_dense(), yd), 1e-14);

    DistMatrix z = copy(*ctx, y, "Z");
    EXPECT_EQ(z.name(), "Z");
    scale(*ctx, z, 0.0);  // the copy owns its values
    EXPECT_LE(test::relative_error(y.to_dense(), yd), 1e-14);

    DistMatrix e = create_like(y, "E");
    EXPECT_EQ(e.global_nblocks(), 0);
    EXPECT_TRUE(e.layout() == y.layout());
    EXPECT_TRUE(e.distribution().same_maps(y.distribution()));
  }
  ctx->release();
}

// combine: alpha X + beta Y as a new matrix on X's distribution, Y moved onto it first (counted),
// X and Y left as they were; also of a matrix with itself.
TEST(MatrixApi, CombineIsACopyAndAnAddInOne) {
  auto ctx = make_context();
  for (const auto& grid : grids(*ctx)) {
    SCOPED_TRACE("grid " + grid->describe());
    const auto [dr, dc] = two_ways(grid);
    const DistMatrix x = random_matrix("X", dr, 1, 0.4), y = random_matrix("Y", dc, 2, 0.4);
    const auto xd = x.to_dense(), yd = y.to_dense();
    const std::int64_t expect_moved = bytes_to_receive(y, *dr);
    const DistMatrix z = combine(*ctx, 0.5, x, -2.0, y, "Z");
    EXPECT_EQ(last(*ctx, "combine").traffic[3].bytes_received, expect_moved) << "Y redistributed onto X, counted";
    EXPECT_EQ(z.name(), "Z");
    EXPECT_TRUE(z.distribution().same_maps(x.distribution()));
    std::vector<double> zd(xd.size());
    for (std::size_t q = 0; q < zd.size(); ++q) zd[q] = 0.5 * xd[q] - 2.0 * yd[q];
    EXPECT_LE(test::relative_error(z.to_dense(), zd), 1e-15);
    EXPECT_EQ(x.to_dense(), xd);
    EXPECT_EQ(y.to_dense(), yd);
    // The union of both patterns, as add() gives it.
    DistMatrix added = copy(*ctx, x);
    add(*ctx, 0.5, added, -2.0, y);
    EXPECT_EQ(z.global_nblocks(), added.global_nblocks());

    const DistMatrix twice = combine(*ctx, 3.0, x, -1.0, x);
    EXPECT_EQ(twice.name(), "X");
    for (std::size_t q = 0; q < zd.size(); ++q) zd[q] = 2.0 * xd[q];
    EXPECT_LE(test::relative_error(twice.to_dense(), zd), 1e-15);
    double xx = 0;
    for (double v : xd) xx += v * v;
    EXPECT_NEAR(dot(*ctx, x, x), xx, 1e-12 * xx);  // with itself: its sum of squares
  }
  ctx->release();
}

TEST(MatrixApi, TransposeRedistributeTraceDotNormFilter) {
  auto ctx = make_context();
  for (const auto& grid : grids(*ctx)) {
    SCOPED_TRACE("grid " + grid->describe());
    const int nr = 9, nc = 13;
    auto d = Distribution::random_permuted(grid, nr, nc, 7);
    DistMatrix x = random_matrix("X", d, 3);
    const auto xd = x.to_dense();
    const std::int64_t R = x.nrows(), C = x.ncols();

    DistMatrix t = transpose(*ctx, x);
    std::vector<double> td(xd.size());
    for (std::int64_t j = 0; j < C; ++j)
      for (std::int64_t i = 0; i < R; ++i) td[static_cast<std::size_t>(j + i * C)] = xd[static_cast<std::size_t>(i + j * R)];
    EXPECT_EQ(t.nrows(), C);
    EXPECT_EQ(t.to_dense(), td);
    EXPECT_EQ(last(*ctx, "transpose").traffic[3].bytes_received,
              [&] {  // blocks (i, j) of X land as (j, i) on the owner in T's distribution
                const int me = grid->rank();
                std::int64_t b = 0;
                for (const auto& [ij, v] : test::blocks_of(x))
                  if (t.distribution().owner(ij.second, ij.first) == me && d->owner(ij.first, ij.second) != me)
                    b += 8 * static_cast<std::int64_t>(v.size());
                return b;
              }());

    auto dc = Distribution::block_cyclic(grid, nr, nc);
    const std::int64_t expect_moved = bytes_to_receive(x, *dc);
    DistMatrix r = redistribute(*ctx, x, dc);
    EXPECT_EQ(r.to_dense(), xd);
    EXPECT_EQ(last(*ctx, "redistribute").traffic[3].bytes_received, expect_moved);

    // dot of two differently distributed matrices, and the norm.
    DistMatrix y = random_matrix("Y", dc, 4);
    const auto yd = y.to_dense();
    double dd = 0, nn = 0;
    for (std::size_t q = 0; q < xd.size(); ++q) {
      dd += xd[q] * yd[q];
      nn += xd[q] * xd[q];
    }
    EXPECT_NEAR(dot(*ctx, x, y), dd, 1e-12 * std::max(1.0, std::abs(dd)));
    EXPECT_NEAR(norm(*ctx, x), std::sqrt(nn), 1e-12 * std::sqrt(nn));

    // trace of a square matrix.
    DistMatrix s = random_matrix("S", Distribution::random_permuted(grid, nr, nr, 9), 5, 0.7);
    const auto sd = s.to_dense();
    double tr = 0;
    for (std::int64_t i = 0; i < s.nrows(); ++i) tr += sd[static_cast<std::size_t>(i + i * s.nrows())];
    EXPECT_NEAR(trace(*ctx, s), tr, 1e-12 * std::max(1.0, std::abs(tr)));

    // filter: the blocks below eps, counted from the gathered blocks.
    const double eps = 1.0;
    std::int64_t below = 0;
    for (const auto& [ij, v] : test::blocks_of(x)) below += test::norm(v) < eps ? 1 : 0;
    EXPECT_EQ(filter(*ctx, x, eps), below);
    EXPECT_EQ(x.global_nblocks() + below, static_cast<std::int64_t>(test::blocks_of(r).size()));
  }
  ctx->release();
}

TEST(MatrixApi, MultiplyUsesTheContextAndItsDefaults) {
  auto ctx = make_context();
  auto grid = ctx->grid();
  const int n = 10;
  auto d = Distribution::random_permuted(grid, n, n, 11);
  DistMatrix a = random_matrix("A", d, 6, 0.6), b = random_matrix("B", d, 7, 0.6);
  DistMatrix c = create_like(a, "C");
  const auto ad = a.to_dense(), bd = b.to_dense();
  std::vector<double> cd;
  test::dense_gemm(a.nrows(), b.ncols(), a.ncols(), 2.0, ad, bd, 0.0, cd);
  const MultiplyReport rep = multiply(*ctx, Trans::N, Trans::N, 2.0, a, b, 0.0, c);
  EXPECT_LE(test::relative_error(c.to_dense(), cd), 1e-12);
  EXPECT_EQ(rep.strategy, "cannon");
  const OperationReport& op = last(*ctx, "multiply");
  EXPECT_EQ(op.component, "cannon");
  EXPECT_EQ(op.flops, rep.flops);
  // Defaults: a huge filter threshold drops every block of the product.
  ctx->multiply_defaults().filter_eps = 1e300;
  multiply(*ctx, Trans::N, Trans::N, 1.0, a, b, 0.0, c);
  EXPECT_EQ(c.global_nblocks(), 0);
  ctx->release();
}

}  // namespace

namespace {

// The recorded operation's predicted figures are what it counted.
void expect_predicted_is_counted(const OperationReport& r) {
  const auto& k = r.traffic[static_cast<std::size_t>(mpi::Role::Other)];
  EXPECT_EQ(r.predicted.at("bytes_sent"), static_cast<double>(k.bytes_sent)) << r.operation;
  EXPECT_EQ(r.predicted.at("bytes_received"), static_cast<double>(k.bytes_received)) << r.operation;
  EXPECT_EQ(r.predicted.at("messages_received"), static_cast<double>(k.messages_received)) << r.operation;
}

}  // namespace

TEST(MatrixApi, CollectivesThroughTheContextAreRecordedWithTheirModel) {
  auto ctx = make_context();
  const int p = ctx->size(), me = ctx->rank();
  const std::string component = ctx->collectives().name();
  {
    std::vector<double> v{double(me), 1.0, 0.5};
    allreduce(*ctx, v);
    EXPECT_EQ(v, (std::vector<double>{p * (p - 1) / 2.0, double(p), 0.5 * p}));
    const OperationReport& r = last(*ctx, "allreduce");
    EXPECT_EQ(r.component, component);
    expect_predicted_is_counted(r);
  }
  for (int root = 0; root < p; ++root) {
    std::vector<double> v(4, me == root ? 7.0 : 0.0);
    bcast(*ctx, v, root);
    EXPECT_EQ(v, std::vector<double>(4, 7.0));
    expect_predicted_is_counted(last(*ctx, "bcast"));
    std::vector<double> in(3, double(me + 1)), out(3, 0.0);
    reduce(*ctx, in, out, root);
    if (me == root) {
      EXPECT_EQ(out, std::vector<double>(3, p * (p + 1) / 2.0));
    }
    expect_predicted_is_counted(last(*ctx, "reduce"));
  }
  {
    std::vector<double> send(static_cast<std::size_t>(2 * p)), recv(send.size());
    for (int q = 0; q < p; ++q) send[2 * q] = send[2 * q + 1] = 100.0 * me + q;
    alltoall(*ctx, send, recv);
    for (int q = 0; q < p; ++q) EXPECT_EQ(recv[2 * q], 100.0 * q + me);
    expect_predicted_is_counted(last(*ctx, "alltoall"));
  }
  std::vector<double> v(2, 0.0);
  EXPECT_THROW(bcast(*ctx, v, p), Error) << "a root outside the context";
  ctx->release();
}
