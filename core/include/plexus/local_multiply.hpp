#pragma once
// The local part of a distributed multiply: C_local += A_panel * B_panel over several panel pairs
// (ticks), with OpenMP threads owning whole C block rows (balanced by block count), stacks of
// small products built by core with on-the-fly filtering, processed by a local backend (Kernel)
// that holds C's values from the constructor to finish().
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "plexus/kernel.hpp"
#include "plexus/layout.hpp"
#include "plexus/memory.hpp"
#include "plexus/panel.hpp"

namespace plexus {

class HostSession;
class WorkAreaSession;

namespace plan {
struct KeyView;
struct ProductPlan;
}  // namespace plan

/// Plans of earlier local products, kept for later products that are given exactly the same: an
/// iteration or a benchmark that multiplies the same block patterns again. A plan holds what a
/// product was given (C's start pattern, its threads' rows, every tick's panel index) and what
/// it made of it (the stacks handed to the backend, C's growth, C's final index). A product given
/// the same replays the stacks instead of building them and adopts C's index instead of sorting
/// it; the backend computes the same products in the same order, so C is the same bit for bit.
/// What is compared: C's layout, rows and start pattern, the threads' rows, the backend's memory
/// space, and before each tick the panels' index (rows, blocks, offsets, value count) and the k
/// block sizes. Any difference is found by exact comparison before the tick it concerns, and the
/// product builds its stacks from there on (leaving a plan that shares the ticks in common). What
/// does not matter: C's start values and beta, the panels' values. The room reserved for C
/// (expected_values) only decides how C grows in a replayed tick, as in a built one. Not used with
/// on-the-fly filtering (the stacks then depend on the values). A plan is recorded while the
/// product runs (about 40 bytes per product, plus the panels' index) and kept within max_bytes;
/// recording stops within the tick that outgrows the room. A new plan that does not fit takes the
/// room of plans no longer in use, the least recently used first, and is not kept if that room is
/// not enough: plans still in use are not dropped for it. So products whose plans together exceed
/// max_bytes and that come round in a cycle (the partial products of an iteration) replay as many
/// of them as fit, where dropping the least recently used would have replayed none. A plan is in
/// use while it has been looked up (a product with its key constructed) within twice its reuse
/// distance, the lookups between its last two uses, or, before its first reuse, within twice the
/// number of plans held plus two lookups. The plans' arrays are counted as memory::Category::Other.
/// Thread-safe. A Context holds one (Context::product_plans), which multiply(ctx, ...) uses.
class ProductPlans {
 public:
  static constexpr std::int64_t kDefaultBytes = std::int64_t{64} << 20;
  explicit ProductPlans(std::int64_t max_bytes = kDefaultBytes);
  ~ProductPlans();
  ProductPlans(const ProductPlans&) = delete;
  ProductPlans& operator=(const ProductPlans&) = delete;

  /// The most the plans may hold; 0 keeps none (and drops those held). Plans beyond it are
  /// dropped, the least recently used first, in use or not; a plan larger than it is not kept.
  void set_max_bytes(std::int64_t bytes);
  std::int64_t max_bytes() const;
  /// The plans held now and their bytes.
  std::size_t size() const;
  std::int64_t bytes() const;
  /// Plans recorded but not kept, since there was no room without dropping plans in use.
  std::int64_t declined() const;
  /// Drops every plan (a product replaying one keeps it until it finishes).
  void clear();

 private:
  friend class LocalProduct;
  using PlanPtr = std::shared_ptr<const plan::ProductPlan>;
  struct Held {
    PlanPtr plan;
    std::int64_t last_use;  // the lookup that recorded or last replayed it
    std::int64_t reuse;     // lookups between its last two uses; 0: not reused yet
  };
  // The plans with the key, the most recently used first; `lookup` is set to this lookup's number.
  std::vector<PlanPtr> candidates(const plan::KeyView& key, std::int64_t& lookup);
  bool keep(PlanPtr plan, std::int64_t lookup);          // as the most recently used; false: no room
  void touch(const PlanPtr& plan, std::int64_t lookup);  // replayed by that lookup's product
  bool in_use(const Held& h) const;                      // the caller holds mutex_
  void trim();                                           // within max_bytes_, in use or not; the caller holds mutex_
  mutable std::mutex mutex_;
  std::int64_t max_bytes_;
  std::int64_t bytes_ = 0;
  std::int64_t lookups_ = 0;
  std::int64_t declined_ = 0;
  std::vector<Held> plans_;  // the most recently used last
};

struct LocalMultiplyStats {
  double flops = 0;               ///< 2*m*n*k summed over the products computed
  std::int64_t products = 0;      ///< products computed
  std::int64_t skipped = 0;       ///< products skipped by on-the-fly filtering
  double stack_seconds = 0;       ///< building stacks (max over threads)
  double kernel_seconds = 0;      ///< inside Kernel::process (max over threads)
  std::int64_t ticks = 0;         ///< ticks with products (multiply() calls with blocks in A and B)
  std::int64_t replayed_ticks = 0;  ///< of them, ticks whose stacks came from a plan (ProductPlans)
  std::int64_t dense_ticks = 0;     ///< of them, ticks computed as dense products (HostKernel::dense_min_size)
  /// Plans recorded but not kept: larger than ProductPlans::max_bytes, or no room without dropping
  /// plans in use (0 or 1 per product).
  std::int64_t plans_not_kept = 0;
  LocalMultiplyStats& operator+=(const LocalMultiplyStats& o);
};

/// A B panel's values as one dense column-major K x N matrix, for a caller that builds that matrix
/// itself instead of handing the local product B's blocks (cannon's fused ticks, where both ranks
/// of a ring write their halves of B into a shared window: a dense tick then copies no B). Only
/// for a panel whose every row has blocks in the same columns. Block rows lie in ascending global
/// k, block columns in ascending global column, so the layout depends only on the set of blocks,
/// not on how a panel orders them.
struct DenseLayout {
  std::int64_t K = 0, N = 0;          ///< the matrix's rows and columns (values)
  std::vector<std::int64_t> row_at;   ///< per global block row (k): where it starts in K, or -1
  std::vector<std::int64_t> col_at;   ///< per global block column: where it starts in N, or -1
  std::vector<std::int64_t> row_ids;  ///< the panel's block rows, ascending
  std::vector<std::int64_t> col_ids;  ///< its block columns, ascending

  /// The layout of `b`'s blocks, or nothing where `b` is empty or not dense (a row without every
  /// column of the others).
  static std::optional<DenseLayout> of(const PanelView& b, const BlockLayout& b_layout);
  /// Copies panel `p`'s blocks (its rows and columns among the layout's) into `dense`, block
  /// column by block column, calling `poll` after each (may be empty).
  void copy_in(const PanelView& p, const BlockLayout& b_layout, double* dense,
               const std::function<void()>& poll = {}) const;
  /// The reverse: each block of `p`'s index from `dense` to `values` + its offset.
  void copy_out(const double* dense, const PanelView& p, const BlockLayout& b_layout, double* values) const;
};

class ColumnOrder;  // core/src/local_product_work.hpp

/// Accumulates products into C's local rows. Create once per multiply, call multiply() once
/// per panel pair, then finish() returns the new local C panel.
class LocalProduct {
 public:
  /// c_start: C's local blocks before the multiply, taken times c_scale (beta); its rows fix the
  /// row set. The kernel's session holds C from here to finish(). `row_eps[r]`, if not empty, is
  /// the on-the-fly filtering threshold of CSR row r (skip when |a|*|b| < row_eps[r]). `threads`
  /// threads own whole rows, balanced by `row_weight` (one weight per CSR row; empty: C's block
  /// counts). `expected_values`: how many values the caller expects C to end with (e.g. the size
  /// of C before the multiply, as an iteration's next product is usually about as large): C's area
  /// is reserved for them up front, so that the ticks' growth copies nothing and touches no fresh
  /// pages. 0: grown as the ticks need. A capacity left well beyond the final size is given back
  /// in finish(). `plans`, if given and without filtering: a product given exactly what an earlier
  /// one was replays that one's stacks, and a product that finishes leaves its plan there.
  LocalProduct(const PanelView& c_start, const BlockLayout& c_layout, Kernel& kernel, int threads,
               std::vector<double> row_eps, const std::vector<std::int64_t>& row_weight = {}, double c_scale = 1.0,
               std::int64_t expected_values = 0, ProductPlans* plans = nullptr);
  ~LocalProduct();
  LocalProduct(const LocalProduct&) = delete;
  LocalProduct& operator=(const LocalProduct&) = delete;

  /// C += A * B (one tick: the kernel's session stages A and B, processes the stacks and
  /// unstages them before this returns, so the panels may be reused afterwards). A's rows must be
  /// a subset of C's rows (same global ids); B's rows are the k indices. k sizes come from
  /// a_layout.cols (must equal b_layout.rows). Norms are computed here when filtering is on.
  void multiply(const PanelView& a, const BlockLayout& a_layout, const PanelView& b, const BlockLayout& b_layout);
  /// C += A * B with B's values in `dense` (laid out as `layout`, which must be DenseLayout::of(b)),
  /// not at b.data, which is not read. A dense tick where the tick can be one (a host backend that
  /// takes it, A dense over every k of B, the filter keeping every product); otherwise B's blocks
  /// are first copied out of `dense` and the tick goes as multiply() would take it.
  void multiply(const PanelView& a, const BlockLayout& a_layout, const PanelView& b, const BlockLayout& b_layout,
                const double* dense, const DenseLayout& layout);
  /// Whether a tick of A's and B's index (their values are not read) would be a dense tick that B
  /// given dense serves: a host backend that takes it, both panels dense, A over every k of B. A
  /// caller that would build a dense B asks first. (With filtering, a tick's values may still send
  /// it the other way: multiply() then copies B's blocks out.)
  bool would_be_dense(const PanelView& a, const BlockLayout& a_layout, const PanelView& b) const;
  int threads() const { return static_cast<int>(work_.size()); }
  /// `poll` is called between the stacks a tick hands to the kernel, on the thread that called
  /// multiply() (the first thread of the OpenMP team), so that transfers the caller has in flight
  /// progress while the products run (e.g. mpi::Traffic::test). Empty: no calls. It may throw;
  /// the tick then fails with its error.
  void set_progress(std::function<void()> poll) { progress_ = std::move(poll); }
  /// Says that the next multiply() is this product's last tick and that finish()'s panel becomes
  /// the multiply's C as it is (nothing is added to it afterwards), to be filtered at `eps` as
  /// DistMatrix::filter filters (blocks whose Frobenius norm is below eps are dropped), C's blocks
  /// laid out as that filter lays them out. Where that tick can (a host backend, on any number of
  /// threads, C empty before it, no plan being recorded, not a dense tick), it drops those blocks
  /// itself as it completes C's rows, while they are in the caches, and filtered() says so;
  /// otherwise the caller filters. A multiply() after that tick throws. eps must be > 0.
  void filter_last_tick(double eps);
  /// Whether the last tick dropped C's small blocks itself (filter_last_tick).
  bool filtered() const { return filtered_; }
  /// The accumulated C, blocks sorted by (row, col). The object is empty afterwards.
  Panel finish();
  const LocalMultiplyStats& stats() const { return stats_; }

 private:
  struct ThreadWork;
  // The visitors of a tick's symbolic and numeric passes (local_product_passes.hpp).
  struct PlacePass;
  struct CountPass;
  struct StackPass;
  void count_last_tick();  // a tick after the one filter_last_tick declared the last throws
  bool replay(const PanelView& a, const BlockLayout& a_layout, const PanelView& b);
  void forgo_replay();  // a tick that will not replay: the plans looked up are left as replay() leaves them
  // Dense ticks (local_product_dense.cpp): the tick as dense products, where the backend takes it
  // and the panels are dense (false: not, and nothing done).
  struct DenseShape;
  bool dense_shape(const PanelView& a, const BlockLayout& a_layout, const PanelView& b, DenseShape& d) const;
  // `given`: B's values as a dense matrix and its layout (multiply's second form), or null.
  struct GivenDense {
    const double* values;
    const DenseLayout* layout;
  };
  bool dense_tick(const PanelView& a, const BlockLayout& a_layout, const PanelView& b, const int* a_c_row,
                  const GivenDense* given = nullptr);
  static bool given_layout_serves(const DenseShape& d, const PanelView& b, const DenseLayout& g);
  // Whether a tick given B dense can be a dense tick: as multiply_tick decides for any tick (the
  // backend, the panels' shape, the filter), A over every k of B, and the layout the tick's own.
  bool given_dense_fits(const PanelView& a, const BlockLayout& a_layout, const PanelView& b,
                        const BlockLayout& b_layout, const int* a_c_row, const GivenDense& given) const;
  void multiply_tick(const PanelView& a, const BlockLayout& a_layout, const PanelView& b, const BlockLayout& b_layout,
                     const GivenDense* given);
  void ensure_scratch();  // the threads' scratch for building stacks, made at the first tick that builds them
  void leave_plan();    // the rows get the blocks of the ticks replayed so far; recording goes on from there
  void reserve_rows();  // each row's list reserved for the blocks it is expected to end with
  void record_tick(const PanelView& a, const BlockLayout& a_layout, const PanelView& b, std::int64_t grow_before);
  void merge_rows(IndexArray& row_ptr, IndexArray& cols, IndexArray& offsets);  // C's index from the rows
  // A thread's share of C's room in a tick of several threads' one pass (local_product_work.hpp).
  struct Slab;
  void join_slabs(const std::vector<Slab>& slab);  // their new blocks one after the other, C cut back to them
  // Several threads' one pass into slabs of C's room (multiply_tick's traversal given).
  template <class Traverse, class VisitRow, class RowBound>
  bool slab_rounds(const PanelView& a, const PanelView& b, const int* a_c_row, std::int64_t tick_start,
                   std::vector<int>& from, Traverse& for_each_product, VisitRow& visit_row, RowBound& row_bound);
  // The last tick's filter (filter_last_tick, local_product_last_tick.{hpp,cpp}): thread w's A rows
  // [ar0, ar1) computed into its work area, their kept blocks into `kept` (multiply_tick's
  // traversal given); returns where the kept values end.
  template <class VisitRow>
  std::int64_t filter_rows(ThreadWork& w, const PanelView& a, const int* a_c_row, int ar0, int ar1, VisitRow& visit_row,
                           StackPass& stack, std::int64_t& c_end, WorkAreaSession& work, MatrixData& kept,
                           std::int64_t visits);
  // The blocks of A rows [ar0, ar1), whose C rows are complete and lie in the work area `work` up
  // to region_end, that reach the threshold go to `kept` from kept_end on, in C's order, their
  // offsets with them; returns where they end.
  std::int64_t keep_large_blocks(ThreadWork& w, const PanelView& a, const int* a_c_row, int ar0, int ar1,
                                 const double* work, std::int64_t region_end, ColumnOrder& order, MatrixData& kept,
                                 std::int64_t kept_end);
  // The threads' kept blocks one after the other in thread 0's area (C's own), the offsets in
  // their rows with them, and that area back in the session as C's; returns C's size.
  std::int64_t join_kept(std::vector<MatrixData>& kept);
  // A numeric pass's counts and times into its thread's stats.
  static void account(ThreadWork& w, const StackPass& stack, double seconds_in_all);
  static void release_scratch(ThreadWork& w);  // a thread's scratch back to the pool (finish)
  BlockLayout layout_;
  std::vector<int> row_ids_;
  std::vector<double> row_eps_;
  std::vector<std::unique_ptr<ThreadWork>> work_;
  std::function<void()> progress_;
  bool host_ = true;                        // the kernel works on host memory: with one thread, one pass per tick
  std::unique_ptr<KernelSession> session_;  // holds C's values; each thread writes only its own rows' blocks
  // session_, where its backend is a host one: it may take dense ticks, and the one pass reserves
  // C's room through it.
  HostSession* host_session_ = nullptr;
  const HostKernel* dense_kernel_ = nullptr;  // that backend: from what size it takes them (HostKernel::dense_min_size)
  std::int64_t c_values_ = 0;               // size of C's value area
  std::int64_t reserved_values_ = 0;        // C's area reserved up front (its start, or expected_values)
  double last_tick_eps_ = 0;                // filter_last_tick's threshold; 0: not called
  bool last_tick_done_ = false;             // the tick filter_last_tick declared the last has run
  bool filtered_ = false;                   // that tick dropped C's small blocks
  std::vector<int> first_row_;  // first CSR row of each thread, size threads + 1
  memory::vector<int, memory::Category::Other> c_row_of_;  // global block row -> CSR row of C, or -1
  LocalMultiplyStats stats_;
  // Plans (ProductPlans): the candidates (before the first tick), the plan being replayed and the
  // ticks replayed from it, and the plan this product records (null: none).
  ProductPlans* plans_ = nullptr;
  std::vector<std::shared_ptr<const plan::ProductPlan>> candidates_;
  std::shared_ptr<const plan::ProductPlan> replay_;
  std::size_t replayed_ = 0;
  std::unique_ptr<plan::ProductPlan> record_;
  std::shared_ptr<const plan::ProductPlan> key_of_;  // a plan with this product's key, which record_ lacks
  std::int64_t lookup_ = 0;                          // this product's lookup in plans_ (ProductPlans::candidates)
  std::int64_t record_bytes_ = 0;
  std::size_t row_blocks_ = 0;  // the blocks a row's list is reserved for (reserve_rows)
};

/// Sets `poll` as the progress call (LocalProduct::set_progress) of every product for the life of
/// this object and clears it afterwards, also when an error unwinds: a poll that refers to a
/// strategy's locals (its mpi::Traffic) never outlives them.
class ProgressScope {
 public:
  ProgressScope(std::vector<LocalProduct*> products, const std::function<void()>& poll)
      : products_(std::move(products)) {
    for (LocalProduct* p : products_) p->set_progress(poll);
  }
  ~ProgressScope() {
    for (LocalProduct* p : products_) p->set_progress({});
  }
  ProgressScope(const ProgressScope&) = delete;
  ProgressScope& operator=(const ProgressScope&) = delete;

 private:
  std::vector<LocalProduct*> products_;
};

/// Partition of rows over threads: contiguous ranges, each with about the same total weight.
/// Returns the first row of each thread (size threads + 1).
std::vector<int> balance_rows(const std::vector<std::int64_t>& weight, int threads);

}  // namespace plexus
