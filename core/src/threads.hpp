#pragma once
// Work split over an explicit number of threads (the kernel's, Kernel::threads), not OpenMP's
// default: core's passes over a panel's rows.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <type_traits>
#include <vector>

#include "plexus/local_multiply.hpp"
#include "plexus/panel.hpp"

namespace plexus {

// Runs f(t) for every thread slot t in an OpenMP region of `n` threads (also when OpenMP gives
// fewer), and rethrows the first exception after the region. One slot runs on the calling thread,
// without a region (whose start and end cost about a microsecond, several times a multiply).
template <class F>
void for_each_thread(int n, F&& f) {
  if (n == 1) {
    f(0);
    return;
  }
  std::exception_ptr failure;
#pragma omp parallel num_threads(n)
  for (int t = omp_get_thread_num(); t < n; t += omp_get_num_threads()) {
    try {
      f(t);
    } catch (...) {
#pragma omp critical(plexus_local_product_failure)
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
}

// Whether the calling code runs on the thread that called for_each_thread(n, ...): one slot runs
// there without a region; more run in a region whose thread 0 is the caller's.
inline bool on_calling_thread(int n) { return n == 1 || omp_get_thread_num() == 0; }

// Runs f(t, lo, hi) over 0 .. n - 1 cut into contiguous shares of about equal size, one per slot
// t < threads, where each gets at least kMinShare items (below that a region costs more than it
// saves: slots beyond get nothing and are not run). The shares depend only on n and threads.
inline constexpr std::int64_t kMinShare = std::int64_t{1} << 14;
// How many of `threads` slots a pass over `n` items takes: each at least kMinShare items.
inline int slots_for(int threads, std::int64_t n) {
  return static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(threads, n / kMinShare)));
}
template <class F>
void for_each_share(int threads, std::int64_t n, F&& f) {
  const int slots = slots_for(threads, n);
  for_each_thread(slots, [&](int t) { f(t, n * t / slots, n * (t + 1) / slots); });
}

// The first row of each of `threads` slots over a panel's rows, each slot's rows holding about as
// many blocks (threads + 1 entries: slot t has rows first[t] .. first[t + 1] - 1).
inline std::vector<int> rows_by_blocks(const PanelView& v, int threads) {
  std::vector<std::int64_t> weight(static_cast<std::size_t>(v.nrows));
  for (int r = 0; r < v.nrows; ++r) weight[static_cast<std::size_t>(r)] = v.row_ptr[r + 1] - v.row_ptr[r];
  return balance_rows(weight, threads);
}

// Runs f(r0, r1), or f(t, r0, r1) with the slot t, over a panel's rows cut into up to `threads`
// slots of rows holding about as many blocks (rows_by_blocks); on one thread f(0, nrows), without
// weighing the rows.
template <class F>
void for_each_row_share(const PanelView& v, int threads, F&& f) {
  const auto call = [&f](int t, int r0, int r1) {
    if constexpr (std::is_invocable_v<F&, int, int, int>)
      f(t, r0, r1);
    else
      f(r0, r1);
  };
  threads = std::clamp(threads, 1, std::max(1, v.nrows));
  if (threads == 1) {
    call(0, 0, v.nrows);
    return;
  }
  const std::vector<int> first = rows_by_blocks(v, threads);
  for_each_thread(threads,
                  [&](int t) { call(t, first[static_cast<std::size_t>(t)], first[static_cast<std::size_t>(t) + 1]); });
}

}  // namespace plexus
