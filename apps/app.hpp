#pragma once
// Pieces of the `plexus` program shared by its subcommands: the top-level parameter list, run
// summaries reduced over ranks, and small output helpers.
#include <mpi.h>

#include <cstddef>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "build_info.hpp"
#include "plexus/comm_strategy.hpp"
#include "plexus/context.hpp"
#include "plexus/descriptor.hpp"
#include "plexus/error.hpp"
#include "plexus/parameters.hpp"
#include "plexus/solver.hpp"
#include "plexus/timers.hpp"

namespace plexus::app {

struct Options;

/// A command-line mistake: reported on rank 0, exit code 2, identical on every rank.
class UsageError : public InputError {
 public:
  using InputError::InputError;
  ~UsageError() override;
};

// ---- parameters -----------------------------------------------------------------------------

/// The valid top-level list (Solver, Problem, Communication, Kernel, Output and one sublist per
/// solver) for the components currently registered. Component sublists are empty here; each
/// component validates its own.
ParameterListPtr top_level_valid();

/// Validates the whole user list in place and fills every default: the top level, Problem,
/// Output, the selected (and every other present) solver, strategy and kernel sublist.
void validate_top_level(ParameterList& user);

struct Selection {
  std::string solver;
  std::string strategy;     ///< the multiply algorithm: Communication/Multiply, or the Strategy shorthand
  std::string collectives;  ///< a collectives component to select, or empty: the strategy's own
  std::string kernel;
};
/// The parameters of a validated list whose values differ from the defaults that the program and
/// its components declare (or that nothing declares), as "Path/Key=value" (the form of --set), in
/// the list's order.
std::vector<std::string> non_default_assignments(const ParameterList& validated);

/// The names selected by a validated list.
Selection selection_of(const ParameterList& validated);

/// A copy of the validated component sublist `sublist` holding only the parameters component
/// `name` of `kind` declares: a strategy and collectives of one name share one sublist, which holds
/// the parameters of both when the run uses the component as both.
ParameterList own_parameters(const ParameterList& sublist, ComponentKind kind, const std::string& name);

/// The validated `Timing` sublist: how `run` and `compare` repeat the solver so that timings can
/// be trusted (see docs/user-guide.md, "Timing").
struct TimingPlan {
  int warm_up = 1;     ///< solver runs per combination before the counted ones (not counted)
  int rounds = 1;      ///< counted solver runs per combination
  bool rotate = true;  ///< compare: each round starts with another combination (Order = rotated)
  int total_rounds() const { return warm_up + rounds; }
  bool is_warm_up(int round) const { return round < warm_up; }
};
TimingPlan timing_of(const ParameterList& validated);

/// The order in which `compare` runs its n combinations in round `round` (0-based, warm-up rounds
/// first) of `total` rounds: 0, 1, ..., n-1 when not rotating; rotated, round r starts with
/// combination (r - (total-1)) mod n, so that over n consecutive rounds every combination takes
/// every position once and the last round runs in the given order.
std::vector<std::size_t> round_order(std::size_t n, int round, int total, bool rotate);

/// Min, median (mean of the two middle values for an even count), mean and max of a sample; all
/// zero for an empty one.
struct TimeStats {
  double min = 0, median = 0, mean = 0, max = 0;
};
TimeStats time_stats(std::vector<double> seconds);

// ---- reports --------------------------------------------------------------------------------

/// What the multiplies of one run did, reduced over ranks (every rank gets the same values).
struct Summary {
  int multiplies = 0;
  int ranks = 1;
  std::vector<double> times;  ///< seconds of each multiply, max over ranks, in the order run
  double seconds_min = 0;     ///< min of `times`
  double seconds_median = 0;  ///< median of `times`
  double seconds = 0;         ///< mean of `times`
  double seconds_max = 0;     ///< max of `times`
  double flops = 0;           ///< per multiply, sum over ranks
  /// Per multiply, the busiest rank's flops (max over ranks): with `flops`, how evenly the
  /// distribution spreads the products (work_balance()).
  double flops_max = 0;
  double gflops = 0;          ///< flops / seconds_median * 1e-9
  double bytes_max = 0;       ///< bytes sent per multiply, max over ranks
  double bytes_avg = 0;       ///< bytes sent per multiply, average over ranks
  double volume_max = 0;      ///< data bytes received per multiply (one-sided gets included), max over ranks
  double volume_avg = 0;      ///< the same, average over ranks
  double model_max = -1;      ///< the strategy's predicted volume (predicted_bytes_received), max; -1: none
  /// Data and index bytes received from other ranks per multiply (what crosses a network: the
  /// volume less a rank's transfers from itself, plus the index), average over ranks.
  double network_avg = 0;
  double messages_max = 0;    ///< messages sent per multiply, max over ranks
  double messages_avg = 0;
  double wait_max = 0;         ///< wait seconds per multiply, max over ranks
  double kernel_seconds = 0;   ///< kernel seconds per multiply, max over ranks
  double ticks_max = 0;        ///< the algorithm's ticks per multiply, max over multiplies and ranks
  /// Local products' ticks with products, and those replayed from plans (Kernel/PlanMiB): summed
  /// over the multiplies and the ranks.
  double product_ticks = 0, replayed_ticks = 0;
  /// Local products' plans not kept for lack of room (Kernel/PlanMiB), summed alike.
  double plans_not_kept = 0;
  /// Of them, the ticks computed as dense products (Kernel/cpu/DenseMinSize), summed alike.
  double dense_ticks = 0;
  /// What a multiply spends beyond its kernel and its waits: per multiply the largest over ranks
  /// of (seconds - kernel - wait) on that rank, then the median over the multiplies (index work,
  /// packing, copies, allocation, MPI calls that do not wait).
  double beyond_kernel_wait_median = 0;
  double peak_buffer_max = 0;  ///< peak communication buffer bytes, max over multiplies and ranks
  double peak_memory_max = 0;  ///< peak tracked memory bytes, max over multiplies and ranks
  double peak_device_max = 0;  ///< peak device memory of the local backend, max over multiplies and ranks
  /// Strategy-specific figures (MultiplyReport::extra named on rank 0): per multiply, max over ranks.
  std::map<std::string, double> extra;

  /// The busiest rank's flops over the average rank's: 1 where the products are spread evenly
  /// (and where there are none). The speed-up over one rank is at most ranks / this. NaN where the
  /// strategy cannot count its ranks' products (extra "skipped_products_not_counted": an external
  /// library such as DBCSR, whose flop count is the ranks' average).
  double work_balance() const {
    const auto uncounted = extra.find("skipped_products_not_counted");
    if (uncounted != extra.end() && uncounted->second > 0) return std::numeric_limits<double>::quiet_NaN();
    return flops > 0 ? flops_max * ranks / flops : 1.0;
  }
};
/// Collective over comm; every rank must pass the same number of reports.
Summary summarize(const std::vector<MultiplyReport>& reports, MPI_Comm comm);
/// The same from steps kept as totals (StepTotals): the same figures.
Summary summarize(const StepTotals& steps, MPI_Comm comm);

/// One kind of operation ("operation/component", e.g. "multiply/cannon", "circulate/ring") over
/// the counted solver runs: per run, max over ranks.
struct OperationSummary {
  double count = 0;                      ///< operations per run
  double seconds = 0;                    ///< their seconds summed, per run
  double bytes_received = 0;             ///< data bytes received, per run
  double predicted_bytes_received = -1;  ///< the operations' models, per run; -1: no model
};
/// The operations of `runs` solver runs (SolverResult::operations, concatenated), named as rank 0
/// names them. Collective over comm.
std::map<std::string, OperationSummary> summarize_operations(const std::vector<OperationReport>& ops, int runs,
                                                             MPI_Comm comm);

/// A text table: the first two columns left-aligned, the others right-aligned; `rule` draws a
/// line under the head.
std::string format_table(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& cells,
                         bool rule);
std::string format_bytes(double bytes);

// ---- what every output file carries ------------------------------------------------------------

/// main() keeps the program's command line here, for the metadata of its output files.
void set_command_line(int argc, char** argv);

/// What every JSON and CSV file of the program carries, so that a result can be repeated and
/// plotted without the shell history that made it: the build (version, git, configuration), the
/// date, the host and MPI library, the job's shape, the timing plan and the complete parameter
/// list (JSON: the object "metadata"; CSV: comment lines before the header, csv_preamble()).
struct RunMetadata {
  std::string command;                        ///< run, compare, perf, model, logp, plugins
  int ranks = 1;                              ///< MPI ranks of the job
  std::string grid;                           ///< the process grid ("2x2"), "" when the command has none
  int threads_per_rank = 0;                   ///< OpenMP threads per rank, 0 when the command runs none
  const ParameterList* parameters = nullptr;  ///< the complete, validated list, when there is one
  std::string parameters_file;                ///< where that list was saved, "" when it was not
  int warm_up = -1, rounds = -1;              ///< the timing plan, -1 when the command has none
  std::string order;                          ///< "rotated" or "fixed" (compare), else ""
};
nlohmann::json metadata_json(const RunMetadata& m);
/// The metadata as CSV comment lines, "# key: value", nested keys joined by '/' (the parameters
/// one per line: "# parameters/Problem/Blocks: 192"); readers skip them (pandas: comment='#').
std::string csv_preamble(const nlohmann::json& metadata);
/// The phase timers' statistics (plexus/timers.hpp) as a JSON array: name, calls, min, mean, max
/// (seconds over ranks), calls_at_min, calls_at_max.
nlohmann::json phases_json(const std::vector<timers::Stat>& stats);
/// Named figures as a JSON object (NaN and infinities as null).
nlohmann::json json_figures(const std::map<std::string, double>& figures);
/// A number for JSON: null where JSON has none (NaN, infinities).
nlohmann::json json_number(double v);

/// What `plexus run --json` writes (rank 0's view; the summaries are already reduced over ranks).
struct RunRecord {
  std::string solver, strategy, kernel, grid;
  int ranks = 1;
  std::vector<double> run_seconds;  ///< each counted solver run, its slowest rank
  const Summary* summary = nullptr;
  const std::map<std::string, OperationSummary>* operations = nullptr;
  const SolverResult* result = nullptr;  ///< figures and history of the last counted run
  nlohmann::json metadata;               ///< metadata_json() of the run
  nlohmann::json phases;                 ///< phases_json() of the counted runs
};
/// The JSON text of a run (NaN and infinite figures as null).
std::string run_json(const RunRecord& r);

// ---- commands in files of their own -----------------------------------------------------------

/// The program's handling of errors (apps/app_job.hpp), passed to the commands of plexus_app (which
/// the app unit tests also link, without the program's own files).
struct Phases {
  /// setup_phase(): runs set-up code; true when every rank succeeded, else false with the exit code
  /// (2 for a UsageError) after rank 0 told the error once; an error on some ranks only ends the job.
  std::function<bool(const std::function<void()>& setup, int& exit_code)> setup;
  /// agreed(): an InputError of a check that may differ between ranks is thrown on every rank.
  /// Collective.
  std::function<void(const std::function<void()>& check)> agreed;
  /// run_or_abort() without a watchdog: an exception on any rank ends the job with its message.
  std::function<void(const std::function<void()>& phase)> run;
};

/// `plexus logp` (apps/app_logp.cpp) and its --help text.
extern const char* const kLogpHelp;
int command_logp(const Options& o, int rank, int size, const Phases& phases);

/// `plexus perf` (apps/app_perf.cpp) and its --help text: reads the .perf file o.file, translates
/// it and hands the parameter list to `compare` (apps/app_compare.cpp, which takes it in place of a
/// parameter file).
extern const char* const kPerfHelp;
int command_perf(const Options& o, int rank, int size, const Phases& phases,
                 const std::function<int(const Options&, ParameterListPtr)>& compare);

}  // namespace plexus::app
