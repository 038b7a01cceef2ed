// The top-level parameter list of the `plexus` program and its validation.
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <sstream>

#include "app.hpp"
#include "plexus/mpi.hpp"
#include "plexus/problem.hpp"
#include "plexus/registry.hpp"

namespace plexus::app {

UsageError::~UsageError() = default;

namespace {

std::string preferred(const std::vector<std::string>& names, const std::string& want) {
  if (std::find(names.begin(), names.end(), want) != names.end()) return want;
  return names.empty() ? want : names.front();
}

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

void require_some(const std::vector<std::string>& names, ComponentKind kind) {
  if (!names.empty()) return;
  std::string dirs;
  for (const auto& d : Registry::global().search_path()) dirs += (dirs.empty() ? "" : ", ") + d;
  throw InputError("plugins", std::string("no ") + kind_name(kind) +
                                  " component is available; no plugin was found in the plugin search path (" +
                                  (dirs.empty() ? std::string("empty") : dirs) + "); set PLEXUS_PLUGIN_PATH");
}

ParameterListPtr valid_for(const ComponentEntry& e) {
  if (!e.descriptor.valid_parameters) return Teuchos::rcp(new ParameterList(e.descriptor.name));
  auto v = e.descriptor.valid_parameters();
  return v.is_null() ? Teuchos::rcp(new ParameterList(e.descriptor.name)) : v;
}

// The valid parameters of collectives `name` as selection `s` uses them: with those of the
// strategy of that name when the run uses it as both.
ParameterListPtr valid_for_run(const Registry& reg, const Selection& s, const std::string& name) {
  ParameterListPtr valid = valid_for(reg.get(ComponentKind::Collectives, name));
  if (name != s.strategy) return valid;
  ParameterListPtr both = valid_for(reg.get(ComponentKind::Comm, name));
  for (auto it = valid->begin(); it != valid->end(); ++it)
    if (!both->isParameter(valid->name(it))) both->setEntry(valid->name(it), valid->entry(it));
  return both;
}

// Validates every component sublist present in `parent` (and the selected one, created if
// absent) against its component's valid parameters.
// `except`: a sublist validated elsewhere (one shared with the run's collectives).
void validate_component_sublists(ParameterList& parent, ComponentKind kind, const std::vector<std::string>& names,
                                 const std::string& selected, const std::string& path,
                                 const std::string& except = "") {
  parent.sublist(selected);  // the selected component's sublist is always echoed, with its defaults
  for (const auto& name : names) {
    if (!parent.isSublist(name) || name == except) continue;
    const ComponentEntry& e = Registry::global().get(kind, name);
    validate_and_fill(parent.sublist(name), *valid_for(e), path + "/" + name);
  }
}

}  // namespace

ParameterListPtr top_level_valid() {
  auto& reg = Registry::global();
  const auto solvers = reg.names(ComponentKind::Solver);
  const auto comms = reg.names(ComponentKind::Comm);
  const auto kernels = reg.names(ComponentKind::Kernel);
  require_some(solvers, ComponentKind::Solver);
  require_some(comms, ComponentKind::Comm);
  require_some(kernels, ComponentKind::Kernel);

  auto v = Teuchos::rcp(new ParameterList("plexus"));
  declare_choice(*v, "Solver", preferred(solvers, "multiply"), solvers,
                 "the solver to run; its parameters are in the sublist of the same name");
  v->set("Problem", *problem_valid_parameters(), "the matrices: generated or read, block sizes, distribution, grid");
  ParameterList& comm = v->sublist("Communication", false, "how data moves: the strategy and its parameters");
  declare_choice(comm, "Strategy", preferred(comms, "cannon"), comms,
                 "the communication strategy: the multiply algorithm and the collectives of its plugin (the "
                 "shorthand for both); its parameters are in the sublist of the same name");
  declare_choice(comm, "Multiply", "strategy", concat({"strategy"}, comms),
                 "the multiply algorithm, when not the Strategy's ('strategy': the Strategy's)");
  const auto collectives = reg.names(ComponentKind::Collectives);
  declare_choice(comm, "Collectives", "strategy", concat({"strategy"}, collectives),
                 "the collectives solvers use (circulate, reductions), when not the Strategy's ('strategy': the "
                 "collectives component named like the Strategy, else the multiply strategy's own, else 'mpi'); "
                 "a collectives component's parameters are in the sublist of its name (shared with a strategy "
                 "of the same name)");
  for (const auto& n : comms) comm.sublist(n, false, "parameters of the strategy '" + n + "'");
  for (const auto& n : collectives)
    if (!comm.isSublist(n)) comm.sublist(n, false, "parameters of the collectives '" + n + "'");
  ParameterList& kernel = v->sublist("Kernel", false, "how local blocks are multiplied: the kernel and its parameters");
  declare_choice(kernel, "Type", preferred(kernels, "cpu"), kernels,
                 "the local kernel; its parameters are in the sublist of the same name");
  for (const auto& n : kernels) kernel.sublist(n, false, "parameters of the kernel '" + n + "'");
  declare_int(kernel, "PlanMiB", static_cast<int>(ProductPlans::kDefaultBytes >> 20),
              "memory per rank for the plans of local products (their stacks and C's index): a multiply whose "
              "block patterns and panels repeat an earlier one's (a solver's iterations, repetitions) replays its "
              "stacks instead of building them, with the same result to the last bit. Not with on-the-fly "
              "filtering (FilterEps > 0). Plans in use are not dropped for a new one; the summary counts the plans not "
              "kept for lack of room. 0: no plans",
              0, 1 << 20);
  ParameterList& output = v->sublist("Output", false, "what the program prints");
  declare_choice(output, "LogLevel", "info", {"error", "warn", "info", "debug"},
                 "rank 0 logs at this level; other ranks log warnings and errors, everything at debug");
  declare_double(output, "TimeoutSeconds", 0,
                 "watchdog: a rank that makes no progress (no MPI call completed, no local product batch) for "
                 "this many seconds while the solver runs reports the operation it is in and ends the job; 0: off. "
                 "Choose it longer than the slowest single step",
                 0, 1e9);
  ParameterList& timing =
      v->sublist("Timing", false, "how run and compare repeat the solver so that their timings can be trusted");
  const int imax = std::numeric_limits<int>::max();
  declare_int(timing, "WarmUp", 1,
              "solver runs per combination before the counted ones; their multiplies are not counted", 0, imax);
  declare_int(timing, "Rounds", 1,
              "counted solver runs per combination (each does the solver's own repetitions); compare runs the "
              "combinations round-robin, one run each per round",
              1, imax);
  declare_choice(timing, "Order", "rotated", {"rotated", "fixed"},
                 "compare: 'rotated' starts each round with another combination (every combination takes every "
                 "position; the last round runs in the given order), 'fixed' runs the given order every round");
  for (const auto& n : solvers) v->sublist(n, false, "parameters of the solver '" + n + "'");
  return v;
}

namespace {
void validate_top_level_here(ParameterList& user);
}

void validate_top_level(ParameterList& user) {
  try {
    validate_top_level_here(user);
  } catch (const InputError& e) {
    // A selection refused while plugin files could not be loaded: say so, it may be the reason.
    static const std::vector<std::string> selections{"plexus/Solver", "plexus/Communication/Strategy",
                                                     "plexus/Communication/Multiply",
                                                     "plexus/Communication/Collectives", "plexus/Kernel/Type"};
    const std::string note = load_failures_note(Registry::global().load_failures());
    if (note.empty() || std::find(selections.begin(), selections.end(), e.where()) == selections.end()) throw;
    throw InputError(e.where(), e.what() + note);
  }
}

namespace {
void validate_top_level_here(ParameterList& user) {
  auto& reg = Registry::global();
  const auto solvers = reg.names(ComponentKind::Solver);
  const auto comms = reg.names(ComponentKind::Comm);
  const auto kernels = reg.names(ComponentKind::Kernel);
  auto valid = top_level_valid();

  // Top level: Problem and Output recursively; solver, Communication and Kernel sublists below.
  validate_and_fill(user, *valid, "plexus", concat(solvers, {"Communication", "Kernel"}));
  const auto collectives = reg.names(ComponentKind::Collectives);
  ParameterList& comm = user.sublist("Communication");
  validate_and_fill(comm, valid->sublist("Communication"), "plexus/Communication", concat(comms, collectives));
  ParameterList& kernel = user.sublist("Kernel");
  validate_and_fill(kernel, valid->sublist("Kernel"), "plexus/Kernel", kernels);

  const ParameterList& problem = user.sublist("Problem");
  // The multiply problem reads A and B, the density-matrix solvers' H (and S); the solver's own
  // set-up says which of them it needs.
  if (problem.get<std::string>("Generator") == "matrix-market" && problem.get<std::string>("FileH").empty() &&
      (problem.get<std::string>("FileA").empty() || problem.get<std::string>("FileB").empty()))
    throw InputError("plexus/Problem/FileA",
                     "plexus/Problem/Generator = 'matrix-market' needs plexus/Problem/FileA and plexus/Problem/FileB "
                     "(multiply), or plexus/Problem/FileH (sign, purification)");
  if (problem.get<std::string>("Generator") == "cp2k-csr" && problem.get<std::string>("FileH").empty())
    throw InputError("plexus/Problem/FileH",
                     "plexus/Problem/Generator = 'cp2k-csr' needs plexus/Problem/FileH (the Kohn-Sham matrix CP2K's "
                     "KS_CSR_WRITE wrote; plexus/Problem/FileS, the overlap, is optional)");

  // The grid against the job, before anything is made of it (the product in 64 bits: 4 x
  // 1073741825 wrapped to 4 in int).
  const int grid_rows = problem.get<int>("GridRows"), grid_cols = problem.get<int>("GridCols");
  // Only in a job: a list is also validated without MPI (tests/fuzz/fuzz_xml, tools).
  int in_job = 0;
  MPI_Initialized(&in_job);
  const int ranks = in_job ? mpi::size(MPI_COMM_WORLD) : 0;
  if (in_job && grid_rows > 0 && grid_cols > 0 && std::int64_t{grid_rows} * grid_cols != ranks)
    throw InputError("plexus/Problem/GridRows",
                     "plexus/Problem/GridRows x plexus/Problem/GridCols = " + std::to_string(grid_rows) + " x " +
                         std::to_string(grid_cols) + " = " + std::to_string(std::int64_t{grid_rows} * grid_cols) +
                         " ranks, but the job has " + std::to_string(ranks) +
                         "; give a grid of that many ranks, or both 0 (automatic)");

  const Selection s = selection_of(user);
  for (const auto& name : solvers) {
    if (!user.isSublist(name) && name != s.solver) continue;
    validate_and_fill(user.sublist(name), *valid_for(reg.get(ComponentKind::Solver, name)), "plexus/" + name);
  }
  // A collectives component named like a strategy shares its sublist, validated for the roles the
  // run gives it: as a strategy (selected or not) against the strategy's parameters, as the run's
  // collectives only against the collectives' (a strategy parameter there would do nothing), as
  // both against both. Every selected sublist is made before it is validated, so that the echo
  // holds its defaults and reads back the same.
  const auto is_comm = [&](const std::string& name) {
    return std::find(comms.begin(), comms.end(), name) != comms.end();
  };
  const std::string shared = !s.collectives.empty() && is_comm(s.collectives) ? s.collectives : "";
  validate_component_sublists(comm, ComponentKind::Comm, comms, s.strategy, "plexus/Communication", shared);
  for (const auto& name : collectives) {
    if (is_comm(name) && name != shared) continue;  // validated above as a strategy's
    if (!comm.isSublist(name) && name != s.collectives) continue;
    validate_and_fill(comm.sublist(name), *valid_for_run(Registry::global(), s, name),
                      "plexus/Communication/" + name);
  }
  validate_component_sublists(kernel, ComponentKind::Kernel, kernels, s.kernel, "plexus/Kernel");
}
}  // namespace

namespace {

// Copies the entries of `from` missing in `into` (a component's declared parameters).
void merge_missing(ParameterList& into, const ParameterList& from) {
  for (auto it = from.begin(); it != from.end(); ++it)
    if (!into.isParameter(from.name(it))) into.setEntry(from.name(it), from.entry(it));
}

// The declared defaults of every component sublist present in `validated` (a component and a
// collectives component of one name share a sublist: the declarations of both).
void fill_component_defaults(ParameterList& defaults, const ParameterList& validated,
                             const std::vector<ComponentKind>& kinds) {
  for (auto it = validated.begin(); it != validated.end(); ++it) {
    const std::string& name = validated.name(it);
    if (!validated.isSublist(name)) continue;
    ParameterList& d = defaults.sublist(name);
    for (ComponentKind kind : kinds)
      if (const ComponentEntry* e = Registry::global().find(kind, name)) merge_missing(d, *valid_for(*e));
  }
}

std::string value_text(const Teuchos::ParameterEntry& e) {
  const Teuchos::any& v = e.getAny(false);
  if (v.type() == typeid(int)) return fmt::format("{}", Teuchos::any_cast<int>(v));
  if (v.type() == typeid(double)) return fmt::format("{}", Teuchos::any_cast<double>(v));
  if (v.type() == typeid(bool)) return Teuchos::any_cast<bool>(v) ? "true" : "false";
  if (v.type() == typeid(std::string)) return Teuchos::any_cast<std::string>(v);
  std::ostringstream os;
  os << e.getAny(false);
  return os.str();
}

void collect_non_defaults(const ParameterList& list, const ParameterList* defaults, const std::string& prefix,
                          std::vector<std::string>& out) {
  for (auto it = list.begin(); it != list.end(); ++it) {
    const std::string& name = list.name(it);
    const Teuchos::ParameterEntry& e = list.entry(it);
    if (e.isList()) {
      const ParameterList* d = defaults && defaults->isSublist(name) ? &defaults->sublist(name) : nullptr;
      collect_non_defaults(list.sublist(name), d, prefix + name + "/", out);
      continue;
    }
    const Teuchos::ParameterEntry* d = defaults ? defaults->getEntryPtr(name) : nullptr;
    if (d == nullptr || d->isList() || !(d->getAny(false) == e.getAny(false)))
      out.push_back(prefix + name + "=" + value_text(e));
  }
}

}  // namespace

std::vector<std::string> non_default_assignments(const ParameterList& validated) {
  // The declarations the validation filled the list from (validate_top_level): the top level with
  // Problem, Output and Timing, then every component sublist present.
  ParameterListPtr defaults = top_level_valid();
  fill_component_defaults(*defaults, validated, {ComponentKind::Solver});
  if (validated.isSublist("Communication"))
    fill_component_defaults(defaults->sublist("Communication"), validated.sublist("Communication"),
                            {ComponentKind::Comm, ComponentKind::Collectives});
  if (validated.isSublist("Kernel"))
    fill_component_defaults(defaults->sublist("Kernel"), validated.sublist("Kernel"), {ComponentKind::Kernel});
  std::vector<std::string> out;
  collect_non_defaults(validated, defaults.get(), "", out);
  return out;
}

ParameterList own_parameters(const ParameterList& sublist, ComponentKind kind, const std::string& name) {
  const ParameterListPtr valid = valid_for(Registry::global().get(kind, name));
  ParameterList own(sublist.name());
  for (auto it = sublist.begin(); it != sublist.end(); ++it)
    if (valid->isParameter(sublist.name(it))) own.setEntry(sublist.name(it), sublist.entry(it));
  return own;
}

Selection selection_of(const ParameterList& validated) {
  Selection s;
  s.solver = validated.get<std::string>("Solver");
  const ParameterList& comm = validated.sublist("Communication");
  const std::string shorthand = comm.get<std::string>("Strategy");
  const std::string multiply = comm.isParameter("Multiply") ? comm.get<std::string>("Multiply") : "strategy";
  const std::string coll = comm.isParameter("Collectives") ? comm.get<std::string>("Collectives") : "strategy";
  s.strategy = multiply == "strategy" ? shorthand : multiply;
  if (coll != "strategy")
    s.collectives = coll;
  else if (s.strategy != shorthand && Registry::global().find(ComponentKind::Collectives, shorthand) != nullptr)
    s.collectives = shorthand;  // the shorthand's collectives, the multiply from elsewhere
  s.kernel = validated.sublist("Kernel").get<std::string>("Type");
  return s;
}

TimingPlan timing_of(const ParameterList& validated) {
  const ParameterList& t = validated.sublist("Timing");
  TimingPlan plan;
  plan.warm_up = t.get<int>("WarmUp");
  plan.rounds = t.get<int>("Rounds");
  plan.rotate = t.get<std::string>("Order") == "rotated";
  return plan;
}

std::vector<std::size_t> round_order(std::size_t n, int round, int total, bool rotate) {
  std::vector<std::size_t> order(n);
  if (n == 0) return order;
  const long long nn = static_cast<long long>(n);
  const long long shift = rotate ? ((static_cast<long long>(round) - (total - 1)) % nn + nn) % nn : 0;
  for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::size_t>((shift + static_cast<long long>(i)) % nn);
  return order;
}

}  // namespace plexus::app
