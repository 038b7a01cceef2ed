#pragma once
// The context of a run (COSMA's cosma_context is the model): made once from the selected
// components, it owns every communicator the run duplicates or splits (one pool, freed by
// release() before MPI_Finalize, never in a destructor), the grids made from them, the default
// options, and the log of operation reports. Solvers receive it; nothing else is global.
#include <mpi.h>

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "plexus/collectives.hpp"
#include "plexus/comm_pool.hpp"
#include "plexus/distribution.hpp"
#include "plexus/figures.hpp"
#include "plexus/kernel.hpp"
#include "plexus/mpi.hpp"
#include "plexus/multiply.hpp"
#include "plexus/progress.hpp"

namespace plexus {

class CommStrategy;
class Context;

/// One entry of the context's log: what one operation did on this rank, counted. In
/// Context::totals() one report stands for `count` operations of one kind (operation and
/// component): its seconds, flops, traffic, predicted and extra figures are their sums, its peaks
/// the largest.
struct OperationReport {
  std::string operation;  ///< "multiply", "add", "redistribute", "transpose", ... or a solver phase
  std::string component;  ///< the algorithm or component that ran it ("core" for core's own)
  double seconds = 0;
  double flops = 0;
  std::array<mpi::RoleCounts, mpi::kRoles> traffic{};  ///< per role A, B, C, Other
  std::int64_t peak_buffer_bytes = 0;
  std::int64_t peak_memory_bytes = 0;  ///< host
  std::int64_t peak_device_bytes = 0;  ///< device memory of the local backend
  Figures predicted;  ///< the operation's model (e.g. bytes_received)
  Figures extra;      ///< component figures
  /// Operations this report stands for: 1, but in a total.
  std::int64_t count = 1;

  /// The general view of a multiply's report.
  static OperationReport of(const MultiplyReport& r);
  std::int64_t bytes_received() const;  ///< data + index, all roles
  /// Adds another report into this one, as a total does (sums; peaks: the larger; count: summed).
  void accumulate(const OperationReport& other);
};

/// What a solver run keeps of its steps and operations: every one (the default), or totals:
/// each kind of operation added up in one report (OperationReport::count says how many it stands
/// for), each timed step's seconds with the rest of its report summed (StepTotals), so that a run
/// of any length holds a few bytes a step (SolverContext::steps).
enum class StepDetail { Every, Totals };

/// Collects every operation the context records from its construction on, in order, however
/// many: what a solver's run did (SolverResult::operations). The context itself keeps only the
/// latest operations (Context::log()) and the totals, so that a program that multiplies without
/// end does not grow; a scope with StepDetail::Totals keeps one report per kind of operation
/// (operation and component), in the order each kind first came, and does not grow either. Any
/// number may be open at once (nested runs); each gets every operation. It may outlive its
/// context (it keeps what it collected); the context's functions are not thread-safe, and neither
/// is collecting.
class LogScope {
 public:
  explicit LogScope(Context& ctx, StepDetail detail = StepDetail::Every);
  /// The operations recorded since the scope opened (or since the last take()): each, or one
  /// total per kind (StepDetail::Totals).
  const std::vector<OperationReport>& operations() const { return state_->ops; }
  /// Hands them over and goes on collecting from empty.
  std::vector<OperationReport> take();

 private:
  friend class Context;
  struct State {
    std::vector<OperationReport> ops;
    StepDetail detail = StepDetail::Every;
    void collect(const OperationReport& r);
  };
  std::shared_ptr<State> state_;
};

/// Times one operation from construction to done() and records it in the context's log with
/// the traffic counted in traffic(), the memory peaks in between, and whatever the caller put
/// into report() (predicted figures, extras). Not thread-safe: one operation of one thread. It
/// resets the tracker's peaks when it starts, so it must not run inside another recorded
/// operation (a multiply, or an operation of the matrix API) whose peaks it would lower.
class OperationRecorder {
 public:
  OperationRecorder(Context& ctx, std::string operation, std::string component = "core");
  mpi::Traffic& traffic() { return traffic_; }
  OperationReport& report() { return report_; }
  /// Records the operation (once; a second call throws) and returns the report as recorded.
  OperationReport done();

 private:
  Context& ctx_;
  OperationReport report_;
  progress::Operation progress_;  // what the watchdog tells while this operation runs
  mpi::Traffic traffic_;
  double t0_ = 0;
  bool done_ = false;
};

class Context {
 public:
  /// comm: the run's ranks (duplicated once into the pool). The components are shared: the
  /// context keeps them alive as long as it lives.
  Context(MPI_Comm comm, std::shared_ptr<MultiplyAlgorithm> multiply, std::shared_ptr<Kernel> kernel);
  ~Context();  ///< calls no MPI function: call release() first
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  MPI_Comm comm() const { return comm_; }
  int rank() const;
  int size() const;
  CommPool& comms() { return pool_; }

  MultiplyAlgorithm& multiply_algorithm() const { return *multiply_; }
  Kernel& kernel() const { return *kernel_; }
  /// The strategy behind the multiply algorithm when it is one, else null.
  CommStrategy* strategy() const;
  /// The run's collectives: those selected with set_collectives(), else the strategy's own
  /// (CommStrategy::collectives()), else core's plain MPI ones. Bound to the context's pool.
  Collectives& collectives();
  const Collectives& collectives() const;
  /// Selects another collectives component (bound to the context's pool here).
  void set_collectives(std::shared_ptr<Collectives> c);

  /// Options multiply(ctx, ...) uses when given none.
  MultiplyOptions& multiply_defaults() { return multiply_defaults_; }
  /// The plans of the local products of multiply(ctx, ...): a multiply whose block patterns repeat
  /// an earlier one replays its stacks (ProductPlans, local_multiply.hpp; at most
  /// ProductPlans::kDefaultBytes unless set otherwise).
  ProductPlans& product_plans() { return *plans_; }

  /// A PR x PC x L grid over comm() (0: MPI_Dims_create chooses PR x PC; L = 1: a 2D grid), its
  /// communicators from the pool; made once per shape. Collective the first time. Its layered
  /// views (Grid::layered) take their communicators from the same pool.
  std::shared_ptr<const Grid> grid(int nprows = 0, int npcols = 0, int nlayers = 1);

  /// Records one operation: into the totals, the latest operations and every open LogScope.
  void record(OperationReport r);
  /// The latest operations, oldest first: at most log_capacity() of them.
  const std::deque<OperationReport>& log() const { return log_; }
  /// Every operation since the context was made (or the log cleared), one total per kind
  /// (operation and component), in the order each kind first came.
  const std::vector<OperationReport>& totals() const { return totals_; }
  /// Operations recorded since the context was made (or the log cleared): the totals' counts.
  std::int64_t recorded() const;
  /// Empties log() and totals(); open scopes keep what they collected.
  void clear_log();
  std::size_t log_capacity() const { return log_capacity_; }
  /// How many of the latest operations log() keeps (0: none); drops the oldest beyond it.
  void set_log_capacity(std::size_t n);
  /// A scope that collects every operation from now on (what one solver run did), each or as
  /// totals per kind.
  LogScope log_scope(StepDetail detail = StepDetail::Every) { return LogScope(*this, detail); }
  static constexpr std::size_t kDefaultLogCapacity = 1000;

  /// Frees the grids' and every other pooled communicator. Collective over comm(); before
  /// MPI_Finalize. Matrices on the context's grids must not be used afterwards.
  void release();

 private:
  CommPool pool_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::shared_ptr<MultiplyAlgorithm> multiply_;
  std::shared_ptr<Kernel> kernel_;
  std::shared_ptr<Collectives> collectives_;  // selected, or null: the strategy's
  MpiCollectives mpi_collectives_;             // when there is neither
  MultiplyOptions multiply_defaults_;
  std::map<std::tuple<int, int, int>, std::shared_ptr<const Grid>> grids_;
  friend class LogScope;
  std::deque<OperationReport> log_;
  std::size_t log_capacity_ = kDefaultLogCapacity;
  std::vector<OperationReport> totals_;
  std::vector<std::weak_ptr<LogScope::State>> scopes_;  // the open LogScopes
  std::unique_ptr<ProductPlans> plans_ = std::make_unique<ProductPlans>();
};

}  // namespace plexus
