#pragma once
// Small pieces the MPI benchmark drivers share (plexus-nboverlap-bench, plexus-symmcube-bench):
// command-line numbers and lists, byte sizes in words, min/median/mean, JSON numbers that may be
// infinite, a barrier that leaves the cores to the busy ranks, and the machine's facts.
// Header-only: each driver is one translation unit.
#include <mpi.h>
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

#include "plexus/mpi.hpp"

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

/// lo, 2 lo, 4 lo, ... <= hi.
inline std::vector<std::int64_t> doubling(std::int64_t lo, std::int64_t hi) {
  std::vector<std::int64_t> out;
  for (std::int64_t n = lo; n <= hi; n *= 2) out.push_back(n);
  return out;
}

/// "64 KiB", "3 MiB", "100 B".
inline std::string human(std::int64_t b) {
  char buf[32];
  if (b >= (1 << 20) && b % (1 << 20) == 0)
    std::snprintf(buf, sizeof buf, "%lld MiB", static_cast<long long>(b >> 20));
  else if (b >= 1024 && b % 1024 == 0)
    std::snprintf(buf, sizeof buf, "%lld KiB", static_cast<long long>(b >> 10));
  else
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
  return buf;
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
  const std::time_t now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  m["date_utc"] = date;
  return m;
}

}  // namespace plexus::bench
