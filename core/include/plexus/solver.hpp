#pragma once
// Solvers: programs that run on a Context (its multiply algorithm, kernel, collectives and
// communicators) through the matrix API: multiply, sign, g4, ...
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

/// What a solver run gets: the run's context and its problem.
struct SolverContext {
  /// The run's context (context.hpp): the multiply algorithm, kernel and collectives selected,
  /// the communicator (context->comm()) and its pool, the operation log. Required.
  Context* context = nullptr;
  const ParameterList* problem = nullptr;  ///< the validated "Problem" sublist (may be null)
  bool quiet = false;  ///< no progress output (compare prints its own)
  /// The whole validated parameter list of the run, when the caller has one (the plexus program
  /// sets it; solvers record it with their outputs). May be null.
  const ParameterList* parameters = nullptr;
  /// What the caller needs of the run's timed steps and operations (context.hpp): every one
  /// (Every, the default), or totals (Totals: the plexus program, which reports summaries only).
  /// With Totals a solver whose steps have no bound (multiply's Repetitions, g4's Measurements)
  /// keeps them as totals (SolverResult::keep, step_totals; a LogScope with Totals), so that a run
  /// of any length holds a few bytes a step; one whose steps are few may keep every one anyway.
  StepDetail steps = StepDetail::Every;
};

struct SolverResult {
  std::shared_ptr<DistMatrix> result;     ///< the matrix results are compared on
  std::vector<MultiplyReport> reports;    ///< one per timed step (a multiply, a measurement): the run's timings
  /// The timed steps kept as totals (SolverContext::steps = Totals, through keep()): each step's
  /// seconds, the rest of its report summed. steps() gives both kinds as one.
  StepTotals step_totals;
  /// Every operation of the run on this rank, in order (multiplies, the matrix API, collectives,
  /// solver phases), each with its model's predictions: what a LogScope opened when the run began
  /// collected (Context::log_scope), what the solver recorded itself included. With
  /// SolverContext::steps = Totals, where the solver's scope keeps totals: one per kind of
  /// operation (OperationReport::count says how many it stands for).
  std::vector<OperationReport> operations;
  std::map<std::string, double> figures;  ///< solver-specific scalars (trace, energy, ...)
  /// Per-iteration figures of iterative solvers (residual, occupancy, seconds, ...), in order;
  /// the same on every rank. `plexus run --json` writes them as "history".
  std::vector<std::map<std::string, double>> history;
  /// Named lists of numbers (eigenvalues, a box's dimensions, ...), the same on every rank.
  /// `plexus run --json` writes them under "series".
  std::map<std::string, std::vector<double>> series;

  /// Keeps one timed step as `detail` says: in reports (Every), or added to step_totals (Totals).
  void keep(MultiplyReport r, StepDetail detail);
  /// Every timed step as totals: those in reports, then step_totals'.
  StepTotals steps() const;
};

class Solver {
 public:
  virtual ~Solver();  // key function, defined in libplexus_core
  virtual std::string name() const = 0;
  /// What the solver needs from the run, checked when the run is set up, before any solver
  /// runs: throw plexus::InputError naming the parameter to change when the context's
  /// components (or its rank count) cannot serve this solver. Called on every rank with the same
  /// context and must not communicate. It should give the same answer everywhere, except about
  /// a file only some ranks write (the program gathers set-up errors, so an error on some ranks
  /// ends the run as cleanly). Default: any.
  virtual void check(const Context& ctx) const;
  virtual SolverResult run(SolverContext& ctx) = 0;
};

}  // namespace plexus
