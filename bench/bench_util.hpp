#pragma once
// Small pieces the benchmark drivers share: command-line numbers and lists, byte sizes in words,
// min/median/mean, JSON numbers that may be infinite, a barrier that leaves the cores to the busy
// ranks, the machine's facts, and the "metadata" object every bench JSON carries (run_metadata,
// check_metadata; bench/README.md, "Metadata").
// Header-only: each driver is one translation unit. Link plexus_build_info (apps/) with it.
#include <mpi.h>
#include <omp.h>
#include <spdlog/fmt/fmt.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "build_info.hpp"
#include "plexus/error.hpp"
#include "plexus/mpi.hpp"
#include "plexus/output.hpp"
#include "plexus/parameters.hpp"

namespace plexus::bench {

using json = nlohmann::json;

/// A bad command line: reported by rank 0 before any work, exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// "a,b,,c" -> {"a", "b", "c"}.
inline std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

/// The integer value of `option` in lo..hi; with `suffix`, K, M, G (powers of 1024, "KiB" too).
inline std::int64_t to_int(const std::string& option, const std::string& v, std::int64_t lo, std::int64_t hi,
                           bool suffix = false) {
  std::string digits = v;
  std::int64_t mult = 1;
  if (suffix && !digits.empty()) {
    std::string s = digits;
    if (s.size() > 2 && (s.substr(s.size() - 2) == "iB" || s.substr(s.size() - 2) == "IB")) s.resize(s.size() - 2);
    const char last = s.empty() ? '\0' : s.back();
    if (last == 'K' || last == 'k') mult = 1024;
    if (last == 'M' || last == 'm') mult = 1024 * 1024;
    if (last == 'G' || last == 'g') mult = 1024 * 1024 * 1024;
    if (mult > 1) s.pop_back();
    digits = s;
  }
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(digits.c_str(), &end, 10);
  if (digits.empty() || *end != '\0' || errno != 0 || x < 0 || x > hi / mult || x * mult < lo)
    throw UsageError(option + " needs an integer in " + std::to_string(lo) + " .. " + std::to_string(hi) +
                     (suffix ? " (K, M, G suffixes allowed)" : "") + ", got '" + v + "'");
  return x * mult;
}

/// The value of `option` as a finite number > 0.
inline double to_positive(const std::string& option, const std::string& v) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !(x > 0) || !std::isfinite(x))
    throw UsageError(option + " needs a number > 0, got '" + v + "'");
  return x;
}

/// lo, 2 lo, 4 lo, ... <= hi.
inline std::vector<std::int64_t> doubling(std::int64_t lo, std::int64_t hi) {
  std::vector<std::int64_t> out;
  for (std::int64_t n = lo; n <= hi; n *= 2) out.push_back(n);
  return out;
}

/// "64 KiB", "3 MiB", "100 B".
inline std::string human(std::int64_t b) {
  if (b >= (1 << 20) && b % (1 << 20) == 0) return fmt::format("{} MiB", b >> 20);
  if (b >= 1024 && b % 1024 == 0) return fmt::format("{} KiB", b >> 10);
  return fmt::format("{} B", b);
}

struct Stats {
  double min = 0, median = 0, mean = 0;
};

inline Stats stats_of(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  const std::size_t m = v.size() / 2;
  s.median = v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  return s;
}

/// A JSON number, or null for inf and NaN (which JSON cannot hold).
inline json number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

/// Whether `j` holds the dotted path "a.b.c" (a value of any type, null included).
inline bool has_path(const json& j, const std::string& dotted) {
  std::string pointer = "/" + dotted;
  std::replace(pointer.begin(), pointer.end(), '.', '/');
  return j.contains(json::json_pointer(pointer));
}

/// Every rank of `comm` waits for all of them; a rank idles in usleep between two MPI_Test, so a
/// rank with nothing to do leaves its core to the others (the paper's inactive processes).
inline void sleepy_barrier(MPI_Comm comm, int poll_us) {
  MPI_Request r = MPI_REQUEST_NULL;
  plexus::mpi::check(MPI_Ibarrier(comm, &r), "MPI_Ibarrier");
  for (int flag = 0;;) {
    plexus::mpi::check(MPI_Test(&r, &flag, MPI_STATUS_IGNORE), "MPI_Test");
    if (flag) break;
    if (poll_us > 0) usleep(static_cast<useconds_t>(poll_us));
  }
}

inline std::string read_first_line_with(const char* file, const std::string& key) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0) {
      const auto c = line.find(':');
      std::string v = c == std::string::npos ? line : line.substr(c + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  return "";
}

/// The 1-minute load average (-1 when /proc/loadavg cannot be read).
inline double loadavg1() {
  std::ifstream in("/proc/loadavg");
  double x = -1;
  in >> x;
  return x;
}

// The facts of a run the program's metadata records too: one implementation (apps/run_facts.cpp).
using plexus::app::mpi_library;
using plexus::app::utc_now;

/// The host, CPU, memory, MPI library and its settings from the environment, the date.
inline json machine_info(int ranks) {
  json m;
  utsname u{};
  if (uname(&u) == 0) {
    m["hostname"] = u.nodename;
    m["kernel"] = std::string(u.sysname) + " " + u.release;
    m["arch"] = u.machine;
  }
  m["cpu_model"] = read_first_line_with("/proc/cpuinfo", "model name");
  m["online_cpus"] = sysconf(_SC_NPROCESSORS_ONLN);
  m["memory_total"] = read_first_line_with("/proc/meminfo", "MemTotal");
  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  MPI_Get_library_version(lib, &len);
  std::string l(lib, static_cast<std::size_t>(std::max(0, len)));
  while (!l.empty() && (l.back() == '\n' || l.back() == '\0' || l.back() == ' ')) l.pop_back();
  m["mpi_library"] = l;
  m["ranks"] = ranks;
  m["oversubscribed"] = ranks > sysconf(_SC_NPROCESSORS_ONLN);
  // The Open MPI settings a run of these benches may be given (mpiexec adds many OMPI_MCA_* of its
  // own, which are left out).
  json env = json::object();
  for (const char* k : {"OMPI_MCA_mpi_yield_when_idle", "OMPI_MCA_btl_vader_single_copy_mechanism",
                        "OMPI_MCA_rmaps_base_oversubscribe", "OMPI_MCA_btl", "OMPI_MCA_coll",
                        "OMPI_MCA_coll_libnbc_ireduce_algorithm", "OMPI_MCA_coll_libnbc_ibcast_algorithm",
                        "OMPI_MCA_coll_tuned_use_dynamic_rules"})
    if (const char* v = std::getenv(k)) env[k] = v;
  m["mpi_environment"] = env;
  m["date_utc"] = utc_now();
  return m;
}

// ---- metadata: one object, the same shape in every bench JSON (bench/README.md, "Metadata") ------

/// The command line as given, one word per element (as the program's metadata has it).
inline std::vector<std::string> command_line(int argc, char** argv) { return {argv, argv + argc}; }

/// A parameter list as a JSON object (plexus::app::parameters_object, as in the program's metadata).
inline json parameters_json(const plexus::ParameterList& list) { return plexus::app::parameters_object(list); }

/// What a bench tells run_metadata about its run.
struct RunInfo {
  std::string benchmark;                  ///< "plexus-bench", ...
  std::vector<std::string> command_line;  ///< command_line(argc, argv)
  int ranks = 1;                          ///< MPI ranks of the run
  std::string grid;                       ///< the process grid ("2x2", Grid::describe()); "": none
  json threads_set = nullptr;             ///< threads the bench asked for per rank (a number or a list); null: none
  json options = json::object();          ///< the command-line options as parsed (after --quick)
  json parameter_lists = json::object();  ///< name -> parameters_json(list) of every ParameterList it builds
  int warm_up = 0;                        ///< uncounted repetitions (rounds) before the counted ones
  json rounds = nullptr;                  ///< counted repetitions; null where the bench times each case once
  std::vector<std::string> per_repetition_times;  ///< JSON pointers (RFC 6901) to the arrays of raw times
};

/// The "metadata" object: the build (plexus version, git, configuration), the command line, the
/// date, the host, the MPI library, the ranks, the grid, the threads per rank, the timing plan
/// (warm-up, counted rounds, where the per-repetition times are) and the complete parameters.
/// The keys the program's own metadata has (apps/, metadata_json) mean the same here.
inline json run_metadata(const RunInfo& info) {
  json m;
  m["schema"] = 1;
  m["benchmark"] = info.benchmark;
  m["plexus"] = plexus::app::build_info_json();
  m["command_line"] = info.command_line;
  m["date_utc"] = utc_now();
  m["host"] = plexus::app::host_name();
  m["mpi_library"] = mpi_library();
  m["ranks"] = info.ranks;
  m["grid"] = info.grid.empty() ? json(nullptr) : json(info.grid);
  m["threads_per_rank"] = omp_get_max_threads();
  const char* omp_env = std::getenv("OMP_NUM_THREADS");
  m["threads"] = {{"omp_num_threads_env", omp_env ? json(omp_env) : json(nullptr)},
                  {"set_by_bench", info.threads_set}};
  m["timing"] = {{"warm_up", info.warm_up},
                 {"rounds", info.rounds},
                 {"per_repetition_times", info.per_repetition_times}};
  m["parameters"] = {{"options", info.options}, {"parameter_lists", info.parameter_lists}};
  return m;
}

/// Checks doc["metadata"] (run_metadata's shape) of a bench JSON run on `ranks` ranks: "" when
/// fine, else what is wrong.
inline std::string check_metadata(const json& doc, const std::string& benchmark, int ranks) {
  try {
    if (!doc.contains("metadata") || !doc["metadata"].is_object()) return "no metadata object";
    const json& m = doc["metadata"];
    for (const char* k : {"schema", "benchmark", "plexus", "command_line", "date_utc", "host", "mpi_library", "ranks",
                          "grid", "threads_per_rank", "threads", "timing", "parameters"})
      if (!m.contains(k)) return std::string("metadata.") + k + " is missing";
    if (m["benchmark"] != benchmark) return "metadata.benchmark is not " + benchmark;
    for (const char* k : {"version", "git", "build_type", "compiler"})
      if (!m["plexus"].at(k).is_string() || m["plexus"][k].get<std::string>().empty())
        return std::string("metadata.plexus.") + k + " is empty";
    std::tm t{};
    const std::string date = m["date_utc"].get<std::string>();
    const char* end = strptime(date.c_str(), "%Y-%m-%dT%H:%M:%SZ", &t);
    if (!end || *end != '\0' || t.tm_year + 1900 < 2020) return "metadata.date_utc '" + date + "' is not ISO 8601 UTC";
    if (!m["host"].is_string() || m["host"].get<std::string>().empty()) return "metadata.host is empty";
    if (m["ranks"] != ranks) return "metadata.ranks is not " + std::to_string(ranks);
    if (!m["grid"].is_null() && (!m["grid"].is_string() || m["grid"].get<std::string>().empty()))
      return "metadata.grid is neither null nor a grid";
    if (!(m["threads_per_rank"].get<int>() >= 1)) return "metadata.threads_per_rank is not a thread count";
    if (!m["threads"].contains("set_by_bench")) return "metadata.threads.set_by_bench is missing";
    if (!m["command_line"].is_array() || m["command_line"].empty()) return "metadata.command_line is empty";
    if (!m["parameters"].at("options").is_object() || m["parameters"]["options"].empty())
      return "metadata.parameters.options is empty";
    if (!m["parameters"].at("parameter_lists").is_object()) return "metadata.parameters.parameter_lists";
    const json& timing = m["timing"];
    if (!(timing.at("warm_up").get<int>() >= 0)) return "metadata.timing.warm_up is negative";
    const json& rounds = timing.at("rounds");
    if (!rounds.is_null() && !(rounds.get<int>() >= 1)) return "metadata.timing.rounds is not a count";
    for (const auto& p : timing.at("per_repetition_times")) {
      const std::string where = p.get<std::string>();
      const json::json_pointer ptr(where);
      if (!doc.contains(ptr)) return "metadata.timing.per_repetition_times: " + where + " is not in the file";
      const json& times = doc[ptr];
      if (!times.is_array() || rounds.is_null() || times.size() != rounds.get<std::size_t>())
        return "metadata.timing.per_repetition_times: " + where + " is not an array of 'rounds' times";
      for (const auto& x : times)
        if (!x.is_number() || !(x.get<double>() >= 0)) return where + " holds a value that is not a time";
    }
  } catch (const std::exception& e) {
    return std::string("metadata malformed: ") + e.what();
  }
  return "";
}

/// Re-reads a bench JSON file and checks its metadata: "" when fine.
inline std::string check_metadata_file(const std::string& path, const std::string& benchmark, int ranks) {
  std::ifstream in(path);
  if (!in) return "cannot open " + path;
  json doc;
  try {
    doc = json::parse(in);
  } catch (const std::exception& e) {
    return std::string("not well-formed JSON: ") + e.what();
  }
  return check_metadata(doc, benchmark, ranks);
}

/// --json FILE, checked before any work by rank 0 of `comm`, which is the rank that writes it: a
/// directory, a block device, or a path whose directory is missing or not writable ends the run
/// now, on every rank (an InputError naming --json, the same text everywhere), instead of after the
/// measurements. "" (the JSON on standard output) and "-" pass. Collective over `comm`: every rank
/// calls it at the same point of its set-up.
inline void check_json_path(const std::string& path, MPI_Comm comm = MPI_COMM_WORLD) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string why;
  if (rank == 0 && !path.empty()) {
    try {
      plexus::output::check(path, "--json");
    } catch (const plexus::InputError& e) {
      why = e.what();
    }
  }
  int len = static_cast<int>(why.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, comm);
  if (len == 0) return;
  why.resize(static_cast<std::size_t>(len));
  MPI_Bcast(why.data(), len, MPI_CHAR, 0, comm);
  throw plexus::InputError("--json", why);
}

/// check_json_path for a program that checks before MPI starts (one process): the same verdict,
/// said on standard error as "<program>: --json: ...", and the process ends with exit status 2.
inline void check_json_path_or_exit(const char* program, const std::string& path) {
  if (path.empty()) return;
  try {
    plexus::output::check(path, "--json");
  } catch (const plexus::InputError& e) {
    std::fprintf(stderr, "%s: --json: %s\n", program, e.what());
    std::exit(2);
  }
}

/// The start every MPI driver shares, on every rank alike, before any work: `parse(help)` reads the
/// command line (throwing on a bad one) and returns the --json path, or sets `help`; the usage is
/// printed by rank 0 for --help; the path is checked (check_json_path). Returns -1 to go on, or the
/// exit status to end with (0 after --help, 2 after an error, which rank 0 prints); the caller then
/// finalizes MPI and returns it. No rank leaves without the others: the command line is the same
/// everywhere and the path's verdict is rank 0's.
template <class Parse>
int start(const char* program, const char* usage, Parse&& parse) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    bool help = false;
    const std::string json_path = parse(help);
    if (help) {
      if (rank == 0) std::fputs(usage, stdout);
      return 0;
    }
    check_json_path(json_path);
    return -1;
  } catch (const std::exception& e) {
    if (rank == 0) std::fprintf(stderr, "%s: error: %s\n", program, e.what());
    return 2;
  }
}

/// Writes a benchmark's JSON document to `path` and says where it went; "" writes it to standard
/// output after an empty line (following the summary), "-" to standard output as it is. A regular file is written through a temporary file renamed into
/// place (plexus/output.hpp), so a failed write leaves an earlier file as it was. A failure is a
/// plexus::Error: only rank 0 writes, so the programs end the job for it (MPI_Abort) instead of
/// returning on one rank; check_json_path() refuses the paths it can tell before the work.
inline void write_json(const json& doc, const std::string& path, int indent = 2) {
  const std::string text = doc.dump(indent, ' ', false, json::error_handler_t::replace) + "\n";
  if (path.empty()) {
    std::fwrite("\n", 1, 1, stdout);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return;
  }
  try {
    plexus::output::write_text(path, text, "--json");
  } catch (const plexus::Error& e) {
    throw plexus::Error("--json", e.what());  // not an InputError: see above
  }
  if (path != "-") std::printf("\nwrote %s\n", path.c_str());
}

/// --check's verdict on a written file, given what its check found (`err`, "" when nothing):
/// "JSON check passed" and 0, or the failure on standard error and 1.
inline int check_verdict(const std::string& err, const std::string& path, const std::string& benchmark) {
  if (!err.empty()) {
    std::fprintf(stderr, "%s: check of %s failed: %s\n", benchmark.c_str(), path.c_str(), err.c_str());
    return 1;
  }
  std::printf("JSON check passed\n");
  return 0;
}

}  // namespace plexus::bench
