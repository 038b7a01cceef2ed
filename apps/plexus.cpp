// The `plexus` program: run a solver, compare strategies and kernels, list plugins. Each command
// lives in a file of its own (app_job.hpp lists them; logp and perf: app.hpp); here are the overview,
// the dispatch and main().
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iostream>
#include <optional>
#include <string>

#include "app.hpp"
#include "app_cli.hpp"
#include "app_job.hpp"
#include "build_info.hpp"
#include "plexus/error.hpp"

namespace plexus::app {
namespace {

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

// The rank a launcher gave this process, read before MPI starts: Open MPI's, PMIx's, MPICH's (PMI)
// or Slurm's; 0 where none is set (a process started by itself).
int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (const char* value = std::getenv(name); value != nullptr && *value != '\0') return std::atoi(value);
  return 0;
}

// What needs no MPI: the help, the version and a command line that does not parse. These are
// answered before MPI starts: at once, and also where MPI cannot start (a login node without its
// fabric) or starts slowly (a process started without mpiexec first spawns Open MPI's daemon: half
// a second of `plexus --help` here). Every process of a job sees the same command line, so all
// leave here alike; only the launcher's rank 0 prints. Otherwise `o` holds the parsed command.
// On a command line that does not parse only rank 0 exits with 2, the others with 0: a launcher
// ends the whole job as soon as one process exits non-zero, and a rank that did so first could
// have rank 0 killed before its message was written (seen with Open MPI: `mpiexec -n 2` then
// printed nothing but its own notice). The job's exit code is still 2 (rank 0's).
std::optional<int> answer_without_mpi(int argc, char** argv, Options& o) {
  const bool printing = launcher_rank() == 0;
  try {
    o = parse_command_line(argc, argv);
  } catch (const UsageError& e) {
    if (!printing) return 0;
    std::fprintf(stderr, "plexus: %s\n", e.what());
    if (argc <= 1)
      std::fprintf(stderr, "\n%s", kOverview);
    else
      std::fprintf(stderr, "Run 'plexus --help' for usage.\n");
    return 2;
  }
  if (o.help) {
    if (printing) std::cout << help_of(o.command) << std::flush;
    return 0;
  }
  if (o.command == "version") {
    if (printing) std::cout << version_text() << std::flush;
    return 0;
  }
  return std::nullopt;
}

int dispatch(const Options& o, int rank, int size) {
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
  plexus::app::Options options;
  if (const std::optional<int> code = plexus::app::answer_without_mpi(argc, argv, options)) return *code;
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
    code = plexus::app::dispatch(options, rank, size);
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
