#pragma once
// The plan of one local product (LocalProduct), as ProductPlans keeps it: what the product was
// given (C's start pattern, each tick's panel indices) and what it made of it (each tick's
// stacks, C's growth, the blocks it added, C's final index). A later product given exactly the
// same replays the stacks instead of building them (local_multiply.cpp). Internal to core.
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "plexus/kernel.hpp"
#include "plexus/layout.hpp"
#include "plexus/memory.hpp"
#include "plexus/panel.hpp"

namespace plexus::plan {

template <class T>
using Vec = memory::vector<T, memory::Category::Other>;

/// A panel's index (without its values): what a tick's stack entries depend on. For a view of a
/// Panel, the panel's own index, held (the panel copies it before a change from then on, so it
/// stays as it was); for any other view (a packed, received panel), a copy.
struct IndexCopy {
  std::int64_t data_size = 0;
  Vec<std::int64_t> row_ids, row_ptr, cols, offsets;  // the copy, where nothing is held

  IndexCopy() = default;
  explicit IndexCopy(const PanelView& v);
  IndexCopy(IndexCopy&& o) noexcept;
  IndexCopy& operator=(IndexCopy&& o) noexcept;
  /// The view has exactly this index: the same rows, blocks, offsets and value count. A view of
  /// the held index itself is known to without comparing. A view of another index object found
  /// equal by comparison gives the plan that object to hold instead (where it counts the same
  /// bytes), so that the next view of it needs no comparison either: operands that come back as
  /// other objects with the same pattern (a benchmark's warm-up and counted runs, an iteration
  /// that makes its matrices anew) are compared once, not at every product.
  bool same(const PanelView& v) const;
  /// The index object held, or null (a copy).
  std::shared_ptr<const PanelIndex> held() const { return held_.load(std::memory_order_acquire); }
  std::int64_t bytes() const;

 private:
  // Atomic: products on several threads may test the same plan at once, and same() may swap in
  // an equal object.
  mutable std::atomic<std::shared_ptr<const PanelIndex>> held_;
};

/// One stack a thread handed to the backend: entries [first, first + count) of its tick's
/// entries; C's area grown to `grow_to` values before it (0: no growth).
struct StackRecord {
  std::int64_t first = 0, count = 0, grow_to = 0;
};

/// A block the tick added to one of the thread's C rows (the row's index among the thread's).
struct AddedBlock {
  int row = 0;
  std::int64_t col = 0, offset = 0;
};

/// One thread's share of a tick.
struct ThreadTick {
  Vec<StackEntry> entries;
  Vec<StackRecord> stacks;
  Vec<AddedBlock> added;  // in the order the thread's rows received them
  std::int64_t products = 0, skipped = 0, mnk = 0;
  std::int64_t bytes() const;
};

/// One tick: its inputs and what it did.
struct TickRecord {
  IndexCopy a, b;
  std::shared_ptr<const BlockSizes> k;  // A's column (B's row) block sizes (shared by consecutive ticks)
  std::int64_t grow_before = 0;  // C's area grown to this before the stacks (0: not)
  std::int64_t c_end = 0;        // C's area after the tick
  std::vector<ThreadTick> threads;
  std::int64_t bytes() const;
  /// The tick was given exactly these panels.
  bool same_input(const PanelView& a_view, const BlockSizes& k_sizes, const PanelView& b_view) const;
};

/// What a product is given before any tick, as the product's constructor sees it (nothing copied).
struct KeyView {
  const BlockLayout& layout;
  bool host;
  const std::vector<int>& first_row;  // the threads' row ranges
  const PanelView& start;             // C's start pattern (its rows and blocks; values do not matter)
};

/// What a product is made with, before any tick: a plan is a candidate only for a product whose
/// key is equal.
struct PlanKey {
  BlockLayout layout;
  bool host = true;
  std::vector<int> first_row;  // the threads' row ranges
  Vec<std::int64_t> row_ids, start_row_ptr, start_cols;
  PlanKey() = default;
  explicit PlanKey(const KeyView& v);
  /// Equal to PlanKey(v), compared in place: a product that finds a plan copies no key.
  bool matches(const KeyView& v) const;
  std::int64_t bytes() const;
};

struct ProductPlan {
  PlanKey key;
  std::vector<std::shared_ptr<const TickRecord>> ticks;
  std::shared_ptr<const PanelIndex> c_index;  // C's index after finish(), shared with the C panels it made
  std::int64_t c_values = 0;
  std::int64_t bytes() const;
};

}  // namespace plexus::plan
