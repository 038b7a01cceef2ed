#include "plexus/multiply_support.hpp"

#include <algorithm>
#include <climits>
#include <string>

#include "plexus/error.hpp"
#include "plexus/memory.hpp"
#include "plexus/mpi.hpp"

namespace plexus {

namespace {
std::int64_t block_values(const BlockLayout& l, int i, int j) { return std::int64_t{l.rows.size(i)} * l.cols.size(j); }
}  // namespace

Panel add_panels(const PanelView& p1, double a1, const PanelView& p2, double a2, const BlockLayout& layout) {
  if (p1.nrows != p2.nrows) throw Error("merge_panels", "panels cover different rows");
  Panel out(std::vector<int>(p1.row_ids, p1.row_ids + p1.nrows));
  out.reserve(p1.nblocks + p2.nblocks, p1.data_size + p2.data_size);
  for (int r = 0; r < p1.nrows; ++r) {
    const int i = static_cast<int>(p1.row_ids[r]);
    std::int64_t b1 = p1.row_ptr[r], e1 = p1.row_ptr[r + 1], b2 = p2.row_ptr[r], e2 = p2.row_ptr[r + 1];
    while (b1 < e1 || b2 < e2) {
      const std::int64_t c1 = b1 < e1 ? p1.cols[b1] : INT64_MAX, c2 = b2 < e2 ? p2.cols[b2] : INT64_MAX;
      const auto j = static_cast<int>(std::min(c1, c2));
      const std::int64_t n = block_values(layout, i, j);
      double* dst = out.append_block(r, j, static_cast<int>(n));
      if (c1 == j) {
        const double* x = p1.data + p1.offsets[b1++];
        for (std::int64_t q = 0; q < n; ++q) dst[q] += a1 * x[q];
      }
      if (c2 == j) {
        const double* x = p2.data + p2.offsets[b2++];
        for (std::int64_t q = 0; q < n; ++q) dst[q] += a2 * x[q];
      }
    }
  }
  return out;
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
