// LocalProduct::finish: C's panel, from a plan's index or the threads' rows.
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

Panel LocalProduct::finish() {
  if (!session_) throw Error("LocalProduct::finish", "called twice");
  const timers::Scoped timer("local multiply: finish");  // C's panel merged, kernel's finish (a device waits)
  // Every tick of a plan replayed: C's index is the plan's. Otherwise the rows are merged.
  bool planned = false;
  for (const auto& p : candidates_)
    if (replayed_ > 0 && p->ticks.size() == replayed_) {
      replay_ = p;
      planned = true;
      break;
    }
  if (!planned) leave_plan();
  candidates_.clear();
  // A replayed plan's index is C's as it is: the panel shares it (and copies it before a change).
  std::shared_ptr<const PanelIndex> index;
  if (planned) {
    index = replay_->c_index;
    for (auto& w : work_) {  // as merge_rows does
      w->rows.clear();
      Scratch<StackEntry>().swap(w->stack);
      Scratch<std::int64_t>().swap(w->c_off);
      Scratch<int>().swap(w->placed);
    }
  } else {
    auto merged = std::make_shared<PanelIndex>();
    merged->row_ids.assign(row_ids_.begin(), row_ids_.end());
    merge_rows(merged->row_ptr, merged->cols, merged->offsets);
    index = std::move(merged);
  }
  MatrixData data = session_->finish();
  session_.reset();
  // A reservation (expected_values, or the backend's growth) well beyond what C needed is given
  // back: the panel lives on as the result. One copy, only when the guess was a quarter too high.
  if (data.capacity() > data.size() + data.size() / 4) {
    const timers::Scoped shrink("local multiply: shrink");
    data.shrink_to_fit();
  }
  if (static_cast<std::int64_t>(data.size()) != c_values_)
    throw Error("LocalProduct::finish", "the kernel returned " + std::to_string(data.size()) + " values of C, not " +
                                            std::to_string(c_values_));
  if (planned) {
    plans_->touch(replay_);
  } else if (record_ && !record_->ticks.empty()) {
    record_->c_index = index;  // shared with the panel made here
    record_->c_values = c_values_;
    plans_->keep(std::move(record_));
  }
  replay_.reset();
  record_.reset();
  return Panel::adopt(std::move(index), std::move(data));
}

// The threads' rows become one blocked CSR over the shared value area, which is adopted as it
// is: each thread sorts its rows and writes its part of the index.
void LocalProduct::merge_rows(IndexArray& row_ptr, IndexArray& cols, IndexArray& offsets) {
  const int nthreads = static_cast<int>(work_.size());
  std::vector<std::int64_t> blk_base(static_cast<std::size_t>(nthreads) + 1, 0);
  for (int t = 0; t < nthreads; ++t) {
    std::int64_t nb = 0;
    for (const auto& l : work_[static_cast<std::size_t>(t)]->rows) nb += static_cast<std::int64_t>(l.size());
    blk_base[t + 1] = blk_base[t] + nb;
  }
  const auto nrows = row_ids_.size();
  row_ptr.assign(nrows + 1, 0);
  cols.resize(static_cast<std::size_t>(blk_base.back()));  // filled below
  offsets.resize(cols.size());
  row_ptr[nrows] = blk_base.back();
  const auto ncols = static_cast<std::size_t>(layout_.cols.count());
  for_each_thread(nthreads, [&](int t) {
    ThreadWork& w = *work_[static_cast<std::size_t>(t)];
    const std::int64_t first = blk_base[static_cast<std::size_t>(t)];
    const std::int64_t nb = blk_base[static_cast<std::size_t>(t) + 1] - first;
    std::int64_t b = first;
    for (int r = w.row_begin; r < w.row_end; ++r) {
      row_ptr[static_cast<std::size_t>(r)] = b;
      b += static_cast<std::int64_t>(w.rows[static_cast<std::size_t>(r - w.row_begin)].size());
    }
    if (nb >= static_cast<std::int64_t>(ncols)) {
      // Many blocks for the columns: two counting passes instead of a sort per row. By column
      // first (then each row's blocks are in column order within the column-sorted sequence),
      // then stably into the rows' places.
      Scratch<std::int64_t> at(ncols + 1, 0);
      for (const auto& list : w.rows)
        for (const auto& entry : list) ++at[static_cast<std::size_t>(entry.first) + 1];
      for (std::size_t j = 0; j < ncols; ++j) at[j + 1] += at[j];
      Scratch<int> row_of(static_cast<std::size_t>(nb));  // the owned row's index, from row_begin
      Scratch<std::int64_t> off_of(static_cast<std::size_t>(nb)), col_of(static_cast<std::size_t>(nb));
      for (std::size_t r = 0; r < w.rows.size(); ++r)
        for (const auto& [col, off] : w.rows[r]) {
          const auto q = static_cast<std::size_t>(at[static_cast<std::size_t>(col)]++);
          row_of[q] = static_cast<int>(r);
          col_of[q] = col;
          off_of[q] = off;
        }
      // Each owned row's next free place in cols and offsets, starting where its row_ptr points.
      Scratch<std::int64_t> next(row_ptr.begin() + w.row_begin, row_ptr.begin() + w.row_end);
      for (std::size_t q = 0; q < static_cast<std::size_t>(nb); ++q) {
        const auto to = static_cast<std::size_t>(next[static_cast<std::size_t>(row_of[q])]++);
        cols[to] = col_of[q];
        offsets[to] = off_of[q];
      }
    } else {
      for (int r = w.row_begin; r < w.row_end; ++r) {
        auto& list = w.rows[static_cast<std::size_t>(r - w.row_begin)];
        std::sort(list.begin(), list.end());
        auto q = static_cast<std::size_t>(row_ptr[static_cast<std::size_t>(r)]);
        for (const auto& [col, off] : list) {
          cols[q] = col;
          offsets[q] = off;
          ++q;
        }
      }
    }
    w.rows.clear();
    // The accumulator is done: its scratch goes back to the pool now, for the accumulators of
    // the same multiply still at work (2.5D finishes the partial panels before its own).
    Scratch<StackEntry>().swap(w.stack);
    Scratch<std::int64_t>().swap(w.c_off);
    Scratch<int>().swap(w.placed);
  });
}

}  // namespace plexus
