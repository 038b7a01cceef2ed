// LocalProduct's slabs joined (several threads' one pass, local_product_slabs.hpp), and a numeric
// pass's counts and times (local_multiply.cpp, local_product_slabs.hpp).
#include <cstdint>
#include <cstring>
#include <vector>

#include "host_session.hpp"
#include "local_product_passes.hpp"
#include "local_product_work.hpp"
#include "plexus/local_multiply.hpp"
#include "plexus/timers.hpp"
#include "threads.hpp"

namespace plexus {

// A thread's counts and times of a numeric pass, into its stats.
void LocalProduct::account(ThreadWork& w, const StackPass& stack, double seconds_in_all) {
  w.stats.products += stack.products;
  w.stats.skipped += stack.skipped;
  w.stats.flops += 2.0 * static_cast<double>(stack.mnk);
  w.stats.kernel_seconds += stack.kernel_time;
  w.stats.stack_seconds += seconds_in_all - stack.kernel_time;
}

// The slabs of several threads' one pass (multiply_tick): each thread's new blocks move down to
// follow the previous thread's (thread by thread in order: a thread's new place may overlap its own
// old one, never a later thread's), the offsets in its rows with them, and C is cut back to them.
void LocalProduct::join_slabs(const std::vector<Slab>& slab) {
  const timers::Scoped timer("local multiply: join slabs");
  double* const values = host_session_->values();
  std::int64_t end = c_values_;
  std::vector<std::int64_t> shift(slab.size(), 0);
  for (std::size_t t = 0; t < slab.size(); ++t) {
    const Slab& s = slab[t];
    shift[t] = s.begin - end;
    if (shift[t] > 0 && s.next > s.begin)
      std::memmove(values + end, values + s.begin, static_cast<std::size_t>(s.next - s.begin) * sizeof(double));
    end += s.next - s.begin;
  }
  for_each_thread(static_cast<int>(slab.size()), [&](int t) {
    const Slab& s = slab[static_cast<std::size_t>(t)];
    const std::int64_t by = shift[static_cast<std::size_t>(t)];
    if (by == 0 || s.next == s.begin) return;
    for (auto& list : work_[static_cast<std::size_t>(t)]->rows)
      for (auto& entry : list)
        if (entry.second >= s.begin) entry.second -= by;  // only this tick's blocks lie beyond C's start
  });
  host_session_->truncate(end);
  c_values_ = end;
}

}  // namespace plexus
