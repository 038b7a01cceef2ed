#include "plexus/local_multiply.hpp"

#include <omp.h>

#include <algorithm>
#include <exception>
#include <limits>
#include <string>
#include <utility>

#include "column_tiles.hpp"
#include "host_session.hpp"
#include "local_product_last_tick.hpp"
#include "local_product_passes.hpp"
#include "local_product_slabs.hpp"
#include "local_product_work.hpp"
#include "norm_order.hpp"
#include "plexus/error.hpp"
#include "plexus/progress.hpp"
#include "plexus/timers.hpp"
#include "product_plan.hpp"
#include "threads.hpp"

namespace plexus {

namespace {

// Whether two views are one panel (the same index and values in memory) with the same block sizes.
bool same_panel(const PanelView& a, const BlockLayout& a_layout, const PanelView& b, const BlockLayout& b_layout) {
  return a.data == b.data && a.offsets == b.offsets && a.cols == b.cols && a.row_ptr == b.row_ptr &&
         a.row_ids == b.row_ids && a.nrows == b.nrows && a.nblocks == b.nblocks && a_layout.rows == b_layout.rows &&
         a_layout.cols == b_layout.cols;
}

}  // namespace

LocalMultiplyStats& LocalMultiplyStats::operator+=(const LocalMultiplyStats& o) {
  flops += o.flops;
  products += o.products;
  skipped += o.skipped;
  stack_seconds += o.stack_seconds;
  kernel_seconds += o.kernel_seconds;
  ticks += o.ticks;
  replayed_ticks += o.replayed_ticks;
  dense_ticks += o.dense_ticks;
  plans_not_kept += o.plans_not_kept;
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

LocalProduct::LocalProduct(const PanelView& c, const BlockLayout& layout, Kernel& kernel, int threads,
                           std::vector<double> row_eps, const std::vector<std::int64_t>& row_weight, double c_scale,
                           std::int64_t expected_values, ProductPlans* plans)
    : layout_(layout), row_eps_(std::move(row_eps)) {
  const timers::Scoped timer("local multiply: begin");  // C copied into the threads' rows, kernel.begin
  if (!row_eps_.empty() && static_cast<int>(row_eps_.size()) != c.nrows)
    throw Error("LocalProduct", "row_eps needs one threshold per C row");
  row_ids_.assign(c.row_ids, c.row_ids + c.nrows);
  c_row_of_.assign(static_cast<std::size_t>(layout.rows.count()), -1);
  for (int r = 0; r < c.nrows; ++r) c_row_of_[static_cast<std::size_t>(c.row_ids[r])] = r;

  if (!row_weight.empty() && static_cast<int>(row_weight.size()) != c.nrows)
    throw Error("LocalProduct", "row_weight needs one weight per C row");
  threads = std::max(1, threads);
  if (threads == 1) {  // one thread owns every row: no weights to balance
    first_row_ = {0, c.nrows};
  } else if (!row_weight.empty()) {
    first_row_ = balance_rows(row_weight, threads);
  } else {
    std::vector<std::int64_t> weight(static_cast<std::size_t>(c.nrows));
    for (int r = 0; r < c.nrows; ++r) weight[r] = c.row_ptr[r + 1] - c.row_ptr[r];
    first_row_ = balance_rows(weight, threads);
  }
  host_ = kernel.memory_space() == MemorySpace::Host;
  // The plans this product could replay (the first tick chooses), and the one it records. Not
  // with filtering: the stacks then depend on the values. The plans' keys are compared with what
  // the product is given in place; the record gets its key copied only where no plan has it
  // (a product that replays one copies it, from the plan, only if it leaves the plan and its
  // record is kept: finish).
  if (plans != nullptr && row_eps_.empty() && plans->max_bytes() > 0) {
    plans_ = plans;
    record_ = std::make_unique<plan::ProductPlan>();
    const plan::KeyView key{layout, host_, first_row_, c};
    candidates_ = plans->candidates(key, lookup_);
    if (candidates_.empty())
      record_->key = plan::PlanKey(key);
    else
      key_of_ = candidates_.front();
  }
  // C's starting blocks: thread t's rows get the values from its base on, copied by thread t.
  std::vector<std::int64_t> base(static_cast<std::size_t>(threads) + 1, 0);
  for (int t = 0; t < threads; ++t) {
    std::int64_t n = 0;
    for (int r = first_row_[t]; r < first_row_[t + 1]; ++r) {
      const int m = layout.rows.size(static_cast<int>(c.row_ids[r]));
      for (std::int64_t b = c.row_ptr[r]; b < c.row_ptr[r + 1]; ++b)
        n += std::int64_t{m} * layout.cols.size(static_cast<int>(c.cols[b]));
    }
    base[t + 1] = base[t] + n;
  }
  MatrixData data;
  // The backend grows C within this capacity without moving it (kernel.hpp, KernelSession::grow).
  reserved_values_ = std::max(base.back(), expected_values);
  data.reserve(static_cast<std::size_t>(reserved_values_));
  data.resize(static_cast<std::size_t>(base.back()));  // every value is copied below
  work_.resize(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) work_[static_cast<std::size_t>(t)] = std::make_unique<ThreadWork>();
  // The blocks a row is expected to end with, if C ends as large as expected and its blocks are
  // spread evenly over the rows: each row's list is reserved for them (a quarter more), so that
  // the lists do not grow block by block (se-like: about 5 reallocations a row, every multiply).
  // A product that may replay a plan needs no lists until it leaves the plan (reserve_rows).
  if (expected_values > 0 && c.nrows > 0 && layout.rows.count() > 0 && layout.cols.count() > 0) {
    const double block = static_cast<double>(layout.rows.total()) / layout.rows.count() *
                         (static_cast<double>(layout.cols.total()) / layout.cols.count());
    const double per_row = static_cast<double>(expected_values) / block / c.nrows;
    row_blocks_ = static_cast<std::size_t>(std::min(1.25 * per_row + 1, static_cast<double>(layout.cols.count())));
  }
  const std::size_t row_blocks = candidates_.empty() ? row_blocks_ : 0;
  for_each_thread(threads, [&](int t) {
    ThreadWork& w = *work_[static_cast<std::size_t>(t)];
    w.row_begin = first_row_[t];
    w.row_end = first_row_[t + 1];
    w.rows = take_row_lists();
    w.rows.resize(static_cast<std::size_t>(w.row_end - w.row_begin));
    // Rows that start empty, with no room to reserve (a C from nothing that may replay a plan):
    // nothing to visit.
    if (row_blocks == 0 && (w.row_begin == w.row_end || c.row_ptr[w.row_begin] == c.row_ptr[w.row_end])) return;
    std::int64_t off = base[static_cast<std::size_t>(t)];
    for (int r = w.row_begin; r < w.row_end; ++r) {
      const int m = layout.rows.size(static_cast<int>(c.row_ids[r]));
      auto& list = w.rows[static_cast<std::size_t>(r - w.row_begin)];
      list.reserve(std::max(row_blocks, static_cast<std::size_t>(c.row_ptr[r + 1] - c.row_ptr[r])));
      for (std::int64_t b = c.row_ptr[r]; b < c.row_ptr[r + 1]; ++b) {
        const std::int64_t n = std::int64_t{m} * layout.cols.size(static_cast<int>(c.cols[b]));
        if (c_scale == 1.0)
          std::copy(c.data + c.offsets[b], c.data + c.offsets[b] + n, data.data() + off);
        else
          std::transform(c.data + c.offsets[b], c.data + c.offsets[b] + n, data.data() + off,
                         [c_scale](double x) { return c_scale * x; });
        list.emplace_back(c.cols[b], off);
        off += n;
      }
    }
  });
  c_values_ = base.back();
  session_ = kernel.begin(std::move(data), threads);
  // A host backend may take dense ticks (it says from what size, tick by tick: dense_shape).
  dense_kernel_ = dynamic_cast<const HostKernel*>(&kernel);
  host_session_ = dense_kernel_ != nullptr ? dynamic_cast<HostSession*>(session_.get()) : nullptr;
}

// The threads' scratch for building stacks, made at the first tick that builds them: a product
// that replays a plan throughout needs none (se-like, 400 block columns: three arrays and 180 KB of
// stacks a thread, every multiply). Held from then on for the accumulator's life (not per tick), so
// the tracker's peaks do not depend on whether the threads' ticks overlap.
void LocalProduct::ensure_scratch() {
  const auto ncols = static_cast<std::size_t>(layout_.cols.count());
  for (auto& w : work_) {
    if (w->c_off.size() != ncols) w->c_off.assign(ncols, -1);
    if (w->stack.size() != kStackCapacity) {
      w->stack.resize(kStackCapacity);  // default-initialised: every entry is written before use
      w->placed.resize(kStackCapacity);
    }
  }
}

void LocalProduct::reserve_rows() {
  for (auto& w : work_)
    for (auto& list : w->rows) list.reserve(std::max(row_blocks_, list.size()));
}

LocalProduct::~LocalProduct() = default;

// A tick after the one filter_last_tick declared the last would add to blocks it may have dropped.
void LocalProduct::count_last_tick() {
  if (last_tick_done_)
    throw Error("LocalProduct::multiply", "a tick after the one filter_last_tick() declared the last");
  last_tick_done_ = last_tick_eps_ > 0;
}

void LocalProduct::multiply(const PanelView& a, const BlockLayout& a_layout, const PanelView& b,
                            const BlockLayout& b_layout) {
  count_last_tick();
  multiply_tick(a, a_layout, b, b_layout, nullptr);
}

void LocalProduct::multiply(const PanelView& a, const BlockLayout& a_layout, const PanelView& b,
                            const BlockLayout& b_layout, const double* dense, const DenseLayout& layout) {
  count_last_tick();
  const GivenDense given{dense, &layout};
  multiply_tick(a, a_layout, b, b_layout, &given);
}

void LocalProduct::multiply_tick(const PanelView& a, const BlockLayout& a_layout, const PanelView& b,
                                 const BlockLayout& b_layout, const GivenDense* given) {
  if (!session_) throw Error("LocalProduct::multiply", "called after finish()");
  progress::point("local multiply");  // the watchdog's heartbeat between MPI calls (one per tick)
  if (!(a_layout.rows == layout_.rows) || !(b_layout.cols == layout_.cols) || !(a_layout.cols == b_layout.rows))
    throw Error("LocalProduct::multiply", "block sizes of A, B and C do not match (A rows = C rows, A cols = B rows, "
                                          "B cols = C cols)");
  if (a.nblocks == 0 || b.nblocks == 0) return;
  // A tick that fails leaves no plan behind (its rows and records would not agree).
  struct ForgetPlansOnError {
    LocalProduct& p;
    int uncaught = std::uncaught_exceptions();
    ~ForgetPlansOnError() {
      if (std::uncaught_exceptions() <= uncaught) return;
      p.record_.reset();
      p.candidates_.clear();
      p.replay_.reset();
      for (auto& w : p.work_) {
        w->record = {};
        w->record_dropped = false;
      }
    }
  } forget_plans_on_error{*this};
  // A's CSR rows must be rows of C (checked before the backend sees the panels).
  Scratch<int> a_c_row(static_cast<std::size_t>(a.nrows));
  for (int r = 0; r < a.nrows; ++r) {
    const int cr = c_row_of_[static_cast<std::size_t>(a.row_ids[r])];
    if (cr < 0)
      throw Error("LocalProduct::multiply", "A panel has block row " + std::to_string(a.row_ids[r]) +
                                                " that is not a local row of C");
    a_c_row[r] = cr;
  }
  // B given dense: a dense tick where it can be one, else B's blocks copied out of it and the tick
  // taken as any other. Decided before the backend stages B, whose values it reads at b.data.
  if (given != nullptr) {
    const bool dense = given_dense_fits(a, a_layout, b, b_layout, a_c_row.data(), *given);
    if (!dense) {
      Scratch<double> blocks(static_cast<std::size_t>(b.data_size));
      {
        const timers::Scoped timer("local multiply: dense B's blocks");
        given->layout->copy_out(given->values, b, b_layout, blocks.data());
      }
      PanelView copied = b;
      copied.data = blocks.data();
      return multiply_tick(a, a_layout, copied, b_layout, nullptr);
    }
  }
  // The A rows whose C row thread w owns: A and C rows ascend, so they are a contiguous range.
  auto a_rows_of = [&](const ThreadWork& w) { return a_rows_in(a_c_row.data(), a.nrows, w.row_begin, w.row_end); };
  // Staged first: a device backend copies the panels while the stacks are being built. Should
  // anything below throw, the guard unstages before the caller frees the panels (a device
  // backend may still be copying them).
  double stage_seconds = 0;
  {
    timers::Scoped timer("local multiply: stage", &stage_seconds);
    session_->stage(a, b);
  }
  struct Unstage {
    KernelSession* session;
    ~Unstage() {
      if (session == nullptr) return;
      try {
        session->unstage();
      } catch (...) {  // already unwinding: the first error is the one to report
      }
    }
  } unstage_guard{session_.get()};
  // The backend finishes the tick's work (a device backend waits for its streams here), and the
  // slowest thread's times (the critical path) and the summed counts are reported.
  auto end_tick = [&](bool replayed, bool dense = false) {
    double unstage_seconds = 0;
    {
      timers::Scoped timer("local multiply: unstage", &unstage_seconds);
      unstage_guard.session = nullptr;
      session_->unstage();
    }
    LocalMultiplyStats s;
    s.kernel_seconds = stage_seconds + unstage_seconds;
    s.ticks = 1;
    s.replayed_ticks = replayed ? 1 : 0;
    s.dense_ticks = dense ? 1 : 0;
    double slowest_kernel = 0;
    for (auto& w : work_) {
      s.flops += w->stats.flops;
      s.products += w->stats.products;
      s.skipped += w->stats.skipped;
      s.stack_seconds = std::max(s.stack_seconds, w->stats.stack_seconds);
      slowest_kernel = std::max(slowest_kernel, w->stats.kernel_seconds);
      w->stats = {};
    }
    s.kernel_seconds += slowest_kernel;
    stats_ += s;
  };
  if (given != nullptr) {  // decided above: a dense tick on the given B
    forgo_replay();
    ensure_scratch();
    if (!dense_tick(a, a_layout, b, a_c_row.data(), given))
      throw Error("LocalProduct::multiply", "a dense B for a tick that cannot be dense");
    return end_tick(false, true);
  }
  if (replay(a, a_layout, b)) return end_tick(true);
  ensure_scratch();
  const bool filtering = !row_eps_.empty();
  // Pooled and left unset until written (value-initialised vectors had every multiply clear fresh
  // pages: over half of the page faults of a filtered sign solve's warm run).
  Scratch<double> a_norms, b_norms;
  if (filtering) {
    const timers::Scoped timer("local multiply: norms");
    // Where the backend keeps the panels (a device backend computes them there), else here.
    a_norms.resize(static_cast<std::size_t>(a.nblocks));
    b_norms.resize(static_cast<std::size_t>(b.nblocks));
    if (!session_->norms(a_layout, b_layout, a_norms.data(), b_norms.data())) {
      block_norms(a, a_layout, a_norms.data(), static_cast<int>(work_.size()));
      // The same panel as both operands (X * X on one rank: half of a sign step's multiplies):
      // its norms once.
      if (same_panel(a, a_layout, b, b_layout))
        std::copy(a_norms.begin(), a_norms.end(), b_norms.begin());
      else
        block_norms(b, b_layout, b_norms.data(), static_cast<int>(work_.size()));
    }
  }
  // A dense tick computes every product: with filtering, only where the filter would drop none
  // (h2o-32's filtered sign solve: 85 of its 92 multiplies).
  if (host_session_ != nullptr &&
      (!filtering || filter_keeps_every_product(a, b, a_norms.data(), b_norms.data(), a_c_row.data(), row_eps_,
                                                b_layout.rows.count())) &&
      dense_tick(a, a_layout, b, a_c_row.data()))
    return end_tick(false, true);
  // B's CSR row of each k (global block row of B), -1 if B has none.
  Scratch<int> b_row_of(static_cast<std::size_t>(b_layout.rows.count()), -1);
  for (int r = 0; r < b.nrows; ++r) b_row_of[static_cast<std::size_t>(b.row_ids[r])] = r;

  // With the filter, each B row's blocks by norm, largest first (NaN last), and those norms: the
  // products of an A block that pass (an * bn >= eps) are then a prefix of its B row, found by a
  // binary search, and the ones it drops are not visited at all. In the filtered sign solve of 216
  // model molecules (blocks of 6) 72 % of the products were dropped, in runs of about six that
  // alternated with runs that pass: checking them one by one took more time than stacking those
  // that pass. The products of one A block go to distinct C blocks, so their order does not change
  // any C block's sum (each still gets its products in ascending k), only where C's new blocks are
  // placed. (Put back into column order through a bitmap of the row, the same solve took 6-11 %
  // longer, its kernel included; h2o-32's blocks of 23 on two ranks ran as fast either way.)
  Scratch<std::int64_t> b_order;
  Scratch<double> b_sorted;
  if (filtering) {
    const timers::Scoped timer("local multiply: B's rows by norm");
    b_order.resize(static_cast<std::size_t>(b.nblocks));
    b_sorted.resize(b_order.size());
    // The kernel's threads share B's rows (as they share the norms).
    for_each_row_share(b, static_cast<int>(work_.size()), [&](int r0, int r1) {
      NormOrder by_norm;
      for (int r = r0; r < r1; ++r)
        by_norm.row(b_norms.data(), b.row_ptr[r], b.row_ptr[r + 1], b_order.data(), b_sorted.data());
    });
  }

  const int nthreads = static_cast<int>(work_.size());
  // One thread on a host backend: one pass, placing each new C block at the end of C's area as
  // its first product is stacked and growing C before each stack goes to the kernel (the host
  // session allows several growths a tick; the new blocks are zeroed just before their products,
  // while they are still in cache, unless the backend's first products write them).
  // Only into reserved room: growing C stack by stack beyond its capacity would reallocate and
  // copy it again and again (a fresh C of 857 MB: a quarter of plexus-bench's h2o time), where the
  // symbolic pass grows it once to its exact size. The exception, on any number of threads: the
  // tick filter_last_tick declared the last, where it drops C's small blocks as it goes (drop_small
  // below), since there each thread's kernel writes into a small work area and C's area takes only
  // the blocks kept.
  const bool drop_small = last_tick_eps_ > 0 && host_session_ != nullptr && c_values_ == 0 && record_ == nullptr;
  const bool one_pass = (nthreads == 1 && host_ && c_values_ < reserved_values_) || drop_small;
  // Several threads on a host session with room reserved, and no plan recorded: one pass each too,
  // into slabs of C's room (slab_rounds): each thread places its new blocks in its own slab as
  // their first products are stacked, row by row while the row's new blocks fit, then each
  // thread's blocks move down to follow the previous thread's (join_slabs). Rows a thread could not
  // fit take another round, and after three rounds the two passes below. In a filtered sign solve
  // on two threads (216 model molecules, blocks of 6) the symbolic pass was 12 % of the multiplies.
  // Any other case (a device backend, no room, a plan being recorded, whose stacks keep C's
  // offsets): the symbolic pass places every thread's new blocks first, C grows once, then the
  // numeric pass.
  const bool slabs =
      !drop_small && nthreads > 1 && host_session_ != nullptr && c_values_ < reserved_values_ && record_ == nullptr;
  // Slabs: per A row, a bound on the values of the C blocks it may create, computed once a tick
  // (slab_rounds and row_fits below read it row by row, round after round): at most one block per
  // column its B rows reach, within C's width.
  Scratch<std::int64_t> a_bound;
  if (slabs) {
    Scratch<std::int64_t> b_width(static_cast<std::size_t>(b.nrows));  // per B row, the columns of its blocks
    const int* const n_of = layout_.cols.sizes().data();
    for (int r = 0; r < b.nrows; ++r) {
      std::int64_t n = 0;
      for (std::int64_t q = b.row_ptr[r]; q < b.row_ptr[r + 1]; ++q) n += n_of[b.cols[q]];
      b_width[static_cast<std::size_t>(r)] = n;
    }
    const std::int64_t c_width = layout_.cols.total();
    a_bound.resize(static_cast<std::size_t>(a.nrows));
    for (int ar = 0; ar < a.nrows; ++ar) {
      std::int64_t width = 0;
      for (std::int64_t ab = a.row_ptr[ar]; ab < a.row_ptr[ar + 1]; ++ab) {
        const int br = b_row_of[static_cast<std::size_t>(a.cols[ab])];
        if (br >= 0) width += b_width[static_cast<std::size_t>(br)];
      }
      a_bound[static_cast<std::size_t>(ar)] =
          std::int64_t{layout_.rows.size(static_cast<int>(a.row_ids[ar]))} * std::min(width, c_width);
    }
  }

  // C's size before this tick: blocks placed from here on are new this tick, and their first
  // product is marked (StackEntry::first).
  const std::int64_t tick_start = c_values_;
  // Visits the products of thread w's A row ar that pass the filter: f.row_products(ab, bb, bb_end,
  // m, k, r, list) for a run of them, A block ab with B's blocks bb .. bb_end - 1 (a loop the
  // functor keeps in registers), and f.skip(n) for n products in the row that the filter drops.
  // The row's blocks at or beyond `fresh_from` (placed this tick by the symbolic pass) are entered
  // in w.c_off as -2 - offset until their first product (each C row is visited once a tick).
  // `tiles` and `widest` are the pass's.
  auto visit_row = [&](ThreadWork& w, int ar, std::int64_t fresh_from, auto&& f, ColumnTiles& tiles, int widest) {
    const int cr = a_c_row[ar];
    const int m = layout_.rows.size(static_cast<int>(a.row_ids[ar]));
    RowList& list = w.rows[static_cast<std::size_t>(cr - w.row_begin)];
    for (const auto& [col, off] : list) w.c_off[static_cast<std::size_t>(col)] = off < fresh_from ? off : -2 - off;
    const double eps = filtering ? row_eps_[static_cast<std::size_t>(cr)] : 0.0;
    // The products of A block ab with B's blocks lo .. hi - 1 that pass the filter: a whole row's
    // through the norm order above; a tile's part of a row in runs, checked product by product.
    // The filter's loops call nothing, so that the norms, eps and the bounds stay in registers
    // (a call per dropped product, and the norms' pointer and eps reloaded for every product,
    // had the filter cost as much as the stacks in a filtered solve of blocks of 6).
    auto visit = [&](std::int64_t ab, int k, std::int64_t lo, std::int64_t hi, bool whole_row) {
      if (!filtering) {
        f.row_products(ab, lo, hi, nullptr, m, k, cr - w.row_begin, list);
        return;
      }
      if (whole_row) {  // the prefix of the row's blocks by norm that passes
        const double an = a_norms[static_cast<std::size_t>(ab)];
        const std::int64_t cut = passing_end(b_sorted.data(), lo, hi, an, eps);
        if (cut == hi)  // all of them: in column order
          f.row_products(ab, lo, hi, nullptr, m, k, cr - w.row_begin, list);
        else if (cut > lo)
          f.row_products(ab, lo, cut, b_order.data(), m, k, cr - w.row_begin, list);
        f.skip(hi - cut);
        return;
      }
      const double an = a_norms[static_cast<std::size_t>(ab)];
      const double* const bn = b_norms.data();
      for (std::int64_t bb = lo; bb < hi;) {
        const std::int64_t run = bb;  // products that pass, up to the next one dropped
        while (bb < hi && an * bn[bb] >= eps) ++bb;
        if (bb > run) f.row_products(ab, run, bb, nullptr, m, k, cr - w.row_begin, list);
        const std::int64_t dropped = bb;
        while (bb < hi && !(an * bn[bb] >= eps)) ++bb;
        f.skip(bb - dropped);
      }
    };
    if (host_) tiles.plan(a, ar, b, b_row_of, layout_.cols, widest, m);
    if (tiles.count == 1) {
      // With the filter, the sorted norms of the B row two A blocks ahead are fetched meanwhile:
      // passing_end's steps each wait for a load, and the rows are seldom in the first-level
      // cache. (In the filtered sign solve of 216 model molecules the search was a third of the
      // stack building's samples; with this prefetch the building took a tenth less, without it
      // passing_end was slower than std::partition_point.)
      constexpr std::int64_t kAhead = 2;
      for (std::int64_t ab = a.row_ptr[ar]; ab < a.row_ptr[ar + 1]; ++ab) {
        const int kk = static_cast<int>(a.cols[ab]);
        const int br = b_row_of[static_cast<std::size_t>(kk)];
        if (filtering && ab + kAhead < a.row_ptr[ar + 1]) {
          const int ahead = b_row_of[static_cast<std::size_t>(a.cols[ab + kAhead])];
          if (ahead >= 0)
            for (std::int64_t q = b.row_ptr[ahead]; q < b.row_ptr[ahead + 1]; q += 8)
              __builtin_prefetch(&b_sorted[static_cast<std::size_t>(q)]);
        }
        if (br >= 0) visit(ab, a_layout.cols.size(kk), b.row_ptr[br], b.row_ptr[br + 1], true);
      }
    } else {
      // Each B row is taken up to the tile's last column, from where the previous tile left it:
      // every block once, whatever the order of the row (sorted, as a Panel's rows are, each
      // tile gets exactly its columns).
      auto& cursor = w.tile_cursor;
      cursor.assign(static_cast<std::size_t>(a.row_ptr[ar + 1] - a.row_ptr[ar]), 0);
      for (std::int64_t ab = a.row_ptr[ar]; ab < a.row_ptr[ar + 1]; ++ab) {
        const int br = b_row_of[static_cast<std::size_t>(a.cols[ab])];
        cursor[static_cast<std::size_t>(ab - a.row_ptr[ar])] = br < 0 ? 0 : b.row_ptr[br];
      }
      for (int t = 0; t < tiles.count; ++t) {
        const std::int64_t col_end = tiles.end[t];
        for (std::int64_t ab = a.row_ptr[ar]; ab < a.row_ptr[ar + 1]; ++ab) {
          const int kk = static_cast<int>(a.cols[ab]);
          const int br = b_row_of[static_cast<std::size_t>(kk)];
          if (br < 0) continue;
          std::int64_t& bb = cursor[static_cast<std::size_t>(ab - a.row_ptr[ar])];
          const std::int64_t lo = bb, end = b.row_ptr[br + 1];
          while (bb < end && b.cols[bb] < col_end) ++bb;
          if (bb > lo) visit(ab, a_layout.cols.size(kk), lo, bb, false);
        }
      }
    }
    for (const auto& entry : list) w.c_off[static_cast<std::size_t>(entry.first)] = -1;
  };
  // Slabs: whether the new blocks of A row ar surely fit in what is left of slab s, by the row's
  // bound; where that does not fit, the row's new values counted (its symbolic pass alone).
  auto row_bound = [&](int ar) { return a_bound[static_cast<std::size_t>(ar)]; };
  auto row_fits = [&](ThreadWork& w, int ar, const Slab& s, ColumnTiles& tiles, int widest) {
    if (s.next + row_bound(ar) <= s.end) return true;
    CountPass count{w, b, layout_.cols};
    visit_row(w, ar, std::numeric_limits<std::int64_t>::max(), count, tiles, widest);
    count.forget();
    return s.next + count.values <= s.end;
  };
  // The thread's A rows from `from` on; with a slab (several threads' one pass, slab_rounds),
  // only as long as the next row's new blocks fit in it: returns the first row not visited.
  auto for_each_product = [&](ThreadWork& w, int from, std::int64_t fresh_from, auto&& f, const Slab* slab) {
    const int ar1 = a_rows_of(w).second;
    ColumnTiles tiles;
    const int widest = host_ ? layout_.cols.max_size() : 0;  // once a pass and thread, not per row
    for (int ar = from; ar < ar1; ++ar) {
      if (slab != nullptr && !row_fits(w, ar, *slab, tiles, widest)) return ar;
      visit_row(w, ar, fresh_from, f, tiles, widest);
    }
    return ar1;
  };

  // The passes below run in OpenMP regions: each thread measures its own share with omp_get_wtime
  // (the report takes the slowest thread's), and the main thread times each whole pass as a phase
  // (timers.hpp: no phase timer inside a parallel region).
  std::vector<double> seconds(static_cast<std::size_t>(nthreads), 0.0);
  // Where each thread's rows start in the passes below: after what its slab took.
  std::vector<int> from(static_cast<std::size_t>(nthreads));
  for (int t = 0; t < nthreads; ++t)
    from[static_cast<std::size_t>(t)] = a_rows_of(*work_[static_cast<std::size_t>(t)]).first;
  if (slabs && slab_rounds(a, b, a_c_row.data(), tick_start, from, for_each_product, visit_row, row_bound))
    return end_tick(false);

  // Pass 1 (symbolic, PlacePass in local_product_passes.hpp), unless one pass places the blocks
  // as it stacks them.
  std::int64_t grow_before = 0;  // for the plan: C's growth before the stacks
  if (!one_pass) {
    timers::Scoped place_timer("local multiply: place");
    for_each_thread(nthreads, [&](int t) {
      ThreadWork& w = *work_[static_cast<std::size_t>(t)];
      const double t0 = omp_get_wtime();
      w.fresh.clear();
      w.fresh_values = 0;
      PlacePass place{w, b, layout_.cols};
      for_each_product(w, from[static_cast<std::size_t>(t)], std::numeric_limits<std::int64_t>::max(), place, nullptr);
      seconds[static_cast<std::size_t>(t)] = omp_get_wtime() - t0;
    });
    place_timer.stop();
    // One growth of C's area for all threads' new blocks (zeroed by the backend, or left for their
    // first products to write).
    std::int64_t end = c_values_;
    for (auto& w : work_) {
      w->base = end;
      end += w->fresh_values;
    }
    if (end > c_values_) {
      timers::Scoped timer("local multiply: grow");
      session_->grow(end);
      c_values_ = end;
      grow_before = end;
    }
  }

  // Pass 2 (numeric, StackPass in local_product_passes.hpp).
  // Each thread's products before the filter (A's blocks times the lengths of their B rows), counted
  // once for a plan's room and the one pass's estimates.
  std::vector<std::int64_t> products(static_cast<std::size_t>(nthreads), 0);
  std::int64_t all_products = 0;
  if (record_ != nullptr || one_pass)
    for (int t = 0; t < nthreads; ++t) {
      const auto [ar0, ar1] = a_rows_of(*work_[static_cast<std::size_t>(t)]);
      std::int64_t& n = products[static_cast<std::size_t>(t)];
      for (std::int64_t ab = a.row_ptr[ar0]; ab < a.row_ptr[ar1]; ++ab) {
        const int br = b_row_of[static_cast<std::size_t>(a.cols[ab])];
        if (br >= 0) n += b.row_ptr[br + 1] - b.row_ptr[br];
      }
      all_products += n;
    }
  // A plan beyond what the plans may hold is not kept. The tick's products are counted first, per
  // thread (plans are recorded without filtering, so each product becomes a stack entry: A's
  // blocks times the lengths of their B rows); when all of them cannot fit in the room left, no
  // thread records any (before, each thread copied its entries up to its share of the room and
  // then dropped them, in every multiply: 64 MiB of copies a multiply for 3,000^2 random blocks of
  // 6), and when they fit, each thread's share is reserved at its size (no copies as it grows,
  // none to shrink it).
  const std::int64_t record_room = record_ ? plans_->max_bytes() - record_bytes_ : 0;
  bool recording = record_ != nullptr;
  if (recording) {
    if (static_cast<std::int64_t>(sizeof(StackEntry)) * all_products > record_room) {
      recording = false;
      for (auto& w : work_) {
        w->record = {};
        w->record_dropped = true;
      }
    }
  }
  // The tick filter_last_tick declared the last drops C's small blocks itself where C's blocks lie
  // in the order of its rows (drop_small above): each thread computes its rows into a work area of
  // its own (from 1 MiB, a few rows of blocks of 6; a row of blocks of 23 takes more, and it grows),
  // and keeps the blocks that reach the threshold in C's own area (thread 0, where C's room is) or
  // an area of its own (the others), joined after (join_kept).
  constexpr std::int64_t kWorkValues = std::int64_t{1} << 17;
  std::vector<std::unique_ptr<WorkAreaSession>> work_area;
  std::vector<MatrixData> kept;
  if (drop_small) {
    kept.resize(static_cast<std::size_t>(nthreads));
    kept[0] = host_session_->exchange(MatrixData());
    for (int t = 0; t < nthreads; ++t)
      work_area.push_back(std::make_unique<WorkAreaSession>(*host_session_, kWorkValues));
  }
  timers::Scoped stacks_timer("local multiply: stacks and kernel");
  for_each_thread(nthreads, [&](int t) {
    ThreadWork& w = *work_[static_cast<std::size_t>(t)];
    const double t0 = omp_get_wtime();
    if (one_pass)
      w.fresh.clear();
    else
      for (const auto& [r, pos] : w.fresh) w.rows[static_cast<std::size_t>(r)][pos].second += w.base;
    // for_each_thread's thread 0 is the caller's; slots beyond the team run on its threads too.
    const bool caller = on_calling_thread(nthreads) && progress_;
    std::int64_t c_end = c_values_, c_grown = c_values_;
    plan::ThreadTick* record = nullptr;
    if (recording) {
      w.record.entries.reserve(static_cast<std::size_t>(products[static_cast<std::size_t>(t)]));
      record = &w.record;
    }
    const std::int64_t visits = one_pass ? products[static_cast<std::size_t>(t)] : 0;
    StackPass stack{w,
                    a,
                    b,
                    drop_small ? *work_area[static_cast<std::size_t>(t)] : *session_,
                    t,
                    w.stack.data(),
                    caller ? &progress_ : nullptr,
                    one_pass ? &c_end : nullptr,
                    one_pass ? &c_grown : nullptr,
                    one_pass && !drop_small ? host_session_ : nullptr,  // drop_small: a work area grows as it needs
                    c_values_,
                    visits,
                    record,
                    recording ? std::int64_t{sizeof(StackEntry)} * products[static_cast<std::size_t>(t)] : 0,
                    layout_.cols};
    if (drop_small) {
      filter_rows(w, a, a_c_row.data(), from[static_cast<std::size_t>(t)], a_rows_of(w).second, visit_row, stack, c_end,
                  *work_area[static_cast<std::size_t>(t)], kept[static_cast<std::size_t>(t)],
                  t == 0 ? all_products : visits);  // thread 0's area takes all threads' kept blocks
    } else {
      for_each_product(w, from[static_cast<std::size_t>(t)], tick_start, stack, nullptr);
      stack.flush();
      if (one_pass) c_values_ = c_end;  // every block placed was in a stack, so C has grown to it (c_grown)
    }
    if (stack.record != nullptr) {
      for (const auto& [r, pos] : w.fresh) {
        const auto& [col, off] = w.rows[static_cast<std::size_t>(r)][pos];
        w.record.added.push_back({r, col, off});
      }
      w.record.products = stack.products;
      w.record.skipped = stack.skipped;
      w.record.mnk = stack.mnk;
    }
    account(w, stack, seconds[static_cast<std::size_t>(t)] + omp_get_wtime() - t0);
  });
  stacks_timer.stop();
  if (drop_small) c_values_ = join_kept(kept);
  filtered_ = drop_small;
  if (record_) record_tick(a, a_layout, b, grow_before);
  end_tick(false);
}

}  // namespace plexus
