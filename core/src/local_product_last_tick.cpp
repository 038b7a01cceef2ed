// The last tick's filter (LocalProduct::filter_last_tick): the tick that applies the multiply's
// final filter as it completes C's rows (multiply_tick, local_multiply.cpp, drops them here).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "host_session.hpp"
#include "local_product_work.hpp"
#include "plexus/error.hpp"
#include "plexus/local_multiply.hpp"
#include "sum_of_squares.hpp"

namespace plexus {

void LocalProduct::filter_last_tick(double eps) {
  if (!(eps > 0) || !std::isfinite(eps))
    throw Error("LocalProduct::filter_last_tick", "eps must be a finite number > 0 (got " + std::to_string(eps) + ")");
  if (!session_ || last_tick_done_)
    throw Error("LocalProduct::filter_last_tick", "called after the product's last tick or finish()");
  last_tick_eps_ = eps;
}

std::int64_t LocalProduct::keep_large_blocks(ThreadWork& w, const PanelView& a, const int* a_c_row, int ar0, int ar1,
                                             std::int64_t region_end, ColumnOrder& order, MatrixData& kept,
                                             std::int64_t kept_end) {
  // In C's order, row by row and by column within a row, as the driver's filter lays them out: the
  // next multiply reads a B row's blocks in column order, and blocks left in the order of their
  // first products (the one pass's) made the multiplies slower (their stacks and kernel, the
  // filter's own work included, took a third longer in the filtered sign solve of
  // docs/performance.md).
  const double* const work = host_session_->values();
  for (int ar = ar0; ar < ar1; ++ar) {
    auto& list = w.rows[static_cast<std::size_t>(a_c_row[ar] - w.row_begin)];
    if (list.empty()) continue;
    const std::int64_t m = layout_.rows.size(static_cast<int>(a.row_ids[ar]));
    std::int64_t row_values = 0;  // room for all of them, at most the work area's
    for (const auto& [col, off] : list) row_values += m * layout_.cols.size(static_cast<int>(col));
    if (kept_end + row_values > static_cast<std::int64_t>(kept.size()))
      kept.resize(std::max(static_cast<std::size_t>(kept_end + row_values), kept.size() + kept.size() / 2));
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

}  // namespace plexus
