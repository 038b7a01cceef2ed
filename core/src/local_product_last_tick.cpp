// The last tick's filter (LocalProduct::filter_last_tick): the tick that applies the multiply's
// final filter as it completes C's rows (multiply_tick, local_multiply.cpp, and filter_rows,
// local_product_last_tick.hpp, drop them here), and the join of its threads' kept blocks.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "host_session.hpp"
#include "local_product_work.hpp"
#include "plexus/error.hpp"
#include "plexus/local_multiply.hpp"
#include "plexus/timers.hpp"
#include "sum_of_squares.hpp"
#include "threads.hpp"

namespace plexus {

void LocalProduct::filter_last_tick(double eps) {
  if (!(eps > 0) || !std::isfinite(eps))
    throw Error("LocalProduct::filter_last_tick", "eps must be a finite number > 0 (got " + std::to_string(eps) + ")");
  if (!session_ || last_tick_done_)
    throw Error("LocalProduct::filter_last_tick", "called after the product's last tick or finish()");
  last_tick_eps_ = eps;
}

std::int64_t LocalProduct::keep_large_blocks(ThreadWork& w, const PanelView& a, const int* a_c_row, int ar0, int ar1,
                                             const double* work, std::int64_t region_end, ColumnOrder& order,
                                             MatrixData& kept, std::int64_t kept_end) {
  // In C's order, row by row and by column within a row, as the driver's filter lays them out: the
  // next multiply reads a B row's blocks in column order, and blocks left in the order of their
  // first products (the one pass's) made the multiplies slower (their stacks and kernel, the
  // filter's own work included, took a third longer in the filtered sign solve of
  // docs/performance.md).
  for (int ar = ar0; ar < ar1; ++ar) {
    auto& list = w.rows[static_cast<std::size_t>(a_c_row[ar] - w.row_begin)];
    if (list.empty()) continue;
    const std::int64_t m = layout_.rows.size(static_cast<int>(a.row_ids[ar]));
    std::int64_t row_values = 0;  // room for all of them, at most the work area's
    for (const auto& [col, off] : list) row_values += m * layout_.cols.size(static_cast<int>(col));
    if (kept_end + row_values > static_cast<std::int64_t>(kept.size()))  // half as much again
      resize_exactly(kept, std::max(static_cast<std::size_t>(kept_end + row_values), kept.size() + kept.size() / 2));
    std::size_t blocks = 0;
    order(list, [&](std::int64_t col, std::int64_t off) {
      const std::int64_t n = m * layout_.cols.size(static_cast<int>(col));
      if (off < 0 || off + n > region_end)
        throw Error("LocalProduct::multiply", "internal: a C block outside the work area in the last tick's filter");
      // As DistMatrix::filter decides (without_small_blocks): the same sum, the same comparison.
      if (std::sqrt(sum_of_squares(work + off, n)) < last_tick_eps_) return;
      std::memcpy(kept.data() + kept_end, work + off, static_cast<std::size_t>(n) * sizeof(double));
      list[blocks++] = {col, kept_end};
      kept_end += n;
    });
    list.resize(blocks);
  }
  return kept_end;
}

// Thread by thread in order, as their C rows are: C's order. Thread 0's blocks are in place (its
// area, sized for all threads' blocks, is C's own); each other thread copies its own.
std::int64_t LocalProduct::join_kept(std::vector<MatrixData>& kept) {
  const timers::Scoped timer("local multiply: join kept");
  std::vector<std::int64_t> base(kept.size() + 1, 0);
  for (std::size_t t = 0; t < kept.size(); ++t) base[t + 1] = base[t] + static_cast<std::int64_t>(kept[t].size());
  MatrixData& c = kept[0];
  resize_exactly(c, static_cast<std::size_t>(base.back()));  // moves only where the estimate fell short
  // The other threads' areas follow thread 0's, each copied by every thread in an equal share of
  // the joined area's values beyond thread 0's (by one thread alone, a filtered sign solve's
  // joins on two threads took 0.028 s of 1.09 s of multiplies); each thread moves its own rows.
  const auto threads = static_cast<int>(kept.size());
  const std::int64_t from = base[1], span = base.back() - from;
  for_each_thread(threads, [&](int s) {
    std::int64_t lo = from + span * s / threads;
    const std::int64_t hi = from + span * (s + 1) / threads;
    for (std::size_t t = 1; lo < hi; ++t) {
      if (base[t + 1] <= lo) continue;
      const std::int64_t end = std::min(hi, base[t + 1]);
      std::memcpy(c.data() + lo, kept[t].data() + (lo - base[t]), static_cast<std::size_t>(end - lo) * sizeof(double));
      lo = end;
    }
    if (s == 0) return;
    const std::int64_t by = base[static_cast<std::size_t>(s)];
    for (auto& list : work_[static_cast<std::size_t>(s)]->rows)
      for (auto& entry : list) entry.second += by;
  });
  for (std::size_t t = 1; t < kept.size(); ++t) kept[t] = MatrixData();  // back to the pool
  host_session_->exchange(std::move(c));
  return base.back();
}

}  // namespace plexus
