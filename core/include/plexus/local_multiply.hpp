#pragma once
// The local part of a distributed multiply: C_local += A_panel * B_panel over several panel pairs
// (ticks), with OpenMP threads owning whole C block rows (balanced by block count), stacks of
// small products built by core with on-the-fly filtering, processed by a local backend (Kernel)
// that holds C's values from the constructor to finish().
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "plexus/kernel.hpp"
#include "plexus/layout.hpp"
#include "plexus/memory.hpp"
#include "plexus/panel.hpp"

namespace plexus {

struct LocalMultiplyStats {
  double flops = 0;               ///< 2*m*n*k summed over the products computed
  std::int64_t products = 0;      ///< products computed
  std::int64_t skipped = 0;       ///< products skipped by on-the-fly filtering
  double stack_seconds = 0;       ///< building stacks (max over threads)
  double kernel_seconds = 0;      ///< inside Kernel::process (max over threads)
  LocalMultiplyStats& operator+=(const LocalMultiplyStats& o);
};

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
  /// in finish().
  LocalProduct(const PanelView& c_start, const BlockLayout& c_layout, Kernel& kernel, int threads,
               std::vector<double> row_eps, const std::vector<std::int64_t>& row_weight = {}, double c_scale = 1.0,
               std::int64_t expected_values = 0);
  ~LocalProduct();
  LocalProduct(const LocalProduct&) = delete;
  LocalProduct& operator=(const LocalProduct&) = delete;

  /// C += A * B (one tick: the kernel's session stages A and B, processes the stacks and
  /// unstages them before this returns, so the panels may be reused afterwards). A's rows must be
  /// a subset of C's rows (same global ids); B's rows are the k indices. k sizes come from
  /// a_layout.cols (must equal b_layout.rows). Norms are computed here when filtering is on.
  void multiply(const PanelView& a, const BlockLayout& a_layout, const PanelView& b, const BlockLayout& b_layout);
  int threads() const { return static_cast<int>(work_.size()); }
  /// `poll` is called between the stacks a tick hands to the kernel, on the thread that called
  /// multiply() (the first thread of the OpenMP team), so that transfers the caller has in flight
  /// progress while the products run (e.g. mpi::Traffic::test). Empty: no calls. It may throw;
  /// the tick then fails with its error.
  void set_progress(std::function<void()> poll) { progress_ = std::move(poll); }
  /// The accumulated C, blocks sorted by (row, col). The object is empty afterwards.
  Panel finish();
  const LocalMultiplyStats& stats() const { return stats_; }

 private:
  struct ThreadWork;
  BlockLayout layout_;
  std::vector<int> row_ids_;
  std::vector<double> row_eps_;
  std::vector<std::unique_ptr<ThreadWork>> work_;
  std::function<void()> progress_;
  bool host_ = true;                        // the kernel works on host memory: with one thread, one pass per tick
  std::unique_ptr<KernelSession> session_;  // holds C's values; each thread writes only its own rows' blocks
  std::int64_t c_values_ = 0;               // size of C's value area
  std::int64_t reserved_values_ = 0;        // C's area reserved up front (its start, or expected_values)
  std::vector<int> first_row_;  // first CSR row of each thread, size threads + 1
  memory::vector<int, memory::Category::Other> c_row_of_;  // global block row -> CSR row of C, or -1
  LocalMultiplyStats stats_;
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
