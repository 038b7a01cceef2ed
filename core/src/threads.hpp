#pragma once
// Work split over an explicit number of threads (the kernel's, Kernel::threads), not OpenMP's
// default: core's passes over a panel's rows.
#include <omp.h>

#include <exception>

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

}  // namespace plexus
