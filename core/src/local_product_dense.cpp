// LocalProduct: dense ticks. A tick whose panels are dense (every A row has blocks in the same
// columns, every B row among them blocks in the same columns) and large enough for the backend
// (HostKernel::dense_min_size, by the tick's block sizes) is one GEMM per strip of C's columns
// instead of one small product per block: B is copied once into a dense K x N column-major
// matrix, each thread copies its A rows into an m x K one, the backend's process() multiplies
// them by a strip of B's columns into an m x n scratch in one entry, and the thread adds the
// scratch into C's blocks (writes it into the blocks this tick creates). Beside the panels a tick
// holds a copy of each, and a strip's result. The copies cost (M + N) K + 2 M N values against
// 2 M N K flops; a block product of 32^3 from a stack ran at 0.75-0.9 of a large DGEMM's rate on
// this project's machines (23^3 at about half of it), because each product loads and stores its
// C block for only 32 steps of k, and reads its operands from memory once the panels outgrow the
// caches (docs/performance.md, "Dense ticks"). With on-the-fly filtering a tick goes dense only
// where the filter would drop none of its products (filter_keeps_every_product, below). A caller
// may hand B over already dense (DenseLayout, LocalProduct::multiply's second form: cannon's fused
// ticks write both ranks' B into a shared window so), and the tick then copies no B.
#include <omp.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "host_session.hpp"
#include "local_product_work.hpp"
#include "plexus/error.hpp"
#include "plexus/local_multiply.hpp"
#include "plexus/timers.hpp"
#include "sum_of_squares.hpp"

namespace plexus {

namespace {

// The product goes to the backend in strips of about this many of C's columns (whole block
// columns), each an m x 512 GEMM with m the thread's rows: the scratch for the strip's result
// stays bounded, and the GEMM keeps the shape BLAS runs fastest. OpenBLAS 0.3.21 on one core of
// this project's Xeon: 2560 x 512 x 2560 at 70 GFLOP/s, as fast as 2560^3, where strips of rows
// (512 x 2560 x 2560) ran at 52-59.
constexpr std::int64_t kStripColumns = 512;

// A rows x cols block from `src` (column-major, leading dimension lds) to `dst` (leading dimension
// ldd): copied, or added. Loops the compiler vectorises in place: recognised as copies, they became
// a memmove call per column, which for blocks of 23 took a quarter of the tick's copying. (GCC's
// attribute; Clang, which has no such attribute, may still call memmove.)
#if defined(__GNUC__) && !defined(__clang__)
#define PLEXUS_COPY_LOOPS [[gnu::optimize("no-tree-loop-distribute-patterns")]]
#else
#define PLEXUS_COPY_LOOPS
#endif
PLEXUS_COPY_LOOPS void copy_block(const double* __restrict src, std::int64_t lds, double* __restrict dst,
                                  std::int64_t ldd, int rows, int cols) {
  for (int j = 0; j < cols; ++j, src += lds, dst += ldd)
    for (int i = 0; i < rows; ++i) dst[i] = src[i];
}
void add_block(const double* __restrict src, std::int64_t lds, double* __restrict dst, std::int64_t ldd, int rows,
               int cols) {
  for (int j = 0; j < cols; ++j, src += lds, dst += ldd)
    for (int i = 0; i < rows; ++i) dst[i] += src[i];
}

// Where each of a list of blocks starts in a dense dimension made of them, and the total.
template <class SizeOf>
std::int64_t prefix_positions(std::int64_t count, SizeOf size_of, std::vector<std::int64_t>& pos) {
  pos.resize(static_cast<std::size_t>(count));
  std::int64_t at = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    pos[static_cast<std::size_t>(i)] = at;
    at += size_of(i);
  }
  return at;
}

// Whether a panel has rows, and every row blocks in the same columns (at least one).
bool every_row_alike(const PanelView& p) {
  if (p.nrows < 1) return false;
  const std::int64_t n = p.row_ptr[1] - p.row_ptr[0];
  if (n < 1 || p.nblocks != n * p.nrows) return false;
  const std::int64_t* const first = p.cols + p.row_ptr[0];
  for (int r = 1; r < p.nrows; ++r)
    if (p.row_ptr[r + 1] - p.row_ptr[r] != n || !std::equal(first, first + n, p.cols + p.row_ptr[r])) return false;
  return true;
}

}  // namespace

bool filter_keeps_every_product(const PanelView& a, const PanelView& b, const double* a_norms, const double* b_norms,
                                const int* a_c_row,
                                const std::vector<double>& row_eps, int k_count) {
  constexpr double kNoRow = std::numeric_limits<double>::infinity();
  std::vector<double> b_min(static_cast<std::size_t>(k_count), kNoRow);
  for (int r = 0; r < b.nrows; ++r) {
    if (b.row_ptr[r] == b.row_ptr[r + 1]) continue;
    double m = kNoRow;
    for (std::int64_t blk = b.row_ptr[r]; blk < b.row_ptr[r + 1]; ++blk)
      m = std::min(m, b_norms[blk]);
    b_min[static_cast<std::size_t>(b.row_ids[r])] = m;
  }
  for (int r = 0; r < a.nrows; ++r) {
    const double eps = row_eps[static_cast<std::size_t>(a_c_row[r])];
    for (std::int64_t blk = a.row_ptr[r]; blk < a.row_ptr[r + 1]; ++blk) {
      const double bm = b_min[static_cast<std::size_t>(a.cols[blk])];
      if (bm != kNoRow && !(a_norms[blk] * bm >= eps)) return false;
    }
  }
  return true;
}

std::optional<DenseLayout> DenseLayout::of(const PanelView& b, const BlockLayout& b_layout) {
  if (!every_row_alike(b)) return std::nullopt;
  const std::int64_t n = b.row_ptr[1] - b.row_ptr[0];
  const std::int64_t* const first = b.cols + b.row_ptr[0];
  DenseLayout d;
  d.row_ids.assign(b.row_ids, b.row_ids + b.nrows);
  d.col_ids.assign(first, first + n);
  std::sort(d.row_ids.begin(), d.row_ids.end());
  std::sort(d.col_ids.begin(), d.col_ids.end());
  d.row_at.assign(static_cast<std::size_t>(b_layout.rows.count()), -1);
  d.col_at.assign(static_cast<std::size_t>(b_layout.cols.count()), -1);
  for (const std::int64_t k : d.row_ids) {
    d.row_at[static_cast<std::size_t>(k)] = d.K;
    d.K += b_layout.rows.size(static_cast<int>(k));
  }
  for (const std::int64_t j : d.col_ids) {
    d.col_at[static_cast<std::size_t>(j)] = d.N;
    d.N += b_layout.cols.size(static_cast<int>(j));
  }
  if (d.K > INT_MAX || d.N > INT_MAX) return std::nullopt;  // a GEMM's dimensions are ints
  return d;
}

void DenseLayout::copy_in(const PanelView& p, const BlockLayout& b_layout, double* dense,
                          const std::function<void()>& poll) const {
  const auto n = static_cast<std::int64_t>(col_ids.size());
  for (int r = 0; r < p.nrows; ++r)
    if (p.row_ptr[r + 1] - p.row_ptr[r] != n || row_at[static_cast<std::size_t>(p.row_ids[r])] < 0 ||
        !std::equal(col_ids.begin(), col_ids.end(), p.cols + p.row_ptr[r]))
      throw Error("DenseLayout::copy_in", "a panel row that is not a full row of the dense layout");
  // Block column by block column (docs/performance.md, "Dense ticks' copies in column order").
  for (std::int64_t q = 0; q < n; ++q) {
    const std::int64_t j = col_ids[static_cast<std::size_t>(q)];
    const int nb = b_layout.cols.size(static_cast<int>(j));
    double* const column = dense + col_at[static_cast<std::size_t>(j)] * K;
    for (int r = 0; r < p.nrows; ++r) {
      const int kb = b_layout.rows.size(static_cast<int>(p.row_ids[r]));
      copy_block(p.data + p.offsets[p.row_ptr[r] + q], kb, column + row_at[static_cast<std::size_t>(p.row_ids[r])], K,
                 kb, nb);
    }
    if (poll) poll();
  }
}

void DenseLayout::copy_out(const double* dense, const PanelView& p, const BlockLayout& b_layout, double* values) const {
  for (int r = 0; r < p.nrows; ++r) {
    const std::int64_t k = row_at[static_cast<std::size_t>(p.row_ids[r])];
    const int kb = b_layout.rows.size(static_cast<int>(p.row_ids[r]));
    for (std::int64_t blk = p.row_ptr[r]; blk < p.row_ptr[r + 1]; ++blk) {
      const std::int64_t j = col_at[static_cast<std::size_t>(p.cols[blk])];
      if (k < 0 || j < 0) throw Error("DenseLayout::copy_out", "a block outside the dense layout");
      copy_block(dense + j * K + k, K, values + p.offsets[blk], kb, kb,
                 b_layout.cols.size(static_cast<int>(p.cols[blk])));
    }
  }
}

void dense_block_norms(const double* dense, const DenseLayout& layout, const PanelView& b, const BlockLayout& b_layout,
                       double* norms) {
  std::vector<double> block;
  for (int r = 0; r < b.nrows; ++r) {
    const std::int64_t k = layout.row_at[static_cast<std::size_t>(b.row_ids[r])];
    const int kb = b_layout.rows.size(static_cast<int>(b.row_ids[r]));
    for (std::int64_t blk = b.row_ptr[r]; blk < b.row_ptr[r + 1]; ++blk) {
      const int nb = b_layout.cols.size(static_cast<int>(b.cols[blk]));
      block.resize(static_cast<std::size_t>(kb) * static_cast<std::size_t>(nb));
      copy_block(dense + layout.col_at[static_cast<std::size_t>(b.cols[blk])] * layout.K + k, layout.K, block.data(),
                 kb, kb, nb);
      norms[blk] = std::sqrt(sum_of_squares(block.data(), static_cast<std::int64_t>(block.size())));
    }
  }
}

// A dense tick's shape: the k blocks A's rows and B's rows have in common (each A row's position
// of it, and B's CSR row), B's columns (every such B row's), and the dense dimensions.
struct LocalProduct::DenseShape {
  std::vector<std::int64_t> a_pos, b_row;  // per common k block
  std::vector<std::int64_t> kpos, npos;    // where each k block and each column starts in K and N
  const std::int64_t* cols = nullptr;      // B's columns (ncols of them)
  std::int64_t ncols = 0, K = 0, N = 0;
};

// Dense: every A row has the same columns, and every B row among them the same columns. Only the
// k blocks in both take part (an A column without a B row, or a B row without an A column, has no
// products): a non-square grid's ticks hand over panels whose k ranges differ.
bool LocalProduct::dense_shape(const PanelView& a, const BlockLayout& a_layout, const PanelView& b,
                               DenseShape& d) const {
  if (b.nrows < 1 || !every_row_alike(a)) return false;
  const std::int64_t na = a.row_ptr[1] - a.row_ptr[0];
  const std::int64_t* const a_cols = a.cols + a.row_ptr[0];
  d.a_pos.clear();
  d.b_row.clear();
  for (std::int64_t p = 0, br = 0; p < na && br < b.nrows;) {  // both ascend
    if (a_cols[p] < b.row_ids[br]) {
      ++p;
    } else if (b.row_ids[br] < a_cols[p]) {
      ++br;
    } else {
      d.a_pos.push_back(p++);
      d.b_row.push_back(br++);
    }
  }
  if (d.b_row.empty()) return false;
  const std::int64_t first = d.b_row.front();
  d.cols = b.cols + b.row_ptr[first];
  d.ncols = b.row_ptr[first + 1] - b.row_ptr[first];
  if (d.ncols < 1) return false;
  for (const std::int64_t br : d.b_row)
    if (b.row_ptr[br + 1] - b.row_ptr[br] != d.ncols || !std::equal(d.cols, d.cols + d.ncols, b.cols + b.row_ptr[br]))
      return false;
  const auto nk = static_cast<std::int64_t>(d.b_row.size());
  d.K = prefix_positions(
      nk, [&](std::int64_t p) { return a_layout.cols.size(static_cast<int>(b.row_ids[d.b_row[p]])); }, d.kpos);
  d.N = prefix_positions(d.ncols, [&](std::int64_t q) { return layout_.cols.size(static_cast<int>(d.cols[q])); },
                         d.npos);
  // Large enough that the copies pay: the harmonic mean of the GEMM a thread runs at least the
  // backend's size for blocks of these mean sizes (0: none). A thread's GEMM has about M / T of
  // the rows (T the product's threads, or A's block rows where fewer), all of K and strips of N;
  // with many threads its few rows no longer pay for the copies and for BLAS's packing of the
  // whole of B in every thread (16 threads of a Xeon: 1.3 times the block products' time on
  // 2560^3 in blocks of 32; docs/performance.md, "Dense ticks on many threads").
  double m = 0;
  for (int r = 0; r < a.nrows; ++r) m += layout_.rows.size(static_cast<int>(a.row_ids[r]));
  const auto n = static_cast<double>(d.N), k = static_cast<double>(d.K);
  const DenseBlocks blocks{m / a.nrows, n / static_cast<double>(d.ncols), k / static_cast<double>(nk)};
  const std::int64_t size = dense_kernel_->dense_min_size(blocks);
  const double m_thread =
      m / static_cast<double>(std::min<std::size_t>(work_.size(), static_cast<std::size_t>(a.nrows)));
  return size > 0 && 3.0 / (1.0 / m_thread + 1.0 / n + 1.0 / k) >= static_cast<double>(size) && m <= INT_MAX &&
         n <= INT_MAX && k <= INT_MAX;
}

bool LocalProduct::would_be_dense(const PanelView& a, const BlockLayout& a_layout, const PanelView& b) const {
  DenseShape d;
  return host_session_ != nullptr && dense_shape(a, a_layout, b, d) &&
         d.b_row.size() == static_cast<std::size_t>(b.nrows);
}

// A given B's layout serves a tick of this shape where it is the one the tick would copy B into:
// every B row a k of A's, in ascending k and columns (as panels hold them).
bool LocalProduct::given_layout_serves(const DenseShape& d, const PanelView& b, const DenseLayout& g) {
  if (d.b_row.size() != static_cast<std::size_t>(b.nrows) || d.K != g.K || d.N != g.N) return false;
  for (std::size_t p = 0; p < d.b_row.size(); ++p)
    if (d.kpos[p] != g.row_at[static_cast<std::size_t>(b.row_ids[d.b_row[p]])]) return false;
  for (std::int64_t q = 0; q < d.ncols; ++q)
    if (d.npos[static_cast<std::size_t>(q)] != g.col_at[static_cast<std::size_t>(d.cols[q])]) return false;
  return true;
}

bool LocalProduct::given_dense_fits(const PanelView& a, const BlockLayout& a_layout, const PanelView& b,
                                    const BlockLayout& b_layout, const int* a_c_row, const GivenDense& given) const {
  DenseShape d;
  if (host_session_ == nullptr || !dense_shape(a, a_layout, b, d) || !given_layout_serves(d, b, *given.layout))
    return false;
  if (row_eps_.empty()) return true;
  Scratch<double> a_norms(static_cast<std::size_t>(a.nblocks)), b_norms(static_cast<std::size_t>(b.nblocks));
  block_norms(a, a_layout, a_norms.data(), threads());
  dense_block_norms(given.values, *given.layout, b, b_layout, b_norms.data());
  return filter_keeps_every_product(a, b, a_norms.data(), b_norms.data(), a_c_row, row_eps_, b_layout.rows.count());
}

bool LocalProduct::dense_tick(const PanelView& a, const BlockLayout& a_layout, const PanelView& b, const int* a_c_row,
                              const GivenDense* given) {
  DenseShape d;
  if (host_session_ == nullptr || !dense_shape(a, a_layout, b, d)) return false;
  if (given != nullptr && !given_layout_serves(d, b, *given->layout)) return false;
  const timers::Scoped timer("local multiply: dense");
  // No plan for this product: a dense tick has no stacks to replay (and one like it is built as
  // quickly as it would be replayed).
  record_.reset();
  candidates_.clear();
  for (auto& w : work_) {
    w->record = {};
    w->record_dropped = false;
  }
  const auto nk = static_cast<std::int64_t>(d.b_row.size());
  const std::int64_t ncols = d.ncols, K = d.K, N = d.N;
  const std::int64_t* const b_cols = d.cols;
  const std::vector<std::int64_t>&kpos = d.kpos, &npos = d.npos;
  const int nthreads = static_cast<int>(work_.size());
  const int* const n_of = layout_.cols.sizes().data();

  // Each thread places the C blocks its rows lack (as the symbolic pass does) and copies its share
  // of B's rows into the dense B (unless given).
  Scratch<double> bd(given != nullptr ? 0 : static_cast<std::size_t>(K * N));
  std::vector<double> seconds(static_cast<std::size_t>(nthreads), 0.0);
  for_each_thread(nthreads, [&](int t) {
    ThreadWork& w = *work_[static_cast<std::size_t>(t)];
    const double t0 = omp_get_wtime();
    w.fresh.clear();
    w.fresh_values = 0;
    const auto [ar0, ar1] = a_rows_in(a_c_row, a.nrows, w.row_begin, w.row_end);
    for (int ar = ar0; ar < ar1; ++ar) {
      const int r = a_c_row[ar] - w.row_begin;
      auto& list = w.rows[static_cast<std::size_t>(r)];
      for (const auto& entry : list) w.c_off[static_cast<std::size_t>(entry.first)] = 0;
      const int m = layout_.rows.size(static_cast<int>(a.row_ids[ar]));
      for (std::int64_t q = 0; q < ncols; ++q) {
        const std::int64_t j = b_cols[q];
        if (w.c_off[static_cast<std::size_t>(j)] >= 0) continue;
        w.fresh.emplace_back(r, list.size());
        list.emplace_back(j, w.fresh_values);
        w.fresh_values += std::int64_t{m} * n_of[j];
      }
      for (const auto& entry : list) w.c_off[static_cast<std::size_t>(entry.first)] = -1;
    }
    // Block column by block column, so that the writes fill one column strip of the dense B at a
    // time (a row of blocks at a time writes a few lines of every column, K values apart: twice the
    // time for 2048^2 in blocks of 32, docs/performance.md "Dense ticks' copies in column order").
    const std::int64_t p0 = given != nullptr ? 0 : nk * t / nthreads;
    const std::int64_t p1 = given != nullptr ? 0 : nk * (t + 1) / nthreads;
    for (std::int64_t q = 0; q < ncols && p0 < p1; ++q) {  // none given a B (bd is empty then)
      double* const column = bd.data() + npos[static_cast<std::size_t>(q)] * K;
      for (std::int64_t p = p0; p < p1; ++p) {
        const std::int64_t br = d.b_row[static_cast<std::size_t>(p)];
        const std::int64_t kb = a_layout.cols.size(static_cast<int>(b.row_ids[br]));
        copy_block(b.data + b.offsets[b.row_ptr[br] + q], kb, column + kpos[static_cast<std::size_t>(p)], K,
                   static_cast<int>(kb), n_of[b_cols[q]]);
      }
    }
    seconds[static_cast<std::size_t>(t)] = omp_get_wtime() - t0;
  });
  // One growth of C's area for every thread's new blocks.
  const std::int64_t tick_start = c_values_;
  std::int64_t end = c_values_;
  for (auto& w : work_) {
    w->base = end;
    end += w->fresh_values;
  }
  if (end > c_values_) {
    session_->grow(end);
    c_values_ = end;
  }
  const double* const b_dense = given != nullptr ? given->values : bd.data();
  double* const c = host_session_->values();
  HostKernel& kernel = host_session_->kernel();
  const bool writes_first = kernel.first_product_writes();

  for_each_thread(nthreads, [&](int t) {
    ThreadWork& w = *work_[static_cast<std::size_t>(t)];
    const double t0 = omp_get_wtime();
    for (const auto& [r, pos] : w.fresh) w.rows[static_cast<std::size_t>(r)][pos].second += w.base;
    const bool caller = on_calling_thread(nthreads) && progress_;
    const auto [ar0, ar1] = a_rows_in(a_c_row, a.nrows, w.row_begin, w.row_end);
    // The thread's A rows, whole: m x K.
    std::int64_t m_all = 0;
    for (int ar = ar0; ar < ar1; ++ar) m_all += layout_.rows.size(static_cast<int>(a.row_ids[ar]));
    // Column strip by column strip of the copy (as B's above).
    Scratch<double> ad(static_cast<std::size_t>(m_all * K));
    for (std::int64_t p = 0; p < nk; ++p) {
      const auto pp = static_cast<std::size_t>(p);
      const int kb = a_layout.cols.size(static_cast<int>(b.row_ids[d.b_row[pp]]));
      double* const column = ad.data() + kpos[pp] * m_all;
      std::int64_t ro = 0;
      for (int ar = ar0; ar < ar1; ++ar) {
        const int m = layout_.rows.size(static_cast<int>(a.row_ids[ar]));
        copy_block(a.data + a.offsets[a.row_ptr[ar] + d.a_pos[pp]], m, column + ro, m_all, m, kb);
        ro += m;
      }
    }
    const std::int64_t strips = std::max<std::int64_t>(1, N / kStripColumns);
    const std::int64_t strip_cols = (N + strips - 1) / strips;  // about; whole block columns
    Scratch<double> cd;
    Scratch<std::int64_t> strip_off;  // C's offset of each of the strip's blocks, by row and column
    double kernel_time = 0;
    std::int64_t q0 = 0;
    while (m_all > 0 && q0 < ncols) {
      // The strip: B's columns q0 .. q1 - 1, about strip_cols of C's columns.
      std::int64_t q1 = q0;
      std::int64_t ns = 0;
      while (q1 < ncols && (q1 == q0 || ns < strip_cols)) ns += n_of[b_cols[q1++]];
      cd.resize(static_cast<std::size_t>(m_all * ns));
      if (!writes_first) std::fill(cd.begin(), cd.end(), 0.0);
      const StackEntry e{.m = static_cast<int>(m_all), .n = static_cast<int>(ns), .k = static_cast<int>(K), .first = 1,
                         .a = 0, .b = npos[static_cast<std::size_t>(q0)] * K, .c = 0};
      const double k0 = omp_get_wtime();
      kernel.process(&e, 1, ad.data(), b_dense, cd.data());
      kernel_time += omp_get_wtime() - k0;
      // The strip into C's blocks: added, or written into the blocks new this tick. First where
      // each of the strip's blocks lies (row by row, through the row's column map), then block
      // column by block column, so that the reads go down one column strip of the scratch at a
      // time (as the copies of B and A above).
      const std::int64_t width = q1 - q0;
      strip_off.resize(static_cast<std::size_t>((ar1 - ar0) * width));
      for (int ar = ar0; ar < ar1; ++ar) {
        auto& list = w.rows[static_cast<std::size_t>(a_c_row[ar] - w.row_begin)];
        for (const auto& [col, off] : list) w.c_off[static_cast<std::size_t>(col)] = off;
        for (std::int64_t q = q0; q < q1; ++q)
          strip_off[static_cast<std::size_t>((ar - ar0) * width + q - q0)] =
              w.c_off[static_cast<std::size_t>(b_cols[q])];
        for (const auto& entry : list) w.c_off[static_cast<std::size_t>(entry.first)] = -1;
      }
      const std::int64_t n0 = npos[static_cast<std::size_t>(q0)];
      for (std::int64_t q = q0; q < q1; ++q) {
        const int n = n_of[b_cols[q]];
        const double* src = cd.data() + (npos[static_cast<std::size_t>(q)] - n0) * m_all;
        for (int ar = ar0; ar < ar1; ++ar) {
          const int m = layout_.rows.size(static_cast<int>(a.row_ids[ar]));
          const std::int64_t off = strip_off[static_cast<std::size_t>((ar - ar0) * width + q - q0)];
          if (off >= tick_start)
            copy_block(src, m_all, c + off, m, m, n);
          else
            add_block(src, m_all, c + off, m, m, n);
          src += m;
        }
      }
      q0 = q1;
      if (caller) progress_();
    }
    w.stats.products += static_cast<std::int64_t>(ar1 - ar0) * nk * ncols;
    w.stats.flops += 2.0 * static_cast<double>(m_all) * static_cast<double>(N) * static_cast<double>(K);
    const double total = seconds[static_cast<std::size_t>(t)] + omp_get_wtime() - t0;
    w.stats.kernel_seconds += kernel_time;
    w.stats.stack_seconds += total - kernel_time;
  });
  return true;
}

}  // namespace plexus
