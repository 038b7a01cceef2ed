#include "plexus/panel.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "plexus/error.hpp"
#include "plexus/local_multiply.hpp"
#include "sum_of_squares.hpp"
#include "threads.hpp"

namespace plexus {

PanelView PanelView::from_packed(const std::int64_t* w, std::int64_t nwords, const double* data) {
  if (nwords < 4) throw Error("PanelView::from_packed", "packed panel index too short");
  PanelView v;
  v.nrows = static_cast<int>(w[0]);
  v.nblocks = w[1];
  v.data_size = w[2];
  if (v.nrows < 0 || v.nblocks < 0 || v.data_size < 0 || packed_words(v.nrows, v.nblocks) != nwords)
    throw Error("PanelView::from_packed", "packed panel index of " + std::to_string(nwords) +
                                              " words is inconsistent with its header (" + std::to_string(v.nrows) +
                                              " rows, " + std::to_string(v.nblocks) + " blocks)");
  v.row_ids = w + 3;
  v.row_ptr = v.row_ids + v.nrows;
  v.cols = v.row_ptr + v.nrows + 1;
  v.offsets = v.cols + v.nblocks;
  v.data = data;
  return v;
}

PanelView PanelIndex::view(const double* data, std::int64_t data_size) const {
  PanelView v;
  v.nrows = static_cast<int>(row_ids.size());
  v.nblocks = static_cast<std::int64_t>(cols.size());
  v.data_size = data_size;
  v.row_ids = row_ids.data();
  v.row_ptr = row_ptr.data();
  v.cols = cols.data();
  v.offsets = offsets.data();
  v.data = data;
  v.index = this;
  return v;
}

std::shared_ptr<PanelIndex> PanelIndex::copy_of(const PanelView& v) {
  auto index = std::make_shared<PanelIndex>();
  index->row_ids.assign(v.row_ids, v.row_ids + v.nrows);
  index->row_ptr.assign(v.row_ptr, v.row_ptr + v.nrows + 1);
  index->cols.assign(v.cols, v.cols + v.nblocks);
  index->offsets.assign(v.offsets, v.offsets + v.nblocks);
  return index;
}

std::int64_t PanelIndex::bytes() const {
  const std::size_t words = row_ids.capacity() + row_ptr.capacity() + cols.capacity() + offsets.capacity();
  return static_cast<std::int64_t>(words * sizeof(std::int64_t));
}

const std::shared_ptr<const PanelIndex>& Panel::empty_index() {
  // Never freed: a panel made or moved while statics are destroyed still finds it.
  static const auto* const empty = new std::shared_ptr<const PanelIndex>(std::make_shared<PanelIndex>());
  return *empty;
}

Panel::Panel() : index_(empty_index()) {}
Panel::Panel(const Panel& o) : data_(o.data_), cur_row_(o.cur_row_) {
  if (o.index_ == empty_index() || o.index_shared()) {
    index_ = o.index_;  // complete and written by nobody: shared
  } else {
    index_ = std::make_shared<PanelIndex>(*o.index_);
    writable_ = true;
  }
}
Panel::Panel(Panel&& o) noexcept
    : index_(std::exchange(o.index_, empty_index())),
      writable_(std::exchange(o.writable_, false)),
      data_(std::move(o.data_)),
      cur_row_(std::exchange(o.cur_row_, 0)) {
  o.data_.clear();
}
Panel& Panel::operator=(const Panel& o) {
  if (this != &o) *this = Panel(o);
  return *this;
}
Panel& Panel::operator=(Panel&& o) noexcept {
  if (this != &o) {
    index_ = std::exchange(o.index_, empty_index());
    writable_ = std::exchange(o.writable_, false);
    data_ = std::move(o.data_);
    o.data_.clear();
    cur_row_ = std::exchange(o.cur_row_, 0);
  }
  return *this;
}
Panel::~Panel() = default;

PanelIndex& Panel::own() {
  if (!writable_ || index_.use_count() > 1) {
    index_ = std::make_shared<PanelIndex>(*index_);
    writable_ = true;
  }
  // Made here as a (non-const) PanelIndex, and no one else holds it.
  return const_cast<PanelIndex&>(*index_);
}

Panel::Panel(const std::vector<int>& row_ids) {
  auto index = std::make_shared<PanelIndex>();
  index->row_ids.assign(row_ids.begin(), row_ids.end());
  index->row_ptr.assign(row_ids.size() + 1, 0);
  for (std::size_t r = 1; r < row_ids.size(); ++r)
    if (row_ids[r] <= row_ids[r - 1]) throw Error("Panel", "row ids must be strictly ascending");
  index_ = std::move(index);
  writable_ = true;
}

Panel Panel::copy_of(const PanelView& v, int threads) {
  MatrixData data(static_cast<std::size_t>(v.data_size));  // unset until copied
  for_each_share(threads, v.data_size,
                 [&](int, std::int64_t lo, std::int64_t hi) { std::copy(v.data + lo, v.data + hi, data.data() + lo); });
  Panel p = adopt(PanelIndex::copy_of(v), std::move(data));
  p.writable_ = true;  // its own copy
  return p;
}

Panel Panel::adopt(IndexArray row_ids, IndexArray row_ptr, IndexArray cols, IndexArray offsets, MatrixData data) {
  // adopt() of the shared index below checks it.
  auto index = std::make_shared<PanelIndex>();
  index->row_ids = std::move(row_ids);
  index->row_ptr = std::move(row_ptr);
  index->cols = std::move(cols);
  index->offsets = std::move(offsets);
  Panel p = adopt(std::move(index), std::move(data));
  p.writable_ = true;  // made here from the caller's arrays
  return p;
}

Panel Panel::adopt(std::shared_ptr<const PanelIndex> index, MatrixData data) {
  if (!index) throw Error("Panel::adopt", "no index");
  const PanelIndex& x = *index;
  if (x.row_ptr.size() != x.row_ids.size() + 1 || x.cols.size() != x.offsets.size() ||
      x.row_ptr.back() != static_cast<std::int64_t>(x.cols.size()))
    throw Error("Panel::adopt", "inconsistent index: " + std::to_string(x.row_ids.size()) + " rows, " +
                                    std::to_string(x.row_ptr.size()) + " row pointers, " +
                                    std::to_string(x.cols.size()) + " columns, " + std::to_string(x.offsets.size()) +
                                    " offsets");
  Panel p;
  p.index_ = std::move(index);
  p.data_ = std::move(data);
  p.cur_row_ = p.nrows() > 0 ? p.nrows() - 1 : 0;
  return p;
}

PanelView Panel::view() const {
  const std::int64_t nb = nblocks();
  // The tail of a panel being filled; a complete index (every shared one) is not written.
  const IndexArray& row_ptr = index_->row_ptr;
  for (std::size_t q = static_cast<std::size_t>(cur_row_) + 1; q < row_ptr.size(); ++q) {
    if (row_ptr[q] == nb) continue;
    if (!writable_ || index_.use_count() > 1) throw Error("Panel::view", "a shared index is incomplete");
    const_cast<IndexArray&>(row_ptr)[q] = nb;  // this panel's own index (writable_), held by no one else
  }
  return index_->view(data_.data(), data_size());
}

double* Panel::append_block(int r, int col, int nvalues) {
  const auto off = static_cast<std::int64_t>(data_.size());
  append_index(r, col);
  data_.resize(data_.size() + static_cast<std::size_t>(nvalues), 0.0);
  return data_.data() + off;
}

void Panel::append_block(int r, int col, const double* values, int nvalues) {
  append_index(r, col);
  data_.insert(data_.end(), values, values + nvalues);
}

void Panel::append_index(int r, int col) {
  if (r < cur_row_ || r >= nrows())
    throw Error("Panel::append_block", "rows must be filled in ascending order (row " + std::to_string(r) +
                                           " after row " + std::to_string(cur_row_) + ")");
  PanelIndex& x = own();
  if (r > cur_row_) {
    // Rows cur_row_+1 .. r start where the blocks appended so far end.
    for (int q = cur_row_ + 1; q <= r; ++q) x.row_ptr[q] = nblocks();
    cur_row_ = r;
  } else if (nblocks() > x.row_ptr[r] && x.cols.back() >= col) {
    throw Error("Panel::append_block", "columns must ascend within a row (column " + std::to_string(col) +
                                           " after " + std::to_string(x.cols.back()) + ")");
  }
  x.cols.push_back(col);
  x.offsets.push_back(static_cast<std::int64_t>(data_.size()));
}

std::int64_t Panel::find(int r, int col) const {
  const IndexArray& cols = index_->cols;
  const auto b = cols.begin() + row_begin(r), e = cols.begin() + row_end(r);
  auto it = std::lower_bound(b, e, static_cast<std::int64_t>(col));
  return (it != e && *it == col) ? static_cast<std::int64_t>(it - cols.begin()) : -1;
}

int Panel::row_index(int global_row) const {
  const IndexArray& ids = index_->row_ids;
  auto it = std::lower_bound(ids.begin(), ids.end(), static_cast<std::int64_t>(global_row));
  return (it != ids.end() && *it == global_row) ? static_cast<int>(it - ids.begin()) : -1;
}

bool PanelView::shows(const PanelIndex& x) const {
  return index == &x && row_ids == x.row_ids.data() && row_ptr == x.row_ptr.data() && cols == x.cols.data() &&
         offsets == x.offsets.data() && nrows == static_cast<std::int64_t>(x.row_ids.size()) &&
         nblocks == static_cast<std::int64_t>(x.cols.size()) && x.row_ptr.size() == x.row_ids.size() + 1;
}

bool PanelView::same_index(const PanelView& o) const {
  return nrows == o.nrows && nblocks == o.nblocks && data_size == o.data_size &&
         std::equal(row_ids, row_ids + nrows, o.row_ids) && std::equal(row_ptr, row_ptr + nrows + 1, o.row_ptr) &&
         std::equal(cols, cols + nblocks, o.cols) && std::equal(offsets, offsets + nblocks, o.offsets);
}

std::shared_ptr<const PanelIndex> PanelView::held_index() const {
  return index != nullptr && shows(*index) ? index->weak_from_this().lock() : nullptr;
}

void PanelView::pack_to(std::int64_t* w) const {
  w[0] = nrows;
  w[1] = nblocks;
  w[2] = data_size;
  std::int64_t* p = w + 3;
  p = std::copy(row_ids, row_ids + nrows, p);
  p = std::copy(row_ptr, row_ptr + nrows + 1, p);
  p = std::copy(cols, cols + nblocks, p);
  std::copy(offsets, offsets + nblocks, p);
}

void Panel::pack_to(std::int64_t* w) const { view().pack_to(w); }

void Panel::pack_index(std::vector<std::int64_t>& out) const {
  const std::size_t start = out.size();
  out.resize(start + static_cast<std::size_t>(PanelView::packed_words(nrows(), nblocks())));
  pack_to(out.data() + start);
}

void Panel::reserve(std::int64_t nb, std::int64_t nvalues) {
  PanelIndex& x = own();
  x.cols.reserve(static_cast<std::size_t>(nb));
  x.offsets.reserve(static_cast<std::size_t>(nb));
  data_.reserve(static_cast<std::size_t>(nvalues));
}

void Panel::clear_blocks() {
  if (!writable_ || index_.use_count() > 1) {  // a fresh index of the rows, not a copy to clear
    auto x = std::make_shared<PanelIndex>();
    x->row_ids = index_->row_ids;
    x->row_ptr.assign(index_->row_ids.size() + 1, 0);
    index_ = std::move(x);
    writable_ = true;
  }
  PanelIndex& x = own();
  std::fill(x.row_ptr.begin(), x.row_ptr.end(), std::int64_t{0});
  x.cols.clear();
  x.offsets.clear();
  data_.clear();
  cur_row_ = 0;
}

void PackedPanel::reserve(std::int64_t words, std::int64_t values) {
  index.resize(static_cast<std::size_t>(std::max<std::int64_t>(words, 3)));
  data.resize(static_cast<std::size_t>(std::max<std::int64_t>(values, 1)));
}

void PackedPanel::pack(const Panel& p) {
  const std::int64_t words = PanelView::packed_words(p.nrows(), p.nblocks());
  if (words > static_cast<std::int64_t>(index.size()) || p.data_size() > static_cast<std::int64_t>(data.size()))
    throw Error("PackedPanel::pack", "a panel of " + std::to_string(words) + " index words and " +
                                         std::to_string(p.data_size()) + " values does not fit buffers of " +
                                         std::to_string(index.size()) + " and " + std::to_string(data.size()));
  p.pack_to(index.data());
  std::copy(p.data().begin(), p.data().end(), data.begin());
}

void block_norms(const PanelView& v, const BlockLayout& layout, double* norms, int threads) {
  auto rows = [&](int r0, int r1) {
    for (int r = r0; r < r1; ++r) {
      const int m = layout.rows.size(static_cast<int>(v.row_ids[r]));
      for (std::int64_t b = v.row_ptr[r]; b < v.row_ptr[r + 1]; ++b) {
        const std::int64_t n = std::int64_t{m} * layout.cols.size(static_cast<int>(v.cols[b]));
        norms[b] = std::sqrt(sum_of_squares(v.data + v.offsets[b], n));
      }
    }
  };
  for_each_row_share(v, threads, rows);
}

std::vector<double> block_norms(const PanelView& v, const BlockLayout& layout, int threads) {
  std::vector<double> norms(static_cast<std::size_t>(v.nblocks));
  block_norms(v, layout, norms.data(), threads);
  return norms;
}

namespace {

// One thread's filter: each block's norm, then its copy while it is in cache (two passes over C,
// the norms and then the copies, had the filter read it twice from memory).
std::optional<Panel> without_small_blocks_serial(const PanelView& v, const BlockLayout& layout, double eps,
                                                 std::int64_t& dropped) {
  auto norm = [&](int m, std::int64_t b) {
    return std::sqrt(
        sum_of_squares(v.data + v.offsets[b], std::int64_t{m} * layout.cols.size(static_cast<int>(v.cols[b]))));
  };
  // Up to the first block dropped only the norms: a panel that keeps every block is not copied.
  std::int64_t first = v.nblocks;
  for (int r = 0; r < v.nrows && first == v.nblocks; ++r) {
    const int m = layout.rows.size(static_cast<int>(v.row_ids[r]));
    for (std::int64_t b = v.row_ptr[r]; b < v.row_ptr[r + 1]; ++b)
      if (norm(m, b) < eps) {
        first = b;
        break;
      }
  }
  if (first == v.nblocks) return std::nullopt;
  const auto nrows = static_cast<std::size_t>(v.nrows);
  IndexArray row_ids(v.row_ids, v.row_ids + v.nrows), row_ptr(nrows + 1), cols(static_cast<std::size_t>(v.nblocks)),
      offsets(cols.size());
  MatrixData data;
  data.resize(static_cast<std::size_t>(v.data_size));  // tracked vectors leave new doubles unset
  std::int64_t kept = 0, off = 0;
  for (int r = 0; r < v.nrows; ++r) {
    row_ptr[static_cast<std::size_t>(r)] = kept;
    const int m = layout.rows.size(static_cast<int>(v.row_ids[r]));
    for (std::int64_t b = v.row_ptr[r]; b < v.row_ptr[r + 1]; ++b) {
      if (b == first || (b > first && norm(m, b) < eps)) {
        ++dropped;
        continue;
      }
      const std::int64_t n = std::int64_t{m} * layout.cols.size(static_cast<int>(v.cols[b]));
      std::memcpy(data.data() + off, v.data + v.offsets[b], static_cast<std::size_t>(n) * sizeof(double));
      cols[static_cast<std::size_t>(kept)] = v.cols[b];
      offsets[static_cast<std::size_t>(kept)] = off;
      ++kept;
      off += n;
    }
  }
  row_ptr[nrows] = kept;
  cols.resize(static_cast<std::size_t>(kept));
  offsets.resize(cols.size());
  data.resize(static_cast<std::size_t>(off));
  // The room of the dropped blocks is given back where it is more than a quarter of what is kept
  // (one more copy; below that the slack is cheaper).
  if (data.capacity() > data.size() + data.size() / 4) data.shrink_to_fit();
  if (cols.capacity() > cols.size() + cols.size() / 4) {
    cols.shrink_to_fit();
    offsets.shrink_to_fit();
  }
  return Panel::adopt(std::move(row_ids), std::move(row_ptr), std::move(cols), std::move(offsets), std::move(data));
}

}  // namespace

std::optional<Panel> without_small_blocks(const PanelView& v, const BlockLayout& layout, double eps,
                                          std::int64_t& dropped, int threads) {
  dropped = 0;
  threads = std::clamp(threads, 1, std::max(1, v.nrows));
  if (threads == 1) return without_small_blocks_serial(v, layout, eps, dropped);
  // Several threads, each over rows holding about as many blocks: first the norms (which block is
  // kept, and how much each thread keeps), then each thread copies its kept blocks to where the
  // threads before it end. C is read twice, but by all threads at once.
  const std::vector<int> first_row = rows_by_blocks(v, threads);
  memory::vector<unsigned char, memory::Category::Other> keep(static_cast<std::size_t>(v.nblocks));
  std::vector<std::int64_t> kept_blocks(static_cast<std::size_t>(threads) + 1, 0), kept_values(kept_blocks.size(), 0);
  auto values_of = [&](int m, std::int64_t b) {
    return std::int64_t{m} * layout.cols.size(static_cast<int>(v.cols[b]));
  };
  for_each_thread(threads, [&](int t) {
    std::int64_t nb = 0, nv = 0;
    for (int r = first_row[static_cast<std::size_t>(t)]; r < first_row[static_cast<std::size_t>(t) + 1]; ++r) {
      const int m = layout.rows.size(static_cast<int>(v.row_ids[r]));
      for (std::int64_t b = v.row_ptr[r]; b < v.row_ptr[r + 1]; ++b) {
        const std::int64_t n = values_of(m, b);
        const bool k = !(std::sqrt(sum_of_squares(v.data + v.offsets[b], n)) < eps);
        keep[static_cast<std::size_t>(b)] = k ? 1 : 0;
        nb += k ? 1 : 0;
        nv += k ? n : 0;
      }
    }
    kept_blocks[static_cast<std::size_t>(t) + 1] = nb;
    kept_values[static_cast<std::size_t>(t) + 1] = nv;
  });
  for (int t = 0; t < threads; ++t) {
    kept_blocks[static_cast<std::size_t>(t) + 1] += kept_blocks[static_cast<std::size_t>(t)];
    kept_values[static_cast<std::size_t>(t) + 1] += kept_values[static_cast<std::size_t>(t)];
  }
  dropped = v.nblocks - kept_blocks.back();
  if (dropped == 0) return std::nullopt;
  const auto nrows = static_cast<std::size_t>(v.nrows);
  IndexArray row_ids(v.row_ids, v.row_ids + v.nrows), row_ptr(nrows + 1),
      cols(static_cast<std::size_t>(kept_blocks.back())), offsets(cols.size());
  MatrixData data;
  data.resize(static_cast<std::size_t>(kept_values.back()));  // tracked vectors leave new doubles unset
  for_each_thread(threads, [&](int t) {
    std::int64_t kept = kept_blocks[static_cast<std::size_t>(t)], off = kept_values[static_cast<std::size_t>(t)];
    for (int r = first_row[static_cast<std::size_t>(t)]; r < first_row[static_cast<std::size_t>(t) + 1]; ++r) {
      row_ptr[static_cast<std::size_t>(r)] = kept;
      const int m = layout.rows.size(static_cast<int>(v.row_ids[r]));
      for (std::int64_t b = v.row_ptr[r]; b < v.row_ptr[r + 1]; ++b) {
        if (keep[static_cast<std::size_t>(b)] == 0) continue;
        const std::int64_t n = values_of(m, b);
        std::memcpy(data.data() + off, v.data + v.offsets[b], static_cast<std::size_t>(n) * sizeof(double));
        cols[static_cast<std::size_t>(kept)] = v.cols[b];
        offsets[static_cast<std::size_t>(kept)] = off;
        ++kept;
        off += n;
      }
    }
  });
  row_ptr[nrows] = kept_blocks.back();
  return Panel::adopt(std::move(row_ids), std::move(row_ptr), std::move(cols), std::move(offsets), std::move(data));
}

IndexArray merged_index(const PanelView& x, std::int64_t x_shift, const PanelView& y, std::int64_t y_shift,
                        std::int64_t data_size) {
  // The rows of both (each list ascends): counted first, so that the words are sized once.
  int nrows = 0;
  for (int rx = 0, ry = 0; rx < x.nrows || ry < y.nrows; ++nrows) {
    const bool from_x = ry == y.nrows || (rx < x.nrows && x.row_ids[rx] <= y.row_ids[ry]);
    const bool from_y = rx == x.nrows || (ry < y.nrows && y.row_ids[ry] <= x.row_ids[rx]);
    rx += from_x ? 1 : 0;
    ry += from_y ? 1 : 0;
  }
  const std::int64_t nblocks = x.nblocks + y.nblocks;
  IndexArray w(static_cast<std::size_t>(PanelView::packed_words(nrows, nblocks)));
  w[0] = nrows;
  w[1] = nblocks;
  w[2] = data_size;
  std::int64_t* const row_ids = w.data() + 3;
  std::int64_t* const row_ptr = row_ids + nrows;
  std::int64_t* const cols = row_ptr + nrows + 1;
  std::int64_t* const offsets = cols + nblocks;
  std::int64_t at = 0;
  row_ptr[0] = 0;
  for (int r = 0, rx = 0, ry = 0; r < nrows; ++r) {
    const bool from_x = ry == y.nrows || (rx < x.nrows && x.row_ids[rx] <= y.row_ids[ry]);
    const bool from_y = rx == x.nrows || (ry < y.nrows && y.row_ids[ry] <= x.row_ids[rx]);
    row_ids[r] = from_x ? x.row_ids[rx] : y.row_ids[ry];
    std::int64_t qx = from_x ? x.row_ptr[rx] : 0, ex = from_x ? x.row_ptr[rx + 1] : 0;
    std::int64_t qy = from_y ? y.row_ptr[ry] : 0, ey = from_y ? y.row_ptr[ry + 1] : 0;
    while (qx < ex || qy < ey) {
      if (qx < ex && qy < ey && x.cols[qx] == y.cols[qy])
        throw Error("merged_index", "block (" + std::to_string(row_ids[r]) + ", " + std::to_string(x.cols[qx]) +
                                        ") is in both panels");
      if (qy == ey || (qx < ex && x.cols[qx] < y.cols[qy])) {
        cols[at] = x.cols[qx];
        offsets[at++] = x.offsets[qx++] + x_shift;
      } else {
        cols[at] = y.cols[qy];
        offsets[at++] = y.offsets[qy++] + y_shift;
      }
    }
    row_ptr[r + 1] = at;
    rx += from_x ? 1 : 0;
    ry += from_y ? 1 : 0;
  }
  return w;
}

}  // namespace plexus
