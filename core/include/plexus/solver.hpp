#pragma once
// Solvers: programs that use a communication strategy and a kernel (multiply, sign, ...).
#include <mpi.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "plexus/comm_strategy.hpp"
#include "plexus/context.hpp"
#include "plexus/kernel.hpp"
#include "plexus/matrix.hpp"
#include "plexus/parameters.hpp"

namespace plexus {

struct SolverContext {
  MPI_Comm comm = MPI_COMM_WORLD;
  const ParameterList* problem = nullptr;  ///< the validated "Problem" sublist
  CommStrategy* strategy = nullptr;
  Kernel* kernel = nullptr;
  /// The run's context (context.hpp): the same strategy and kernel, the communicator pool, the
  /// operation log. Solvers that use the matrix API (algebra.hpp) need it; the plexus program
  /// always sets it. May be null for callers that run a solver without one (g4's tests).
  Context* context = nullptr;
  bool quiet = false;  ///< no progress output (compare prints its own)
  /// The whole validated parameter list of the run, when the caller has one (the plexus program
  /// sets it; solvers record it with their outputs). May be null.
  const ParameterList* parameters = nullptr;
};

struct SolverResult {
  std::shared_ptr<DistMatrix> result;        ///< the matrix results are compared on
  std::vector<MultiplyReport> reports;       ///< one per multiply performed
  std::map<std::string, double> figures;     ///< solver-specific scalars (trace, energy, ...)
};

class Solver {
 public:
  virtual ~Solver();  // key function, defined in libplexus_core
  virtual std::string name() const = 0;
  virtual SolverResult run(SolverContext& ctx) = 0;
};

}  // namespace plexus
