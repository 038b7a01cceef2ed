#include "plexus/local_multiply.hpp"

#include <omp.h>

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

#include "plexus/error.hpp"

namespace plexus {

LocalMultiplyStats& LocalMultiplyStats::operator+=(const LocalMultiplyStats& o) {
  flops += o.flops;
  products += o.products;
  skipped += o.skipped;
  stack_seconds += o.stack_seconds;
  kernel_seconds += o.kernel_seconds;
  return *this;
}

std::vector<int> balance_rows(const std::vector<std::int64_t>& weight, int threads) {
  const int n = static_cast<int>(weight.size());
  threads = std::max(1, threads);
  std::vector<int> first(static_cast<std::size_t>(threads) + 1, n);
  first[0] = 0;
  std::int64_t total = 0;
  for (auto w : weight) total += std::max<std::int64_t>(w, 0);
  const bool uniform = total == 0;  // no weights: balance the row count
  if (uniform) total = n;
  // Thread t starts at the first row where the weight before it reaches t/threads of the total.
  std::int64_t prefix = 0;
  int t = 1;
  for (int r = 0; r < n && t < threads; ++r) {
    while (t < threads && prefix * threads >= total * t) first[t++] = r;
    prefix += uniform ? 1 : std::max<std::int64_t>(weight[r], 0);
  }
  return first;
}

// The C rows a thread owns: per row the (column, offset) of its blocks, values in one buffer.
struct LocalProduct::ThreadWork {
  int row_begin = 0, row_end = 0;
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> rows;  // per owned row
  MatrixData data;
  std::vector<std::int64_t> c_off;  // global block col -> offset in data for the current row, -1 if absent
  std::vector<StackEntry> stack;
  LocalMultiplyStats stats;
};

namespace {
constexpr std::size_t kStackCapacity = 4096;
}

LocalProduct::LocalProduct(const PanelView& c, const BlockLayout& layout, int threads, std::vector<double> row_eps,
                           const std::vector<std::int64_t>& row_weight)
    : layout_(layout), row_eps_(std::move(row_eps)) {
  if (!row_eps_.empty() && static_cast<int>(row_eps_.size()) != c.nrows)
    throw Error("LocalProduct", "row_eps needs one threshold per C row");
  row_ids_.assign(c.row_ids, c.row_ids + c.nrows);
  c_row_of_.assign(static_cast<std::size_t>(layout.rows.count()), -1);
  for (int r = 0; r < c.nrows; ++r) c_row_of_[static_cast<std::size_t>(c.row_ids[r])] = r;

  std::vector<std::int64_t> weight(row_weight);
  if (weight.empty()) {
    weight.resize(static_cast<std::size_t>(c.nrows));
    for (int r = 0; r < c.nrows; ++r) weight[r] = c.row_ptr[r + 1] - c.row_ptr[r];
  }
  if (static_cast<int>(weight.size()) != c.nrows) throw Error("LocalProduct", "row_weight needs one weight per C row");
  threads = std::max(1, threads);
  first_row_ = balance_rows(weight, threads);
  work_.resize(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    auto w = std::make_unique<ThreadWork>();
    w->row_begin = first_row_[t];
    w->row_end = first_row_[t + 1];
    w->rows.resize(static_cast<std::size_t>(w->row_end - w->row_begin));
    for (int r = w->row_begin; r < w->row_end; ++r) {
      const int m = layout.rows.size(static_cast<int>(c.row_ids[r]));
      auto& list = w->rows[static_cast<std::size_t>(r - w->row_begin)];
      list.reserve(static_cast<std::size_t>(c.row_ptr[r + 1] - c.row_ptr[r]));
      for (std::int64_t b = c.row_ptr[r]; b < c.row_ptr[r + 1]; ++b) {
        const std::int64_t n = std::int64_t{m} * layout.cols.size(static_cast<int>(c.cols[b]));
        const auto off = static_cast<std::int64_t>(w->data.size());
        w->data.insert(w->data.end(), c.data + c.offsets[b], c.data + c.offsets[b] + n);
        list.emplace_back(c.cols[b], off);
      }
    }
    w->c_off.assign(static_cast<std::size_t>(layout.cols.count()), -1);
    w->stack.reserve(kStackCapacity);
    work_[static_cast<std::size_t>(t)] = std::move(w);
  }
}

LocalProduct::~LocalProduct() = default;

std::int64_t LocalProduct::work_bytes() const {
  std::int64_t b = 0;
  for (const auto& w : work_) b += static_cast<std::int64_t>(w->data.capacity() * sizeof(double));
  return b;
}

void LocalProduct::multiply(const PanelView& a, const BlockLayout& a_layout, const PanelView& b,
                            const BlockLayout& b_layout, Kernel& kernel) {
  if (!(a_layout.rows == layout_.rows) || !(b_layout.cols == layout_.cols) || !(a_layout.cols == b_layout.rows))
    throw Error("LocalProduct::multiply", "block sizes of A, B and C do not match (A rows = C rows, A cols = B rows, "
                                          "B cols = C cols)");
  if (a.nblocks == 0 || b.nblocks == 0) return;
  const bool filtering = !row_eps_.empty();
  std::vector<double> a_norms, b_norms;
  if (filtering) {
    a_norms = block_norms(a, a_layout);
    b_norms = block_norms(b, b_layout);
  }
  // B's CSR row of each k (global block row of B), -1 if B has none.
  std::vector<int> b_row_of(static_cast<std::size_t>(b_layout.rows.count()), -1);
  for (int r = 0; r < b.nrows; ++r) b_row_of[static_cast<std::size_t>(b.row_ids[r])] = r;
  // A's CSR rows must be rows of C.
  std::vector<int> a_c_row(static_cast<std::size_t>(a.nrows));
  for (int r = 0; r < a.nrows; ++r) {
    const int cr = c_row_of_[static_cast<std::size_t>(a.row_ids[r])];
    if (cr < 0)
      throw Error("LocalProduct::multiply", "A panel has block row " + std::to_string(a.row_ids[r]) +
                                                " that is not a local row of C");
    a_c_row[r] = cr;
  }

  const int nthreads = static_cast<int>(work_.size());
  std::exception_ptr failure;
#pragma omp parallel num_threads(nthreads)
  {
    for (int t = omp_get_thread_num(); t < nthreads; t += omp_get_num_threads()) {
      try {
        ThreadWork& w = *work_[static_cast<std::size_t>(t)];
        const double t0 = omp_get_wtime();
        double kernel_time = 0;
        // A rows whose C row this thread owns: A and C rows ascend, so it is a contiguous range.
        const int ar0 = static_cast<int>(std::lower_bound(a_c_row.begin(), a_c_row.end(), w.row_begin) - a_c_row.begin());
        const int ar1 = static_cast<int>(std::lower_bound(a_c_row.begin(), a_c_row.end(), w.row_end) - a_c_row.begin());
        // Visits the products of the thread's rows that pass the filter: f(ab, bb, j, m, n, k, c_off[j]).
        auto for_each_product = [&](auto&& f) {
          for (int ar = ar0; ar < ar1; ++ar) {
            const int cr = a_c_row[ar];
            auto& list = w.rows[static_cast<std::size_t>(cr - w.row_begin)];
            for (const auto& [col, off] : list) w.c_off[static_cast<std::size_t>(col)] = off;
            const int m = layout_.rows.size(static_cast<int>(a.row_ids[ar]));
            const double eps = filtering ? row_eps_[static_cast<std::size_t>(cr)] : 0.0;
            for (std::int64_t ab = a.row_ptr[ar]; ab < a.row_ptr[ar + 1]; ++ab) {
              const int kk = static_cast<int>(a.cols[ab]);
              const int br = b_row_of[static_cast<std::size_t>(kk)];
              if (br < 0) continue;
              const int k = a_layout.cols.size(kk);
              const double an = filtering ? a_norms[static_cast<std::size_t>(ab)] : 0.0;
              for (std::int64_t bb = b.row_ptr[br]; bb < b.row_ptr[br + 1]; ++bb) {
                if (filtering && an * b_norms[static_cast<std::size_t>(bb)] < eps) {
                  f.skip();
                  continue;
                }
                const auto j = static_cast<std::size_t>(b.cols[bb]);
                f(ab, bb, j, m, layout_.cols.size(static_cast<int>(j)), k, list);
              }
            }
            for (const auto& entry : list) w.c_off[static_cast<std::size_t>(entry.first)] = -1;
          }
        };
        // Pass 1 (symbolic): place the new C blocks, then grow the value area once.
        struct Place {
          ThreadWork& w;
          std::int64_t end;
          void skip() {}
          void operator()(std::int64_t, std::int64_t, std::size_t j, int m, int n, int,
                          std::vector<std::pair<std::int64_t, std::int64_t>>& list) {
            if (w.c_off[j] >= 0) return;
            w.c_off[j] = end;
            list.emplace_back(static_cast<std::int64_t>(j), end);
            end += std::int64_t{m} * n;
          }
        } place{w, static_cast<std::int64_t>(w.data.size())};
        for_each_product(place);
        if (place.end > static_cast<std::int64_t>(w.data.size())) {
          if (place.end > static_cast<std::int64_t>(w.data.capacity()))
            w.data.reserve(std::max<std::size_t>(static_cast<std::size_t>(place.end), w.data.capacity() * 3 / 2));
          w.data.resize(static_cast<std::size_t>(place.end), 0.0);
        }
        // Pass 2 (numeric): stacks of products, processed by the kernel when full.
        struct Stack {
          ThreadWork& w;
          const PanelView& a;
          const PanelView& b;
          Kernel& kernel;
          double& kernel_time;
          void flush() {
            if (w.stack.empty()) return;
            const double k0 = omp_get_wtime();
            kernel.process(w.stack.data(), static_cast<std::int64_t>(w.stack.size()), a.data, b.data, w.data.data());
            kernel_time += omp_get_wtime() - k0;
            w.stack.clear();
          }
          void skip() { ++w.stats.skipped; }
          void operator()(std::int64_t ab, std::int64_t bb, std::size_t j, int m, int n, int k,
                          std::vector<std::pair<std::int64_t, std::int64_t>>&) {
            w.stack.push_back(StackEntry{m, n, k, a.offsets[ab], b.offsets[bb], w.c_off[j]});
            w.stats.flops += 2.0 * m * n * k;
            ++w.stats.products;
            if (w.stack.size() == kStackCapacity) flush();
          }
        } stack{w, a, b, kernel, kernel_time};
        for_each_product(stack);
        stack.flush();
        const double total = omp_get_wtime() - t0;
        w.stats.kernel_seconds += kernel_time;
        w.stats.stack_seconds += total - kernel_time;
      } catch (...) {
#pragma omp critical(plexus_local_product_failure)
        if (!failure) failure = std::current_exception();
      }
    }
  }
  if (failure) std::rethrow_exception(failure);
  // Report the slowest thread's times (the critical path) and summed counts.
  LocalMultiplyStats s;
  for (auto& w : work_) {
    s.flops += w->stats.flops;
    s.products += w->stats.products;
    s.skipped += w->stats.skipped;
    s.stack_seconds = std::max(s.stack_seconds, w->stats.stack_seconds);
    s.kernel_seconds = std::max(s.kernel_seconds, w->stats.kernel_seconds);
    w->stats = {};
  }
  stats_ += s;
}

Panel LocalProduct::finish() {
  // The threads' rows become one blocked CSR: each thread sorts its rows and writes its part of
  // the index; values are adopted as they are (one thread) or copied once, in parallel, into one
  // area (several threads, each copying its own part).
  const int nthreads = static_cast<int>(work_.size());
  std::vector<std::int64_t> blk_base(static_cast<std::size_t>(nthreads) + 1, 0),
      val_base(static_cast<std::size_t>(nthreads) + 1, 0);
  for (int t = 0; t < nthreads; ++t) {
    std::int64_t nb = 0;
    for (const auto& l : work_[static_cast<std::size_t>(t)]->rows) nb += static_cast<std::int64_t>(l.size());
    blk_base[t + 1] = blk_base[t] + nb;
    val_base[t + 1] = val_base[t] + static_cast<std::int64_t>(work_[static_cast<std::size_t>(t)]->data.size());
  }
  const auto nrows = row_ids_.size();
  std::vector<std::int64_t> row_ids(row_ids_.begin(), row_ids_.end()), row_ptr(nrows + 1, 0);
  std::vector<std::int64_t> cols(static_cast<std::size_t>(blk_base.back())), offsets(cols.size());
  MatrixData data;
  if (nthreads == 1) {
    data = std::move(work_[0]->data);
  } else {
    data.resize(static_cast<std::size_t>(val_base.back()));  // default-initialised: every value is copied below
  }
  row_ptr[nrows] = blk_base.back();
#pragma omp parallel num_threads(nthreads)
  for (int t = omp_get_thread_num(); t < nthreads; t += omp_get_num_threads()) {
    ThreadWork& w = *work_[static_cast<std::size_t>(t)];
    std::int64_t b = blk_base[static_cast<std::size_t>(t)];
    const std::int64_t shift = nthreads == 1 ? 0 : val_base[static_cast<std::size_t>(t)];
    for (int r = w.row_begin; r < w.row_end; ++r) {
      auto& list = w.rows[static_cast<std::size_t>(r - w.row_begin)];
      std::sort(list.begin(), list.end());
      row_ptr[static_cast<std::size_t>(r)] = b;
      for (const auto& [col, off] : list) {
        cols[static_cast<std::size_t>(b)] = col;
        offsets[static_cast<std::size_t>(b)] = off + shift;
        ++b;
      }
    }
    if (nthreads > 1) std::copy(w.data.begin(), w.data.end(), data.begin() + shift);
    w.rows.clear();
    MatrixData().swap(w.data);
  }
  return Panel::adopt(std::move(row_ids), std::move(row_ptr), std::move(cols), std::move(offsets), std::move(data));
}

}  // namespace plexus
