// LocalProduct::finish: C's panel, from a plan's index or the threads' rows.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "local_product_work.hpp"
#include "plexus/error.hpp"
#include "plexus/local_multiply.hpp"
#include "plexus/timers.hpp"
#include "product_plan.hpp"

namespace plexus {

namespace {

// At most this many bytes of list room are kept (a large C's lists are freed as before).
constexpr std::size_t kKeptRowListBytes = std::size_t{16} << 20;

struct RowListStash {
  std::mutex mutex;
  std::vector<std::pair<RowLists, std::size_t>> sets;  // each with its room in bytes
  std::size_t bytes = 0;
};

RowListStash& row_list_stash() {
  static RowListStash* s = new RowListStash();  // never destroyed: products may finish during static destruction
  return *s;
}

std::size_t room_of(const RowLists& rows) {
  std::size_t n = rows.capacity() * sizeof(RowLists::value_type);
  for (const auto& l : rows) n += l.capacity() * sizeof(RowLists::value_type::value_type);
  return n;
}

}  // namespace

RowLists take_row_lists() {
  RowListStash& s = row_list_stash();
  const std::lock_guard<std::mutex> lock(s.mutex);
  if (s.sets.empty()) return {};
  RowLists rows = std::move(s.sets.back().first);
  s.bytes -= s.sets.back().second;
  s.sets.pop_back();
  return rows;
}

void give_back_row_lists(RowLists&& rows) noexcept {
  if (rows.empty()) return;
  for (auto& l : rows) l.clear();
  const std::size_t room = room_of(rows);
  RowListStash& s = row_list_stash();
  const std::lock_guard<std::mutex> lock(s.mutex);
  if (s.bytes + room > kKeptRowListBytes) return;  // left to the caller, which frees them
  try {
    s.sets.emplace_back(std::move(rows), room);
    s.bytes += room;
  } catch (...) {  // no room for the entry: the lists are freed instead
  }
}

Panel LocalProduct::finish() {
  if (!session_) throw Error("LocalProduct::finish", "called twice");
  // Taken out first, so that a finish() that throws (a row listing a block twice) is not run again
  // over rows it has given back; the session still waits for its backend as it goes.
  std::unique_ptr<KernelSession> session = std::move(session_);
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
    for (auto& w : work_) release_scratch(*w);  // as merge_rows does
  } else {
    auto merged = std::make_shared<PanelIndex>();
    merged->row_ids.assign(row_ids_.begin(), row_ids_.end());
    merge_rows(merged->row_ptr, merged->cols, merged->offsets);
    index = std::move(merged);
  }
  MatrixData data = session->finish();
  session.reset();
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
    plans_->touch(replay_, lookup_);
  } else if (record_ && !record_->ticks.empty()) {
    if (key_of_) record_->key = key_of_->key;  // the key the constructor found in that plan
    record_->c_index = index;  // shared with the panel made here
    record_->c_values = c_values_;
    if (!plans_->keep(std::move(record_), lookup_)) stats_.plans_not_kept = 1;
  }
  replay_.reset();
  record_.reset();
  key_of_.reset();
  return Panel::adopt(std::move(index), std::move(data));
}

// The threads' rows become one blocked CSR over the shared value area, which is adopted as it
// is: each thread orders its rows and writes its part of the index.
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
  for_each_thread(nthreads, [&](int t) {
    ThreadWork& w = *work_[static_cast<std::size_t>(t)];
    std::int64_t b = blk_base[static_cast<std::size_t>(t)];
    for (int r = w.row_begin; r < w.row_end; ++r) {
      row_ptr[static_cast<std::size_t>(r)] = b;
      b += static_cast<std::int64_t>(w.rows[static_cast<std::size_t>(r - w.row_begin)].size());
    }
    // Each row's blocks in column order (ColumnOrder); rows the last tick's filter put in that
    // order already (filtered_) are copied as they are.
    ColumnOrder order(layout_.cols.count());
    // Raw pointers, not reloaded from the vectors after each store (int64 stores may alias them).
    std::int64_t* const out_cols = cols.data();
    std::int64_t* const out_offsets = offsets.data();
    for (int r = w.row_begin; r < w.row_end; ++r) {
      auto& list = w.rows[static_cast<std::size_t>(r - w.row_begin)];
      if (list.empty()) continue;
      auto q = static_cast<std::size_t>(row_ptr[static_cast<std::size_t>(r)]);
      auto emit = [&](std::int64_t col, std::int64_t off) {
        out_cols[q] = col;
        out_offsets[q] = off;
        ++q;
      };
      if (filtered_)
        for (const auto& [col, off] : list) emit(col, off);
      else
        order(list, emit);
    }
    release_scratch(w);
  });
}

// The accumulator is done: its scratch goes back to the pool now, for the accumulators of the
// same multiply still at work (2.5D finishes the partial panels before its own).
void LocalProduct::release_scratch(ThreadWork& w) {
  give_back_row_lists(std::move(w.rows));
  w.rows = RowLists();
  Scratch<StackEntry>().swap(w.stack);
  Scratch<std::int64_t>().swap(w.c_off);
  Scratch<int>().swap(w.placed);
  Scratch<std::pair<int, std::size_t>>().swap(w.fresh);
}

}  // namespace plexus
