#pragma once
// The two visitors of LocalProduct::multiply's passes over a tick's products (local_multiply.cpp's
// for_each_product calls f.row_products for runs of products and f.skip for dropped ones): the
// symbolic pass, which places the C blocks a tick creates, and the numeric pass, which builds the
// stacks and hands them to the backend. In a header, not a translation unit of their own, so that
// their loops are inlined into the traversal.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <functional>

#include "host_session.hpp"
#include "local_product_work.hpp"
#include "product_plan.hpp"

namespace plexus {

using RowList = RowLists::value_type;

// What a one pass's new values come to over all of a tick's `visits` products, from the `values`
// its first `done` products (done > 0) made: scaled to them, and a tenth more (StackPass's
// reserve_ahead, the last tick's filter_rows).
inline std::int64_t values_ahead(std::int64_t values, std::int64_t done, std::int64_t visits) {
  return static_cast<std::int64_t>(1.1 * static_cast<double>(visits) / static_cast<double>(done) *
                                   static_cast<double>(values));
}

// Pass 1 (symbolic): each thread lists the C blocks this tick creates, with offsets relative to
// its own new region.
struct LocalProduct::PlacePass {
  ThreadWork& w;
  const PanelView& b;
  const BlockSizes& cols;
  void skip(std::int64_t) {}
  // The products of A block ab with B's blocks bb .. end - 1 (with an order: B's blocks order[bb]
  // .. order[end - 1]): each C block not yet in the row is placed. A loop without calls, as in
  // StackPass's (the blocks it places are entered in the row's list after each batch).
  void row_products(std::int64_t, std::int64_t bb, std::int64_t end, const std::int64_t* order, int m, int, int r,
                    RowList& list) {
    const std::int64_t* const b_cols = b.cols;
    const int* const n_of = cols.sizes().data();
    std::int64_t* const c_off = w.c_off.data();
    int* const placed = w.placed.data();
    while (bb < end) {
      const std::int64_t stop = std::min(end, bb + static_cast<std::int64_t>(kStackCapacity));
      std::int64_t next = w.fresh_values;
      int nplaced = 0;
      for (; bb < stop; ++bb) {
        const std::int64_t j = b_cols[order != nullptr ? order[bb] : bb];
        if (c_off[j] >= 0) continue;
        c_off[j] = next;  // >= 0 marks the block as placed for the rest of the row
        placed[nplaced++] = static_cast<int>(j);
        next += std::int64_t{m} * n_of[j];
      }
      for (int q = 0; q < nplaced; ++q) {
        w.fresh.emplace_back(r, list.size());
        list.emplace_back(placed[q], c_off[placed[q]]);
      }
      w.fresh_values = next;
    }
  }
};

// A row's new values, counted (several threads' one pass, where the row may not fit in what is left
// of the thread's slab): each C block not yet in the row counts once; forget() unmarks them.
struct LocalProduct::CountPass {
  ThreadWork& w;
  const PanelView& b;
  const BlockSizes& cols;
  std::int64_t values = 0;
  void skip(std::int64_t) {}
  void row_products(std::int64_t, std::int64_t bb, std::int64_t end, const std::int64_t* order, int m, int, int,
                    RowList&) {
    std::int64_t* const c_off = w.c_off.data();
    for (; bb < end; ++bb) {
      const std::int64_t j = b.cols[order != nullptr ? order[bb] : bb];
      if (c_off[j] != -1) continue;
      c_off[j] = 0;  // counted: present for the rest of the row
      w.counted.push_back(static_cast<int>(j));
      values += std::int64_t{m} * cols.size(static_cast<int>(j));
    }
  }
  void forget() {
    for (const int j : w.counted) w.c_off[static_cast<std::size_t>(j)] = -1;
    w.counted.clear();
  }
};

// Pass 2 (numeric): each thread builds stacks of products and hands each full stack to the
// backend in its own slot.
struct LocalProduct::StackPass {
  ThreadWork& w;
  const PanelView& a;
  const PanelView& b;
  KernelSession& session;
  int slot;
  StackEntry* entries;                // w.stack's storage, kStackCapacity entries
  const std::function<void()>* poll;  // the caller's progress, on the team's first thread only
  std::int64_t* c_end;                // one pass: where C's next new block goes (else null)
  std::int64_t* c_grown;              // one pass: the size of C's area the session holds
  HostSession* host;                  // one pass: the session, to reserve room ahead (null: none)
  std::int64_t c_start;               // one pass: C's size before the tick
  std::int64_t visits;                // one pass: the products the tick visits (filtered or not)
  plan::ThreadTick* record;           // the plan's copy of the stacks (null: none recorded)
  std::int64_t record_room;           // the bytes of entries the thread records this tick (counted before it)
  const BlockSizes& cols;             // C's block columns
  std::size_t size = 0;
  std::int64_t products = 0, skipped = 0, mnk = 0;  // counted here, added to the stats once
  double kernel_time = 0;
  void flush() {
    if (size == 0) return;
    std::int64_t grow_to = 0;
    if (c_end != nullptr && *c_end > *c_grown) {  // the stack's new blocks
      if (host != nullptr && *c_end > host->capacity()) reserve_ahead();
      session.grow(*c_end);
      *c_grown = grow_to = *c_end;
    }
    // The tick's products were counted before it (record_room: this thread's entries); more
    // would be a miscount, and the plan is then dropped rather than kept wrong or too large.
    if (record != nullptr &&
        static_cast<std::int64_t>((record->entries.size() + size) * sizeof(StackEntry)) > record_room) {
      *record = {};
      record = nullptr;
      w.record_dropped = true;
    }
    if (record != nullptr) {
      record->stacks.push_back(
          {static_cast<std::int64_t>(record->entries.size()), static_cast<std::int64_t>(size), grow_to});
      record->entries.insert(record->entries.end(), entries, entries + size);
    }
    const double k0 = omp_get_wtime();
    session.process(entries, static_cast<std::int64_t>(size), slot);
    kernel_time += omp_get_wtime() - k0;
    size = 0;
    if (poll != nullptr) (*poll)();
  }
  // C outgrows its room in the one pass: the backend would move it to a half larger area, and
  // again each time the tick outgrows that (a C that fills in from 0.19 to 1 million values in
  // one multiply of a filtered sign solve moved five times, copying twice its final size). The
  // room is set once instead, to the tick's new values so far scaled to all the products it
  // visits, and a tenth more: about one copy of C as it is now.
  void reserve_ahead() {
    const std::int64_t done = products + skipped;
    if (done <= 0 || visits <= done) return;
    host->reserve(c_start + values_ahead(*c_end - c_start, done, visits));
  }
  void skip(std::int64_t n) { skipped += n; }
  // The products of A block ab with B's blocks bb .. end - 1 (with an order: B's blocks order[bb]
  // .. order[end - 1]) into the stack, a batch at a time (as many as the stack has room for); a
  // full stack goes to the backend. The batch's loop calls nothing: the one pass's new blocks are
  // noted in w.placed and entered in the row's list after it, and the counts live in locals, so
  // that the compiler keeps them in registers (the entries' 64-bit stores may alias the struct's
  // counters, and a call would clobber them).
  void row_products(std::int64_t ab, std::int64_t bb, std::int64_t end, const std::int64_t* order, int m, int k, int r,
                    RowList& list) {
    const std::int64_t a_off = a.offsets[ab];
    const std::int64_t* const b_cols = b.cols;
    const std::int64_t* const b_offsets = b.offsets;
    const int* const n_of = cols.sizes().data();
    std::int64_t* const c_off = w.c_off.data();
    StackEntry* const out = entries;
    int* const placed = w.placed.data();
    const bool one_pass = c_end != nullptr;
    while (bb < end) {
      const std::int64_t stop = std::min(end, bb + static_cast<std::int64_t>(kStackCapacity - size));
      std::size_t at = size;
      std::int64_t ns = 0;                        // the n of every product, summed
      std::int64_t next = one_pass ? *c_end : 0;  // where the one pass places the next new block
      int nplaced = 0;
      products += stop - bb;
      for (; bb < stop; ++bb) {
        const std::int64_t q = order != nullptr ? order[bb] : bb;
        const std::int64_t j = b_cols[q];
        const int n = n_of[j];
        std::int64_t c = c_off[j];
        int first = 0;
        if (c < -1) {  // the first product into a block the symbolic pass placed this tick
          c = c_off[j] = -2 - c;
          first = 1;
        } else if (one_pass && c < 0) {  // one pass: a new block, placed at the end
          c = c_off[j] = next;
          first = 1;
          placed[nplaced++] = static_cast<int>(j);
          next += std::int64_t{m} * n;
        }
        out[at++] = StackEntry{.m = m, .n = n, .k = k, .first = first, .a = a_off, .b = b_offsets[q], .c = c};
        ns += n;
      }
      mnk += std::int64_t{m} * k * ns;
      size = at;
      if (nplaced > 0) {
        // The one pass notes its new blocks in w.fresh only for the plan's record.
        if (record != nullptr)
          for (int q = 0; q < nplaced; ++q) w.fresh.emplace_back(r, list.size() + static_cast<std::size_t>(q));
        for (int q = 0; q < nplaced; ++q) list.emplace_back(placed[q], c_off[placed[q]]);
        *c_end = next;
      }
      if (size == kStackCapacity) flush();
    }
  }
};

}  // namespace plexus
