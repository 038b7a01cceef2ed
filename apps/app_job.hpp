#pragma once
// What the `plexus` program's commands share (apps/app_job.cpp): how a job ends on an error (set-up
// errors agreed by every rank, errors of the timed phase ending the job with MPI_Abort), the cores
// and threads, the components a run makes and frees, and what a run prints about its parameters
// and its phases. Each command lives in a file of its own (app_run.cpp, app_compare.cpp,
// app_model.cpp, app_plugins.cpp, app_g4_diff.cpp, declared below; app_logp.cpp and app_perf.cpp,
// declared in app.hpp); main() and the dispatch are in plexus.cpp.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "app.hpp"
#include "app_cli.hpp"
#include "plexus/comm_strategy.hpp"
#include "plexus/context.hpp"
#include "plexus/error.hpp"
#include "plexus/kernel.hpp"
#include "plexus/mpi.hpp"
#include "plexus/parameters.hpp"
#include "plexus/progress.hpp"
#include "plexus/solver.hpp"
#include "plexus/timers.hpp"

namespace plexus::app {

// ---- errors ---------------------------------------------------------------------------------

/// An error's message for the user: what and where, and for std::bad_alloc what ran out and during
/// `phase` (e.g. "the set-up").
std::string describe_error(const std::exception& e, const char* phase = nullptr);

/// Prints the error of this rank and ends the whole job. Never returns.
[[noreturn]] void abort_job(int rank, const std::string& message, bool same_on_every_rank);

/// Runs the set-up (no collective work inside): if every rank fails, rank 0 tells the error once
/// and all ranks leave together (exit_code 2 for usage errors, else 1); if only some ranks fail,
/// they tell theirs and the job is aborted. Returns true when every rank succeeded.
template <class F>
bool setup_phase(F&& setup, int rank, int size, int& exit_code) {
  std::string message;
  int failed = 0;
  bool usage = false;
  try {
    setup();
  } catch (const UsageError& e) {
    failed = 1;
    usage = true;
    message = e.what();
  } catch (const std::exception& e) {
    failed = 1;
    message = describe_error(e, "the set-up");
  }
  int count = 0;
  MPI_Allreduce(&failed, &count, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (count == 0) return true;
  if (count == size) {
    if (rank == 0) {
      if (usage)
        std::fprintf(stderr, "plexus: %s\nRun 'plexus --help' for usage.\n", message.c_str());
      else
        std::fprintf(stderr, "plexus: error on rank 0: %s\n", message.c_str());
      std::fflush(stderr);
    }
    exit_code = usage ? 2 : 1;
    return false;
  }
  if (failed) abort_job(rank, message, false);
  // A failing rank prints its message and calls MPI_Abort, which ends every rank: the others
  // wait in a barrier the failing ranks never enter, so nothing ends the job before the message.
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

/// Hidden test hook: PLEXUS_TEST_FAIL_RANK=R makes rank R throw once the run has started.
void maybe_fail_for_test(int rank);

/// Runs the timed phase. An exception ends the job here. The frames between the throw and here
/// unwind, and no destructor makes a collective call while the stack unwinds
/// (progress::unwinding()); the components live outside the phase, so their teardown (collective
/// calls: windows, communicators) is never reached by a failing rank. With a timeout
/// (Output/TimeoutSeconds), a watchdog ends the job when this rank makes no progress that long.
template <class F>
void run_or_abort(F&& phase, int rank, double timeout_seconds) {
  progress::Watchdog watchdog(
      timeout_seconds, [rank](const std::string& message) { abort_job(rank, message + "; ending the job", false); });
  try {
    phase();
  } catch (const InputError& e) {
    abort_job(rank, describe_error(e), true);
  } catch (const std::exception& e) {
    abort_job(rank, describe_error(e, "the solver runs"), false);
  } catch (...) {
    abort_job(rank, "unknown exception", false);
  }
}

/// Output/TimeoutSeconds of a validated list.
double timeout_of(const ParameterList& validated);

/// Runs a set-up check whose answer may differ between ranks (a file only rank 0 writes) and makes
/// every rank agree: an InputError on any rank is thrown on every rank, with the message of the
/// lowest failing rank. Collective: every rank calls it at the same point, and nothing throws
/// between here and the collectives below, so a rank that failed cannot leave the others waiting
/// in a later collective of the set-up.
template <class F>
void agreed(F&& check) {
  std::string where, what;
  try {
    check();
  } catch (const InputError& e) {
    where = e.where();
    what = e.what();
  }
  const int rank = mpi::rank(MPI_COMM_WORLD), size = mpi::size(MPI_COMM_WORLD);
  int first = what.empty() ? size : rank;
  MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first == size) return;
  std::string text = where + '\n' + what;
  int len = static_cast<int>(text.size());
  MPI_Bcast(&len, 1, MPI_INT, first, MPI_COMM_WORLD);
  text.resize(static_cast<std::size_t>(len));
  MPI_Bcast(text.data(), len, MPI_CHAR, first, MPI_COMM_WORLD);
  const auto nl = text.find('\n');
  throw InputError(text.substr(0, nl), text.substr(nl + 1));
}

// ---- cores, plugins, parameters, components -------------------------------------------------

/// How the job's ranks and OpenMP threads sit on the cores: the node where they are most
/// oversubscribed (ranks x threads over the cores its ranks may run on).
struct CoreUse {
  int ranks = 1, threads = 1, cores = 1;
  bool chose_threads = false;  ///< OMP_NUM_THREADS was not set: threads = cores / ranks of the node
  bool waits_spin = false;     ///< MPI does not yield a waiting rank's core (mpi::open_mpi_waits_yield)
  bool oversubscribed() const { return ranks * threads > cores; }
};

/// Collective over MPI_COMM_WORLD, before the components are made (the cpu kernel takes its thread
/// count then). The cores of a node are those any of its ranks may run on (the union of their
/// affinity masks); PLEXUS_TEST_CORES=N pretends N (tests). Without OMP_NUM_THREADS, OpenMP would
/// start one thread per core in every rank: then each rank gets cores / ranks threads (at least 1).
CoreUse choose_threads();

/// Rank 0 tells the threads it chose and warns when ranks x threads exceed the cores: every
/// timing is then slower than the machine can do, by up to that factor. Where the ranks themselves
/// outnumber the cores and MPI does not yield while a rank waits, it says how to turn yielding on:
/// a waiting rank then spins through the time slices of the rank it waits for on its core.
void report_core_use(const CoreUse& u, int rank);

/// Loads the plugins; rank 0 tells what the plugin path had that could not be used.
void load_plugins(int rank);

/// The user's list: `given` (plexus perf's translation) or the parameter file, then --set.
ParameterListPtr load_parameters(const Options& o, int rank, const ParameterListPtr& given = Teuchos::null);

/// The log level is the invocation's: --log-level, else Output/LogLevel of the list. --log-level
/// stays out of the list, so that a saved list (--write-params) replays at its own level.
void configure_logging_for(const Options& o, const ParameterList& validated, int rank);

struct Components {
  std::shared_ptr<CommStrategy> strategy;
  std::shared_ptr<Kernel> kernel;
  std::unique_ptr<Solver> solver;
  /// The run's context: the strategy and kernel, the communicators the run makes (the strategy's
  /// collectives are bound to its pool), the operation log. Released by free_components().
  std::unique_ptr<Context> context;
};

/// The strategy, kernel, solver and context a validated list selects. Collective (the context's
/// communicators).
Components make_components(ParameterList& params);

/// The solver's own requirements on the components (Solver::check), at set-up, agreed by every
/// rank. Called once the components are stored where a failed set-up releases them.
void check_solver(const Components& c);

/// Every rank together: the context's communicators are freed, then the components. Never in a
/// destructor (an error on any rank ends the job with MPI_Abort before this could hang).
void free_components(Components& c);

SolverContext context_for(ParameterList& params, Components& c, bool quiet);

/// A strategy or kernel spec of --strategies, --kernels: name[:Key=Value[:Key=Value...]].
struct Spec {
  std::string text, name;
  std::vector<std::string> assignments;  // Key=Value
};
Spec parse_spec(const std::string& text, const char* option);

// ---- what a run prints ----------------------------------------------------------------------

/// "1 solver run", "3 solver runs" (`many`: an irregular plural).
std::string plural(long long n, const std::string& one, const std::string& many = "");

/// What a run or compare tells of its parameters (rank 0): the values other than the defaults, in
/// the form of --set, and where the complete list went; --echo-params prints the list itself.
/// Without --write-params or --no-params-file, the complete list goes to a new file of its own: the
/// run's record, never a file of the user's; not at a log level above info, where its path would
/// not be told. Returns where the list went ("" when nowhere, and on ranks other than 0).
std::string report_parameters(const ParameterList& params, const Options& o, int rank);

/// The program's own outputs (--csv, --json), checked by the rank that writes them before any
/// work (set-up errors on some ranks only end the job cleanly).
void check_outputs(const Options& o, int rank);

/// The progress line of long runs (plexus/progress.hpp): rank 0, unless --no-progress or a log
/// level above info.
void start_progress_line(const Options& o, int rank);

/// The phase table (plexus/timers.hpp) of the counted runs, on standard output after the summary:
/// at info level only, and not when standard output holds the JSON.
/// `what`: what was counted ("the 3 counted runs").
void print_phase_table(const std::vector<timers::Stat>& phases, const std::string& what, const Options& o);

// ---- the commands, each in a file of its own ------------------------------------------------

/// `plexus run` (apps/app_run.cpp) and its --help text.
extern const char* const kRunHelp;
int command_run(const Options& o, int rank, int size);

/// `plexus compare` (apps/app_compare.cpp) and its --help text. `given`: a parameter list to use
/// in place of the file (plexus perf).
extern const char* const kCompareHelp;
int command_compare(const Options& o, int rank, int size, const ParameterListPtr& given = Teuchos::null);

/// `plexus model` (apps/app_model.cpp) and its --help text.
extern const char* const kModelHelp;
int command_model(const Options& o, int rank, int size);

/// `plexus plugins` (apps/app_plugins.cpp) and its --help text.
extern const char* const kPluginsHelp;
int command_plugins(const Options& o, int rank, int size);

/// `plexus g4-diff` (apps/app_g4_diff.cpp) and its --help text.
extern const char* const kG4DiffHelp;
int command_g4_diff(const Options& o, int rank);

}  // namespace plexus::app
