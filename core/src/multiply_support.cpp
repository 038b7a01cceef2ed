#include "plexus/multiply_support.hpp"

#include <algorithm>
#include <climits>
#include <string>

#include "plexus/error.hpp"
#include "plexus/memory.hpp"
#include "plexus/mpi.hpp"
#include "threads.hpp"

namespace plexus {

namespace {
std::int64_t block_values(const BlockLayout& l, int i, int j) { return std::int64_t{l.rows.size(i)} * l.cols.size(j); }
}  // namespace

Panel add_panels(const PanelView& p1, double a1, const PanelView& p2, double a2, const BlockLayout& layout,
                 int threads) {
  if (p1.nrows != p2.nrows) throw Error("merge_panels", "panels cover different rows");
  const auto nrows = static_cast<std::size_t>(p1.nrows);
  // Rows shared by the threads by their blocks in both panels.
  std::vector<std::int64_t> weight(nrows);
  for (std::size_t r = 0; r < nrows; ++r)
    weight[r] = (p1.row_ptr[r + 1] - p1.row_ptr[r]) + (p2.row_ptr[r + 1] - p2.row_ptr[r]);
  threads = std::min(std::clamp(threads, 1, std::max(1, p1.nrows)), slots_for(threads, p1.data_size + p2.data_size));
  const std::vector<int> first = balance_rows(weight, threads);
  const auto each_share = [&](auto&& f) {
    for_each_thread(threads,
                    [&](int t) { f(first[static_cast<std::size_t>(t)], first[static_cast<std::size_t>(t) + 1]); });
  };
  // Each row's union of columns walked twice: first its blocks and values counted, then, once
  // every row's start is known, written. The sum of both panels' blocks goes into a fresh area
  // exactly its size, each value written once (a1 x + a2 y, or one term where the other panel has
  // no block): no zeroing, no growth.
  const auto merge_row = [&](int r, auto&& at) {
    const int i = static_cast<int>(p1.row_ids[r]);
    std::int64_t b1 = p1.row_ptr[r], e1 = p1.row_ptr[r + 1], b2 = p2.row_ptr[r], e2 = p2.row_ptr[r + 1];
    while (b1 < e1 || b2 < e2) {
      const std::int64_t c1 = b1 < e1 ? p1.cols[b1] : INT64_MAX, c2 = b2 < e2 ? p2.cols[b2] : INT64_MAX;
      const std::int64_t j = std::min(c1, c2);
      at(j, block_values(layout, i, static_cast<int>(j)), c1 == j ? p1.data + p1.offsets[b1++] : nullptr,
         c2 == j ? p2.data + p2.offsets[b2++] : nullptr);
    }
  };
  // Row r's blocks and values, counted into entry r + 1 and summed into starts below.
  IndexArray row_ids(p1.row_ids, p1.row_ids + p1.nrows), row_ptr(nrows + 1, 0);
  std::vector<std::int64_t> value_start(nrows + 1, 0);
  each_share([&](int r0, int r1) {
    for (int r = r0; r < r1; ++r)
      merge_row(r, [&](std::int64_t, std::int64_t n, const double*, const double*) {
        ++row_ptr[static_cast<std::size_t>(r) + 1];
        value_start[static_cast<std::size_t>(r) + 1] += n;
      });
  });
  for (std::size_t r = 0; r < nrows; ++r) {
    row_ptr[r + 1] += row_ptr[r];
    value_start[r + 1] += value_start[r];
  }
  const std::int64_t nblocks = row_ptr[nrows];
  IndexArray cols(static_cast<std::size_t>(nblocks)), offsets(static_cast<std::size_t>(nblocks));
  MatrixData data(static_cast<std::size_t>(value_start[nrows]));  // unset until written below
  each_share([&](int r0, int r1) {
    for (int r = r0; r < r1; ++r) {
      std::int64_t b = row_ptr[static_cast<std::size_t>(r)];
      std::int64_t at = value_start[static_cast<std::size_t>(r)];
      merge_row(r, [&](std::int64_t j, std::int64_t n, const double* x, const double* y) {
        cols[static_cast<std::size_t>(b)] = j;
        offsets[static_cast<std::size_t>(b++)] = at;
        double* dst = data.data() + at;
        at += n;
        if (x != nullptr && y != nullptr)
          for (std::int64_t q = 0; q < n; ++q) dst[q] = a1 * x[q] + a2 * y[q];
        else if (x != nullptr)
          for (std::int64_t q = 0; q < n; ++q) dst[q] = a1 * x[q];
        else
          for (std::int64_t q = 0; q < n; ++q) dst[q] = a2 * y[q];
      });
    }
  });
  return Panel::adopt(std::move(row_ids), std::move(row_ptr), std::move(cols), std::move(offsets), std::move(data));
}

std::vector<double> global_row_thresholds(const DistMatrix& A, double eps) {
  if (eps <= 0) return {};
  std::vector<std::int64_t> count(static_cast<std::size_t>(A.layout().rows.count()), 0);
  const Panel& a = A.local();
  for (int r = 0; r < a.nrows(); ++r) count[static_cast<std::size_t>(a.row_id(r))] = a.row_end(r) - a.row_begin(r);
  mpi::check(MPI_Allreduce(MPI_IN_PLACE, count.data(), static_cast<int>(count.size()), MPI_INT64_T, MPI_SUM,
                           A.grid().comm()),
             "MPI_Allreduce");
  std::vector<double> thr(count.size());
  for (std::size_t i = 0; i < thr.size(); ++i) thr[i] = eps / static_cast<double>(std::max<std::int64_t>(1, count[i]));
  return thr;
}

std::vector<double> thresholds_of_rows(const std::vector<double>& global, const std::vector<int>& rows) {
  if (global.empty()) return {};
  std::vector<double> out(rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r) out[r] = global[static_cast<std::size_t>(rows[r])];
  return out;
}

std::vector<std::int64_t> row_weights(const DistMatrix& A, const DistMatrix& C, double beta) {
  const Panel &a = A.local(), &c = C.local();
  std::vector<std::int64_t> w(static_cast<std::size_t>(c.nrows()));
  for (int r = 0; r < c.nrows(); ++r)
    w[r] = (a.row_end(r) - a.row_begin(r)) + (beta != 0.0 ? c.row_end(r) - c.row_begin(r) : 0);
  return w;
}

}  // namespace plexus
