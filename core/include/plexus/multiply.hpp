#pragma once
// The distributed multiply: one driver in core, and the interface a multiply algorithm implements.
//
//   C = alpha * op(A) * op(B) + beta * C,   op(X) = X or X^T
//
// The driver (plexus::multiply) owns everything every algorithm needs alike, in this order:
// validation of the operands (before any work), the transposes (a counted redistribution),
// alpha (applied to one copy of op(A)), DBCSR's on-the-fly filtering thresholds, the accumulator
// of C (starting from beta * C), final filtering, retain_sparsity, and the report. C is left
// untouched until the algorithm has returned its new local panel, so C may be A and/or B: no
// algorithm has to think about aliasing. A MultiplyAlgorithm supplies only its schedule and its
// data movement (run), and the model of both (model).
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "plexus/figures.hpp"
#include "plexus/kernel.hpp"
#include "plexus/local_multiply.hpp"
#include "plexus/matrix.hpp"
#include "plexus/mpi.hpp"
#include "plexus/panel.hpp"

namespace plexus {

struct MultiplyOptions {
  double filter_eps = 0.0;       ///< on-the-fly filtering and final filtering of C; 0 disables
  bool retain_sparsity = false;  ///< C keeps exactly the block pattern it had before the multiply
};

/// What one multiply did on this rank: counted, never estimated.
struct MultiplyReport {
  std::string strategy;
  std::string kernel;
  int ticks = 0;
  double seconds = 0;             ///< whole multiply on this rank
  double kernel_seconds = 0;      ///< stacks processed by the kernel
  double stack_seconds = 0;       ///< building stacks
  double flops = 0;               ///< 2*m*n*k over the products computed on this rank
  std::int64_t products = 0;
  std::int64_t skipped_products = 0;  ///< by on-the-fly filtering; see extra "skipped_products_not_counted"
  std::int64_t ticks_with_products = 0;  ///< local products' ticks (over every accumulator) that had products
  std::int64_t replayed_ticks = 0;       ///< of them, ticks whose stacks came from a plan (ProductPlans)
  std::int64_t dense_ticks = 0;          ///< of them, ticks computed as dense products (HostKernel::dense_min_size)
  std::int64_t plans_not_kept = 0;       ///< local products' plans not kept for lack of room (ProductPlans)
  std::array<mpi::RoleCounts, mpi::kRoles> traffic{};  ///< per role A, B, C, Other
  std::int64_t peak_buffer_bytes = 0;   ///< peak of communication buffers during the multiply
  std::int64_t peak_memory_bytes = 0;   ///< peak of all tracked host memory during the multiply
  std::int64_t peak_device_bytes = 0;   ///< peak of device memory the local backend held (0 on the host)
  /// Strategy-specific figures (documented by the strategy). "skipped_products_not_counted" (1):
  /// the algorithm's products are computed where it cannot count them (an external library), so
  /// products and skipped_products say nothing about them.
  Figures extra;

  double wait_seconds() const;
  std::int64_t bytes_sent() const;  ///< data + index, all roles
  std::int64_t messages_sent() const;
};

/// Timed steps (multiplies, measurements) kept as totals: each step's seconds and its seconds
/// beyond kernel and wait time, in order, and every other figure of their reports added up (ticks
/// and peaks: the largest). What a run of any length holds of its steps: 16 bytes a step
/// (SolverResult::step_totals, StepDetail::Totals).
struct StepTotals {
  std::vector<double> seconds;  ///< each step's MultiplyReport::seconds
  std::vector<double> beyond;   ///< each step's seconds - kernel_seconds - wait_seconds()
  /// The steps' reports added up: times, flops, counts, traffic and extra figures summed; ticks
  /// and the peaks the largest; strategy and kernel the first step's.
  MultiplyReport sum;

  std::size_t count() const { return seconds.size(); }
  bool empty() const { return seconds.empty(); }
  /// One more step.
  void add(const MultiplyReport& r);
  /// Another run's steps after these.
  void append(const StepTotals& other);
};

/// A problem for the dry-run model: a PR x PC grid whose every rank holds local panels of A, B
/// and C of these sizes (bytes of values), spread evenly over the k indices.
struct ModelSpec {
  int nprows = 1, npcols = 1;
  std::int64_t bytes_a = 0, bytes_b = 0, bytes_c = 0;
};

/// What one rank of a multiply will do, predicted by the algorithm's own schedule.
struct ModelPrediction {
  int ticks = 0;
  std::int64_t bytes_a = 0, bytes_b = 0, bytes_c = 0;  ///< data bytes each rank receives (A, B) and sends (C)
  std::int64_t buffer_bytes = 0;                       ///< communication buffers (values), the paper's footprint
  std::string note;                                    ///< e.g. the layer count actually used
};

/// What the driver hands an algorithm for one multiply. The operands are op(A) already scaled by
/// alpha and op(B); neither shares storage with the C that will receive the result. All
/// accumulators are owned by the task and live until the driver has written the report.
class MultiplyTask {
 public:
  /// plans: where the accumulators look for plans of earlier products and leave theirs (null: none).
  MultiplyTask(const DistMatrix& a, const DistMatrix& b, const DistMatrix& c, double beta, Kernel& kernel,
               const MultiplyOptions& options, std::vector<double> thresholds, ProductPlans* plans = nullptr);
  ~MultiplyTask();
  MultiplyTask(const MultiplyTask&) = delete;
  MultiplyTask& operator=(const MultiplyTask&) = delete;

  /// op(A) * alpha: its rows are distributed like C's rows.
  const DistMatrix& a() const { return a_; }
  /// op(B): its columns are distributed like C's columns.
  const DistMatrix& b() const { return b_; }
  /// The target: its distribution and layout. Its values are those before the multiply.
  const DistMatrix& c() const { return c_; }
  /// C's factor: the accumulators start from beta * C. An algorithm that computes outside them
  /// (an external library given C itself) applies it.
  double beta() const { return beta_; }
  Kernel& kernel() const { return kernel_; }
  const MultiplyOptions& options() const { return options_; }

  /// DBCSR's on-the-fly filtering threshold of every global block row of C (empty: no filtering).
  const std::vector<double>& thresholds() const { return thresholds_; }

  /// The accumulator of this rank's C panel, starting from beta * C, its threads balanced by the
  /// blocks of A and C in each row. Made on the first call; later calls return the same one.
  LocalProduct& c_accumulator();
  /// For an algorithm whose next tick of c_accumulator() is that accumulator's last, and whose
  /// result is its finish() as it is (nothing added or reduced into it afterwards): that tick may
  /// apply the multiply's final filter (MultiplyOptions::filter_eps) itself, dropping C's small
  /// blocks while they are in the caches (LocalProduct::filter_last_tick); the driver then does not
  /// filter C again. Does nothing where the multiply does not filter C.
  void filter_in_last_tick();
  /// Whether c_accumulator()'s last tick filtered C (driver use).
  bool c_filtered() const;
  /// A further accumulator over the given global block rows (ascending), starting empty: a
  /// partial C panel that the algorithm sends to its owner (e.g. 2.5D's other layers).
  LocalProduct& partial_accumulator(const std::vector<int>& rows);

  /// The multiply's counted traffic. An algorithm may count in its own Traffic objects and
  /// absorb() them here before it returns.
  mpi::Traffic& traffic() { return traffic_; }
  /// The report being built: an algorithm sets `ticks` and its own `extra` figures, and `flops`
  /// when it computes outside the accumulators handed out here (the driver adds theirs).
  MultiplyReport& report() { return report_; }

  /// Sum of the statistics of every accumulator handed out (driver use).
  LocalMultiplyStats stats() const;
  /// The plans the accumulators handed out here use (null: none). An algorithm that makes
  /// accumulators of its own may give them these.
  ProductPlans* plans() const { return plans_; }

 private:
  const DistMatrix& a_;
  const DistMatrix& b_;
  const DistMatrix& c_;
  double beta_;
  Kernel& kernel_;
  MultiplyOptions options_;
  std::vector<double> thresholds_;
  std::unique_ptr<LocalProduct> c_acc_;
  std::vector<std::unique_ptr<LocalProduct>> partial_;
  mpi::Traffic traffic_;
  MultiplyReport report_;
  ProductPlans* plans_ = nullptr;
};

/// A multiply algorithm: its schedule and its data movement, nothing else.
class MultiplyAlgorithm {
 public:
  virtual ~MultiplyAlgorithm();  // key function, defined in libplexus_core
  virtual std::string name() const = 0;

  /// The distribution this algorithm wants for an operand, given a proposal (default: the proposal).
  virtual std::shared_ptr<const Distribution> distribution_for(std::shared_ptr<const Distribution> proposal) const;

  /// Throws plexus::Error when the operands' distributions do not suit the algorithm (e.g. the
  /// ring's P x 1 grid). Called by the driver before any work, on every rank alike. Default: any.
  virtual void check_operands(const DistMatrix& A, const DistMatrix& B, const DistMatrix& C) const;

  /// Computes and returns this rank's new C panel: task.c_accumulator() after every product
  /// A(i,k) * B(k,j) of the schedule has been added (through it or through partial
  /// accumulators reduced into it). Collective over the grid. Must not modify the operands.
  virtual Panel run(MultiplyTask& task);

  /// The dry-run model for rank (prow, pcol) of spec's grid, without moving data or needing
  /// MPI: the same schedule the real run follows. Default: not modelled (nullopt).
  virtual std::optional<ModelPrediction> model(const ModelSpec& spec, int prow, int pcol) const;

  /// A fused D^2 and D^3 of a symmetric D (Huang and Chow's SymmSquareCube), which purification
  /// asks for in every iteration. An algorithm that provides one sets D2 = D D and D3 = D D D
  /// (filtered as `options` say; D2 and D3 have D's layout and distribution and are replaced),
  /// appends one report per multiply-equivalent it ran to `reports`, and returns true. Collective
  /// over D's grid. Default: false, nothing done (the caller multiplies twice).
  virtual bool square_and_cube(Kernel& kernel, const DistMatrix& D, DistMatrix& D2, DistMatrix& D3,
                               const MultiplyOptions& options, std::vector<MultiplyReport>& reports);
};

/// 'N' (op(X) = X) or 'T' (op(X) = X^T).
enum class Trans : char { N = 'N', T = 'T' };

/// C = alpha * op(A) * op(B) + beta * C through `algorithm` and `kernel`. C may be A and/or B.
/// Requirements (checked before any work, the same on every rank): A, B and C on one grid,
/// finalized; op(A)'s columns match op(B)'s rows, C's layout is op(A)'s rows by op(B)'s columns,
/// C's rows are distributed like op(A)'s rows (A's columns when transposed) and C's columns
/// like op(B)'s columns. A transposed operand is produced by one counted block exchange
/// (reported under its role). Collective over the grid.
/// `plans`: the local products' plans (ProductPlans; null: none), as Context::product_plans() for
/// multiply(ctx, ...).
MultiplyReport multiply(MultiplyAlgorithm& algorithm, Kernel& kernel, Trans trans_a, Trans trans_b, double alpha,
                        const DistMatrix& A, const DistMatrix& B, double beta, DistMatrix& C,
                        const MultiplyOptions& options = {}, ProductPlans* plans = nullptr);

/// X^T on `target` (a distribution of X's columns by X's rows over X's grid): one counted
/// all-to-all block exchange (role `role` in `traffic`), blocks transposed locally. Collective.
DistMatrix transpose(const DistMatrix& X, std::shared_ptr<const Distribution> target, mpi::Traffic& traffic,
                     mpi::Role role = mpi::Role::Other);
/// The distribution of X^T: X's column map for its rows and X's row map for its columns on a
/// square grid; block-cyclic otherwise.
std::shared_ptr<const Distribution> transposed_distribution(const DistMatrix& X);
/// X^T on transposed_distribution(X). Collective.
DistMatrix transpose(const DistMatrix& X);

}  // namespace plexus
