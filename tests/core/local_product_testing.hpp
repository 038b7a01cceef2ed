#pragma once
// What the LocalProduct, ProductPlans and panel tests share: panels made from a rule, their dense
// form, a comparison of two panels, and a reference kernel that logs what its sessions are asked to do.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "plexus/kernel.hpp"
#include "plexus/layout.hpp"
#include "plexus/panel.hpp"

namespace plexus::test {

/// A full panel over all of l's rows where block (i, j) is present iff keep(i, j), with values
/// derived from (seed, i, j, element), stored in (row, col) order one after the other.
/// `reversed`: the same blocks and values stored from the last block to the first (other
/// offsets). `stride` > 0: block q's values start at q * stride (gaps between the blocks).
template <class Keep>
Panel make_panel(const BlockLayout& l, int seed, Keep keep, bool reversed = false, std::int64_t stride = 0) {
  std::vector<int> rows(static_cast<std::size_t>(l.rows.count()));
  for (int i = 0; i < l.rows.count(); ++i) rows[static_cast<std::size_t>(i)] = i;
  std::vector<std::pair<int, int>> blocks;
  for (int i = 0; i < l.rows.count(); ++i)
    for (int j = 0; j < l.cols.count(); ++j)
      if (keep(i, j)) blocks.emplace_back(i, j);
  std::vector<std::int64_t> at(blocks.size());
  std::int64_t total = 0;
  for (std::size_t q = 0; q < blocks.size(); ++q) {
    const std::size_t b = reversed ? blocks.size() - 1 - q : q;
    at[b] = stride > 0 ? static_cast<std::int64_t>(b) * stride : total;
    total = stride > 0 ? static_cast<std::int64_t>(blocks.size()) * stride
                       : total + std::int64_t{l.rows.size(blocks[b].first)} * l.cols.size(blocks[b].second);
  }
  IndexArray row_ids(rows.begin(), rows.end()), row_ptr(rows.size() + 1, 0), cols, offsets;
  MatrixData data(static_cast<std::size_t>(total));
  for (std::size_t q = 0; q < blocks.size(); ++q) {
    const auto [i, j] = blocks[q];
    ++row_ptr[static_cast<std::size_t>(i) + 1];
    cols.push_back(j);
    offsets.push_back(at[q]);
    const int n = l.rows.size(i) * l.cols.size(j);
    for (int e = 0; e < n; ++e)
      data[static_cast<std::size_t>(at[q] + e)] = std::sin(seed * 1.3 + i * 7.1 + j * 3.7 + e * 0.37);
  }
  for (std::size_t r = 0; r < rows.size(); ++r) row_ptr[r + 1] += row_ptr[r];
  return Panel::adopt(std::move(row_ids), std::move(row_ptr), std::move(cols), std::move(offsets), std::move(data));
}

/// The panel as a dense column-major matrix of l's size (absent blocks zero).
inline std::vector<double> dense_of(const PanelView& v, const BlockLayout& l) {
  const std::int64_t nr = l.rows.total();
  std::vector<double> d(static_cast<std::size_t>(nr * l.cols.total()), 0.0);
  for (int r = 0; r < v.nrows; ++r)
    for (std::int64_t b = v.row_ptr[r]; b < v.row_ptr[r + 1]; ++b) {
      const int i = static_cast<int>(v.row_ids[r]), j = static_cast<int>(v.cols[b]);
      const int m = l.rows.size(i);
      for (int c = 0; c < l.cols.size(j); ++c)
        for (int q = 0; q < m; ++q)
          d[static_cast<std::size_t>((l.cols.offset(j) + c) * nr + l.rows.offset(i) + q)] = v.data[v.offsets[b] + q + c * m];
    }
  return d;
}

/// A host kernel whose first products write (Kernel::first_product_writes): a product marked first
/// overwrites its block, so a mark on a block that had products already loses them, and a block
/// grown unset that misses its mark keeps what the memory held.
class WritingFirstKernel final : public HostKernel {
 public:
  std::string name() const override { return "writing-first"; }
  bool first_product_writes() const override { return true; }
  void process(const StackEntry* stack, std::int64_t n, const double* a, const double* b, double* c) override {
    for (std::int64_t i = 0; i < n; ++i) {
      if (stack[i].first != 0) std::fill(c + stack[i].c, c + stack[i].c + std::int64_t{stack[i].m} * stack[i].n, 0.0);
      reference.process(stack + i, 1, a, b, c);
    }
  }
  ReferenceKernel reference;
};

/// The reference kernel, logging every call its sessions get: growths and each slot's stacks.
class LoggingKernel final : public Kernel {
 public:
  struct Log {
    std::int64_t start_values = 0;  // C's size at begin()
    std::vector<std::int64_t> grows;
    std::map<int, std::vector<StackEntry>> stacks;  // by slot, in order
    std::map<int, std::vector<std::int64_t>> sizes;
  };
  std::string name() const override { return "logging"; }
  std::unique_ptr<KernelSession> begin(MatrixData c, int slots) override {
    struct Session final : KernelSession {
      std::unique_ptr<KernelSession> inner;
      Log* log;
      void grow(std::int64_t values) override {
        log->grows.push_back(values);
        inner->grow(values);
      }
      void stage(const PanelView& a, const PanelView& b) override { inner->stage(a, b); }
      void process(const StackEntry* stack, std::int64_t n, int slot) override {
        std::vector<StackEntry>* mine = nullptr;
#pragma omp critical(logging_kernel)
        {
          mine = &log->stacks[slot];
          log->sizes[slot].push_back(n);
        }
        mine->insert(mine->end(), stack, stack + n);
        inner->process(stack, n, slot);
      }
      void unstage() override { inner->unstage(); }
      MatrixData finish() override { return inner->finish(); }
    };
    logs.emplace_back();
    logs.back().start_values = static_cast<std::int64_t>(c.size());
    auto s = std::make_unique<Session>();
    s->inner = reference.begin(std::move(c), slots);
    s->log = &logs.back();
    return s;
  }
  std::deque<Log> logs;  // one per session (a deque: a session keeps a pointer to its log)
  ReferenceKernel reference;
};

/// Every product into a C block that the session grew is marked first exactly when no product
/// went to that block before it (StackEntry::first); no other product is marked. Returns the
/// number of marked products. (The slots own disjoint blocks, so each slot's order is what counts.)
inline std::int64_t expect_first_marks(const LoggingKernel::Log& log) {
  std::int64_t marked = 0;
  std::set<std::int64_t> seen;
  for (const auto& [slot, entries] : log.stacks)
    for (std::size_t e = 0; e < entries.size(); ++e) {
      const StackEntry& x = entries[e];
      const bool first = x.c >= log.start_values && seen.insert(x.c).second;
      EXPECT_EQ(x.first != 0, first) << "slot " << slot << ", entry " << e << " into C offset " << x.c;
      marked += x.first != 0 ? 1 : 0;
    }
  return marked;
}

/// The same blocks (rows, columns) with the same values to the last bit, wherever each panel keeps them.
inline void expect_same_blocks(const Panel& one, const Panel& other, const BlockSizes& s) {
  const PanelView x = one.view(), y = other.view();
  ASSERT_EQ(x.nrows, y.nrows);
  ASSERT_EQ(x.nblocks, y.nblocks);
  ASSERT_EQ(x.data_size, y.data_size);
  for (int r = 0; r < x.nrows; ++r) {
    ASSERT_EQ(x.row_ptr[r + 1], y.row_ptr[r + 1]);
    for (std::int64_t q = x.row_ptr[r]; q < x.row_ptr[r + 1]; ++q) {
      ASSERT_EQ(x.cols[q], y.cols[q]);
      const std::int64_t n = std::int64_t{s.size(static_cast<int>(x.row_ids[r]))} * s.size(static_cast<int>(x.cols[q]));
      for (std::int64_t e = 0; e < n; ++e) ASSERT_EQ(x.data[x.offsets[q] + e], y.data[y.offsets[q] + e]);
    }
  }
}

/// The same index and the same values, to the last bit.
inline void expect_same_panel(const Panel& x, const Panel& y) {
  const PanelView a = x.view(), b = y.view();
  ASSERT_EQ(a.nrows, b.nrows);
  ASSERT_EQ(a.nblocks, b.nblocks);
  ASSERT_EQ(a.data_size, b.data_size);
  EXPECT_TRUE(std::equal(a.row_ids, a.row_ids + a.nrows, b.row_ids));
  EXPECT_TRUE(std::equal(a.row_ptr, a.row_ptr + a.nrows + 1, b.row_ptr));
  EXPECT_TRUE(std::equal(a.cols, a.cols + a.nblocks, b.cols));
  EXPECT_TRUE(std::equal(a.offsets, a.offsets + a.nblocks, b.offsets));
  EXPECT_EQ(0, std::memcmp(a.data, b.data, static_cast<std::size_t>(a.data_size) * sizeof(double)));
}

/// The kernel `Inner` (a host kernel), saying it keeps C on a device: LocalProduct treats it as a
/// device backend (no plan shared with host products, no column tiles), its sessions are Inner's.
template <class Inner>
class DeviceLike final : public Kernel {
 public:
  std::string name() const override { return "device-like"; }
  MemorySpace memory_space() const override { return MemorySpace::Device; }
  std::unique_ptr<KernelSession> begin(MatrixData c, int slots) override { return inner.begin(std::move(c), slots); }
  Inner inner;
};

}  // namespace plexus::test
