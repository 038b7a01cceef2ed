#pragma once
// Several threads' one pass of a tick (LocalProduct::multiply_tick): each thread places its new C
// blocks in a slab of C's room as it stacks their first products, and the slabs are joined after
// (docs/performance.md, "One pass on several threads"). A template over multiply_tick's traversal,
// so that its loops stay inlined; LocalProduct::join_slabs and account are in
// local_product_slabs.cpp.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "column_tiles.hpp"
#include "host_session.hpp"
#include "local_product_passes.hpp"
#include "local_product_work.hpp"
#include "plexus/timers.hpp"
#include "threads.hpp"

namespace plexus {

// Several threads' one pass into slabs of C's room (multiply_tick): a tick's products of A panel a
// (its rows' C rows a_c_row) and B panel b, each thread's from its A row from[t] on, visited by
// multiply_tick's traversal (for_each_product, visit_row, row_bound: its bound on a row's new
// values). true: every row done; false: from[t] is where each thread's rows are left for the two
// passes.
template <class Traverse, class VisitRow, class RowBound>
bool LocalProduct::slab_rounds(const PanelView& a, const PanelView& b, const int* a_c_row, std::int64_t tick_start,
                               std::vector<int>& from, Traverse& for_each_product, VisitRow& visit_row,
                               RowBound& row_bound) {
  const int nthreads = static_cast<int>(work_.size());
  auto a_rows_of = [&](const ThreadWork& w) { return a_rows_in(a_c_row, a.nrows, w.row_begin, w.row_end); };
  // Each thread's bound on the new values of its rows left (as row_fits takes a row's).
  std::vector<std::int64_t> bound(static_cast<std::size_t>(nthreads), 0);
  auto bound_left = [&] {
    std::int64_t total = 0;
    for (int t = 0; t < nthreads; ++t) {
      std::int64_t& n = bound[static_cast<std::size_t>(t)] = 0;
      const int ar1 = a_rows_of(*work_[static_cast<std::size_t>(t)]).second;
      for (int ar = from[static_cast<std::size_t>(t)]; ar < ar1; ++ar) n += row_bound(ar);
      total += n;
    }
    return total;
  };
  // One round: the room shared by the bounds (the last thread's slab ends at the room's end), C
  // grown to its end (within the capacity: C stays where it is), each thread's one pass into
  // its slab, and the slabs joined.
  auto slab_round = [&](std::int64_t room) {
    std::int64_t total = 0, before = 0, at = c_values_;
    for (const std::int64_t n : bound) total += n;
    std::vector<Slab> slab(static_cast<std::size_t>(nthreads));
    for (int t = 0; t < nthreads; ++t) {
      before += bound[static_cast<std::size_t>(t)];
      const double share =
          total > 0 ? static_cast<double>(before) / static_cast<double>(total) : static_cast<double>(t + 1) / nthreads;
      const std::int64_t end = t + 1 == nthreads
                                   ? c_values_ + room
                                   : c_values_ + static_cast<std::int64_t>(share * static_cast<double>(room));
      slab[static_cast<std::size_t>(t)] = Slab{at, at, std::max(at, end)};
      at = std::max(at, end);
    }
    {
      timers::Scoped timer("local multiply: grow");
      session_->grow(c_values_ + room);
    }
    timers::Scoped slabs_timer("local multiply: stacks and kernel");
    for_each_thread(nthreads, [&](int t) {
      ThreadWork& w = *work_[static_cast<std::size_t>(t)];
      Slab& s = slab[static_cast<std::size_t>(t)];
      const double t0 = omp_get_wtime();
      std::int64_t grown = s.end;  // C has its room already: no growth in the pass
      StackPass stack{w,
                      a,
                      b,
                      *session_,
                      t,
                      w.stack.data(),
                      on_calling_thread(nthreads) && progress_ ? &progress_ : nullptr,
                      &s.next,
                      &grown,
                      nullptr,
                      c_values_,
                      0,
                      nullptr,
                      0,
                      layout_.cols};
      w.fresh.clear();
      auto& first = from[static_cast<std::size_t>(t)];
      first = for_each_product(w, first, tick_start, stack, &s);
      stack.flush();
      account(w, stack, omp_get_wtime() - t0);
    });
    slabs_timer.stop();
    join_slabs(slab);
  };
  // A C that outgrows its room (a sign iteration's C fills in beyond its previous size) takes a
  // second round, and a third: room for the rows left at the new values per unit of bound so far,
  // and a tenth more (C moves once a round, as the one pass's reserve_ahead moves it). Rows left
  // after that, or after a round that fitted none, take the two passes.
  const std::int64_t all = bound_left();
  std::int64_t left = all, room = host_session_->capacity() - c_values_;
  // The first round's room, unless every row surely fits: at least the tick's new values as every
  // 16th row of each thread counts them (their symbolic pass alone), scaled by the bounds, and a
  // tenth more; reserved now, while C holds only what it started the tick with (a later round's
  // reservation copies what the rounds before wrote).
  std::vector<std::int64_t> guess(static_cast<std::size_t>(nthreads), 0);
  if (room < all) {
    timers::Scoped timer("local multiply: sample");
    for_each_thread(nthreads, [&](int t) {
      ThreadWork& w = *work_[static_cast<std::size_t>(t)];
      ColumnTiles tiles;
      const int widest = host_ ? layout_.cols.max_size() : 0;
      const auto [ar0, ar1] = a_rows_of(w);
      double counted = 0, sampled = 0;
      for (int ar = ar0; ar < ar1; ar += 16) {
        CountPass count{w, b, layout_.cols};
        visit_row(w, ar, std::numeric_limits<std::int64_t>::max(), count, tiles, widest);
        count.forget();
        counted += static_cast<double>(count.values);
        sampled += static_cast<double>(row_bound(ar));
      }
      if (sampled > 0)
        guess[static_cast<std::size_t>(t)] =
            static_cast<std::int64_t>(counted / sampled * static_cast<double>(bound[static_cast<std::size_t>(t)]));
    });
  }
  std::int64_t guessed = 0;
  for (const std::int64_t g : guess) guessed += g;
  guessed += guessed / 10;
  if (guessed > room) {
    timers::Scoped timer("local multiply: reserve");
    host_session_->reserve(c_values_ + guessed);
    room = guessed;
  }
  for (int round = 0; round < 3 && left > 0 && room > 0; ++round) {
    slab_round(room);
    const std::int64_t now = bound_left();
    if (now == 0) return true;
    if (now == left) break;
    left = now;
    room = static_cast<std::int64_t>(1.1 * static_cast<double>(c_values_ - tick_start) /
                                     static_cast<double>(all - left) * static_cast<double>(left)) +
           1;
    timers::Scoped timer("local multiply: reserve");
    host_session_->reserve(c_values_ + room);
  }
  return false;
}

}  // namespace plexus
