// LocalProduct::finish: C's panel, from a plan's index or the threads' rows.
#include <omp.h>

#include <algorithm>
#include <bit>
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
  // A row is ordered through a bitmap of its span where the span's 64-column words are at most
  // this many per block (plus kBitmapAlways); otherwise by a sort, whose comparisons cost about
  // log2 of the row's length each.
  constexpr std::int64_t kBitmapWordsPerBlock = 2, kBitmapAlways = 8;
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
    std::int64_t b = blk_base[static_cast<std::size_t>(t)];
    for (int r = w.row_begin; r < w.row_end; ++r) {
      row_ptr[static_cast<std::size_t>(r)] = b;
      b += static_cast<std::int64_t>(w.rows[static_cast<std::size_t>(r - w.row_begin)].size());
    }
    // Each row's blocks in column order. A row whose blocks are many for the columns they span
    // sets one bit per block in a bitmap of its span (and notes the block's offset by its
    // column), then reads the set bits out word by word: its blocks plus the span's words (the
    // bitmap of a span of 64 k columns is 8 KB; the offsets are touched at the row's columns
    // only). Any other row is sorted. (Before, each column of the span was
    // visited: an S-E-like C of 400 block columns, rows of 29 blocks over spans of 385 columns,
    // spent 150 us a multiply in it, as long as a sort; a large random C of 2.3 million blocks,
    // 780 a row over 3,000 columns, took 110-129 ms a multiply in the two counting passes over
    // the thread's rows that did this before those visits, whose scattered stores missed the
    // caches.) The bitmap (one bit per block column, cleared as it is read) and the offsets by
    // column (read only where a bit is set) are made at the first row that needs them.
    Scratch<std::uint64_t> bits;
    Scratch<std::int64_t> offset_of;
    // Raw pointers, not reloaded from the vectors after each store (int64 stores may alias them).
    std::int64_t* const out_cols = cols.data();
    std::int64_t* const out_offsets = offsets.data();
    const auto duplicate = [] { return Error("LocalProduct::finish", "a row of C lists one of its blocks twice"); };
    for (int r = w.row_begin; r < w.row_end; ++r) {
      auto& list = w.rows[static_cast<std::size_t>(r - w.row_begin)];
      if (list.empty()) continue;
      auto q = static_cast<std::size_t>(row_ptr[static_cast<std::size_t>(r)]);
      std::int64_t lo = list.front().first, hi = lo;
      for (const auto& entry : list) {
        lo = std::min(lo, entry.first);
        hi = std::max(hi, entry.first);
      }
      const auto n = static_cast<std::int64_t>(list.size());
      const std::int64_t words = (hi - lo) / 64 + 1;
      if (words <= kBitmapWordsPerBlock * n + kBitmapAlways) {
        if (bits.empty()) {
          bits.assign(ncols / 64 + 1, 0);
          offset_of.resize(ncols);  // read only where a bit says the row set it
        }
        std::uint64_t* const bit = bits.data();
        std::int64_t* const off_of = offset_of.data();
        bool twice = false;
        for (const auto& [col, off] : list) {
          const std::int64_t at = col - lo;
          const std::uint64_t mask = std::uint64_t{1} << (at & 63);
          std::uint64_t& word = bit[at >> 6];
          twice |= (word & mask) != 0;
          word |= mask;
          off_of[col] = off;
        }
        for (std::int64_t wd = 0; wd < words; ++wd) {
          std::uint64_t x = bit[wd];
          bit[wd] = 0;
          for (const std::int64_t base = lo + 64 * wd; x != 0; x &= x - 1) {
            const std::int64_t col = base + std::countr_zero(x);
            out_cols[q] = col;
            out_offsets[q] = off_of[col];
            ++q;
          }
        }
        if (twice) throw duplicate();
      } else {
        std::sort(list.begin(), list.end());
        if (std::adjacent_find(list.begin(), list.end(),
                               [](const auto& x, const auto& y) { return x.first == y.first; }) != list.end())
          throw duplicate();
        for (const auto& [col, off] : list) {
          out_cols[q] = col;
          out_offsets[q] = off;
          ++q;
        }
      }
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
