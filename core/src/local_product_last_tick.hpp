#pragma once
// The last tick's filter on one thread's rows (LocalProduct::filter_last_tick, multiply_tick): a
// template over multiply_tick's traversal, so that its loops stay inlined; keep_large_blocks and
// join_kept are in local_product_last_tick.cpp.
#include <algorithm>
#include <cstdint>

#include "column_tiles.hpp"
#include "host_session.hpp"
#include "local_product_passes.hpp"
#include "local_product_work.hpp"

namespace plexus {

// The kernel computes thread w's A rows [ar0, ar1) into the thread's work area; at the end of a
// row, once the stack is half full, the stack goes to the kernel, and the rows stacked since the
// last such point, final now and in the caches, lose their small blocks while the kept ones go to
// `kept` in C's order. The next rows' blocks are placed from the work area's start again, so that
// the kernel writes to memory it has just used. `stack` places new blocks at *c_end in `work`.
// `visits`: the products that `kept` is sized for (all threads' where `kept` is C's own area,
// which takes the others' blocks after). Returns where the kept values end.
template <class VisitRow>
std::int64_t LocalProduct::filter_rows(ThreadWork& w, const PanelView& a, const int* a_c_row, int ar0, int ar1,
                                       VisitRow& visit_row, StackPass& stack, std::int64_t& c_end,
                                       WorkAreaSession& work, MatrixData& kept, std::int64_t visits) {
  kept.resize(kept.capacity());  // its doubles are left unset (a tracked vector)
  std::int64_t kept_end = 0;
  bool extrapolated = false;
  ColumnOrder order(layout_.cols.count());
  ColumnTiles tiles;
  const int widest = layout_.cols.max_size();
  for (int ar = ar0, done = ar0; ar < ar1; ++ar) {
    visit_row(w, ar, 0, stack, tiles, widest);  // C was empty: every block in the row is new
    if (stack.size < kStackCapacity / 2 && ar + 1 < ar1) continue;
    stack.flush();
    kept_end = keep_large_blocks(w, a, a_c_row, done, ar + 1, work.values(), c_end, order, kept, kept_end);
    // Once, as soon as blocks are kept: the area for all `visits` will keep, the kept values so far
    // scaled to those products, and a tenth more (as the one pass reserves ahead), where its room
    // (a C without reserved room has none) is smaller.
    const std::int64_t done_products = stack.products + stack.skipped;
    if (!extrapolated && kept_end > 0 && done_products > 0) {
      extrapolated = true;
      const auto estimate =
          static_cast<std::size_t>(values_ahead(kept_end, done_products, std::max(visits, done_products)));
      if (estimate > kept.size()) {
        resize_exactly(kept, estimate);
      } else if (estimate + estimate / 4 < kept.capacity()) {
        // C's reserved room is well beyond what the tick will keep: finish() would give it back
        // with a copy of all of C (a third of a filtered sign solve's multiplies did). Only the
        // blocks kept so far are copied now, into an area of the estimate's size.
        MatrixData fitted;
        fitted.reserve(estimate);
        fitted.assign(kept.begin(), kept.begin() + kept_end);
        fitted.resize(estimate);
        kept = std::move(fitted);
      }
    }
    work.reuse(c_end);
    c_end = 0;
    done = ar + 1;
  }
  kept.resize(static_cast<std::size_t>(kept_end));
  return kept_end;
}

}  // namespace plexus
