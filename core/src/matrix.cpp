#include "plexus/matrix.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "plexus/error.hpp"
#include "plexus/exchange.hpp"
#include "plexus/mpi.hpp"
#include "plexus/multiply_support.hpp"
#include "sum_of_squares.hpp"
#include "threads.hpp"

namespace plexus {

namespace {

std::int64_t block_values(const BlockLayout& l, int i, int j) { return std::int64_t{l.rows.size(i)} * l.cols.size(j); }

double allreduce_sum(double v, MPI_Comm comm) {
  mpi::check(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_SUM, comm), "MPI_Allreduce");
  return v;
}

}  // namespace

DistMatrix::DistMatrix(std::string name, std::shared_ptr<const Distribution> dist, BlockLayout layout)
    : name_(std::move(name)), dist_(std::move(dist)), layout_(std::move(layout)) {
  if (dist_->nblkrows() != layout_.rows.count() || dist_->nblkcols() != layout_.cols.count())
    throw Error("DistMatrix " + name_, "distribution has " + std::to_string(dist_->nblkrows()) + "x" +
                                           std::to_string(dist_->nblkcols()) + " blocks but the layout " +
                                           std::to_string(layout_.rows.count()) + "x" +
                                           std::to_string(layout_.cols.count()));
  local_ = Panel(dist_->local_rows());
}

bool DistMatrix::is_local(int i, int j) const {
  return i >= 0 && j >= 0 && i < dist_->nblkrows() && j < dist_->nblkcols() && dist_->owner(i, j) == grid().rank();
}

namespace {
// Whether x's blocks are y's, row by row (their values may lie elsewhere in their areas).
bool same_pattern(const Panel& y, const Panel& x) {
  bool same = y.nrows() == x.nrows() && y.nblocks() == x.nblocks();
  for (int r = 0; same && r < y.nrows(); ++r) {
    same = y.row_begin(r) == x.row_begin(r) && y.row_end(r) == x.row_end(r);
    for (std::int64_t b = y.row_begin(r); same && b < y.row_end(r); ++b) same = y.col(b) == x.col(b);
  }
  return same;
}

// alpha * y + beta * x: in place when both have the same block pattern (every iteration of a
// dense or settled sparse matrix), else through add_panels; on `threads` threads.
Panel added(Panel& y, double alpha, const Panel& x, double beta, const BlockLayout& layout, int threads) {
  if (!same_pattern(y, x)) return add_panels(y.view(), alpha, x.view(), beta, layout, threads);
  double* const out = y.data().data();
  const double* const in = x.data().data();
  for_each_row_share(y.view(), slots_for(threads, y.data_size()), [&](int r0, int r1) {
    for (int r = r0; r < r1; ++r)
      for (std::int64_t b = y.row_begin(r); b < y.row_end(r); ++b) {
        const std::int64_t n = block_values(layout, y.row_id(r), y.col(b));
        double* o = out + y.offset(b);
        const double* v = in + x.offset(b);
        for (std::int64_t q = 0; q < n; ++q) o[q] = alpha * o[q] + beta * v[q];
      }
  });
  return std::move(y);
}
}  // namespace

void DistMatrix::put_block(int i, int j, const double* values) {
  if (!is_local(i, j))
    throw Error("DistMatrix " + name_, "put_block(" + std::to_string(i) + ", " + std::to_string(j) +
                                           ") on rank " + std::to_string(grid().rank()) + ": block is not local");
  const std::int64_t n = block_values(layout_, i, j);
  if (double* dst = get_block(i, j); dst != nullptr && pending_.empty()) {
    std::copy(values, values + n, dst);
    return;
  }
  pending_[{i, j}].assign(values, values + n);
}

void DistMatrix::finalize() {
  if (pending_.empty()) return;
  Panel add(dist_->local_rows());
  for (const auto& [ij, values] : pending_) {
    const int r = add.row_index(ij.first);
    std::copy(values.begin(), values.end(), add.append_block(r, ij.second, static_cast<int>(values.size())));
  }
  pending_.clear();
  // Later puts win: drop the old values of blocks that were put again, then merge.
  const PanelView old = local_.view(), fresh = add.view();
  Panel kept(dist_->local_rows());
  for (int r = 0; r < old.nrows; ++r)
    for (std::int64_t b = old.row_ptr[r]; b < old.row_ptr[r + 1]; ++b) {
      const int j = static_cast<int>(old.cols[b]);
      if (add.find(r, j) >= 0) continue;
      const std::int64_t n = block_values(layout_, static_cast<int>(old.row_ids[r]), j);
      std::copy(old.data + old.offsets[b], old.data + old.offsets[b] + n, kept.append_block(r, j, static_cast<int>(n)));
    }
  local_ = add_panels(kept.view(), 1.0, fresh, 1.0, layout_);
}

const double* DistMatrix::get_block(int i, int j) const {
  const int r = local_.row_index(i);
  if (r < 0) return nullptr;
  const std::int64_t b = local_.find(r, j);
  return b < 0 ? nullptr : local_.data().data() + local_.offset(b);
}

double* DistMatrix::get_block(int i, int j) {
  return const_cast<double*>(static_cast<const DistMatrix*>(this)->get_block(i, j));
}

void DistMatrix::set_local(Panel panel) {
  const auto& rows = dist_->local_rows();
  bool ok = panel.nrows() == static_cast<int>(rows.size());
  for (int r = 0; ok && r < panel.nrows(); ++r) ok = panel.row_id(r) == rows[r];
  if (!ok) throw Error("DistMatrix " + name_, "set_local: the panel's rows are not this rank's local block rows");
  local_ = std::move(panel);
}

std::int64_t DistMatrix::global_nblocks() const {
  std::int64_t n = local_.nblocks();
  mpi::check(MPI_Allreduce(MPI_IN_PLACE, &n, 1, MPI_INT64_T, MPI_SUM, grid().comm()), "MPI_Allreduce");
  return n;
}

double DistMatrix::occupancy() const {
  const double total = double(layout_.rows.count()) * double(layout_.cols.count());
  return total > 0 ? double(global_nblocks()) / total : 0.0;
}

void DistMatrix::scale(double alpha, int threads) {
  double* const x = local_.data().data();
  for_each_share(threads, static_cast<std::int64_t>(local_.data().size()), [&](int, std::int64_t lo, std::int64_t hi) {
    for (std::int64_t q = lo; q < hi; ++q) x[q] *= alpha;
  });
}

void DistMatrix::add(double alpha, double beta, const DistMatrix& other, int threads) {
  if (!(other.layout_ == layout_))
    throw Error("DistMatrix " + name_, "add: matrices " + name_ + " and " + other.name_ + " have different block layouts");
  if (!other.dist_->same_maps(*dist_)) {
    const DistMatrix moved = other.redistribute(dist_);
    local_ = added(local_, alpha, moved.local_, beta, layout_, threads);
    return;
  }
  local_ = added(local_, alpha, other.local_, beta, layout_, threads);
}

void DistMatrix::add_identity(double alpha) {
  if (!(layout_.rows == layout_.cols)) throw Error("DistMatrix " + name_, "add_identity needs a square block layout");
  // Every local diagonal block present (the usual case in iterations): in place.
  bool present = true;
  for (int r = 0; present && r < local_.nrows(); ++r) {
    const int i = local_.row_id(r);
    if (dist_->col_dist()[i] == grid().mypcol() && local_.find(r, i) < 0) present = false;
  }
  if (present) {
    for (int r = 0; r < local_.nrows(); ++r) {
      const int i = local_.row_id(r);
      if (dist_->col_dist()[i] != grid().mypcol()) continue;
      const int m = layout_.rows.size(i);
      double* d = local_.data().data() + local_.offset(local_.find(r, i));
      for (int q = 0; q < m; ++q) d[q + std::int64_t{q} * m] += alpha;
    }
    return;
  }
  Panel diag(dist_->local_rows());
  for (int r = 0; r < diag.nrows(); ++r) {
    const int i = diag.row_id(r);
    if (dist_->col_dist()[i] != grid().mypcol()) continue;
    const int m = layout_.rows.size(i);
    double* d = diag.append_block(r, i, m * m);
    for (int q = 0; q < m; ++q) d[q + q * m] = alpha;
  }
  local_ = add_panels(local_.view(), 1.0, diag.view(), 1.0, layout_);
}

double DistMatrix::trace() const {
  if (layout_.rows.total() != layout_.cols.total() || !(layout_.rows == layout_.cols))
    throw Error("DistMatrix " + name_, "trace needs a square block layout");
  double t = 0;
  const PanelView v = local_.view();
  for (int r = 0; r < v.nrows; ++r) {
    const int i = static_cast<int>(v.row_ids[r]);
    const std::int64_t b = local_.find(r, i);
    if (b < 0) continue;
    const int m = layout_.rows.size(i);
    const double* x = v.data + v.offsets[b];
    for (int q = 0; q < m; ++q) t += x[q + std::int64_t{q} * m];
  }
  return allreduce_sum(t, grid().comm());
}

double DistMatrix::dot(const DistMatrix& other, int threads) const {
  if (!(other.layout_ == layout_)) throw Error("DistMatrix " + name_, "dot: different block layouts");
  if (!other.dist_->same_maps(*dist_)) return dot(other.redistribute(dist_), threads);
  // X with itself (TRS4's Tr(X^2 X^2)): the sum of squares of its values, without the merge.
  if (&other == this) return allreduce_sum(local_sum_of_squares(threads), grid().comm());
  const PanelView p = local_.view(), q = other.local_.view();
  threads = slots_for(threads, p.data_size);
  std::vector<double> partial(static_cast<std::size_t>(threads), 0.0);
  for_each_row_share(p, threads, [&](int t, int r0, int r1) {
    double s = 0;
    for (int r = r0; r < r1; ++r) {
      std::int64_t b1 = p.row_ptr[r], e1 = p.row_ptr[r + 1], b2 = q.row_ptr[r], e2 = q.row_ptr[r + 1];
      while (b1 < e1 && b2 < e2) {
        if (p.cols[b1] < q.cols[b2]) {
          ++b1;
        } else if (q.cols[b2] < p.cols[b1]) {
          ++b2;
        } else {
          const std::int64_t n = block_values(layout_, static_cast<int>(p.row_ids[r]), static_cast<int>(p.cols[b1]));
          s += sum_of_products(p.data + p.offsets[b1++], q.data + q.offsets[b2++], n);
        }
      }
    }
    partial[static_cast<std::size_t>(t)] = s;
  });
  double s = 0;
  for (double v : partial) s += v;
  return allreduce_sum(s, grid().comm());
}

double DistMatrix::local_sum_of_squares(int threads) const {
  const double* const x = local_.data().data();
  std::vector<double> partial(static_cast<std::size_t>(std::max(1, threads)), 0.0);
  for_each_share(threads, static_cast<std::int64_t>(local_.data().size()),
                 [&](int t, std::int64_t lo, std::int64_t hi) {
                   partial[static_cast<std::size_t>(t)] = sum_of_squares(x + lo, hi - lo);
                 });
  double s = 0;
  for (double p : partial) s += p;
  return s;
}

double DistMatrix::frobenius_norm(int threads) const {
  return std::sqrt(allreduce_sum(local_sum_of_squares(threads), grid().comm()));
}

std::vector<double> DistMatrix::block_norms() const { return plexus::block_norms(local_.view(), layout_); }

std::int64_t DistMatrix::filter(double eps, int threads) {
  if (eps <= 0) return 0;
  std::int64_t dropped = 0;
  if (std::optional<Panel> kept = without_small_blocks(local_.view(), layout_, eps, dropped, threads))
    local_ = std::move(*kept);
  return dropped;
}

DistMatrix DistMatrix::redistribute(std::shared_ptr<const Distribution> target) const {
  mpi::Traffic traffic;
  return redistribute(std::move(target), traffic);
}

DistMatrix DistMatrix::redistribute(std::shared_ptr<const Distribution> target, mpi::Traffic& traffic) const {
  if (target->nblkrows() != dist_->nblkrows() || target->nblkcols() != dist_->nblkcols())
    throw Error("DistMatrix " + name_, "redistribute: the target distribution has another block count");
  MPI_Comm comm = target->grid().comm();
  int congruent = MPI_UNEQUAL;
  mpi::check(MPI_Comm_compare(comm, grid().comm(), &congruent), "MPI_Comm_compare");
  if (congruent != MPI_CONGRUENT && congruent != MPI_IDENT)
    throw Error("DistMatrix " + name_, "redistribute: the target grid is over another set of ranks");
  const ExchangedBlocks got = exchange_blocks(
      local_.view(), layout_, comm,
      [&](int i, int j, int& tag) {
        tag = 0;
        return target->owner(i, j);
      },
      traffic, mpi::Role::Other);
  DistMatrix out(name_, target, layout_);
  Panel panel(target->local_rows());
  panel.reserve(static_cast<std::int64_t>(got.blocks.size()), static_cast<std::int64_t>(got.values.size()));
  for (const auto& blk : got.blocks) {
    const std::int64_t n = block_values(layout_, blk.row, blk.col);
    std::copy(got.values.data() + blk.offset, got.values.data() + blk.offset + n,
              panel.append_block(panel.row_index(blk.row), blk.col, static_cast<int>(n)));
  }
  out.set_local(std::move(panel));
  return out;
}

DistMatrix::Gathered DistMatrix::gather_blocks(int root) const {
  MPI_Comm comm = grid().comm();
  const int p = grid().size(), me = grid().rank();
  const PanelView v = local_.view();
  std::vector<std::int64_t> idx;
  idx.reserve(static_cast<std::size_t>(2 * v.nblocks));
  for (int r = 0; r < v.nrows; ++r)
    for (std::int64_t b = v.row_ptr[r]; b < v.row_ptr[r + 1]; ++b) {
      idx.push_back(v.row_ids[r]);
      idx.push_back(v.cols[b]);
    }
  if (v.data_size > std::int64_t{2147483647}) throw Error("DistMatrix " + name_, "gather: local part too large");
  // Values in block order (a panel's value area need not be).
  std::vector<double> vals;
  vals.reserve(static_cast<std::size_t>(v.data_size));
  for (int r = 0; r < v.nrows; ++r)
    for (std::int64_t b = v.row_ptr[r]; b < v.row_ptr[r + 1]; ++b) {
      const std::int64_t n = block_values(layout_, static_cast<int>(v.row_ids[r]), static_cast<int>(v.cols[b]));
      vals.insert(vals.end(), v.data + v.offsets[b], v.data + v.offsets[b] + n);
    }
  int counts[2] = {static_cast<int>(idx.size()), static_cast<int>(vals.size())};
  std::vector<int> all_counts(static_cast<std::size_t>(2 * p));
  mpi::check(MPI_Allgather(counts, 2, MPI_INT, all_counts.data(), 2, MPI_INT, comm), "MPI_Allgather");
  std::vector<int> ci(static_cast<std::size_t>(p)), cv(static_cast<std::size_t>(p));
  std::vector<int> di(static_cast<std::size_t>(p), 0), dv(static_cast<std::size_t>(p), 0);
  std::int64_t ti = 0, tv = 0;
  for (int q = 0; q < p; ++q) {
    ci[q] = all_counts[2 * q];
    cv[q] = all_counts[2 * q + 1];
    if (ti + ci[q] > std::int64_t{2147483647} || tv + cv[q] > std::int64_t{2147483647})
      throw Error("DistMatrix " + name_, "gather: matrix too large to gather on one rank");
    di[q] = static_cast<int>(ti);
    dv[q] = static_cast<int>(tv);
    ti += ci[q];
    tv += cv[q];
  }
  const bool receiver = root < 0 || root == me;
  Gathered g;
  if (receiver) {
    g.index.resize(static_cast<std::size_t>(ti));
    g.values.resize(static_cast<std::size_t>(tv));
  }
  if (root < 0) {
    mpi::check(MPI_Allgatherv(idx.data(), counts[0], MPI_INT64_T, g.index.data(), ci.data(), di.data(), MPI_INT64_T,
                              comm),
               "MPI_Allgatherv");
    mpi::check(MPI_Allgatherv(vals.data(), counts[1], MPI_DOUBLE, g.values.data(), cv.data(), dv.data(), MPI_DOUBLE, comm),
               "MPI_Allgatherv");
  } else {
    mpi::check(MPI_Gatherv(idx.data(), counts[0], MPI_INT64_T, g.index.data(), ci.data(), di.data(), MPI_INT64_T, root,
                           comm),
               "MPI_Gatherv");
    mpi::check(MPI_Gatherv(vals.data(), counts[1], MPI_DOUBLE, g.values.data(), cv.data(), dv.data(), MPI_DOUBLE, root,
                           comm),
               "MPI_Gatherv");
  }
  return g;
}

std::vector<double> DistMatrix::to_dense(int root) const {
  const Gathered g = gather_blocks(root);
  if (root >= 0 && root != grid().rank()) return {};
  const std::int64_t nr = nrows();
  std::vector<double> dense(static_cast<std::size_t>(nr * ncols()), 0.0);
  std::int64_t off = 0;
  for (std::size_t q = 0; q < g.index.size(); q += 2) {
    const int i = static_cast<int>(g.index[q]), j = static_cast<int>(g.index[q + 1]);
    const int m = layout_.rows.size(i), n = layout_.cols.size(j);
    const std::int64_t r0 = layout_.rows.offset(i), c0 = layout_.cols.offset(j);
    for (int c = 0; c < n; ++c)
      for (int r = 0; r < m; ++r)
        dense[static_cast<std::size_t>((c0 + c) * nr + r0 + r)] = g.values[static_cast<std::size_t>(off + r + std::int64_t{c} * m)];
    off += std::int64_t{m} * n;
  }
  return dense;
}

}  // namespace plexus
