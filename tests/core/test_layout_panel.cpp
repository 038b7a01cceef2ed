#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "local_product_testing.hpp"
#include "plexus/error.hpp"
#include "plexus/layout.hpp"
#include "plexus/local_multiply.hpp"
#include "plexus/panel.hpp"

using namespace plexus;

TEST(BlockSizes, OffsetsAndLookup) {
  BlockSizes s({1, 5, 13});
  EXPECT_EQ(s.count(), 3);
  EXPECT_EQ(s.total(), 19);
  EXPECT_EQ(s.offset(2), 6);
  EXPECT_EQ(s.block_of(0), 0);
  EXPECT_EQ(s.block_of(1), 1);
  EXPECT_EQ(s.block_of(5), 1);
  EXPECT_EQ(s.block_of(6), 2);
  EXPECT_EQ(s.block_of(18), 2);
  EXPECT_THROW(s.block_of(19), Error);
  EXPECT_EQ(s.max_size(), 13);
  EXPECT_THROW(BlockSizes({3, 0}), InputError);
}

TEST(BlockSizes, CoveringAndCyclic) {
  auto c = BlockSizes::covering(10, 4);
  EXPECT_EQ(c.sizes(), (std::vector<int>{4, 4, 2}));
  auto y = BlockSizes::cyclic(5, {1, 5});
  EXPECT_EQ(y.sizes(), (std::vector<int>{1, 5, 1, 5, 1}));
}

TEST(Panel, AppendFindAndPackRoundTrip) {
  Panel p(std::vector<int>{2, 5, 9});
  double* x = p.append_block(0, 1, 4);
  x[3] = 7;
  p.append_block(0, 3, 2);
  p.append_block(2, 0, 1)[0] = -1;  // row 1 stays empty
  EXPECT_THROW(p.append_block(1, 4, 1), Error);  // rows must ascend
  EXPECT_THROW(p.append_block(2, 0, 1), Error);  // columns must ascend
  EXPECT_EQ(p.nblocks(), 3);
  EXPECT_EQ(p.find(0, 3), 1);
  EXPECT_EQ(p.find(1, 3), -1);
  EXPECT_EQ(p.find(2, 0), 2);
  EXPECT_EQ(p.row_index(5), 1);
  EXPECT_EQ(p.row_index(6), -1);

  std::vector<std::int64_t> words;
  p.pack_index(words);
  ASSERT_EQ(static_cast<std::int64_t>(words.size()), PanelView::packed_words(3, 3));
  const PanelView v = PanelView::from_packed(words.data(), static_cast<std::int64_t>(words.size()), p.data().data());
  EXPECT_EQ(v.nrows, 3);
  EXPECT_EQ(v.nblocks, 3);
  EXPECT_EQ(v.row_ptr[1], 2);
  EXPECT_EQ(v.row_ptr[2], 2);
  EXPECT_EQ(v.row_ptr[3], 3);
  EXPECT_EQ(v.data[v.offsets[0] + 3], 7);
  Panel q = Panel::copy_of(v);
  EXPECT_EQ(q.find(2, 0), 2);
  EXPECT_EQ(q.data()[q.offset(2)], -1);
  EXPECT_THROW(PanelView::from_packed(words.data(), static_cast<std::int64_t>(words.size()) - 1, nullptr), Error);
}

// same_index compares the index words wherever they lie, and each of them matters.
TEST(PanelView, SameIndexComparesEveryWordNotTheValues) {
  Panel p(std::vector<int>{2, 5, 9});
  p.append_block(0, 1, 4)[0] = 1;
  p.append_block(0, 3, 2)[0] = 2;
  p.append_block(2, 0, 1)[0] = 3;
  const PanelView v = p.view();
  std::vector<std::int64_t> words;
  p.pack_index(words);
  const std::vector<double> other_values(static_cast<std::size_t>(v.data_size), -5.0);
  const auto view_of = [&](const std::vector<std::int64_t>& w) {
    return PanelView::from_packed(w.data(), static_cast<std::int64_t>(w.size()), other_values.data());
  };
  EXPECT_TRUE(v.same_index(view_of(words)));
  EXPECT_TRUE(view_of(words).same_index(v));
  // Each word of the packed index changed in turn (counts, rows, row pointers, columns, offsets):
  // the views differ, or the words are refused as inconsistent.
  int compared = 0;
  for (std::size_t i = 0; i < words.size(); ++i) {
    SCOPED_TRACE("word " + std::to_string(i));
    std::vector<std::int64_t> changed = words;
    changed[i] += 1;
    try {
      EXPECT_FALSE(v.same_index(view_of(changed)));
      ++compared;
    } catch (const Error&) {
    }
  }
  EXPECT_GE(compared, 2 * v.nblocks);  // at least every column and offset
  Panel q(std::vector<int>{2, 5, 9});  // another panel with the same blocks
  q.append_block(0, 1, 4);
  q.append_block(0, 3, 2);
  q.append_block(2, 0, 1);
  EXPECT_TRUE(v.same_index(q.view()));
  Panel r(std::vector<int>{2, 5, 9});
  r.append_block(0, 1, 4);
  r.append_block(0, 3, 2);
  EXPECT_FALSE(v.same_index(r.view()));
}

// An index several panels share (Panel::adopt of a shared index, as a replayed product plan's C
// panels have it): a panel copies it before its first change, so neither the holder nor the
// other panels see the change; copies of such a panel share it too, and a moved-from panel is
// empty and usable.
TEST(Panel, ASharedIndexIsCopiedBeforeAChange) {
  auto index = std::make_shared<PanelIndex>();
  index->row_ids = {1, 4};
  index->row_ptr = {0, 2, 3};
  index->cols = {0, 2, 1};
  index->offsets = {0, 4, 8};
  Panel p = Panel::adopt(index, MatrixData(12, 1.0));
  Panel q = Panel::adopt(index, MatrixData(12, 2.0));
  EXPECT_TRUE(p.index_shared());
  EXPECT_EQ(p.view().cols, index->cols.data()) << "adopted without a copy";
  EXPECT_EQ(q.view().cols, index->cols.data());
  EXPECT_EQ(p.find(1, 1), 2);

  Panel copy = p;  // shares the index, copies the values
  EXPECT_EQ(copy.view().cols, index->cols.data());
  EXPECT_NE(copy.view().data, p.view().data);

  p.clear_blocks();  // a change: p's own copy
  EXPECT_FALSE(p.index_shared());
  EXPECT_EQ(p.nblocks(), 0);
  p.append_block(0, 5, 4);
  EXPECT_EQ(p.find(0, 5), 0);
  const IndexArray cols{0, 2, 1}, row_ptr{0, 2, 3};
  EXPECT_EQ(index->cols, cols);
  EXPECT_EQ(index->row_ptr, row_ptr);
  EXPECT_EQ(q.nblocks(), 3);
  EXPECT_EQ(q.find(0, 2), 1);
  EXPECT_EQ(copy.find(1, 1), 2);

  q.reserve(10, 40);  // reserving changes capacity only, yet q then owns its index
  EXPECT_NE(q.view().cols, index->cols.data());
  EXPECT_EQ(q.find(1, 1), 2);

  Panel moved = std::move(copy);
  EXPECT_EQ(moved.find(1, 1), 2);
  EXPECT_EQ(copy.nrows(), 0);  // NOLINT(bugprone-use-after-move): a moved-from panel is empty
  EXPECT_EQ(copy.nblocks(), 0);
  EXPECT_EQ(copy.view().nblocks, 0);

  auto bad = std::make_shared<PanelIndex>(*index);
  bad->row_ptr.back() = 2;  // inconsistent: 3 blocks, the last row ends at 2
  EXPECT_THROW(Panel::adopt(bad, MatrixData(12, 0.0)), Error);
  EXPECT_THROW(Panel::adopt(nullptr, MatrixData{}), Error);

  // A default-made panel shares the one empty index: changing it changes no other panel.
  Panel d;
  d.reserve(8, 8);
  EXPECT_NE(d.view().cols, nullptr);
  EXPECT_EQ(Panel().view().cols, nullptr) << "the empty index has no storage, and gained none";
  copy.reserve(8, 8);  // moved from: the same
  EXPECT_EQ(Panel().view().cols, nullptr);
}

// A view of a Panel shows its index object (PanelView::shows), which a holder may keep
// (held_index) and rely on: the panel copies the index before its next change. A view whose
// fields were changed, a packed view and an index no shared_ptr owns give nothing to hold.
TEST(Panel, AViewShowsTheIndexItsHolderKeepsUnchanged) {
  Panel p(std::vector<int>{2, 5});
  const double values[4] = {1, 2, 3, 4};
  p.append_block(0, 1, values, 4);
  p.append_block(1, 3, values, 4);
  const PanelView v = p.view();
  ASSERT_NE(v.index, nullptr);
  EXPECT_TRUE(v.shows(*v.index));
  const std::shared_ptr<const PanelIndex> held = v.held_index();
  ASSERT_EQ(held.get(), v.index);

  PanelView changed = v;
  changed.nblocks = 1;
  EXPECT_FALSE(changed.shows(*v.index));
  EXPECT_EQ(changed.held_index(), nullptr);

  std::vector<std::int64_t> words(static_cast<std::size_t>(PanelView::packed_words(v.nrows, v.nblocks)));
  v.pack_to(words.data());
  const PanelView packed = PanelView::from_packed(words.data(), static_cast<std::int64_t>(words.size()), v.data);
  EXPECT_FALSE(packed.shows(*held));
  EXPECT_EQ(packed.held_index(), nullptr);

  p.append_block(1, 5, values, 4);  // held: the panel changes a copy
  EXPECT_NE(p.view().index, held.get());
  EXPECT_FALSE(p.view().shows(*held));
  const IndexArray cols{1, 3};
  EXPECT_EQ(held->cols, cols);
  EXPECT_TRUE(p.view().shows(*p.view().index));

  PanelIndex loose;  // no shared_ptr owns it
  const PanelView u = loose.view(nullptr, 0);
  EXPECT_TRUE(u.shows(loose));
  EXPECT_EQ(u.held_index(), nullptr);
}

TEST(BalanceRows, EqualWeightPerThread) {
  // 8 rows with weights summing to 40: two threads get 20 each.
  std::vector<std::int64_t> w{10, 5, 5, 2, 8, 4, 3, 3};
  auto f = balance_rows(w, 2);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0], 0);
  EXPECT_EQ(f[1], 3);
  EXPECT_EQ(f[2], 8);
  auto g = balance_rows(std::vector<std::int64_t>(6, 0), 3);  // no weights: by row count
  EXPECT_EQ(g, (std::vector<int>{0, 2, 4, 6}));
  auto h = balance_rows({}, 4);
  EXPECT_EQ(h, (std::vector<int>{0, 0, 0, 0, 0}));
}

TEST(PackedPanel, PackViewAndCapacity) {
  Panel p(std::vector<int>{1, 4});
  p.append_block(0, 2, 3)[1] = 5;
  p.append_block(1, 0, 2)[0] = -2;
  PackedPanel b;
  b.reserve(PanelView::packed_words(2, 2), 5);
  b.pack(p);
  EXPECT_EQ(b.words(), PanelView::packed_words(2, 2));
  EXPECT_EQ(b.values(), 5);
  const PanelView v = b.view();
  EXPECT_EQ(v.nblocks, 2);
  EXPECT_EQ(v.row_ids[1], 4);
  EXPECT_EQ(v.data[v.offsets[0] + 1], 5);
  EXPECT_EQ(v.data[v.offsets[1]], -2);
  PackedPanel small;
  small.reserve(PanelView::packed_words(2, 2), 4);  // one value short
  EXPECT_THROW(small.pack(p), Error);
}

// Two panels' blocks as one panel over one value area (cannon's fused ticks): every block of
// either found at its (row, col) with its values, rows and columns ascending.
TEST(MergedIndex, UnionOfTwoPanelsOverOneArea) {
  Panel x(std::vector<int>{1, 4, 7}), y(std::vector<int>{0, 4, 9});
  x.append_block(0, 3, 2)[0] = 13;
  x.append_block(1, 0, 2)[0] = 40;
  x.append_block(1, 5, 2)[0] = 45;
  x.append_block(2, 2, 2)[0] = 72;
  y.append_block(0, 1, 2)[0] = 1;
  y.append_block(1, 2, 2)[0] = 42;
  y.append_block(1, 6, 2)[0] = 46;
  y.append_block(2, 0, 2)[0] = 90;
  // One area: x's values, then y's.
  std::vector<double> area(x.data().begin(), x.data().end());
  area.insert(area.end(), y.data().begin(), y.data().end());
  const IndexArray w = merged_index(x.view(), 0, y.view(), x.data_size(), static_cast<std::int64_t>(area.size()));
  const PanelView v = PanelView::from_packed(w.data(), static_cast<std::int64_t>(w.size()), area.data());
  ASSERT_EQ(v.nrows, 5);
  EXPECT_EQ(v.nblocks, 8);
  EXPECT_EQ(v.data_size, 16);
  const std::vector<std::int64_t> rows(v.row_ids, v.row_ids + v.nrows);
  EXPECT_EQ(rows, (std::vector<std::int64_t>{0, 1, 4, 7, 9}));
  std::vector<std::int64_t> cols;
  for (int r = 0; r < v.nrows; ++r)
    for (std::int64_t b = v.row_ptr[r]; b < v.row_ptr[r + 1]; ++b) {
      cols.push_back(v.cols[b]);  // each block's first value: 10 * row + col by construction
      EXPECT_EQ(v.data[v.offsets[b]], static_cast<double>(10 * v.row_ids[r] + v.cols[b]));
    }
  EXPECT_EQ(cols, (std::vector<std::int64_t>{1, 3, 0, 2, 5, 6, 2, 0}));
  // y's values first and x's after a gap of 3: the same blocks and values.
  std::vector<double> other(y.data().begin(), y.data().end());
  other.resize(other.size() + 3, -1.0);
  other.insert(other.end(), x.data().begin(), x.data().end());
  const IndexArray w2 = merged_index(x.view(), y.data_size() + 3, y.view(), 0, static_cast<std::int64_t>(other.size()));
  const PanelView v2 = PanelView::from_packed(w2.data(), static_cast<std::int64_t>(w2.size()), other.data());
  ASSERT_EQ(v2.nblocks, v.nblocks);
  for (std::int64_t b = 0; b < v.nblocks; ++b) {
    EXPECT_EQ(v2.cols[b], v.cols[b]);
    EXPECT_EQ(v2.data[v2.offsets[b]], v.data[v.offsets[b]]);
  }
  // One empty panel: the other's index as it is, moved where it lies.
  const IndexArray only_y = merged_index(Panel().view(), 0, y.view(), 5, 5 + y.data_size());
  const PanelView vy = PanelView::from_packed(only_y.data(), static_cast<std::int64_t>(only_y.size()), area.data());
  EXPECT_EQ(vy.nblocks, y.nblocks());
  EXPECT_EQ(vy.offsets[0], 5 + y.view().offsets[0]);
  // A block in both is an error.
  Panel z(std::vector<int>{4});
  z.append_block(0, 5, 2);
  EXPECT_THROW(merged_index(x.view(), 0, z.view(), 0, 0), Error);
}

// The filter's copy (DistMatrix::filter): the blocks whose norm reaches eps, whatever the order of
// their values in the area (a product's C places them as they come), each with its own values.
TEST(WithoutSmallBlocks, KeepsTheBlocksAtLeastEpsWithTheirValuesAndCopiesNothingWhenAllAreKept) {
  const BlockSizes s = BlockSizes::cyclic(3, {2, 3});
  const BlockLayout l{s, s};
  // Rows 0, 1, 2 with blocks (0,0) (0,2) | (1,1) | (2,0) (2,1) (2,2); values laid out backwards.
  const std::vector<std::int64_t> row_ids{0, 1, 2}, row_ptr{0, 2, 3, 6}, cols{0, 2, 1, 0, 1, 2};
  const int n = static_cast<int>(cols.size());
  std::vector<std::int64_t> size(cols.size()), offsets(cols.size());
  std::int64_t total = 0;
  for (int r = 0; r < 3; ++r)
    for (std::int64_t b = row_ptr[r]; b < row_ptr[r + 1]; ++b)
      total += size[static_cast<std::size_t>(b)] = std::int64_t{s.size(r)} * s.size(static_cast<int>(cols[b]));
  for (int b = n - 1, off = 0; b >= 0; --b) {
    offsets[static_cast<std::size_t>(b)] = off;
    off += static_cast<int>(size[static_cast<std::size_t>(b)]);
  }
  // Block b holds the value v_b everywhere: its norm is |v_b| sqrt(size). Block 0 (the first) and
  // block 4 are small.
  const std::vector<double> value{0.01, 1.0, -2.0, 3.0, 0.001, 0.5};
  MatrixData data;
  data.resize(static_cast<std::size_t>(total));
  for (int b = 0; b < n; ++b)
    std::fill_n(data.begin() + offsets[static_cast<std::size_t>(b)], size[static_cast<std::size_t>(b)],
                value[static_cast<std::size_t>(b)]);
  const Panel p =
      Panel::adopt(IndexArray(row_ids.begin(), row_ids.end()), IndexArray(row_ptr.begin(), row_ptr.end()),
                   IndexArray(cols.begin(), cols.end()), IndexArray(offsets.begin(), offsets.end()), std::move(data));
  const std::vector<double> norms = block_norms(p.view(), l);
  for (int b = 0; b < n; ++b)
    EXPECT_DOUBLE_EQ(norms[static_cast<std::size_t>(b)],
                     std::abs(value[static_cast<std::size_t>(b)]) *
                         std::sqrt(static_cast<double>(size[static_cast<std::size_t>(b)])));
  for (const int threads : {2, 3}) EXPECT_EQ(block_norms(p.view(), l, threads), norms) << threads << " threads";
  for (const double eps : {0.1, 1.5, 0.0001, 100.0})
    for (const int threads : {1, 2, 3}) {
      SCOPED_TRACE("eps " + std::to_string(eps) + ", " + std::to_string(threads) + " threads");
      std::int64_t dropped = -1;
      const std::optional<Panel> kept = without_small_blocks(p.view(), l, eps, dropped, threads);
      const auto expect_dropped = std::count_if(norms.begin(), norms.end(), [&](double x) { return x < eps; });
      EXPECT_EQ(dropped, expect_dropped);
      if (expect_dropped == 0) {
        EXPECT_FALSE(kept.has_value());
        continue;
      }
      ASSERT_TRUE(kept.has_value());
      EXPECT_EQ(kept->nblocks(), n - expect_dropped);
      std::int64_t kept_values = 0;
      for (int r = 0; r < 3; ++r)
        for (std::int64_t b = row_ptr[r]; b < row_ptr[r + 1]; ++b) {
          const std::int64_t at = kept->find(r, static_cast<int>(cols[b]));
          if (norms[static_cast<std::size_t>(b)] < eps) {
            EXPECT_EQ(at, -1) << "block " << b;
            continue;
          }
          ASSERT_GE(at, 0) << "block " << b;
          const double* got = kept->data().data() + kept->view().offsets[at];
          kept_values += size[static_cast<std::size_t>(b)];
          for (std::int64_t q = 0; q < size[static_cast<std::size_t>(b)]; ++q)
            ASSERT_EQ(got[q], value[static_cast<std::size_t>(b)]) << "block " << b;
        }
      // A value area of its own, no larger than a quarter beyond what it keeps.
      EXPECT_EQ(kept->data_size(), kept_values);
      EXPECT_LE(static_cast<std::int64_t>(kept->data().capacity()), kept_values + kept_values / 4);
    }
}

// The threads share the rows; the panel they make is the one thread's, index and values alike.
TEST(WithoutSmallBlocks, AnyNumberOfThreadsMakesTheSamePanel) {
  const BlockSizes s = BlockSizes::cyclic(50, {1, 4, 6});
  const BlockLayout l{s, s};
  std::vector<int> rows(50);
  for (int r = 0; r < 50; ++r) rows[static_cast<std::size_t>(r)] = r;
  Panel p(rows);
  for (int r = 0; r < 50; ++r)
    for (int c = 0; c < 50; ++c) {
      if ((r * 13 + c * 7) % 5 == 0) continue;  // rows of unequal lengths
      const int n = s.size(r) * s.size(c);
      double* x = p.append_block(r, c, n);
      const double scale = std::pow(10.0, -((r * 7 + c * 3) % 6));  // norms over six orders of magnitude
      for (int q = 0; q < n; ++q) x[q] = scale * (1.0 + 0.01 * q);
    }
  std::int64_t dropped_one = -1;
  const std::optional<Panel> one = without_small_blocks(p.view(), l, 1e-2, dropped_one, 1);
  ASSERT_TRUE(one.has_value());
  ASSERT_GT(dropped_one, 0);
  ASSERT_LT(dropped_one, p.nblocks());
  for (const int threads : {2, 3, 8, 64}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    std::int64_t dropped = -1;
    const std::optional<Panel> got = without_small_blocks(p.view(), l, 1e-2, dropped, threads);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(dropped, dropped_one);
    test::expect_same_panel(*one, *got);
  }
  // Nothing below the threshold: no panel, whatever the threads.
  for (const int threads : {1, 2}) {
    std::int64_t dropped = -1;
    EXPECT_FALSE(without_small_blocks(p.view(), l, 1e-9, dropped, threads).has_value());
    EXPECT_EQ(dropped, 0);
  }
}
