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


void check_multiply_operands(const DistMatrix& A, const DistMatrix& B, const DistMatrix& C, const std::string& where) {
  int same_ab = MPI_UNEQUAL, same_ac = MPI_UNEQUAL;
  mpi::check(MPI_Comm_compare(A.grid().comm(), B.grid().comm(), &same_ab), "MPI_Comm_compare");
  mpi::check(MPI_Comm_compare(A.grid().comm(), C.grid().comm(), &same_ac), "MPI_Comm_compare");
  auto congruent = [](int r) { return r == MPI_IDENT || r == MPI_CONGRUENT; };
  if (!congruent(same_ab) || !congruent(same_ac) || A.grid().nprows() != B.grid().nprows() ||
      A.grid().npcols() != B.grid().npcols() || A.grid().nprows() != C.grid().nprows() ||
      A.grid().npcols() != C.grid().npcols())
    throw Error(where, "A, B and C must be distributed over the same process grid");
  if (!(A.layout().cols == B.layout().rows))
    throw Error(where, "the block columns of A (" + std::to_string(A.layout().cols.count()) +
                           ") do not match the block rows of B (" + std::to_string(B.layout().rows.count()) + ")");
  if (!(C.layout().rows == A.layout().rows) || !(C.layout().cols == B.layout().cols))
    throw Error(where, "C's block sizes must be A's rows by B's columns");
  if (C.distribution().row_dist() != A.distribution().row_dist() ||
      C.distribution().col_dist() != B.distribution().col_dist())
    throw Error(where, "C's rows must be distributed like A's rows and its columns like B's columns "
                       "(redistribute C first)");
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

double start_multiply() {
  memory::reset_peak(memory::Category::CommBuffer);
  memory::reset_peak_total();
  return mpi::now();
}

void finish_multiply_report(MultiplyReport& report, const std::string& strategy, const Kernel& kernel,
                            const LocalMultiplyStats& stats, double t_start) {
  report.strategy = strategy;
  report.kernel = kernel.name();
  report.flops = stats.flops;
  report.products = stats.products;
  report.skipped_products = stats.skipped;
  report.kernel_seconds = stats.kernel_seconds;
  report.stack_seconds = stats.stack_seconds;
  report.peak_buffer_bytes = memory::peak(memory::Category::CommBuffer);
  report.peak_memory_bytes = memory::peak_total();
  report.seconds = mpi::now() - t_start;
}

void prepare_c(DistMatrix& C, double beta) {
  if (beta == 0.0) {
    C.set_local(Panel(C.distribution().local_rows()));
  } else if (beta != 1.0) {
    C.scale(beta);
  }
}

}  // namespace plexus
