// `plexus compare`: the same problem through several (strategy, kernel) combinations in one job,
// round-robin, the results checked against the first, one table (and CSV, JSON).
#include <mpi.h>
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "app_job.hpp"
#include "plexus/log.hpp"
#include "plexus/matrix.hpp"
#include "plexus/memory.hpp"
#include "plexus/output.hpp"
#include "plexus/registry.hpp"

namespace plexus::app {

const char* const kCompareHelp =
    "Usage: plexus compare [FILE.xml] --strategies S1,S2,... [options]\n"
    "\n"
    "Runs the same problem through every (strategy, kernel) combination in one job, compares each result\n"
    "with the first one (relative Frobenius difference) and prints one table: time per multiply\n"
    "(median; --wide: min and mean too), GFLOP/s (at the median), data received per rank against the\n"
    "strategy's model, peak buffer memory; --wide adds the work balance (the busiest rank's flops over\n"
    "the average rank's), bytes and messages sent per rank, wait time.\n"
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

namespace {

struct Row {
  std::string strategy, kernel;
  std::string grid;  ///< the process grid of its result ("" when the solver returns no matrix)
  Summary summary;   ///< of the counted multiplies
  Summary warm_up;   ///< of the warm-up multiplies (their times only are shown, in the JSON)
  double rel_diff = 0;
  bool compared = true;  ///< false when the solver returned no result matrix (rel_diff is NaN)
  std::map<std::string, double> figures;
  std::map<std::string, OperationSummary> operations;  ///< of the counted runs
};

// The work balance, or "-" where the strategy cannot count its ranks' products.
std::string balance_text(const Summary& s) {
  return std::isfinite(s.work_balance()) ? fmt::format("{:.3f}", s.work_balance()) : std::string("-");
}

// The default table fits 100 columns (with strategy names up to about 20 characters): time, rate,
// volume against the model, buffer memory, agreement. `wide`: every column; the CSV and JSON have
// every figure either way.
std::string table_text(const std::vector<Row>& rows, bool wide) {
  // volume: data bytes a rank receives per multiply (one-sided gets included), the quantity of
  // the published volume models; model: the strategy's own prediction of it from its schedule.
  // min, median, mean: seconds per multiply (each multiply: its slowest rank) over the counted ones.
  const std::vector<std::string> head =
      wide ? std::vector<std::string>{"strategy",     "kernel",          "min (s)",       "median (s)",
                                      "mean (s)",     "GFLOP/s",         "balance",       "volume/rank max",
                                      "model max",    "volume/rank avg", "sent/rank max", "msgs/rank max",
                                      "wait max (s)", "peak buffer",     "rel. diff"}
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
                       fmt::format("{:.3f}", s.gflops), balance_text(s), format_bytes(s.volume_max), model,
                       format_bytes(s.volume_avg), format_bytes(s.bytes_max), fmt::format("{:.0f}", s.messages_max),
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
        "seconds_mean,gflops,flops_per_multiply,flops_per_rank_max,work_balance,volume_per_rank_max,"
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
        "{},{},{},{},{},{},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.0f},{:.0f},{},{:.0f},{:.1f},{},{:.1f},"
        "{:.0f},{:.1f},{:.0f},{:.3f},{:.9g},{:.9g},{:.0f},{:.9g},{:.0f},{:.0f},{}",
        quote(r.strategy), quote(r.kernel), s.ranks, quote(r.grid), s.multiplies, r.warm_up.multiplies, s.seconds,
        s.seconds_min, s.seconds_median, s.seconds, s.gflops, s.flops, s.flops_max,
        std::isfinite(s.work_balance()) ? fmt::format("{:.6f}", s.work_balance()) : std::string(), s.volume_max,
        s.volume_avg, s.model_max < 0 ? std::string() : fmt::format("{:.0f}", s.model_max), s.network_avg, s.bytes_max,
        s.bytes_avg, s.messages_max, s.messages_avg, s.wait_max, s.kernel_seconds, s.ticks_max,
        s.beyond_kernel_wait_median, s.peak_buffer_max, s.peak_memory_max,
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
    j["flops_per_multiply"] = json_number(s.flops);
    j["flops_per_rank_max"] = json_number(s.flops_max);
    j["work_balance"] = json_number(s.work_balance());
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
  StepTotals warm_up, counted;                      ///< this rank's timed steps, in the order run
  std::vector<OperationReport> counted_operations;  ///< this rank's operations of the counted runs
  int counted_runs = 0;
  std::map<std::string, double> figures;  ///< of the last counted run
  std::string grid;                       ///< of the last counted run's result, if it has one
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
  StepTotals steps = result.steps();
  steps.sum.peak_memory_bytes = std::max<std::int64_t>(0, steps.sum.peak_memory_bytes - held_total);
  steps.sum.peak_buffer_bytes = std::max<std::int64_t>(0, steps.sum.peak_buffer_bytes - held_buffer);
  (warm_up ? c.warm_up : c.counted).append(steps);
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

}  // namespace

int command_compare(const Options& o, int rank, int size, const ParameterListPtr& given) {
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

}  // namespace plexus::app
