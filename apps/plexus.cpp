// The `plexus` program: run a solver, compare strategies and kernels, list plugins.
#include <mpi.h>
#include <omp.h>
#include <sched.h>
#include <spdlog/fmt/fmt.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "app.hpp"
#include "app_cli.hpp"
#include "build_info.hpp"
#include "g4_hdf5.hpp"
#include "plexus/context.hpp"
#include "plexus/error.hpp"
#include "plexus/log.hpp"
#include "plexus/memory.hpp"
#include "plexus/mpi.hpp"
#include "plexus/output.hpp"
#include "plexus/parameters.hpp"
#include "plexus/progress.hpp"
#include "plexus/registry.hpp"
#include "plexus/solver.hpp"
#include "plexus/timers.hpp"

namespace plexus::app {
namespace {

// ---- usage ----------------------------------------------------------------------------------

const char* const kOverview =
    "plexus: distributed block-sparse matrix algebra with pluggable communication strategies and kernels\n"
    "\n"
    "Usage:\n"
    "  plexus run [FILE.xml] [--set Path/Key=value]... [--json FILE] [--write-params FILE] [--log-level LEVEL]\n"
    "  plexus compare [FILE.xml] --strategies S1,S2,... [--kernels K1,K2,...] [--set Path/Key=value]...\n"
    "                 [--csv FILE] [--json FILE] [--tolerance T] [--write-params FILE] [--log-level LEVEL]\n"
    "  plexus perf FILE.perf [--strategies S1,S2,...] [--kernels K1,...] [compare's options]\n"
    "  plexus plugins [--verbose] [--json FILE]\n"
    "  plexus model --strategies S1,S2,... --grid PRxPC --bytes SA[,SB[,SC]] [--json FILE]\n"
    "  plexus g4-diff A.h5 B.h5 [--tolerance T]\n"
    "  plexus logp [--json FILE] [--repetitions N] [--max-bytes B]\n"
    "  plexus help [COMMAND]          (or plexus COMMAND --help)\n"
    "  plexus --version               the version, git commit and build configuration\n"
    "\n"
    "Commands:\n"
    "  run      run one solver on one problem (no FILE: the built-in H2O-like problem)\n"
    "  compare  run the same problem with several strategies/kernels in one job and check the results agree\n"
    "  perf     run the multiply of a DBCSR benchmark input file (.perf) as compare does\n"
    "  plugins  list every component (strategies, kernels, solvers) with its plugin and file\n"
    "  model    predict the volume, ticks and buffers of a multiply from panel sizes (dry run)\n"
    "  g4-diff  L1 and L2 relative errors between two G4 files written by the g4 solver\n"
    "  logp     measure the LogP/LogGP parameters (L, o, g, G) on the job's ranks; check the collectives' models\n"
    "  help     show this text or the help of a command\n"
    "\n"
    "Examples:\n"
    "  mpiexec -n 4 plexus run\n"
    "  mpiexec -n 4 plexus run examples/h2o.xml --set Communication/Strategy=cannon --set multiply/Repetitions=5\n"
    "  mpiexec -n 4 plexus compare examples/h2o.xml --strategies cannon,rma25d:Layers=4 --kernels cpu,reference\n"
    "  mpiexec -n 4 plexus perf test_H2O.perf --strategies cannon,rma25d\n"
    "  plexus plugins --verbose\n"
    "\n"
    "Plugins are searched in PLEXUS_PLUGIN_PATH (colon-separated), then next to the plexus library.\n"
    "Memory: freed blocks of 32 KiB and more are kept for reuse up to PLEXUS_MEMORY_POOL_MB (default a\n"
    "quarter of the memory; 0: none); blocks of 4 MiB and more ask for transparent huge pages unless\n"
    "PLEXUS_HUGE_PAGES=0.\n";

const char* const kRunHelp =
    "Usage: plexus run [FILE.xml] [options]\n"
    "\n"
    "Runs the solver selected by the parameter list (FILE.xml; without it, the built-in default problem:\n"
    "160 x 160 blocks of 23, about 10% occupancy, like a small water system). It first prints the\n"
    "parameters other than the defaults, as --set options, and where the complete list used (every\n"
    "default filled in) went: a new file plexus-params/run-<date>-<time>-<pid>.xml by default (never\n"
    "one that exists; the directory is PLEXUS_PARAMS_DIR when set), so the run can be repeated exactly.\n"
    "\n"
    "Options:\n"
    "  --set Path/Key=value   override one parameter (repeatable), e.g. --set Problem/Blocks=40\n"
    "                         --set Communication/Strategy=cannon --set Kernel/Type=reference\n"
    "  --write-params FILE    write the complete parameter list used to FILE (XML) instead of the\n"
    "                         record file\n"
    "  --echo-params          print the complete parameter list (XML)\n"
    "  --no-params-file       write no record file (also PLEXUS_PARAMS_DIR=none)\n"
    "  --no-progress          no progress line (on standard error after 2 s: the solver run, the\n"
    "                         multiply or iteration, time elapsed and an estimate of the rest)\n"
    "  --json FILE            write the run as JSON: the solver's figures (e.g. energy, trace_PS, mu,\n"
    "                         iterations, idempotency_error), its per-iteration history, the timing\n"
    "                         summary and the operations (\"-\": standard output; add --log-level\n"
    "                         warn so that the log leaves it alone; the summary then stays out)\n"
    "  --log-level LEVEL      error, warn, info (default) or debug (debug: every rank logs); it\n"
    "                         overrides Output/LogLevel for this run and is not saved with the list\n"
    "  -h, --help             this text\n"
    "\n"
    "Timing: Timing/WarmUp (default 1) quiet solver runs come first and are not counted; then\n"
    "Timing/Rounds (default 1) counted runs. The summary gives min, median and mean seconds per\n"
    "multiply (each multiply: its slowest rank) over the counted multiplies.\n"
    "\n"
    "Examples:\n"
    "  mpiexec -n 4 plexus run examples/h2o.xml\n"
    "  mpiexec -n 2 plexus run --set Problem/Blocks=40 --set multiply/Repetitions=1 --write-params used.xml\n"
    "  mpiexec -n 4 plexus run examples/h2o-sign.xml --json sign.json   (density matrix of 32 waters)\n"
    "  plexus plugins --verbose     (lists every parameter of every component)\n";

const char* const kCompareHelp =
    "Usage: plexus compare [FILE.xml] --strategies S1,S2,... [options]\n"
    "\n"
    "Runs the same problem through every (strategy, kernel) combination in one job, compares each result\n"
    "with the first one (relative Frobenius difference) and prints one table: time per multiply\n"
    "(median; --wide: min and mean too), GFLOP/s (at the median), data received per rank against the\n"
    "strategy's model, peak buffer memory; --wide adds bytes and messages sent per rank, wait time.\n"
    "\n"
    "A strategy or kernel spec is name[:Key=Value[:Key=Value...]]; the assignments go to\n"
    "Communication/<name> (or Kernel/<name>), e.g. rma25d:Layers=4.\n"
    "\n"
    "Timing: the combinations run round-robin, each solver run once per round: Timing/WarmUp rounds\n"
    "(default 1, not counted), then Timing/Rounds counted rounds (default 1). Timing/Order=rotated\n"
    "(default) starts each round with another combination, the last round in the given order;\n"
    "fixed keeps the given order. The table gives min, median and mean seconds per multiply; the\n"
    "JSON also every counted and warm-up multiply's time.\n"
    "\n"
    "Options:\n"
    "  --strategies LIST      comma-separated strategy specs (required)\n"
    "  --kernels LIST         comma-separated kernel specs (default: Kernel/Type of the parameter list)\n"
    "  --set Path/Key=value   override one parameter for every combination (repeatable)\n"
    "  --wide                 every column in the table (default: the columns that fit 100 columns)\n"
    "  --csv FILE             write the table as CSV (every column)\n"
    "  --json FILE            write the table as JSON (every column, every multiply's time)\n"
    "  --tolerance T          largest accepted relative difference (default 1e-10); exceeded: exit code 1\n"
    "  --write-params FILE    write the complete parameter list used (XML) to FILE instead of the\n"
    "                         record file plexus-params/compare-<date>-<time>-<pid>.xml (as for run)\n"
    "  --echo-params          print the complete parameter list (XML)\n"
    "  --no-params-file       write no record file (also PLEXUS_PARAMS_DIR=none)\n"
    "  --no-progress          no progress line (on standard error after 2 s: the round, the\n"
    "                         combination, time elapsed and an estimate of the rest)\n"
    "  --log-level LEVEL      error, warn, info (default) or debug; not saved with the list\n"
    "  -h, --help             this text\n"
    "\n"
    "Examples:\n"
    "  mpiexec -n 4 plexus compare --strategies cannon --kernels cpu,reference\n"
    "  mpiexec -n 8 plexus compare examples/h2o.xml --strategies cannon,rma25d:Layers=2 --json table.json\n"
    "  mpiexec -n 4 plexus compare --strategies cannon --kernels cpu,cpu,cpu,cpu --set Timing/Rounds=5\n";

const char* const kModelHelp =
    "Usage: plexus model --strategies S1,S2,... --grid PRxPC --bytes SA[,SB[,SC]] [--json FILE]\n"
    "\n"
    "Dry run of a multiply: for every rank of a PR x PC grid whose local panels of A, B and C hold\n"
    "SA, SB and SC bytes (spread evenly over the k indices), each strategy's own schedule predicts the\n"
    "ticks, the bytes of A and B every rank receives, the bytes of C it sends, and the buffer\n"
    "footprint. Nothing is allocated or sent; one process is enough for any grid. The table gives the\n"
    "maximum over ranks and each row's volume relative to the first row.\n"
    "\n"
    "Options:\n"
    "  --strategies LIST  comma-separated specs name[:Key=Value...], e.g. cannon,rma25d:Layers=4\n"
    "  --grid PRxPC       the process grid, e.g. 20x20\n"
    "  --bytes SA,SB,SC   local panel sizes; suffixes K, M, G (powers of 1024), e.g. 64M,64M,173M\n"
    "                     (SB and SC default to SA)\n"
    "  --json FILE        write the rows as JSON\n"
    "\n"
    "Example (the paper's H2O-DFT-LS at 400 nodes, S_C = 2.7 S_A):\n"
    "  plexus model --strategies rma25d:Layers=1,rma25d:Layers=4 --grid 20x20 --bytes 100M,100M,270M\n";

const char* const kPluginsHelp =
    "Usage: plexus plugins [--verbose] [--json FILE]\n"
    "\n"
    "Lists every component the registry knows: kind, name, plugin, version, file and summary, and\n"
    "why a component cannot run on this machine (e.g. a GPU kernel without a GPU).\n"
    "\n"
    "Options:\n"
    "  -v, --verbose   also list each component's documented parameters (type, default, range/choices)\n"
    "  --json FILE     also write all of it, parameters included, as JSON for tools ('-': standard\n"
    "                  output, instead of the listing)\n"
    "  -h, --help      this text\n"
    "\n"
    "Plugins are searched in PLEXUS_PLUGIN_PATH (colon-separated), then next to the plexus library.\n";

const char* const kG4DiffHelp =
    "Usage: plexus g4-diff A.h5 B.h5 [--tolerance T]\n"
    "\n"
    "Compares two G4 files written by the g4 solver (g4/OutputFile): prints the relative errors of B\n"
    "against the reference A, over the complex elements of G4 (|z| the modulus; PASC'21 Eqs. 2-3):\n"
    "  L1 = ||vec(G4_A - G4_B)||_1 / ||vec(G4_A)||_1,   L2 = ||vec(G4_A - G4_B)||_2 / ||vec(G4_A)||_2\n"
    "The files are read in chunks by one process (no mpiexec needed).\n"
    "\n"
    "Exit code: 0 when both errors are within the tolerance, 1 when either exceeds it, 2 when the\n"
    "files cannot be compared (missing, not HDF5, no dataset 'G4', different shapes) or on usage errors.\n"
    "\n"
    "Options:\n"
    "  --tolerance T   largest accepted L1 and L2 relative error (default 5e-7)\n"
    "  -h, --help      this text\n"
    "\n"
    "Example:\n"
    "  mpiexec -n 4 plexus run examples/g4.xml --set g4/Mode=replicated --set g4/OutputFile=repl.h5\n"
    "  mpiexec -n 4 plexus run examples/g4.xml --set g4/Mode=distributed --set g4/OutputFile=dist.h5\n"
    "  plexus g4-diff repl.h5 dist.h5\n";

const char* help_of(const std::string& command) {
  if (command == "run") return kRunHelp;
  if (command == "compare") return kCompareHelp;
  if (command == "perf") return kPerfHelp;
  if (command == "plugins") return kPluginsHelp;
  if (command == "model") return kModelHelp;
  if (command == "g4-diff") return kG4DiffHelp;
  if (command == "logp") return kLogpHelp;
  return kOverview;
}

// ---- errors ---------------------------------------------------------------------------------

std::string describe_error(const std::exception& e, const char* phase = nullptr) {
  // A bare "std::bad_alloc" says neither what happened nor when.
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr)
    return std::string("ran out of memory") + (phase ? std::string(" during ") + phase : std::string()) + " (" +
           e.what() + "): the machine or a limit on the process (ulimit -v, a cgroup) could not give what was asked";
  if (auto* pe = dynamic_cast<const Error*>(&e)) {
    // The where is told unless the message already names it.
    const std::string what = e.what();
    if (!pe->where().empty() && what.find(pe->where()) == std::string::npos) return what + " (at " + pe->where() + ")";
  }
  return e.what();
}

/// Prints the error of this rank and ends the whole job. Never returns.
[[noreturn]] void abort_job(int rank, const std::string& message, bool same_on_every_rank) {
  // An error every rank sees alike is best told once: give rank 0 a moment to end the job first.
  if (same_on_every_rank && rank != 0) ::sleep(2);
  std::fprintf(stderr, "plexus: error on rank %d: %s\n", rank, message.c_str());
  std::fflush(stderr);
  std::fflush(stdout);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

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
void maybe_fail_for_test(int rank) {
  if (const char* env = std::getenv("PLEXUS_TEST_FAIL_RANK")) {
    if (*env && std::atoi(env) == rank)
      throw Error("PLEXUS_TEST_FAIL_RANK", "failing on purpose on rank " + std::to_string(rank) + " (test hook)");
  }
}

/// Runs the timed phase. An exception ends the job here. The frames between the throw and here
/// unwind, and no destructor makes a collective call while the stack unwinds
/// (progress::unwinding()); the components live outside the phase, so their teardown (collective
/// calls: windows, communicators) is never reached by a failing rank. With a timeout
/// (Output/TimeoutSeconds), a watchdog ends the job when this rank makes no progress that long.
template <class F>
void run_or_abort(F&& phase, int rank, double timeout_seconds) {
  progress::Watchdog watchdog(timeout_seconds, [rank](const std::string& message) {
    abort_job(rank, message + "; ending the job", false);
  });
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
double timeout_of(const ParameterList& validated) {
  return validated.sublist("Output").get<double>("TimeoutSeconds");
}

// ---- shared set-up --------------------------------------------------------------------------

/// How the job's ranks and OpenMP threads sit on the cores: the node where they are most
/// oversubscribed (ranks x threads over the cores its ranks may run on).
struct CoreUse {
  int ranks = 1, threads = 1, cores = 1;
  bool chose_threads = false;  ///< OMP_NUM_THREADS was not set: threads = cores / ranks of the node
  bool oversubscribed() const { return ranks * threads > cores; }
};

/// Collective over MPI_COMM_WORLD, before the components are made (the cpu kernel takes its thread
/// count then). The cores of a node are those any of its ranks may run on (the union of their
/// affinity masks); PLEXUS_TEST_CORES=N pretends N (tests). Without OMP_NUM_THREADS, OpenMP would
/// start one thread per core in every rank: then each rank gets cores / ranks threads (at least 1).
CoreUse choose_threads() {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  CoreUse u;
  MPI_Comm_size(node, &u.ranks);
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) != 0) {
    CPU_ZERO(&mask);
    for (unsigned c = 0; c < std::max(1u, std::thread::hardware_concurrency()) && c < CPU_SETSIZE; ++c)
      CPU_SET(c, &mask);
  }
  MPI_Allreduce(MPI_IN_PLACE, &mask, static_cast<int>(sizeof(mask)), MPI_BYTE, MPI_BOR, node);
  MPI_Comm_free(&node);
  u.cores = std::max(1, CPU_COUNT(&mask));
  if (const char* test = std::getenv("PLEXUS_TEST_CORES"); test != nullptr && std::atoi(test) > 0)
    u.cores = std::atoi(test);
  const char* env = std::getenv("OMP_NUM_THREADS");
  u.threads = omp_get_max_threads();
  if ((env == nullptr || *env == '\0') && u.ranks * u.threads > u.cores) {
    u.threads = std::max(1, u.cores / u.ranks);
    omp_set_num_threads(u.threads);
    u.chose_threads = true;
  }
  // The most oversubscribed node speaks for the job.
  struct {
    double ratio;
    int rank;
  } worst{double(u.ranks) * u.threads / u.cores, mpi::rank(MPI_COMM_WORLD)};
  MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
  int facts[4] = {u.ranks, u.threads, u.cores, u.chose_threads ? 1 : 0};
  MPI_Bcast(facts, 4, MPI_INT, worst.rank, MPI_COMM_WORLD);
  return CoreUse{facts[0], facts[1], facts[2], facts[3] != 0};
}

/// Rank 0 tells the threads it chose and warns when ranks x threads exceed the cores: every
/// timing is then slower than the machine can do, by up to that factor.
void report_core_use(const CoreUse& u, int rank) {
  if (rank != 0) return;
  const std::string node =
      fmt::format("{} rank{} on {} core{}{}", u.ranks, u.ranks == 1 ? "" : "s", u.cores, u.cores == 1 ? "" : "s",
                  mpi::size(MPI_COMM_WORLD) > u.ranks ? " of a node" : "");
  if (u.chose_threads)
    log().info("OMP_NUM_THREADS is not set: {} OpenMP thread{} per rank ({})", u.threads, u.threads == 1 ? "" : "s",
               node);
  if (!u.oversubscribed()) return;
  if (u.threads > 1)
    log().warn("{} ranks x {} OpenMP threads on {} cores: oversubscribed, times are slower; try OMP_NUM_THREADS={}",
               u.ranks, u.threads, u.cores, std::max(1, u.cores / u.ranks));
  else
    log().warn("{}: the ranks share cores, every time is slower than on {} cores", node, u.ranks);
}

// Loads the plugins; rank 0 tells what the plugin path had that could not be used.
void load_plugins(int rank) {
  Registry::global().load_default();
  if (rank == 0)
    for (const auto& w : Registry::global().warnings()) log().warn("{}", w);
}

// The user's list: `given` (plexus perf's translation) or the parameter file, then --set.
ParameterListPtr load_parameters(const Options& o, int rank, const ParameterListPtr& given = Teuchos::null) {
  load_plugins(rank);
  ParameterListPtr params = !given.is_null() ? Teuchos::rcp(new ParameterList(*given))
                            : o.file.empty() ? Teuchos::rcp(new ParameterList("plexus"))
                                             : read_parameter_file(o.file);
  params->setName("plexus");
  for (const auto& s : o.sets) apply_override(*params, s);
  return params;
}

// The log level is the invocation's: --log-level, else Output/LogLevel of the list. --log-level
// stays out of the list, so that a saved list (--write-params) replays at its own level.
void configure_logging_for(const Options& o, const ParameterList& validated, int rank) {
  configure_logging(rank,
                    !o.log_level.empty() ? o.log_level : validated.sublist("Output").get<std::string>("LogLevel"));
}

struct Components {
  std::shared_ptr<CommStrategy> strategy;
  std::shared_ptr<Kernel> kernel;
  std::unique_ptr<Solver> solver;
  /// The run's context: the strategy and kernel, the communicators the run makes (the strategy's
  /// collectives are bound to its pool), the operation log. Released by free_components().
  std::unique_ptr<Context> context;
};

std::unique_ptr<CommStrategy> make_strategy(ParameterList& params) {
  const std::string name = selection_of(params).strategy;
  ParameterList own = own_parameters(params.sublist("Communication").sublist(name), ComponentKind::Comm, name);
  return Registry::global().make_comm(name, own, "plexus/Communication/" + name);
}

Components make_components(ParameterList& params) {
  auto& reg = Registry::global();
  const Selection s = selection_of(params);
  Components c;
  c.strategy = make_strategy(params);
  c.kernel = reg.make_kernel(s.kernel, params.sublist("Kernel").sublist(s.kernel), "plexus/Kernel/" + s.kernel);
  c.solver = reg.make_solver(s.solver, params.sublist(s.solver), "plexus/" + s.solver);
  c.context = std::make_unique<Context>(MPI_COMM_WORLD, c.strategy, c.kernel);
  c.context->product_plans().set_max_bytes(std::int64_t{params.sublist("Kernel").get<int>("PlanMiB")} << 20);
  if (!s.collectives.empty()) {
    ParameterList own = own_parameters(params.sublist("Communication").sublist(s.collectives),
                                       ComponentKind::Collectives, s.collectives);
    c.context->set_collectives(reg.make_collectives(s.collectives, own, "plexus/Communication/" + s.collectives));
  }
  return c;
}

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

/// The solver's own requirements on the components (Solver::check), at set-up, agreed by every
/// rank. Called once the components are stored where a failed set-up releases them.
void check_solver(const Components& c) {
  agreed([&] { c.solver->check(*c.context); });
}

/// Every rank together: the context's communicators are freed, then the components. Never in a
/// destructor (an error on any rank ends the job with MPI_Abort before this could hang).
void free_components(Components& c) {
  if (c.context) c.context->release();
  c = Components{};
}

SolverContext context_for(ParameterList& params, Components& c, bool quiet) {
  SolverContext ctx;
  ctx.context = c.context.get();
  ctx.problem = &params.sublist("Problem");
  ctx.quiet = quiet;
  ctx.parameters = &params;
  return ctx;
}

std::string plural(long long n, const std::string& one, const std::string& many = "") {
  return std::to_string(n) + " " + (n == 1 ? one : many.empty() ? one + "s" : many);
}

// A --set value as a shell reads it back: quoted when it holds anything but plain characters.
std::string shell_word(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+=/.,:@%") ==
                        std::string::npos)
    return s;
  std::string q = "'";
  for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

// Writes the complete list to a new file in `dir` (PLEXUS_PARAMS_DIR, default plexus-params):
// <command>-<date>-<time>-<pid>[-n].xml, created exclusively, so that no existing file is ever
// replaced. Returns its path, or "" with `why` set when it could not be written.
std::string write_params_record(const ParameterList& params, const std::string& dir, const std::string& command,
                                std::string& why) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    why = "cannot create directory '" + dir + "': " + ec.message();
    return "";
  }
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  const std::string stem =
      fmt::format("{}/{}-{:04}{:02}{:02}-{:02}{:02}{:02}-{}", dir, command, local.tm_year + 1900, local.tm_mon + 1,
                  local.tm_mday, local.tm_hour, local.tm_min, local.tm_sec, static_cast<long>(::getpid()));
  const std::string text = to_xml(params);
  for (int n = 1; n <= 100; ++n) {
    const std::string path = n == 1 ? stem + ".xml" : fmt::format("{}-{}.xml", stem, n);
    std::FILE* f = std::fopen(path.c_str(), "wx");  // exclusive: fails if the file exists
    if (f == nullptr) {
      if (errno == EEXIST) continue;
      why = "cannot create '" + path + "': " + std::strerror(errno);
      return "";
    }
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (std::fclose(f) != 0 || !ok) {
      why = "cannot write '" + path + "'";
      std::remove(path.c_str());
      return "";
    }
    return path;
  }
  why = "every name '" + stem + "[-n].xml' is taken";
  return "";
}

// Problem parameters that only some generators read (core/src/problem.cpp): given to another
// generator, they would be ignored without a word. (A parameter not listed here is read by all.)
bool generator_reads(const std::string& generator, const std::string& parameter) {
  static const std::map<std::string, std::vector<std::string>> kReadBy = [] {
    std::map<std::string, std::vector<std::string>> m;
    for (const char* p : {"Blocks", "Occupancy", "OccupancyA", "OccupancyB", "OccupancyC", "Rows", "Inner", "Cols",
                          "Symmetric", "Bandwidth", "Seed"})
      m[p] = {"random"};
    for (const char* p : {"FileA", "FileB", "FileC"}) m[p] = {"matrix-market"};
    for (const char* p : {"FileH", "FileS"}) m[p] = {"matrix-market", "cp2k-csr"};
    for (const char* p : {"Molecules", "ModelGap", "ModelWidth", "ModelRadius", "ModelDecay", "ModelCoupling",
                          "ModelOverlap", "ModelDisplacement", "ModelSeed"})
      m[p] = {"model"};
    return m;
  }();
  const auto it = kReadBy.find(parameter);
  return it == kReadBy.end() || std::find(it->second.begin(), it->second.end(), generator) != it->second.end();
}

// Warns (rank 0) about the Problem parameters given other than their defaults that the selected
// generator does not read.
void warn_ignored_problem_parameters(const ParameterList& params, const std::vector<std::string>& changed) {
  const std::string generator = params.sublist("Problem").get<std::string>("Generator");
  std::string ignored;
  for (const auto& a : changed) {
    if (a.rfind("Problem/", 0) != 0) continue;
    const std::string name = a.substr(8, a.find('=') - 8);
    if (name.find('/') == std::string::npos && !generator_reads(generator, name))
      ignored += (ignored.empty() ? "" : ", ") + a;
  }
  if (!ignored.empty())
    log().warn("Problem/Generator = '{}' does not read {}: ignored (another generator's parameters)", generator,
               ignored);
}

// What a run or compare tells of its parameters (rank 0): the values other than the defaults, in
// the form of --set, and where the complete list went; --echo-params prints the list itself.
// Without --write-params or --no-params-file, the complete list goes to a new file of its own
// (write_params_record): the run's record, never a file of the user's; not at a log level above
// info, where its path would not be told. Returns where the list went ("" when nowhere, and on
// ranks other than 0).
std::string report_parameters(const ParameterList& params, const Options& o, int rank) {
  if (rank != 0) return "";
  auto& l = log();
  // As --set options, on lines of at most 100 columns ("[plexus] " included) where they fit.
  std::vector<std::string> lines{"parameters other than the defaults:"};
  const auto changed = non_default_assignments(params);
  for (const auto& a : changed) {
    const std::string set = "--set " + shell_word(a);
    if (lines.back().size() + 1 + set.size() > 91 && lines.back().size() > 2) lines.push_back(" ");
    lines.back() += " " + set;
  }
  if (lines.size() == 1 && lines.back().back() == ':') lines.back() += " none";
  for (const auto& line : lines) l.info("{}", line);
  warn_ignored_problem_parameters(params, changed);
  if (o.echo_params) {
    std::fflush(stdout);
    std::cout << to_xml(params) << std::flush;
  }
  if (!o.write_params.empty()) {
    l.info("all parameters: {}", o.write_params);
    return o.write_params;
  }
  const char* env = std::getenv("PLEXUS_PARAMS_DIR");
  const std::string dir = env != nullptr && *env != '\0' ? env : "plexus-params";
  if (o.no_params_file || dir == "none") {
    if (!o.echo_params) l.info("all parameters: --echo-params prints them, --write-params FILE saves them");
    return "";
  }
  if (!l.should_log(spdlog::level::info)) return "";  // a quiet run writes no file it cannot name
  std::string why;
  const std::string path = write_params_record(params, dir, o.command, why);
  if (path.empty())
    l.warn(
        "the parameter record was not written ({}); --write-params FILE saves the list elsewhere, "
        "--no-params-file or PLEXUS_PARAMS_DIR=none leave it out",
        why);
  else
    l.info("all parameters: {}", path);
  return path;
}

// The lines of a run's result (its summary): on standard output at every log level, as compare's
// table is, unless --json - has standard output; at info they go through the log.
class ResultLines {
 public:
  explicit ResultLines(bool stdout_free) : stdout_free_(stdout_free) {}
  template <class... Args>
  void info(fmt::format_string<Args...> format, Args&&... args) {
    const std::string line = fmt::format(format, std::forward<Args>(args)...);
    if (log().should_log(spdlog::level::info))
      log().info("{}", line);
    else if (stdout_free_)
      std::cout << "[plexus] " << line << std::endl;
  }

 private:
  bool stdout_free_;
};

void print_summary_lines(ResultLines& l, const Summary& s, const TimingPlan& plan) {
  l.info("  multiplies            {} counted, from {} after {} (not counted)", s.multiplies,
         plural(plan.rounds, "solver run"), plural(plan.warm_up, "warm-up run"));
  if (s.multiplies == 0) return;
  l.info("  time per multiply     min {} s, median {} s, mean {} s (slowest rank)",
         fmt::format("{:.4g}", s.seconds_min), fmt::format("{:.4g}", s.seconds_median),
         fmt::format("{:.4g}", s.seconds));
  l.info("  GFLOP/s               {} (at the median time)", fmt::format("{:.3f}", s.gflops));
  l.info("  bytes sent per rank   {} max, {} average", format_bytes(s.bytes_max), format_bytes(s.bytes_avg));
  l.info("  from other ranks      {} received per rank, average (index included)",
         format_bytes(s.network_avg));
  l.info("  messages per rank     {} max, {} average", fmt::format("{:.0f}", s.messages_max),
         fmt::format("{:.1f}", s.messages_avg));
  l.info("  wait time             {} s (max over ranks)", fmt::format("{:.4g}", s.wait_max));
  l.info("  kernel time           {} s (max over ranks)", fmt::format("{:.4g}", s.kernel_seconds));
  if (s.ticks_max > 0)
    l.info("  beyond kernel + wait  {} s per multiply, {} s per tick ({} ticks; median of the slowest rank's)",
           fmt::format("{:.4g}", s.beyond_kernel_wait_median),
           fmt::format("{:.3g}", s.beyond_kernel_wait_median / s.ticks_max), fmt::format("{:.0f}", s.ticks_max));
  if (s.product_ticks > 0)
    l.info("  stacks replayed       {} of {} local product ticks (all ranks; plans: Kernel/PlanMiB)",
           fmt::format("{:.0f}", s.replayed_ticks), fmt::format("{:.0f}", s.product_ticks));
  if (s.plans_not_kept > 0)
    l.info("  plans not kept        {} (all ranks): larger than Kernel/PlanMiB, or no room beside the plans in use",
           fmt::format("{:.0f}", s.plans_not_kept));
  if (s.dense_ticks > 0)
    l.info("  dense ticks           {} of {} local product ticks (all ranks; one GEMM per strip: Kernel/cpu/DenseMinSize)",
           fmt::format("{:.0f}", s.dense_ticks), fmt::format("{:.0f}", s.product_ticks));
  l.info("  peak buffer memory    {} (max over ranks)", format_bytes(s.peak_buffer_max));
  l.info("  peak tracked memory   {} (max over ranks)", format_bytes(s.peak_memory_max));
  if (s.peak_device_max > 0) l.info("  peak device memory    {} (max over ranks)", format_bytes(s.peak_device_max));
  for (const auto& [name, value] : s.extra)
    l.info("  {:<21} {} (strategy figure, max over ranks)", name, fmt::format("{:.6g}", value));
}

// One line per kind of operation of a counted run: how many, their time, what a rank received
// and what the operations' models predicted.
void print_operation_lines(ResultLines& l, const std::map<std::string, OperationSummary>& ops) {
  for (const auto& [name, o] : ops)
    l.info(
        "  {:<21} {} per run, {} s, {} received/rank max{}", name, fmt::format("{:.4g}", o.count),
        fmt::format("{:.4g}", o.seconds), format_bytes(o.bytes_received),
        o.predicted_bytes_received < 0 ? std::string() : " (model " + format_bytes(o.predicted_bytes_received) + ")");
}

// The program's own outputs (--csv, --json), checked by the rank that writes them before any
// work (set-up errors on some ranks only end the job cleanly).
void check_outputs(const Options& o, int rank) {
  if (rank != 0) return;
  if (!o.csv.empty()) output::check(o.csv, "--csv");
  if (!o.json.empty()) output::check(o.json, "--json");
}

// The progress line of long runs (plexus/progress.hpp): rank 0, unless --no-progress or a log
// level above info.
void start_progress_line(const Options& o, int rank) {
  progress::set_line_enabled(rank == 0 && !o.no_progress && log().should_log(spdlog::level::info));
}

// The phase table (plexus/timers.hpp) of the counted runs, on standard output after the summary:
// at info level only, and not when standard output holds the JSON.
// `what`: what was counted ("the 3 counted runs").
void print_phase_table(const std::vector<timers::Stat>& phases, const std::string& what, const Options& o) {
  if (phases.empty() || o.json == "-" || !log().should_log(spdlog::level::info)) return;
  log().info("phases of {} (seconds in all; min, mean and max over the ranks; plexus/timers.hpp):", what);
  std::cout << timers::table(phases) << std::flush;
}

// ---- run ------------------------------------------------------------------------------------

int command_run(const Options& o, int rank, int size) {
  ParameterListPtr params;
  Components c;
  int exit_code = 0;
  const CoreUse cores = choose_threads();
  const bool ok = setup_phase(
      [&] {
        params = load_parameters(o, rank);
        validate_top_level(*params);
        configure_logging_for(o, *params, rank);
        c = make_components(*params);
        check_solver(c);
        agreed([&] { check_outputs(o, rank); });  // an unwritable --json is found now, not at the end
        if (!o.write_params.empty() && rank == 0) write_parameter_file(*params, o.write_params);
      },
      rank, size, exit_code);
  if (!ok) {
    free_components(c);
    return exit_code;
  }

  report_core_use(cores, rank);
  const std::string params_file = report_parameters(*params, o, rank);
  const Selection sel = selection_of(*params);
  const TimingPlan plan = timing_of(*params);
  if (rank == 0)
    log().info("running solver '{}' with strategy '{}' and kernel '{}' on {} rank{}", sel.solver, sel.strategy,
               sel.kernel, size, size == 1 ? "" : "s");
  maybe_fail_for_test(rank);

  // Warm-up runs first (quiet, their reports dropped), then the counted runs.
  std::vector<MultiplyReport> counted;
  std::vector<OperationReport> counted_operations;
  std::map<std::string, OperationSummary> operations;
  SolverResult last;
  Summary s;
  std::vector<double> run_seconds;
  std::vector<timers::Stat> phases;
  start_progress_line(o, rank);
  run_or_abort(
      [&] {
        progress::Stage runs("solver run", plan.total_rounds());
        for (int w = 0; w < plan.warm_up; ++w) {
          runs.done(w);
          SolverContext ctx = context_for(*params, c, true);
          const Summary warm = summarize(c.solver->run(ctx).reports, MPI_COMM_WORLD);
          c.context->clear_log();
          if (rank == 0)
            log().info("warm-up run {}/{} (not counted): {}, {} to {} s each", w + 1, plan.warm_up,
                       plural(warm.multiplies, "multiply", "multiplies"), fmt::format("{:.4g}", warm.seconds_min),
                       fmt::format("{:.4g}", warm.seconds_max));
        }
        timers::reset();  // the phase table holds the counted runs only
        for (int k = 0; k < plan.rounds; ++k) {
          runs.done(plan.warm_up + k);
          if (rank == 0 && plan.rounds > 1) log().info("counted run {}/{}", k + 1, plan.rounds);
          SolverContext ctx = context_for(*params, c, false);
          last = SolverResult{};  // the previous run's result is not held while the next one runs
          double seconds = 0;
          {
            timers::Scoped run_timer("solver run", &seconds);
            last = c.solver->run(ctx);
          }
          MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
          run_seconds.push_back(seconds);
          for (auto& r : last.reports) counted.push_back(std::move(r));
          for (auto& op : last.operations) counted_operations.push_back(std::move(op));
          last.reports.clear();
          last.operations.clear();
          c.context->clear_log();  // the result holds the run's operations
        }
        s = summarize(counted, MPI_COMM_WORLD);
        operations = summarize_operations(counted_operations, plan.rounds, MPI_COMM_WORLD);
        phases = timers::statistics(MPI_COMM_WORLD);  // collective: every rank got here
      },
      rank, timeout_of(*params));
  if (rank == 0) {
    ResultLines l(o.json != "-");
    l.info("summary: solver '{}', strategy '{}', kernel '{}', {} rank{}{}", sel.solver, sel.strategy, sel.kernel, size,
           size == 1 ? "" : "s", last.result ? ", grid " + last.result->grid().describe() : "");
    print_summary_lines(l, s, plan);
    print_operation_lines(l, operations);
    for (const auto& [name, value] : last.figures) l.info("  {:<21} {}", name, fmt::format("{:.12g}", value));
    print_phase_table(phases, "the " + plural(plan.rounds, "counted run"), o);
  }
  if (!o.json.empty()) {
    // Rank 0 writes; every rank learns whether it could (a failed write is this run's error).
    int failed = 0;
    std::string why;
    if (rank == 0) {
      try {
        RunRecord rec;
        rec.solver = sel.solver;
        rec.strategy = sel.strategy;
        rec.kernel = sel.kernel;
        rec.grid = last.result ? last.result->grid().describe() : "";
        rec.ranks = size;
        rec.run_seconds = run_seconds;
        rec.summary = &s;
        rec.operations = &operations;
        rec.result = &last;
        RunMetadata m;
        m.command = "run";
        m.ranks = size;
        m.grid = rec.grid;
        m.threads_per_rank = cores.threads;
        m.parameters = params.get();
        m.parameters_file = params_file;
        m.warm_up = plan.warm_up;
        m.rounds = plan.rounds;
        rec.metadata = metadata_json(m);
        rec.phases = phases_json(phases);
        output::write_text(o.json, run_json(rec), "--json");
        if (o.json != "-") log().info("wrote JSON to '{}'", o.json);
      } catch (const std::exception& e) {
        failed = 1;
        why = e.what();
      }
    }
    MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (failed) {
      if (rank == 0) log().error("{}", why);
      last = SolverResult{};
      free_components(c);
      return 1;
    }
  }
  // Every rank frees the result and then the components here, together, before MPI_Finalize.
  last = SolverResult{};
  free_components(c);
  return 0;
}

// ---- compare --------------------------------------------------------------------------------

struct Spec {
  std::string text, name;
  std::vector<std::string> assignments;  // Key=Value
};

Spec parse_spec(const std::string& text, const char* option) {
  Spec s;
  s.text = text;
  auto parts = split(text, ':');
  s.name = parts[0];
  if (s.name.empty()) throw UsageError(option, std::string(option) + ": '" + text + "' has no name");
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const auto eq = parts[i].find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError(option, std::string(option) + ": '" + parts[i] + "' in '" + text +
                                   "' is not Key=Value (a spec is name[:Key=Value[:Key=Value...]])");
    s.assignments.push_back(parts[i]);
  }
  return s;
}

struct Row {
  std::string strategy, kernel;
  std::string grid;  ///< the process grid of its result ("" when the solver returns no matrix)
  Summary summary;  ///< of the counted multiplies
  Summary warm_up;  ///< of the warm-up multiplies (their times only are shown, in the JSON)
  double rel_diff = 0;
  bool compared = true;  ///< false when the solver returned no result matrix (rel_diff is NaN)
  std::map<std::string, double> figures;
  std::map<std::string, OperationSummary> operations;  ///< of the counted runs
};

// The default table fits 100 columns (with strategy names up to about 20 characters): time, rate,
// volume against the model, buffer memory, agreement. `wide`: every column; the CSV and JSON have
// every figure either way.
std::string table_text(const std::vector<Row>& rows, bool wide) {
  // volume: data bytes a rank receives per multiply (one-sided gets included), the quantity of
  // the published volume models; model: the strategy's own prediction of it from its schedule.
  // min, median, mean: seconds per multiply (each multiply: its slowest rank) over the counted ones.
  const std::vector<std::string> head =
      wide ? std::vector<std::string>{"strategy",        "kernel",        "min (s)",         "median (s)",
                                      "mean (s)",        "GFLOP/s",       "volume/rank max", "model max",
                                      "volume/rank avg", "sent/rank max", "msgs/rank max",   "wait max (s)",
                                      "peak buffer",     "rel. diff"}
           : std::vector<std::string>{"strategy",    "kernel", "median (s)",  "GFLOP/s",
                                      "volume/rank", "model",  "peak buffer", "rel. diff"};
  std::vector<std::vector<std::string>> cells;
  for (const auto& r : rows) {
    const Summary& s = r.summary;
    const std::string model = s.model_max < 0 ? std::string("-") : format_bytes(s.model_max);
    const std::string diff = r.compared ? fmt::format("{:.2e}", r.rel_diff) : std::string("-");
    if (wide)
      cells.push_back({r.strategy, r.kernel, fmt::format("{:.4g}", s.seconds_min),
                       fmt::format("{:.4g}", s.seconds_median), fmt::format("{:.4g}", s.seconds),
                       fmt::format("{:.3f}", s.gflops), format_bytes(s.volume_max), model, format_bytes(s.volume_avg),
                       format_bytes(s.bytes_max), fmt::format("{:.0f}", s.messages_max),
                       fmt::format("{:.3g}", s.wait_max), format_bytes(s.peak_buffer_max), diff});
    else
      cells.push_back({r.strategy, r.kernel, fmt::format("{:.4g}", s.seconds_median), fmt::format("{:.3f}", s.gflops),
                       format_bytes(s.volume_max), model, format_bytes(s.peak_buffer_max), diff});
  }
  return format_table(head, cells, true);
}

// Every figure of every row; the metadata first, as comment lines.
std::string csv_text(const std::vector<Row>& rows, const nlohmann::json& metadata) {
  std::ostringstream os;
  os << csv_preamble(metadata);
  os << "strategy,kernel,ranks,grid,multiplies,warm_up_multiplies,seconds_per_multiply,seconds_min,seconds_median,"
        "seconds_mean,gflops,volume_per_rank_max,"
        "volume_per_rank_avg,model_volume_per_rank_max,network_bytes_per_rank_avg,bytes_sent_per_rank_max,"
        "bytes_sent_per_rank_avg,messages_per_rank_max,messages_per_rank_avg,wait_seconds_max,"
        "kernel_seconds_max,ticks_max,beyond_kernel_wait_seconds_median,"
        "peak_buffer_bytes_max,peak_memory_bytes_max,relative_difference";
  std::vector<std::string> figure_names;
  if (!rows.empty())
    for (const auto& [k, v] : rows.front().figures) figure_names.push_back(k);
  for (const auto& f : figure_names) os << ",figure_" << f;
  os << "\n";
  auto quote = [](const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
  };
  for (const auto& r : rows) {
    const Summary& s = r.summary;
    os << fmt::format(
        "{},{},{},{},{},{},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.0f},{:.1f},{},{:.1f},{:.0f},{:.1f},"
        "{:.0f},{:.3f},{:.9g},{:.9g},{:.0f},{:.9g},{:.0f},{:.0f},{}",
        quote(r.strategy), quote(r.kernel), s.ranks, quote(r.grid), s.multiplies, r.warm_up.multiplies, s.seconds,
        s.seconds_min, s.seconds_median, s.seconds, s.gflops, s.volume_max, s.volume_avg,
        s.model_max < 0 ? std::string() : fmt::format("{:.0f}", s.model_max), s.network_avg, s.bytes_max, s.bytes_avg,
        s.messages_max, s.messages_avg, s.wait_max, s.kernel_seconds, s.ticks_max, s.beyond_kernel_wait_median,
        s.peak_buffer_max, s.peak_memory_max,
        r.compared ? fmt::format("{:.6e}", r.rel_diff) : std::string());
    for (const auto& f : figure_names) {
      auto it = r.figures.find(f);
      os << "," << (it == r.figures.end() ? std::string() : fmt::format("{:.17g}", it->second));
    }
    os << "\n";
  }
  return os.str();
}

nlohmann::json json_numbers(const std::vector<double>& values) {
  nlohmann::json out = nlohmann::json::array();
  for (double v : values) out.push_back(json_number(v));
  return out;
}

// {"multiply/cannon": {"count": ..., "seconds": ..., "bytes_received": ..., "predicted_bytes_received": ...}}
nlohmann::json json_operations(const std::map<std::string, OperationSummary>& ops) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, o] : ops)
    out[name] = {{"count", json_number(o.count)},
                 {"seconds", json_number(o.seconds)},
                 {"bytes_received", json_number(o.bytes_received)},
                 {"predicted_bytes_received",
                  o.predicted_bytes_received < 0 ? nlohmann::json(nullptr) : json_number(o.predicted_bytes_received)}};
  return out;
}

std::string json_text(const std::vector<Row>& rows, double tolerance, const std::string& solver, const TimingPlan& plan,
                      const nlohmann::json& metadata, const nlohmann::json& phases) {
  nlohmann::json root;
  root["solver"] = solver;
  root["tolerance"] = json_number(tolerance);
  root["timing"] = {{"warm_up", plan.warm_up}, {"rounds", plan.rounds}, {"order", plan.rotate ? "rotated" : "fixed"}};
  root["metadata"] = metadata;
  root["phases"] = phases;
  root["rows"] = nlohmann::json::array();
  for (const Row& r : rows) {
    const Summary& s = r.summary;
    nlohmann::json j;
    j["strategy"] = r.strategy;
    j["kernel"] = r.kernel;
    j["ranks"] = s.ranks;
    j["grid"] = r.grid.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.grid);
    j["multiplies"] = s.multiplies;
    j["warm_up_multiplies"] = r.warm_up.multiplies;
    j["seconds_per_multiply"] = json_number(s.seconds);
    j["seconds_min"] = json_number(s.seconds_min);
    j["seconds_median"] = json_number(s.seconds_median);
    j["seconds_mean"] = json_number(s.seconds);
    j["seconds_max"] = json_number(s.seconds_max);
    j["repetition_seconds"] = json_numbers(s.times);
    j["warm_up_seconds"] = json_numbers(r.warm_up.times);
    j["gflops"] = json_number(s.gflops);
    j["volume_per_rank_max"] = json_number(s.volume_max);
    j["volume_per_rank_avg"] = json_number(s.volume_avg);
    j["model_volume_per_rank_max"] = s.model_max < 0 ? nlohmann::json(nullptr) : json_number(s.model_max);
    j["network_bytes_per_rank_avg"] = json_number(s.network_avg);
    j["bytes_sent_per_rank_max"] = json_number(s.bytes_max);
    j["bytes_sent_per_rank_avg"] = json_number(s.bytes_avg);
    j["messages_per_rank_max"] = json_number(s.messages_max);
    j["messages_per_rank_avg"] = json_number(s.messages_avg);
    j["wait_seconds_max"] = json_number(s.wait_max);
    j["kernel_seconds_max"] = json_number(s.kernel_seconds);
    j["ticks_max"] = json_number(s.ticks_max);
    j["product_ticks"] = json_number(s.product_ticks);
    j["replayed_ticks"] = json_number(s.replayed_ticks);
    j["plans_not_kept"] = json_number(s.plans_not_kept);
    j["dense_ticks"] = json_number(s.dense_ticks);
    j["beyond_kernel_wait_seconds_median"] = json_number(s.beyond_kernel_wait_median);
    j["peak_buffer_bytes_max"] = json_number(s.peak_buffer_max);
    j["peak_memory_bytes_max"] = json_number(s.peak_memory_max);
    j["peak_device_bytes_max"] = json_number(s.peak_device_max);
    j["relative_difference"] = json_number(r.rel_diff);
    j["figures"] = json_figures(r.figures);
    j["strategy_figures"] = json_figures(s.extra);
    j["operations"] = json_operations(r.operations);
    root["rows"].push_back(std::move(j));
  }
  return root.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

struct Combination {
  std::string strategy_label, kernel_label;
  ParameterListPtr params;
  Components components;
  std::vector<MultiplyReport> warm_up, counted;  ///< this rank's reports, in the order run
  std::vector<OperationReport> counted_operations;  ///< this rank's operations of the counted runs
  int counted_runs = 0;
  std::map<std::string, double> figures;         ///< of the last counted run
  std::string grid;                              ///< of the last counted run's result, if it has one
  double rel_diff = std::nan("");
  bool compared = false;
};

// ||a - b||_2 / ||b||_2 (||a - b||_2 when b is zero; infinite when the lengths differ).
double relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double d = 0, n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d += (a[i] - b[i]) * (a[i] - b[i]);
    n += b[i] * b[i];
  }
  return n > 0 ? std::sqrt(d / n) : std::sqrt(d);
}

// Runs one combination's solver once. `held` is the result the program keeps between runs: the
// latest result of the round so far, and in the last round the first combination's (the reference
// every other result is compared with; the last round runs the first combination first). Every
// round starts with none held (the caller lets it go), so each round's first run holds what the
// first warm-up run held, nothing, and every later run one result, as in the warm-up round: no
// counted multiply pays for memory first touched because a result is held that its warm-up did not
// hold. (Holding the latest result into the next round had the counted run's second multiply of a
// lone combination take a fresh C: 0.44-0.52 s against 0.055-0.085 s for H2O-like blocks of 23 on
// one rank, the first touch of 137 MB of huge pages.) That memory is not the run's: the peaks are
// counted above what was held when the run started. A solver that
// returns no matrix but a series of eigenvalues (cg_bands) is compared on those instead
// (`reference_values`: the first combination's).
void run_combination(Combination& c, bool warm_up, bool last_round, std::shared_ptr<DistMatrix>& held,
                     std::vector<double>& reference_values, bool& have_reference) {
  using memory::Category;
  const std::int64_t held_total = memory::current_total();
  const std::int64_t held_buffer = memory::current(Category::CommBuffer);
  SolverContext ctx = context_for(*c.params, c.components, true);
  const timers::Label label(c.strategy_label + " / " + c.kernel_label);  // its phases apart from the others'
  SolverResult result = c.components.solver->run(ctx);
  for (auto& r : result.reports) {
    r.peak_memory_bytes = std::max<std::int64_t>(0, r.peak_memory_bytes - held_total);
    r.peak_buffer_bytes = std::max<std::int64_t>(0, r.peak_buffer_bytes - held_buffer);
    (warm_up ? c.warm_up : c.counted).push_back(std::move(r));
  }
  if (!warm_up) {
    ++c.counted_runs;
    for (auto& op : result.operations) c.counted_operations.push_back(std::move(op));
  }
  c.components.context->clear_log();  // the result held the run's operations
  if (!last_round) {
    if (result.result) held = result.result;
  } else {
    c.figures = result.figures;
    if (result.result) c.grid = result.result->grid().describe();
    const auto eigenvalues = result.series.find("eigenvalues");
    const bool by_values = !result.result && eigenvalues != result.series.end();
    c.compared = result.result != nullptr || by_values;
    if (by_values) {
      if (!have_reference) {
        reference_values = eigenvalues->second;
        have_reference = true;
      }
      c.rel_diff = relative_difference(eigenvalues->second, reference_values);
    } else if (!result.result) {
      c.rel_diff = std::nan("");
    } else if (!have_reference) {
      held = result.result;
      have_reference = true;
      c.rel_diff = 0.0;
    } else {
      DistMatrix diff = result.result->redistribute(held->distribution_ptr());
      diff.add(1.0, -1.0, *held);
      const double dn = diff.frobenius_norm();
      const double n0 = held->frobenius_norm();
      c.rel_diff = n0 > 0 ? dn / n0 : dn;
    }
  }
  result = SolverResult{};
}

// A combination listed more than once runs each time (four identical ones show the timing noise),
// but a repeated name may also be a typo for another: say so.
void warn_repeated(const std::vector<Combination>& combos) {
  std::map<std::string, int> times;
  for (const auto& c : combos) ++times[c.strategy_label + " / " + c.kernel_label];
  for (const auto& [label, n] : times)
    if (n > 1) log().warn("the combination {} is listed {} times; each runs and gets its own row", label, n);
}

// Every rank frees every combination's components here, together (before MPI_Finalize).
void release(std::vector<Combination>& combos) {
  for (auto& c : combos) free_components(c.components);
  combos.clear();
}

// `given`: a parameter list to use in place of the file (plexus perf).
int command_compare(const Options& o, int rank, int size, const ParameterListPtr& given = Teuchos::null) {
  ParameterListPtr base;
  std::vector<Combination> combos;
  int exit_code = 0;
  const CoreUse cores = choose_threads();
  const bool ok = setup_phase(
      [&] {
        std::vector<Spec> strategies, kernels;
        for (const auto& t : o.strategies) strategies.push_back(parse_spec(t, "--strategies"));
        for (const auto& t : o.kernels) kernels.push_back(parse_spec(t, "--kernels"));
        base = load_parameters(o, rank, given);
        auto checked = Teuchos::rcp(new ParameterList(*base));
        validate_top_level(*checked);
        configure_logging_for(o, *checked, rank);
        auto& reg = Registry::global();
        for (const auto& s : strategies) reg.get(ComponentKind::Comm, s.name);
        for (const auto& k : kernels) reg.get(ComponentKind::Kernel, k.name);
        if (kernels.empty()) kernels.push_back(parse_spec(selection_of(*checked).kernel, "--kernels"));
        agreed([&] { check_outputs(o, rank); });  // an unwritable table is found now, not at the end
        for (const auto& s : strategies) {
          for (const auto& k : kernels) {
            Combination c;
            c.strategy_label = s.text;
            c.kernel_label = k.text;
            c.params = Teuchos::rcp(new ParameterList(*base));
            apply_override(*c.params, "Communication/Strategy=" + s.name);
            for (const auto& a : s.assignments) apply_override(*c.params, "Communication/" + s.name + "/" + a);
            apply_override(*c.params, "Kernel/Type=" + k.name);
            for (const auto& a : k.assignments) apply_override(*c.params, "Kernel/" + k.name + "/" + a);
            validate_top_level(*c.params);
            c.components = make_components(*c.params);
            combos.push_back(std::move(c));
            check_solver(combos.back().components);
          }
        }
        if (!o.write_params.empty() && rank == 0) write_parameter_file(*checked, o.write_params);
        if (rank == 0) warn_repeated(combos);
        base = checked;
      },
      rank, size, exit_code);
  if (!ok) {
    release(combos);
    return exit_code;
  }

  report_core_use(cores, rank);
  const std::string params_file = report_parameters(*base, o, rank);
  const std::string solver_name = selection_of(*base).solver;
  const TimingPlan plan = timing_of(*base);
  if (rank == 0) {
    log().info("comparing {} combination{} of solver '{}' on {} rank{}, each running once per round:", combos.size(),
               combos.size() == 1 ? "" : "s", solver_name, size, size == 1 ? "" : "s");
    log().info("{} warm-up round{} (not counted), then {} counted round{} ({} order)", plan.warm_up,
               plan.warm_up == 1 ? "" : "s", plan.rounds, plan.rounds == 1 ? "" : "s",
               plan.rotate ? "rotated" : "fixed");
    for (std::size_t i = 0; i < combos.size(); ++i)
      log().info("[{}/{}] strategy {}, kernel {}", i + 1, combos.size(), combos[i].strategy_label,
                 combos[i].kernel_label);
  }
  maybe_fail_for_test(rank);

  // Round-robin: every round runs each combination's solver once, so that drift and first-use
  // costs fall on no combination in particular; the warm-up rounds absorb the first-use costs.
  std::vector<Row> rows;
  std::vector<timers::Stat> phases;
  std::shared_ptr<DistMatrix> held;
  std::vector<double> reference_values;
  bool have_reference = false;
  start_progress_line(o, rank);
  run_or_abort(
      [&] {
        const int total = plan.total_rounds();
        progress::Stage rounds("round", total);
        for (int k = 0; k < total; ++k) {
          rounds.done(k);
          if (k == plan.warm_up) timers::reset();  // the phase table holds the counted rounds only
          const auto order = round_order(combos.size(), k, total, plan.rotate);
          if (rank == 0) {
            std::string list;
            for (std::size_t i : order) list += (list.empty() ? "" : ", ") + std::to_string(i + 1);
            log().info("round {}/{} ({}): combinations {}", k + 1, total,
                       plan.is_warm_up(k) ? "warm-up, not counted" : "counted", list);
          }
          progress::Stage combinations("combination", static_cast<int>(order.size()));
          held.reset();  // see run_combination
          for (std::size_t j = 0; j < order.size(); ++j) {
            combinations.done(static_cast<int>(j));
            run_combination(combos[order[j]], plan.is_warm_up(k), k == total - 1, held, reference_values,
                            have_reference);
          }
        }
        for (auto& c : combos) {
          Row row;
          row.strategy = c.strategy_label;
          row.kernel = c.kernel_label;
          row.grid = c.grid;
          row.summary = summarize(c.counted, MPI_COMM_WORLD);
          row.warm_up = summarize(c.warm_up, MPI_COMM_WORLD);
          row.figures = c.figures;
          row.operations = summarize_operations(c.counted_operations, c.counted_runs, MPI_COMM_WORLD);
          row.rel_diff = c.rel_diff;
          row.compared = c.compared;
          rows.push_back(std::move(row));
        }
        phases = timers::statistics(MPI_COMM_WORLD);  // collective: every rank got here
      },
      rank, timeout_of(*base));
  held.reset();
  release(combos);

  // Rank 0 decides (all ranks hold the same figures, but one verdict avoids any doubt).
  int verdict = 0;
  if (rank == 0) {
    log().info("seconds per multiply (its slowest rank) over {} counted multiplies per combination",
               rows.empty() ? 0 : rows.front().summary.multiplies);
    log().info("GFLOP/s at the median; volume: data received per rank and multiply, max over ranks");
    if (!o.wide) log().info("model: the strategy's prediction of the volume; --wide: every column (CSV, JSON: all)");
    std::cout << "\n" << table_text(rows, o.wide) << std::flush;
    print_phase_table(phases, "the " + plural(plan.rounds, "counted round") + " (each combination's apart)", o);
    std::vector<std::string> bad;
    std::size_t uncompared = 0;
    for (const auto& r : rows)
      if (!r.compared)
        ++uncompared;
      else if (!(r.rel_diff <= o.tolerance))
        bad.push_back(r.strategy + " / " + r.kernel + " (" + fmt::format("{:.3e}", r.rel_diff) + ")");
    RunMetadata m;
    m.command = o.command;
    m.ranks = size;
    if (!rows.empty() && std::all_of(rows.begin(), rows.end(), [&](const Row& r) { return r.grid == rows[0].grid; }))
      m.grid = rows[0].grid;  // one grid for all; each row has its own either way
    m.threads_per_rank = cores.threads;
    m.parameters = base.get();
    m.parameters_file = params_file;
    m.warm_up = plan.warm_up;
    m.rounds = plan.rounds;
    m.order = plan.rotate ? "rotated" : "fixed";
    try {  // a metadata or write error is this run's error, told and agreed on below
      const nlohmann::json metadata = metadata_json(m);
      if (!o.csv.empty()) {
        output::write_text(o.csv, csv_text(rows, metadata), "--csv");
        log().info("wrote CSV to '{}'", o.csv);
      }
      if (!o.json.empty()) {
        output::write_text(o.json, json_text(rows, o.tolerance, solver_name, plan, metadata, phases_json(phases)),
                           "--json");
        log().info("wrote JSON to '{}'", o.json);
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "plexus: error on rank 0: %s\n", describe_error(e).c_str());
      verdict = 1;
    }
    if (!bad.empty()) {
      std::string list;
      for (const auto& b : bad) list += (list.empty() ? "" : ", ") + b;
      std::fprintf(stderr,
                   "plexus: results differ from the first combination (%s / %s) by more than the tolerance %g: %s\n",
                   rows.front().strategy.c_str(), rows.front().kernel.c_str(), o.tolerance, list.c_str());
      verdict = 1;
    } else if (uncompared < rows.size()) {
      const std::size_t n = rows.size() - uncompared;
      log().info("all {} result{} agree with the first within {}", n, n == 1 ? "" : "s",
                 fmt::format("{:g}", o.tolerance));
    }
    // Traffic a strategy moves past plexus::mpi::Traffic is not counted: a zero volume beside a
    // model that predicts data on several ranks is the sign (the results themselves can be right).
    for (const auto& r : rows)
      if (r.summary.ranks > 1 && r.summary.multiplies > 0 && r.summary.volume_max == 0 && r.summary.model_max > 0)
        log().warn(
            "{}: no data counted on {} ranks while its model predicts {} per rank; does the strategy send "
            "through plexus::mpi::Traffic (task.traffic(), or absorb() its own)? (docs/plugin-guide.md)",
            r.strategy, r.summary.ranks, format_bytes(r.summary.model_max));
    if (uncompared > 0)
      log().warn(
          "{} of {} results not compared (rel. diff '-'): solver '{}' returned neither a result matrix nor "
          "eigenvalues; compare its outputs instead",
          uncompared, rows.size(), solver_name);
  }
  MPI_Bcast(&verdict, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return verdict;
}

// ---- model ----------------------------------------------------------------------------------

// Bounds of `plexus model`: it predicts every rank's schedule, so time grows with the grid.
constexpr long kMaxModelRanks = 4096;                  // 64 x 64: rma25d's model of every rank takes ~13 s there
constexpr double kMaxModelBytes = 1125899906842624.0;  // 1 PiB per local panel

std::int64_t parse_size(const std::string& text, const char* option) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  double unit = 1;
  const std::string suffix = end ? std::string(end) : std::string();
  if (suffix == "K" || suffix == "KiB")
    unit = 1024.0;
  else if (suffix == "M" || suffix == "MiB")
    unit = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "GiB")
    unit = 1024.0 * 1024 * 1024;
  else if (!suffix.empty() && suffix != "B")
    unit = -1;  // an unknown suffix
  if (text.empty() || end == text.c_str() || unit < 0 || !(v >= 0) || !std::isfinite(v))
    throw UsageError(option, std::string(option) + ": '" + text + "' is not a size (e.g. 1048576, 64K, 100M, 2G)");
  if (v * unit > kMaxModelBytes)
    throw UsageError(option, std::string(option) + ": '" + text + "' is more than the model takes (1 PiB per panel)");
  return static_cast<std::int64_t>(v * unit);
}

// A grid dimension of `--grid`: digits only, 1 .. kMaxModelRanks.
long parse_grid_dimension(const std::string& text, const std::string& grid) {
  const bool digits = !text.empty() && text.size() <= 9 &&
                      std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  const long v = digits ? std::stol(text) : 0;
  if (v < 1) throw UsageError("--grid", "--grid needs PRxPC with positive numbers, got '" + grid + "'");
  return v;
}

int command_model(const Options& o, int rank, int size) {
  struct ModelRow {
    std::string label, note;
    int ticks = 0;
    std::int64_t a = 0, b = 0, c = 0, total = 0, buffer = 0;
    double total_avg = 0;
    bool modeled = true;  // false: the strategy has no dry-run model (shown as "-")
  };
  std::vector<ModelRow> rows;
  ModelSpec spec;
  int exit_code = 0;
  const bool ok = setup_phase(
      [&] {
        agreed([&] { check_outputs(o, rank); });
        const auto x = o.grid.find('x');
        if (x == std::string::npos)
          throw UsageError("--grid", "--grid needs PRxPC with positive numbers, got '" + o.grid + "'");
        const long pr = parse_grid_dimension(o.grid.substr(0, x), o.grid);
        const long pc = parse_grid_dimension(o.grid.substr(x + 1), o.grid);
        if (pr * pc > kMaxModelRanks)
          throw UsageError("--grid", "--grid " + o.grid + " has " + std::to_string(pr * pc) +
                                         " ranks; the model takes at most " + std::to_string(kMaxModelRanks) +
                                         " (it predicts every rank of the grid)");
        spec.nprows = static_cast<int>(pr);
        spec.npcols = static_cast<int>(pc);
        const auto sizes = spec_list("--bytes", o.bytes);
        if (sizes.size() > 3) throw UsageError("--bytes", "--bytes takes at most three sizes SA,SB,SC");
        spec.bytes_a = parse_size(sizes[0], "--bytes");
        spec.bytes_b = sizes.size() > 1 ? parse_size(sizes[1], "--bytes") : spec.bytes_a;
        spec.bytes_c = sizes.size() > 2 ? parse_size(sizes[2], "--bytes") : spec.bytes_a;
        load_plugins(rank);
        for (const auto& text : o.strategies) {
          const Spec sp = parse_spec(text, "--strategies");
          ParameterList params(sp.name);
          for (const auto& a : sp.assignments) apply_override(params, a);
          auto strategy = Registry::global().make_comm(sp.name, params, "Communication/" + sp.name);
          ModelRow row;
          row.label = text;
          double sum = 0;
          for (int r = 0; r < spec.nprows && row.modeled; ++r)
            for (int c = 0; c < spec.npcols && row.modeled; ++c) {
              const auto m = strategy->model(spec, r, c);
              if (!m) {
                row.modeled = false;
                row.note = "no dry-run model";
                break;
              }
              row.note = m->note;
              row.ticks = std::max(row.ticks, m->ticks);
              row.a = std::max(row.a, m->bytes_a);
              row.b = std::max(row.b, m->bytes_b);
              row.c = std::max(row.c, m->bytes_c);
              row.total = std::max(row.total, m->bytes_a + m->bytes_b + m->bytes_c);
              row.buffer = std::max(row.buffer, m->buffer_bytes);
              sum += static_cast<double>(m->bytes_a + m->bytes_b + m->bytes_c);
            }
          row.total_avg = sum / (double(spec.nprows) * spec.npcols);
          rows.push_back(row);
        }
      },
      rank, size, exit_code);
  if (!ok) return exit_code;
  if (rank != 0) return 0;
  std::ostringstream os;
  os << "dry-run model: grid " << spec.nprows << "x" << spec.npcols << ", local panels A "
     << format_bytes(double(spec.bytes_a)) << ", B " << format_bytes(double(spec.bytes_b)) << ", C "
     << format_bytes(double(spec.bytes_c)) << " (per rank, max over ranks; A and B received, C sent)\n\n";
  const std::vector<std::string> head = {"strategy", "model",      "ticks", "A/rank", "B/rank",
                                         "C/rank",   "total/rank", "ratio", "buffers"};
  std::vector<std::vector<std::string>> cells;
  // Ratios are to the first strategy with a model.
  const auto base = std::find_if(rows.begin(), rows.end(), [](const ModelRow& r) { return r.modeled; });
  const double base_total = base != rows.end() ? double(base->total) : 0.0;
  for (const auto& r : rows) {
    if (!r.modeled) {
      cells.push_back({r.label, r.note, "-", "-", "-", "-", "-", "-", "-"});
      continue;
    }
    cells.push_back({r.label, r.note, std::to_string(r.ticks), format_bytes(double(r.a)), format_bytes(double(r.b)),
                     format_bytes(double(r.c)), format_bytes(double(r.total)),
                     fmt::format("{:.3f}", base_total > 0 ? double(r.total) / base_total : 0.0),
                     format_bytes(double(r.buffer))});
  }
  os << format_table(head, cells, false);
  std::cout << os.str() << std::flush;
  if (!o.json.empty()) {
    nlohmann::json root;
    root["grid"] = {spec.nprows, spec.npcols};
    root["bytes"] = {spec.bytes_a, spec.bytes_b, spec.bytes_c};
    RunMetadata m;
    m.command = "model";
    m.ranks = size;
    m.grid = std::to_string(spec.nprows) + "x" + std::to_string(spec.npcols);  // the modelled grid
    root["metadata"] = metadata_json(m);
    root["rows"] = nlohmann::json::array();
    for (const auto& r : rows) {
      if (!r.modeled) {  // the same keys, null figures
        nlohmann::json j = {{"strategy", r.label}};
        for (const char* k : {"model", "ticks", "bytes_a_max", "bytes_b_max", "bytes_c_max", "total_max", "total_avg",
                              "buffer_bytes_max"})
          j[k] = nullptr;
        root["rows"].push_back(std::move(j));
        continue;
      }
      root["rows"].push_back({{"strategy", r.label},
                              {"model", r.note},
                              {"ticks", r.ticks},
                              {"bytes_a_max", r.a},
                              {"bytes_b_max", r.b},
                              {"bytes_c_max", r.c},
                              {"total_max", r.total},
                              {"total_avg", json_number(r.total_avg)},
                              {"buffer_bytes_max", r.buffer}});
    }
    output::write_text(o.json, root.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", "--json");
  }
  return 0;
}

// ---- g4-diff --------------------------------------------------------------------------------

int command_g4_diff(const Options& o, int rank) {
  // Rank 0 reads both files (in chunks); every rank leaves with its verdict.
  int code = 0;
  std::string text, error;
  if (rank == 0) {
    try {
      const g4::FileDiff d = g4::diff_files(o.files[0], o.files[1]);
      const double l1 = d.sums.l1(), l2 = d.sums.l2();
      std::ostringstream os;
      os << "g4-diff: '" << o.files[0] << "' (reference) vs '" << o.files[1] << "': N = " << d.n << ", " << d.elements
         << " complex elements\n"
         << "  L1 relative error  " << fmt::format("{:.6e}", l1) << "   ||vec(A - B)||_1 / ||vec(A)||_1\n"
         << "  L2 relative error  " << fmt::format("{:.6e}", l2) << "   ||vec(A - B)||_2 / ||vec(A)||_2\n";
      std::vector<std::string> over;
      if (!(l1 <= o.tolerance)) over.push_back("L1");
      if (!(l2 <= o.tolerance)) over.push_back("L2");
      if (over.empty()) {
        os << "  both within the tolerance " << fmt::format("{:g}", o.tolerance) << "\n";
      } else {
        code = 1;
        error =
            "g4-diff: the " +
            (over.size() == 2 ? std::string("L1 and L2 relative errors exceed") : over[0] + " relative error exceeds") +
            " the tolerance " + fmt::format("{:g}", o.tolerance);
      }
      text = os.str();
    } catch (const std::exception& e) {
      code = 2;
      error = describe_error(e);
    }
  }
  MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    std::cout << text << std::flush;
    if (!error.empty()) std::fprintf(stderr, "plexus: %s\n", error.c_str());
  }
  return code;
}

// ---- plugins --------------------------------------------------------------------------------

/// A valid parameter list as JSON: one object per parameter or sublist, depth first.
nlohmann::json parameters_json(const ParameterListPtr& valid) {
  nlohmann::json out = nlohmann::json::array();
  if (valid.is_null()) return out;
  for (const ParameterInfo& p : parameter_infos(*valid)) {
    nlohmann::json j = {{"path", p.path}, {"sublist", p.sublist}, {"doc", p.doc}};
    if (!p.sublist) {
      j["type"] = p.type;
      j["default"] = p.default_text;
      if (!p.range.empty()) j["range"] = p.range;
      if (!p.choices.empty()) j["choices"] = p.choices;
    }
    out.push_back(std::move(j));
  }
  return out;
}

/// What `plexus plugins` lists, for tools: every component with its plugin, file, summary,
/// availability and documented parameters, and the program's own parameters.
std::string plugins_json() {
  auto& reg = Registry::global();
  nlohmann::json root;
  root["search_path"] = reg.search_path();
  root["load_failures"] = nlohmann::json::array();
  for (const auto& f : reg.load_failures()) root["load_failures"].push_back({{"file", f.file}, {"reason", f.reason}});
  root["components"] = nlohmann::json::array();
  for (ComponentKind kind : {ComponentKind::Comm, ComponentKind::Collectives, ComponentKind::Kernel,
                             ComponentKind::Distribution, ComponentKind::Solver}) {
    for (const ComponentEntry* e : reg.list(kind)) {
      nlohmann::json c = {{"kind", kind_name(kind)}, {"name", e->descriptor.name},
                          {"plugin", e->plugin},     {"version", e->version},
                          {"file", e->file},         {"summary", e->descriptor.summary},
                          {"available", true},       {"unavailable_reason", nullptr}};
      if (e->descriptor.unavailable) {
        const std::string why = e->descriptor.unavailable();
        if (!why.empty()) {
          c["available"] = false;
          c["unavailable_reason"] = why;
        }
      }
      if (kind == ComponentKind::Comm) {
        const ComponentEntry* coll = reg.find(ComponentKind::Collectives, e->descriptor.name);
        c["collectives"] = coll != nullptr && coll->plugin == e->plugin ? e->descriptor.name : std::string("mpi");
      }
      c["sublist"] = kind == ComponentKind::Comm     ? "Communication/" + e->descriptor.name
                     : kind == ComponentKind::Kernel ? "Kernel/" + e->descriptor.name
                                                     : e->descriptor.name;
      c["parameters"] =
          parameters_json(e->descriptor.valid_parameters ? e->descriptor.valid_parameters() : ParameterListPtr());
      root["components"].push_back(std::move(c));
    }
  }
  root["program_parameters"] = parameters_json(top_level_valid());
  RunMetadata m;
  m.command = "plugins";
  m.ranks = mpi::size(MPI_COMM_WORLD);
  root["metadata"] = metadata_json(m);
  return root.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

int command_plugins(const Options& o, int rank, int size) {
  int exit_code = 0;
  if (!setup_phase(
          [&] {
            agreed([&] { check_outputs(o, rank); });  // an unwritable --json is found before the listing
            load_plugins(rank);
          },
          rank, size, exit_code))
    return exit_code;
  if (rank != 0) return 0;
  if (!o.json.empty()) {
    output::write_text(o.json, plugins_json(), "--json");
    if (o.json == "-") return 0;  // standard output holds the JSON alone
  }
  auto& reg = Registry::global();
  std::ostringstream os;
  os << "plugin search path:";
  for (const auto& d : reg.search_path()) os << " " << d;
  os << "\n";
  for (ComponentKind kind :
       {ComponentKind::Comm, ComponentKind::Collectives, ComponentKind::Kernel, ComponentKind::Distribution,
        ComponentKind::Solver}) {
    for (const ComponentEntry* e : reg.list(kind)) {
      os << "\n"
         << kind_name(kind) << " " << e->descriptor.name << "  (plugin " << e->plugin << " " << e->version << ", "
         << e->file << ")\n";
      if (!e->descriptor.summary.empty()) os << "    " << e->descriptor.summary << "\n";
      if (e->descriptor.unavailable) {
        const std::string why = e->descriptor.unavailable();
        if (!why.empty()) os << "    unavailable here: " << why << "\n";
      }
      if (kind == ComponentKind::Comm) {
        // What a strategy provides follows from what its plugin registers: a multiply algorithm
        // (every comm component), and the collectives of the same name and plugin if any.
        const ComponentEntry* coll = reg.find(ComponentKind::Collectives, e->descriptor.name);
        os << "    provides: multiply"
           << (coll != nullptr && coll->plugin == e->plugin ? ", collectives '" + e->descriptor.name + "'"
                                                            : std::string(", collectives: core's 'mpi'"))
           << "\n";
      }
      if (o.verbose) {
        ParameterListPtr valid = e->descriptor.valid_parameters ? e->descriptor.valid_parameters() : ParameterListPtr();
        auto lines = valid.is_null() ? std::vector<std::string>() : describe_parameters(*valid, "      ");
        if (lines.empty()) {
          os << "    parameters: none\n";
        } else {
          os << "    parameters (sublist "
             << (kind == ComponentKind::Comm     ? "Communication/"
                 : kind == ComponentKind::Kernel ? "Kernel/"
                                                 : "")
             << e->descriptor.name << "):\n";
          for (const auto& l : lines) os << l << "\n";
        }
      }
    }
  }
  if (o.verbose) {
    os << "\nprogram parameters (top level; see also 'plexus run --help'):\n";
    for (const auto& l : describe_parameters(*top_level_valid(), "    ")) os << l << "\n";
  }
  std::cout << os.str() << std::flush;
  return 0;
}

int dispatch(int argc, char** argv, int rank, int size) {
  Options o;
  try {
    o = parse_command_line(argc, argv);
  } catch (const UsageError& e) {
    // Every rank sees the same command line, so every rank leaves here alike.
    if (rank == 0) {
      std::fprintf(stderr, "plexus: %s\n", e.what());
      if (argc <= 1)
        std::fprintf(stderr, "\n%s", kOverview);
      else
        std::fprintf(stderr, "Run 'plexus --help' for usage.\n");
    }
    return 2;
  }
  if (o.help) {
    if (rank == 0) std::cout << help_of(o.command) << std::flush;
    return 0;
  }
  if (o.command == "version") {
    if (rank == 0) std::cout << version_text() << std::flush;
    return 0;
  }
  if (o.command == "run") return command_run(o, rank, size);
  if (o.command == "compare") return command_compare(o, rank, size);
  if (o.command == "plugins") return command_plugins(o, rank, size);
  if (o.command == "model") return command_model(o, rank, size);
  if (o.command == "g4-diff") return command_g4_diff(o, rank);
  if (o.command == "logp" || o.command == "perf") {
    Phases phases;
    phases.setup = [&](const std::function<void()>& setup, int& exit_code) {
      return setup_phase(setup, rank, size, exit_code);
    };
    phases.agreed = [](const std::function<void()>& check) { agreed(check); };
    phases.run = [&](const std::function<void()>& phase) { run_or_abort(phase, rank, 0.0); };
    if (o.command == "perf")
      return command_perf(o, rank, size, phases, [&](const Options& c, ParameterListPtr base) {
        return command_compare(c, rank, size, base);
      });
    return command_logp(o, rank, size, phases);
  }
  return 2;
}

}  // namespace
}  // namespace plexus::app

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int code = 0;
  try {
    if (provided < MPI_THREAD_FUNNELED)
      throw plexus::Error("MPI_Init_thread", "the MPI library does not provide MPI_THREAD_FUNNELED");
    plexus::app::set_command_line(argc, argv);
    code = plexus::app::dispatch(argc, argv, rank, size);
  } catch (const plexus::InputError& e) {
    plexus::app::abort_job(rank, plexus::app::describe_error(e), true);
  } catch (const std::exception& e) {
    plexus::app::abort_job(rank, plexus::app::describe_error(e), false);
  } catch (...) {
    plexus::app::abort_job(rank, "unknown exception", false);
  }
  MPI_Finalize();
  return code;
}
