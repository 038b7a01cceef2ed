// `plexus run`: one solver on one problem, warm-up runs first, then the counted ones, and a summary.
#include <mpi.h>
#include <spdlog/fmt/fmt.h>

#include <cmath>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "app_job.hpp"
#include "plexus/log.hpp"
#include "plexus/output.hpp"

namespace plexus::app {

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

namespace {

/// The lines of a run's result (its summary): on standard output at every log level, as compare's
/// table is, unless --json - has standard output; at info they go through the log.
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
  if (s.ranks > 1 && s.flops > 0 && std::isfinite(s.work_balance()))
    l.info("  work balance          {} (the busiest rank's flops over the average rank's; 1 is an even split)",
           fmt::format("{:.3f}", s.work_balance()));
  l.info("  bytes sent per rank   {} max, {} average", format_bytes(s.bytes_max), format_bytes(s.bytes_avg));
  l.info("  from other ranks      {} received per rank, average (index included)", format_bytes(s.network_avg));
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
    l.info(
        "  dense ticks           {} of {} local product ticks (all ranks; one GEMM per strip: Kernel/cpu/DenseMinSize)",
        fmt::format("{:.0f}", s.dense_ticks), fmt::format("{:.0f}", s.product_ticks));
  l.info("  peak buffer memory    {} (max over ranks)", format_bytes(s.peak_buffer_max));
  l.info("  peak tracked memory   {} (max over ranks)", format_bytes(s.peak_memory_max));
  if (s.peak_device_max > 0) l.info("  peak device memory    {} (max over ranks)", format_bytes(s.peak_device_max));
  for (const auto& [name, value] : s.extra)
    l.info("  {:<21} {} (strategy figure, max over ranks)", name, fmt::format("{:.6g}", value));
}

void print_operation_lines(ResultLines& l, const std::map<std::string, OperationSummary>& ops) {
  for (const auto& [name, o] : ops)
    l.info(
        "  {:<21} {} per run, {} s, {} received/rank max{}", name, fmt::format("{:.4g}", o.count),
        fmt::format("{:.4g}", o.seconds), format_bytes(o.bytes_received),
        o.predicted_bytes_received < 0 ? std::string() : " (model " + format_bytes(o.predicted_bytes_received) + ")");
}

}  // namespace

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
  StepTotals counted;  // every counted step's seconds, the rest summed (StepDetail::Totals)
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
          const Summary warm = summarize(c.solver->run(ctx).steps(), MPI_COMM_WORLD);
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
          counted.append(last.steps());
          for (auto& op : last.operations) counted_operations.push_back(std::move(op));
          last.reports.clear();
          last.step_totals = StepTotals{};
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

}  // namespace plexus::app
