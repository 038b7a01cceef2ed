// The one multiply driver (DBCSR's dbcsr_multiply_generic is the model): validation,
// transposes, alpha, thresholds, the accumulator of C, final filtering and the report are done
// here once; the algorithm supplies its schedule and data movement.
#include "plexus/multiply.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <utility>

#include "plexus/error.hpp"
#include "plexus/exchange.hpp"
#include "plexus/memory.hpp"
#include "plexus/multiply_support.hpp"
#include "plexus/progress.hpp"
#include "plexus/timers.hpp"
#include "threads.hpp"

namespace plexus {

// ---- report ---------------------------------------------------------------------------------

double MultiplyReport::wait_seconds() const {
  double s = 0;
  for (const auto& t : traffic) s += t.wait_seconds;
  return s;
}

std::int64_t MultiplyReport::bytes_sent() const {
  std::int64_t s = 0;
  for (const auto& t : traffic) s += t.bytes_sent + t.index_bytes_sent;
  return s;
}

std::int64_t MultiplyReport::messages_sent() const {
  std::int64_t s = 0;
  for (const auto& t : traffic) s += t.messages_sent;
  return s;
}

namespace {
// `into` += `r` as StepTotals::sum takes it (beyond the per-step times).
void add_report(MultiplyReport& into, const MultiplyReport& r, bool first) {
  if (first) {
    into.strategy = r.strategy;
    into.kernel = r.kernel;
  }
  into.ticks = std::max(into.ticks, r.ticks);
  into.seconds += r.seconds;
  into.kernel_seconds += r.kernel_seconds;
  into.stack_seconds += r.stack_seconds;
  into.flops += r.flops;
  into.products += r.products;
  into.skipped_products += r.skipped_products;
  into.ticks_with_products += r.ticks_with_products;
  into.replayed_ticks += r.replayed_ticks;
  into.dense_ticks += r.dense_ticks;
  into.plans_not_kept += r.plans_not_kept;
  for (std::size_t k = 0; k < into.traffic.size(); ++k) into.traffic[k] += r.traffic[k];
  into.peak_buffer_bytes = std::max(into.peak_buffer_bytes, r.peak_buffer_bytes);
  into.peak_memory_bytes = std::max(into.peak_memory_bytes, r.peak_memory_bytes);
  into.peak_device_bytes = std::max(into.peak_device_bytes, r.peak_device_bytes);
  into.extra.add(r.extra);
}
}  // namespace

void StepTotals::add(const MultiplyReport& r) {
  add_report(sum, r, seconds.empty());
  seconds.push_back(r.seconds);
  beyond.push_back(r.seconds - r.kernel_seconds - r.wait_seconds());
}

void StepTotals::append(const StepTotals& other) {
  if (other.empty()) return;
  add_report(sum, other.sum, seconds.empty());
  seconds.insert(seconds.end(), other.seconds.begin(), other.seconds.end());
  beyond.insert(beyond.end(), other.beyond.begin(), other.beyond.end());
}

// ---- task -----------------------------------------------------------------------------------

MultiplyTask::MultiplyTask(const DistMatrix& a, const DistMatrix& b, const DistMatrix& c, double beta, Kernel& kernel,
                           const MultiplyOptions& options, std::vector<double> thresholds, ProductPlans* plans)
    : a_(a),
      b_(b),
      c_(c),
      beta_(beta),
      kernel_(kernel),
      options_(options),
      thresholds_(std::move(thresholds)),
      plans_(plans) {
  report_.extra.reserve(16);  // a strategy's figures (cannon's are 15, a transpose's one more): one allocation
}

MultiplyTask::~MultiplyTask() = default;

LocalProduct& MultiplyTask::c_accumulator() {
  if (!c_acc_) {
    const std::vector<int>& rows = c_.distribution().local_rows();
    const PanelView start = beta_ != 0.0 ? c_.local().view() : c_.distribution().empty_local_view();
    const int threads = kernel_.threads();  // one thread needs no weights to balance
    c_acc_ = std::make_unique<LocalProduct>(start, c_.layout(), kernel_, threads, thresholds_of_rows(thresholds_, rows),
                                            threads > 1 ? row_weights(a_, c_, beta_) : std::vector<std::int64_t>{},
                                            beta_ != 0.0 ? beta_ : 1.0, c_.local().data_size(), plans_);
  }
  return *c_acc_;
}

void MultiplyTask::filter_in_last_tick() {
  if (options_.filter_eps > 0 && !options_.retain_sparsity) c_accumulator().filter_last_tick(options_.filter_eps);
}

bool MultiplyTask::c_filtered() const { return c_acc_ && c_acc_->filtered(); }

LocalProduct& MultiplyTask::partial_accumulator(const std::vector<int>& rows) {
  const Panel empty(rows);
  partial_.push_back(std::make_unique<LocalProduct>(empty.view(), c_.layout(), kernel_, kernel_.threads(),
                                                    thresholds_of_rows(thresholds_, rows),
                                                    std::vector<std::int64_t>{}, 1.0, 0, plans_));
  return *partial_.back();
}

LocalMultiplyStats MultiplyTask::stats() const {
  LocalMultiplyStats s;
  if (c_acc_) s += c_acc_->stats();
  for (const auto& p : partial_) s += p->stats();
  return s;
}

// ---- algorithm defaults ---------------------------------------------------------------------

MultiplyAlgorithm::~MultiplyAlgorithm() = default;

std::shared_ptr<const Distribution> MultiplyAlgorithm::distribution_for(
    std::shared_ptr<const Distribution> proposal) const {
  return proposal;
}

void MultiplyAlgorithm::check_operands(const DistMatrix&, const DistMatrix&, const DistMatrix&) const {}

Panel MultiplyAlgorithm::run(MultiplyTask&) {
  throw InputError("Communication/Multiply", "'" + name() + "' does not provide a multiply");
}

std::optional<ModelPrediction> MultiplyAlgorithm::model(const ModelSpec&, int, int) const { return std::nullopt; }

bool MultiplyAlgorithm::square_and_cube(Kernel&, const DistMatrix&, DistMatrix&, DistMatrix&, const MultiplyOptions&,
                                        std::vector<MultiplyReport>&) {
  return false;
}

// ---- transpose ------------------------------------------------------------------------------

namespace {

bool same_ranks(MPI_Comm x, MPI_Comm y) {
  int r = MPI_UNEQUAL;
  mpi::check(MPI_Comm_compare(x, y, &r), "MPI_Comm_compare");
  return r == MPI_IDENT || r == MPI_CONGRUENT;
}

bool same_grid(const Grid& x, const Grid& y) {
  return x.nprows() == y.nprows() && x.npcols() == y.npcols() && same_ranks(x.comm(), y.comm());
}

std::vector<int> cyclic(int n, int p) {
  std::vector<int> d(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) d[static_cast<std::size_t>(i)] = i % p;
  return d;
}

}  // namespace

DistMatrix transpose(const DistMatrix& X, std::shared_ptr<const Distribution> target, mpi::Traffic& traffic,
                     mpi::Role role) {
  const std::string where = "transpose(" + X.name() + ")";
  if (target->nblkrows() != X.layout().cols.count() || target->nblkcols() != X.layout().rows.count())
    throw Error(where, "the target distribution is " + std::to_string(target->nblkrows()) + "x" +
                           std::to_string(target->nblkcols()) + " blocks; the transpose needs " +
                           std::to_string(X.layout().cols.count()) + "x" + std::to_string(X.layout().rows.count()));
  if (!same_ranks(target->grid().comm(), X.grid().comm()))
    throw Error(where, "the target grid is over another set of ranks");
  if (!X.finalized()) throw Error(where, X.name() + " has blocks put since the last finalize()");
  const BlockLayout& lx = X.layout();
  const ExchangedBlocks got = exchange_blocks(
      X.local().view(), lx, X.grid().comm(),
      [&](int i, int j, int& tag) {
        tag = 0;
        return target->owner(j, i);
      },
      traffic, role);
  // Received blocks are sorted by X's (row, col); the transpose needs them by (col, row).
  std::vector<std::size_t> order(got.blocks.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    const auto &p = got.blocks[x], &q = got.blocks[y];
    return p.col != q.col ? p.col < q.col : p.row < q.row;
  });
  DistMatrix out(X.name() + "^T", target, BlockLayout{lx.cols, lx.rows});
  Panel panel(target->local_rows());
  panel.reserve(static_cast<std::int64_t>(got.blocks.size()), static_cast<std::int64_t>(got.values.size()));
  for (const std::size_t q : order) {
    const auto& blk = got.blocks[q];
    const int m = lx.rows.size(blk.row), n = lx.cols.size(blk.col);  // X's block is m x n
    const double* x = got.values.data() + blk.offset;
    double* t = panel.append_block(panel.row_index(blk.col), blk.row, m * n);
    for (int c = 0; c < n; ++c)
      for (int r = 0; r < m; ++r) t[c + std::int64_t{r} * n] = x[r + std::int64_t{c} * m];
  }
  out.set_local(std::move(panel));
  return out;
}

std::shared_ptr<const Distribution> transposed_distribution(const DistMatrix& X) {
  const auto& g = X.distribution().grid_ptr();
  if (g->nprows() == g->npcols())
    return std::make_shared<const Distribution>(g, X.distribution().col_dist(), X.distribution().row_dist(),
                                                "transposed");
  return Distribution::block_cyclic(g, X.layout().cols.count(), X.layout().rows.count());
}

DistMatrix transpose(const DistMatrix& X) {
  mpi::Traffic traffic;
  return transpose(X, transposed_distribution(X), traffic);
}

// ---- the driver -----------------------------------------------------------------------------

namespace {

// `values` on `pattern`'s blocks: a block of the pattern takes its values from `values` when
// present there, zeros otherwise; blocks outside the pattern are dropped (retain_sparsity).
Panel on_pattern(const PanelView& values, const PanelView& pattern, const BlockLayout& layout) {
  Panel out(std::vector<int>(pattern.row_ids, pattern.row_ids + pattern.nrows));
  out.reserve(pattern.nblocks, pattern.data_size);
  for (int r = 0; r < pattern.nrows; ++r) {
    const int i = static_cast<int>(pattern.row_ids[r]);
    std::int64_t v = values.row_ptr[r];
    for (std::int64_t b = pattern.row_ptr[r]; b < pattern.row_ptr[r + 1]; ++b) {
      const auto j = pattern.cols[b];
      while (v < values.row_ptr[r + 1] && values.cols[v] < j) ++v;
      const int n = layout.rows.size(i) * layout.cols.size(static_cast<int>(j));
      double* dst = out.append_block(r, static_cast<int>(j), n);
      if (v < values.row_ptr[r + 1] && values.cols[v] == j)
        std::copy(values.data + values.offsets[v], values.data + values.offsets[v] + n, dst);
    }
  }
  return out;
}

// How two cuts of one dimension differ, for a message: their sizes and block counts, and the
// first block whose size differs.
std::string cut_difference(const std::string& x, const BlockSizes& a, const std::string& y, const BlockSizes& b) {
  std::string s = x + ": " + std::to_string(a.total()) + " in " + std::to_string(a.count()) + " blocks, " + y + ": " +
                  std::to_string(b.total()) + " in " + std::to_string(b.count()) + " blocks";
  for (int k = 0; k < std::min(a.count(), b.count()); ++k)
    if (a.size(k) != b.size(k))
      return s + "; block " + std::to_string(k) + " has " + std::to_string(a.size(k)) + " in " + x + ", " +
             std::to_string(b.size(k)) + " in " + y;
  return s;
}

// Every check that needs no communication and gives the same answer on every rank.
void validate(const MultiplyAlgorithm& algorithm, Trans ta, Trans tb, double alpha, const DistMatrix& A,
              const DistMatrix& B, double beta, const DistMatrix& C, const MultiplyOptions& options) {
  // The error's place, put together only for an error (not every multiply).
  const auto where = [&] { return "multiply(" + algorithm.name() + ")"; };
  if (ta != Trans::N && ta != Trans::T) throw InputError(where(), "transA must be 'N' or 'T'");
  if (tb != Trans::N && tb != Trans::T) throw InputError(where(), "transB must be 'N' or 'T'");
  if (!std::isfinite(alpha) || !std::isfinite(beta)) throw InputError(where(), "alpha and beta must be finite numbers");
  if (!(options.filter_eps >= 0) || !std::isfinite(options.filter_eps))
    throw InputError(where(),
                     "filter_eps must be a finite number >= 0 (got " + std::to_string(options.filter_eps) + ")");
  for (const DistMatrix* m : {&A, &B, &C})
    if (!m->finalized())
      throw Error(where(),
                  "matrix '" + m->name() + "' has blocks put since the last finalize(); call finalize() first");
  if (!same_grid(A.grid(), B.grid()) || !same_grid(A.grid(), C.grid()))
    throw Error(where(), "A, B and C must be distributed over the same process grid (A: " + A.grid().describe() +
                             ", B: " + B.grid().describe() + ", C: " + C.grid().describe() + ")");
  if (A.grid().nlayers() > 1)
    throw Error(where(), "the operands are on a grid with layers (" + A.grid().describe() +
                             "); the multiply algorithms take operands on a PR x PC grid (layers are theirs to make: "
                             "Grid::layered)");
  const BlockSizes& a_rows = ta == Trans::N ? A.layout().rows : A.layout().cols;
  const BlockSizes& a_cols = ta == Trans::N ? A.layout().cols : A.layout().rows;
  const BlockSizes& b_rows = tb == Trans::N ? B.layout().rows : B.layout().cols;
  const BlockSizes& b_cols = tb == Trans::N ? B.layout().cols : B.layout().rows;
  const auto ops = [&] {
    return std::string("op(A) = A") + (ta == Trans::T ? "^T" : "") + ", op(B) = B" + (tb == Trans::T ? "^T" : "");
  };
  if (!(a_cols == b_rows))
    throw Error(where(), "the columns of op(A) and the rows of op(B) are cut into different blocks (" +
                             cut_difference("op(A)'s columns", a_cols, "op(B)'s rows", b_rows) + "; " + ops() + ")");
  if (!(C.layout().rows == a_rows))
    throw Error(where(), "C's rows and op(A)'s rows are cut into different blocks (" +
                             cut_difference("C's rows", C.layout().rows, "op(A)'s rows", a_rows) + "; " + ops() + ")");
  if (!(C.layout().cols == b_cols))
    throw Error(where(), "C's columns and op(B)'s columns are cut into different blocks (" +
                             cut_difference("C's columns", C.layout().cols, "op(B)'s columns", b_cols) + "; " + ops() +
                             ")");
  if (ta == Trans::N && C.distribution().row_dist() != A.distribution().row_dist())
    throw Error(where(), "C's rows must be distributed like A's rows (redistribute C or A first)");
  if (tb == Trans::N && C.distribution().col_dist() != B.distribution().col_dist())
    throw Error(where(), "C's columns must be distributed like B's columns (redistribute C or B first)");
}

// alpha * op(A) in one pass over A's values (a copy and then a scaling pass read and wrote them
// twice), beside A's own index: the copy changes no block, so it holds A's index object (which a
// panel never writes while another holds it) instead of copying it. On the kernel's threads.
Panel scaled_copy(const PanelView& v, double alpha, int threads) {
  MatrixData values(static_cast<std::size_t>(v.data_size));  // default-initialised: written below
  double* const to = values.data();
  for_each_share(threads, v.data_size, [&](int, std::int64_t lo, std::int64_t hi) {
    for (std::int64_t q = lo; q < hi; ++q) to[q] = alpha * v.data[q];
  });
  std::shared_ptr<const PanelIndex> index = v.held_index();
  return Panel::adopt(index ? std::move(index) : PanelIndex::copy_of(v), std::move(values));
}

}  // namespace

MultiplyReport multiply(MultiplyAlgorithm& algorithm, Kernel& kernel, Trans ta, Trans tb, double alpha,
                        const DistMatrix& A, const DistMatrix& B, double beta, DistMatrix& C,
                        const MultiplyOptions& options, ProductPlans* plans) {
  const progress::Operation operation("multiply " + algorithm.name() + "/" + kernel.name());
  validate(algorithm, ta, tb, alpha, A, B, beta, C, options);
  const auto& grid = C.distribution().grid_ptr();
  // The distributions of the transposed operands: op(A)'s rows like C's rows, op(B)'s columns like
  // C's columns, the k dimension block-cyclic.
  const int k = ta == Trans::N ? A.layout().cols.count() : A.layout().rows.count();
  std::shared_ptr<const Distribution> a_target, b_target;
  if (ta == Trans::T)
    a_target = std::make_shared<const Distribution>(grid, C.distribution().row_dist(), cyclic(k, grid->npcols()),
                                                    "transposed");
  if (tb == Trans::T)
    b_target = std::make_shared<const Distribution>(grid, cyclic(k, grid->nprows()), C.distribution().col_dist(),
                                                    "transposed");
  {
    // The algorithm's own conditions, on the distributions the operands will have: an operand
    // itself where it is not transposed (no shape made, every multiply), else an empty op(X).
    std::optional<DistMatrix> a_shape, b_shape;
    if (ta == Trans::T) a_shape.emplace("op(A)", a_target, BlockLayout{A.layout().cols, A.layout().rows});
    if (tb == Trans::T) b_shape.emplace("op(B)", b_target, BlockLayout{B.layout().cols, B.layout().rows});
    algorithm.check_operands(a_shape ? *a_shape : A, b_shape ? *b_shape : B, C);
  }

  memory::reset_peak(memory::Category::CommBuffer);
  memory::reset_peak_total();
  memory::reset_peak_total(MemorySpace::Device);
  // The phases: prologue (transposes, alpha, thresholds), the algorithm's run, epilogue (C set,
  // filtered, the report); "multiply: total" is the report's seconds.
  timers::Scoped total("multiply: total");
  timers::Scoped prologue("multiply: prologue");

  // op(A) * alpha and op(B). A transposed operand is a copy already; otherwise alpha != 1 takes
  // one copy of A. Nothing here writes to C, so C may be A or B.
  mpi::Traffic moved;
  std::optional<DistMatrix> a_copy, b_copy;
  if (ta == Trans::T) a_copy.emplace(transpose(A, a_target, moved, mpi::Role::A));
  if (tb == Trans::T) b_copy.emplace(transpose(B, b_target, moved, mpi::Role::B));
  if (alpha != 1.0) {
    if (a_copy) {
      a_copy->scale(alpha, kernel.threads());
    } else {
      a_copy.emplace(A.name(), A.distribution_ptr(), A.layout());
      a_copy->set_local(scaled_copy(A.local().view(), alpha, kernel.threads()));
    }
  }
  const DistMatrix& a = a_copy ? *a_copy : A;
  const DistMatrix& b = b_copy ? *b_copy : B;

  MultiplyTask task(a, b, C, beta, kernel, options, global_row_thresholds(a, options.filter_eps), plans);
  prologue.stop();
  Panel result = [&] {
    const timers::Scoped run("multiply: run");
    return algorithm.run(task);
  }();
  timers::Scoped epilogue("multiply: epilogue");
  if (options.retain_sparsity) result = on_pattern(result.view(), C.local().view(), C.layout());
  C.set_local(std::move(result));
  // Filtered here unless the algorithm's last tick did it (MultiplyTask::filter_in_last_tick).
  if (options.filter_eps > 0 && !options.retain_sparsity && !task.c_filtered())
    C.filter(options.filter_eps, kernel.threads());

  MultiplyReport report = std::move(task.report());
  report.strategy = algorithm.name();
  report.kernel = kernel.name();
  for (int r = 0; r < mpi::kRoles; ++r) {
    report.traffic[r] = task.traffic().all_counts()[r];
    report.traffic[r] += moved.all_counts()[r];
  }
  const LocalMultiplyStats stats = task.stats();
  report.flops += stats.flops;  // plus what the algorithm computed outside core's accumulators
  report.products = stats.products;
  report.skipped_products = stats.skipped;
  report.ticks_with_products = stats.ticks;
  report.replayed_ticks = stats.replayed_ticks;
  report.dense_ticks = stats.dense_ticks;
  report.plans_not_kept = stats.plans_not_kept;
  report.kernel_seconds = stats.kernel_seconds;
  report.stack_seconds = stats.stack_seconds;
  report.peak_buffer_bytes = memory::peak(memory::Category::CommBuffer);
  report.peak_memory_bytes = memory::peak_total();
  report.peak_device_bytes = memory::peak_total(MemorySpace::Device);
  epilogue.stop();
  report.seconds = total.stop();
  if (ta == Trans::T || tb == Trans::T) {
    report.extra["transpose_bytes_received"] = static_cast<double>(
        moved.counts(mpi::Role::A).bytes_received + moved.counts(mpi::Role::B).bytes_received);
  }
  return report;
}

}  // namespace plexus
