// `plexus g4-diff`: the L1 and L2 relative errors between two G4 files of the g4 solver.
#include <mpi.h>
#include <spdlog/fmt/fmt.h>

#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "app_job.hpp"
#include "g4_hdf5.hpp"

namespace plexus::app {

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

}  // namespace plexus::app
