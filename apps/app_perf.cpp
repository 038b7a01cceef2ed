// `plexus perf FILE.perf`: DBCSR's benchmark input (plexus/perf_file.hpp) run as `plexus compare`
// runs a parameter list: every --strategies x --kernels combination, the same matrices, one table.
#include <mpi.h>

#include <cstdio>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "app.hpp"
#include "app_cli.hpp"
#include "plexus/error.hpp"
#include "plexus/log.hpp"
#include "plexus/perf_file.hpp"

namespace plexus::app {

const char* const kPerfHelp =
    "Usage: plexus perf FILE.perf [--strategies S1,S2,...] [--kernels K1,...] [options]\n"
    "\n"
    "Reads a benchmark input file of DBCSR's performance driver (dbcsr_perf; the files of DBCSR's\n"
    "tests/inputs/) and runs its multiply through every (strategy, kernel) combination, as 'plexus\n"
    "compare' does: the same matrices, the results compared, one table.\n"
    "\n"
    "What is read (one value a line; '#' lines are comments): npcols (0: grid by MPI), the optional\n"
    "MPI-RMA flag, dbcsr_multiply, M N K, the sparsities of A B C (fraction of zero blocks), the\n"
    "transposes of A B, the symmetries of A B C, the data type, alpha and beta (real, imaginary), the\n"
    "row/column/k limits, retain sparsity, the repetitions, the m/n/k block sizes as (multiplicity,\n"
    "size) pairs, and the checksum line. Each field's use is printed before the runs (--log-level info).\n"
    "\n"
    "Not supported (an error naming the line): data types other than 3 (real double precision),\n"
    "limits other than the whole matrices, symmetries other than N N N and S S N, sparsity 1.\n"
    "DBCSR's checksum references belong to its own random matrices: with check T, plexus compares C\n"
    "with the dense product instead (multiply/Check), for matrices of at most 4194304 elements.\n"
    "\n"
    "Options:\n"
    "  --strategies LIST      comma-separated strategy specs (default: cannon, or rma25d when the file\n"
    "                         says Use MPI-RMA = T)\n"
    "  --kernels LIST         comma-separated kernel specs (default: cpu)\n"
    "  --set Path/Key=value   override a parameter of the translated list (repeatable),\n"
    "                         e.g. --set Timing/Rounds=3\n"
    "  --write-params FILE    write the translated parameter list (XML; 'plexus compare FILE' repeats it)\n"
    "  --csv FILE, --json FILE, --wide, --tolerance T, --echo-params, --no-params-file,\n"
    "  --no-progress, --log-level LEVEL   as for 'plexus compare'\n"
    "  -h, --help             this text\n"
    "\n"
    "Examples:\n"
    "  mpiexec -n 4 plexus perf test_H2O.perf --strategies cannon,rma25d\n"
    "  mpiexec -n 2 plexus perf square_sparse.perf --strategies cannon,ring --kernels cpu,reference --json t.json\n";

int command_perf(const Options& o, int rank, int size, const Phases& phases,
                 const std::function<int(const Options&, ParameterListPtr)>& compare) {
  perf::PerfRun run;
  int exit_code = 0;
  const bool ok = phases.setup(
      [&] {
        // Every rank reads the file; a file some ranks cannot read is an error on all of them.
        phases.agreed([&] { run = perf::translate(perf::read_perf_file(o.file), size); });
      },
      exit_code);
  if (!ok) return exit_code;
  if (rank == 0 && (o.log_level.empty() || o.log_level == "info" || o.log_level == "debug")) {
    std::string text = "perf: '" + o.file + "', field by field:\n";
    for (const auto& n : run.notes) text += "  " + n + "\n";
    std::cout << text << std::flush;
  }
  Options c = o;
  if (c.strategies.empty()) c.strategies = {run.default_strategy};
  return compare(c, run.parameters);
}

}  // namespace plexus::app
