#pragma once
// Blocked CSR storage: blocks of a set of block rows, sorted by (row, column), values in one
// contiguous area, each block column-major (rows x cols of its block sizes). A block's values
// start at its offset; blocks need not lie in index order within the area.
//
// The index has one packed form, int64 words:
//   [nrows, nblocks, data_size, row_ids[nrows], row_ptr[nrows+1], cols[nblocks], offsets[nblocks]]
// so a panel received from another rank (index words + values) is used in place through a
// PanelView, without unpacking.
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "plexus/layout.hpp"
#include "plexus/memory.hpp"

namespace plexus {

struct PanelIndex;

/// Read-only view of a panel: raw pointers into a Panel or into a packed (received) buffer.
struct PanelView {
  int nrows = 0;
  std::int64_t nblocks = 0;
  std::int64_t data_size = 0;
  const std::int64_t* row_ids = nullptr;  ///< global block-row id of each CSR row (ascending)
  const std::int64_t* row_ptr = nullptr;  ///< nrows + 1 entries
  const std::int64_t* cols = nullptr;     ///< global block column of each block
  const std::int64_t* offsets = nullptr;  ///< offset of each block's values in data
  const double* data = nullptr;
  /// The index object the pointers above point into, for a view of a Panel (Panel::view); null
  /// for any other view. Product plans hold it instead of copying it.
  const PanelIndex* index = nullptr;

  /// A view of packed index words and values; throws if the words are inconsistent.
  static PanelView from_packed(const std::int64_t* words, std::int64_t nwords, const double* data);
  /// Words of the packed index of a panel with these counts.
  static std::int64_t packed_words(std::int64_t nrows, std::int64_t nblocks) { return 3 + 2 * nrows + 1 + 2 * nblocks; }
  /// Writes the packed index (packed_words(nrows, nblocks) words) to w.
  void pack_to(std::int64_t* w) const;
  /// Whether this view shows exactly the index object `x`, as Panel::view made it: `index` is
  /// `x`, and the pointers and counts are its arrays' (not a view whose fields someone changed).
  bool shows(const PanelIndex& x) const;
  /// Whether `o` has this view's index, word for word: the same rows, blocks, offsets and value
  /// count (wherever the arrays lie; the values are not compared).
  bool same_index(const PanelView& o) const;
  /// The index object this view shows (shows(*index)), held, or null: none, or not a shared_ptr's
  /// (a Panel keeps its index in one). Its holder may rely on it never changing: a Panel copies an
  /// index before its first change while another holds it.
  std::shared_ptr<const PanelIndex> held_index() const;
};

/// A panel's index as Panel keeps it: global block-row ids, CSR row pointers, and each block's
/// column and value offset. Panels may share one that is complete (Panel::adopt of a shared
/// index, as the C panels of a replayed product plan do); nobody changes a shared index, and a
/// panel copies it before its first change while another holds it. A product plan holds the index
/// of a panel it was given (PanelView::index), which makes it shared.
struct PanelIndex : std::enable_shared_from_this<PanelIndex> {
  IndexArray row_ids;
  IndexArray row_ptr = IndexArray(1, 0);
  IndexArray cols;
  IndexArray offsets;
  /// The bytes its arrays hold.
  std::int64_t bytes() const;
  /// A view of this index over a value area of `data_size` values (`index` is this object).
  PanelView view(const double* data, std::int64_t data_size) const;
  /// A copy of a view's index.
  static std::shared_ptr<PanelIndex> copy_of(const PanelView& v);
};

class Panel {
 public:
  Panel();
  Panel(const Panel& o);
  Panel(Panel&& o) noexcept;
  Panel& operator=(const Panel& o);
  Panel& operator=(Panel&& o) noexcept;
  ~Panel();
  /// An empty panel over the given global block rows (ascending).
  explicit Panel(const std::vector<int>& row_ids);
  /// A copy of a view, its values copied by `threads` threads.
  static Panel copy_of(const PanelView& v, int threads = 1);
  /// Takes ownership of a complete index and value area without copying. Blocks are sorted by
  /// (row, col) in the index; their values may lie anywhere in `data` (offsets say where).
  static Panel adopt(IndexArray row_ids, IndexArray row_ptr, IndexArray cols, IndexArray offsets, MatrixData data);
  /// The same with an index that others may hold as well: the panel never writes it (it copies it
  /// before its first change). Throws if its counts are inconsistent.
  static Panel adopt(std::shared_ptr<const PanelIndex> index, MatrixData data);

  PanelView view() const;
  int nrows() const { return static_cast<int>(index_->row_ids.size()); }
  int row_id(int r) const { return static_cast<int>(index_->row_ids[r]); }
  std::int64_t row_begin(int r) const { return r <= cur_row_ ? index_->row_ptr[r] : nblocks(); }
  std::int64_t row_end(int r) const { return r < cur_row_ ? index_->row_ptr[r + 1] : nblocks(); }
  std::int64_t nblocks() const { return static_cast<std::int64_t>(index_->cols.size()); }
  int col(std::int64_t b) const { return static_cast<int>(index_->cols[b]); }
  std::int64_t offset(std::int64_t b) const { return index_->offsets[b]; }
  /// Whether another panel (or a product plan) holds this panel's index too.
  bool index_shared() const { return index_.use_count() > 1 && index_ != empty_index(); }
  const MatrixData& data() const { return data_; }
  MatrixData& data() { return data_; }
  std::int64_t data_size() const { return static_cast<std::int64_t>(data_.size()); }

  /// Appends a block at the end of CSR row r. Rows must be filled in ascending order and
  /// columns ascending within a row. Returns the block's values (zero-initialised).
  double* append_block(int r, int col, int nvalues);
  /// The same, with the block's values copied from `values` (written once, not zeroed first).
  void append_block(int r, int col, const double* values, int nvalues);
  /// Block index of (CSR row r, col) or -1.
  std::int64_t find(int r, int col) const;
  /// CSR row of a global block row or -1.
  int row_index(int global_row) const;

  /// Appends the packed index words to `out`.
  void pack_index(std::vector<std::int64_t>& out) const;
  void pack_to(std::int64_t* words) const;

  void reserve(std::int64_t nblocks, std::int64_t nvalues);
  /// Removes all blocks (the row set stays).
  void clear_blocks();

 private:
  // Never null: a panel without an index of its own (default-made, moved from) points to the one
  // empty index all such panels share. Its row_ptr is valid up to cur_row_; view() completes the
  // tail (never that of a shared index: a shared index is complete).
  std::shared_ptr<const PanelIndex> index_;
  // The index is one this panel made (as a PanelIndex, not const), which it may write while it is
  // the only holder; an adopted shared index, or the empty one, is copied before any change.
  bool writable_ = false;
  MatrixData data_;
  int cur_row_ = 0;  // row that append_block is filling
  static const std::shared_ptr<const PanelIndex>& empty_index();
  PanelIndex& own();                  // the index, copied first if another holds it
  void append_index(int r, int col);  // append_block's checks and index entry (the values' offset: data_'s end)
};

/// One panel in packed form (index words and values) in fixed-capacity communication buffers,
/// as strategies send and receive panels.
struct PackedPanel {
  CommBuffer<std::int64_t> index;
  CommBuffer<double> data;
  /// Sizes the buffers for any panel of up to `words` index words and `values` values.
  void reserve(std::int64_t words, std::int64_t values);
  /// Copies a panel in; throws if it does not fit.
  void pack(const Panel& p);
  std::int64_t words() const { return PanelView::packed_words(index[0], index[1]); }
  std::int64_t values() const { return index[2]; }
  PanelView view() const { return PanelView::from_packed(index.data(), words(), data.data()); }
};

/// Frobenius norm of every block of a view, in block order (block sizes from the layout).
/// `threads` share the rows (a multiply's filter: the kernel's threads); the norms do not depend
/// on how many.
std::vector<double> block_norms(const PanelView& v, const BlockLayout& layout, int threads = 1);
/// The same into `norms` (v.nblocks of them).
void block_norms(const PanelView& v, const BlockLayout& layout, double* norms, int threads = 1);

/// The blocks of a view whose Frobenius norm is at least eps (those block_norms gives), in the
/// view's order over a value area of their own, with `dropped` set to how many are not; nothing
/// (std::nullopt, no copy made) where every block is kept. `threads` share the rows (the same
/// result for any number).
std::optional<Panel> without_small_blocks(const PanelView& v, const BlockLayout& layout, double eps,
                                          std::int64_t& dropped, int threads = 1);

/// The packed index (PanelView::from_packed) of the blocks of two panels as one panel over one
/// value area of `data_size` values: the rows of both, each row's blocks by column, x's offsets
/// moved by `x_shift` and y's by `y_shift` (where each panel's values start in the area). Throws if
/// a block is in both.
IndexArray merged_index(const PanelView& x, std::int64_t x_shift, const PanelView& y, std::int64_t y_shift,
                        std::int64_t data_size);

}  // namespace plexus
