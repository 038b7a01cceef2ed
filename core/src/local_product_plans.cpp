// LocalProduct: ticks replayed from a plan, leaving a plan, and recording one.
#include <omp.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "local_product_work.hpp"
#include "plexus/error.hpp"
#include "plexus/local_multiply.hpp"
#include "plexus/timers.hpp"
#include "product_plan.hpp"

namespace plexus {

// A tick given exactly what the next tick of a plan was given: its stacks go to the backend as
// recorded, with C grown as a built tick would grow it. The candidates are the plans that every
// tick so far matched (ticks matched alike made alike records, so any of them serves). False:
// none matches (from here on, the product builds its stacks, and records them when it records a
// plan).
void LocalProduct::forgo_replay() {
  if (candidates_.empty() || replayed_ != static_cast<std::size_t>(stats_.ticks)) return;
  candidates_.clear();
  if (replay_)
    leave_plan();
  else
    reserve_rows();
}

bool LocalProduct::replay(const PanelView& a, const BlockLayout& a_layout, const PanelView& b) {
  const auto tick = static_cast<std::size_t>(stats_.ticks);
  if (candidates_.empty() || replayed_ != tick) return false;
  std::vector<std::shared_ptr<const plan::ProductPlan>> still;
  const plan::TickRecord* matched = nullptr;
  for (auto& p : candidates_) {
    if (p->ticks.size() <= tick) continue;
    const plan::TickRecord* rec = p->ticks[tick].get();
    if (rec == matched || rec->same_input(a, a_layout.cols, b)) {  // a shared record needs no second look
      matched = rec;
      still.push_back(std::move(p));
    }
  }
  candidates_ = std::move(still);
  if (candidates_.empty()) {
    if (replay_)
      leave_plan();
    else
      reserve_rows();  // no plan from the first tick on
    return false;
  }
  replay_ = candidates_.front();
  const plan::TickRecord& rec = *replay_->ticks[replayed_];
  if (rec.threads.size() != work_.size()) throw Error("LocalProduct", "a plan for another thread count");
  // C grows as a built tick would grow it now: stack by stack (a plan of the one pass) only while
  // there is room reserved, otherwise once to the tick's end before the stacks. Either way the
  // new blocks are grown before their first product, which the recorded stacks mark.
  const bool per_stack = c_values_ < reserved_values_;
  const std::int64_t grow_first = per_stack ? rec.grow_before : std::max(rec.grow_before, rec.c_end);
  if (grow_first > c_values_) {
    timers::Scoped timer("local multiply: grow");
    session_->grow(grow_first);
    c_values_ = grow_first;
  }
  timers::Scoped timer("local multiply: replay");
  const int nthreads = threads();
  for_each_thread(nthreads, [&](int t) {
    ThreadWork& w = *work_[static_cast<std::size_t>(t)];
    const plan::ThreadTick& share = rec.threads[static_cast<std::size_t>(t)];
    const double t0 = omp_get_wtime();
    const bool caller = on_calling_thread(nthreads) && progress_;
    std::int64_t grown = c_values_;
    double kernel_time = 0;
    for (const plan::StackRecord& stack : share.stacks) {
      if (per_stack && stack.grow_to > grown) {  // one thread only (a plan of the one pass)
        session_->grow(stack.grow_to);
        grown = stack.grow_to;
      }
      const double k0 = omp_get_wtime();
      session_->process(share.entries.data() + stack.first, stack.count, t);
      kernel_time += omp_get_wtime() - k0;
      if (caller) progress_();
    }
    w.stats.products += share.products;
    w.stats.skipped += share.skipped;
    w.stats.flops += 2.0 * static_cast<double>(share.mnk);
    w.stats.kernel_seconds += kernel_time;
    w.stats.stack_seconds += omp_get_wtime() - t0 - kernel_time;
  });
  c_values_ = rec.c_end;
  ++replayed_;
  return true;
}

void LocalProduct::leave_plan() {
  if (!replay_) return;
  reserve_rows();
  for (std::size_t tick = 0; tick < replayed_; ++tick) {
    const plan::TickRecord& rec = *replay_->ticks[tick];
    for (std::size_t t = 0; t < work_.size(); ++t)
      for (const plan::AddedBlock& blk : rec.threads[t].added)
        work_[t]->rows[static_cast<std::size_t>(blk.row)].emplace_back(blk.col, blk.offset);
  }
  if (record_) {  // the new plan shares the ticks replayed so far
    record_->ticks.assign(replay_->ticks.begin(), replay_->ticks.begin() + static_cast<std::ptrdiff_t>(replayed_));
    for (const auto& tick : record_->ticks) record_bytes_ += tick->bytes();
  }
  replay_.reset();
}

void LocalProduct::record_tick(const PanelView& a, const BlockLayout& a_layout, const PanelView& b,
                               std::int64_t grow_before) {
  bool dropped = false;
  for (auto& w : work_) dropped = std::exchange(w->record_dropped, false) || dropped;
  if (dropped) {  // beyond the room
    for (auto& w : work_) w->record = {};
    record_.reset();
    stats_.plans_not_kept = 1;
    return;
  }
  auto tick = std::make_shared<plan::TickRecord>();
  tick->a = plan::IndexCopy(a);
  tick->b = plan::IndexCopy(b);
  // The k sizes are shared with the previous tick when they are the same (usually: one layout).
  if (!record_->ticks.empty() && *record_->ticks.back()->k == a_layout.cols)
    tick->k = record_->ticks.back()->k;
  else
    tick->k = std::make_shared<const BlockSizes>(a_layout.cols);
  tick->grow_before = grow_before;
  tick->c_end = c_values_;
  tick->threads.resize(work_.size());
  for (std::size_t t = 0; t < work_.size(); ++t) {
    plan::ThreadTick& share = tick->threads[t];
    share = std::exchange(work_[t]->record, {});
    share.entries.shrink_to_fit();  // held as long as the plan: no slack
    share.stacks.shrink_to_fit();
    share.added.shrink_to_fit();
  }
  record_bytes_ += tick->bytes();
  record_->ticks.push_back(std::move(tick));
  // A plan beyond what the plans may hold is not kept: recording stops here.
  if (record_bytes_ > plans_->max_bytes()) {
    record_.reset();
    stats_.plans_not_kept = 1;
  }
}

}  // namespace plexus
