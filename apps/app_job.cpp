// What the `plexus` program's commands share (app_job.hpp): errors and how a job ends, cores and
// threads, components, and what a run prints about its parameters and its phases.
#include "app_job.hpp"

#include <omp.h>
#include <sched.h>
#include <spdlog/fmt/fmt.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <new>
#include <thread>

#include "plexus/log.hpp"
#include "plexus/output.hpp"
#include "plexus/registry.hpp"

namespace plexus::app {

namespace {

std::unique_ptr<CommStrategy> make_strategy(ParameterList& params) {
  const std::string name = selection_of(params).strategy;
  ParameterList own = own_parameters(params.sublist("Communication").sublist(name), ComponentKind::Comm, name);
  return Registry::global().make_comm(name, own, "plexus/Communication/" + name);
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

}  // namespace

// ---- errors ---------------------------------------------------------------------------------

std::string describe_error(const std::exception& e, const char* phase) {
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

[[noreturn]] void abort_job(int rank, const std::string& message, bool same_on_every_rank) {
  // An error every rank sees alike is best told once: give rank 0 a moment to end the job first.
  if (same_on_every_rank && rank != 0) ::sleep(2);
  std::fprintf(stderr, "plexus: error on rank %d: %s\n", rank, message.c_str());
  std::fflush(stderr);
  std::fflush(stdout);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

void maybe_fail_for_test(int rank) {
  if (const char* env = std::getenv("PLEXUS_TEST_FAIL_RANK")) {
    if (*env && std::atoi(env) == rank)
      throw Error("PLEXUS_TEST_FAIL_RANK", "failing on purpose on rank " + std::to_string(rank) + " (test hook)");
  }
}

double timeout_of(const ParameterList& validated) { return validated.sublist("Output").get<double>("TimeoutSeconds"); }

// ---- cores, plugins, parameters, components -------------------------------------------------

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
  int facts[5] = {u.ranks, u.threads, u.cores, u.chose_threads ? 1 : 0, mpi::open_mpi_waits_yield() ? 0 : 1};
  MPI_Bcast(facts, 5, MPI_INT, worst.rank, MPI_COMM_WORLD);
  return CoreUse{facts[0], facts[1], facts[2], facts[3] != 0, facts[4] != 0};
}

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
  if (u.ranks > u.cores && u.waits_spin)
    log().warn(
        "Open MPI does not yield the core of a rank that waits in this job (mpi_yield_when_idle and "
        "mpi_oversubscribe are off, as with a rankfile or cpu set that puts ranks on one core): a waiting "
        "rank spins through the time slices of the rank it waits for, and a latency-bound multiply runs "
        "many times slower; set OMPI_MCA_mpi_yield_when_idle=1");
}

void load_plugins(int rank) {
  Registry::global().load_default();
  if (rank == 0)
    for (const auto& w : Registry::global().warnings()) log().warn("{}", w);
}

ParameterListPtr load_parameters(const Options& o, int rank, const ParameterListPtr& given) {
  load_plugins(rank);
  ParameterListPtr params = !given.is_null() ? Teuchos::rcp(new ParameterList(*given))
                            : o.file.empty() ? Teuchos::rcp(new ParameterList("plexus"))
                                             : read_parameter_file(o.file);
  params->setName("plexus");
  for (const auto& s : o.sets) apply_override(*params, s);
  return params;
}

void configure_logging_for(const Options& o, const ParameterList& validated, int rank) {
  configure_logging(rank,
                    !o.log_level.empty() ? o.log_level : validated.sublist("Output").get<std::string>("LogLevel"));
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

void check_solver(const Components& c) {
  agreed([&] { c.solver->check(*c.context); });
}

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
  ctx.steps = StepDetail::Totals;  // the program reports summaries: long runs do not grow by a report a step
  return ctx;
}

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

// ---- what a run prints ----------------------------------------------------------------------

std::string plural(long long n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many.empty() ? one + "s" : many);
}

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

void check_outputs(const Options& o, int rank) {
  if (rank != 0) return;
  if (!o.csv.empty()) output::check(o.csv, "--csv");
  if (!o.json.empty()) output::check(o.json, "--json");
}

void start_progress_line(const Options& o, int rank) {
  progress::set_line_enabled(rank == 0 && !o.no_progress && log().should_log(spdlog::level::info));
}

void print_phase_table(const std::vector<timers::Stat>& phases, const std::string& what, const Options& o) {
  if (phases.empty() || o.json == "-" || !log().should_log(spdlog::level::info)) return;
  log().info("phases of {} (seconds in all; min, mean and max over the ranks; plexus/timers.hpp):", what);
  std::cout << timers::table(phases) << std::flush;
}

}  // namespace plexus::app
