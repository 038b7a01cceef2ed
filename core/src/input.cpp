// Checks of untrusted input (see input.hpp).
#include "plexus/input.hpp"

#include <spdlog/fmt/fmt.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <vector>

#include "plexus/error.hpp"

namespace plexus::input {

std::string trim(const std::string& s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::string excerpt(std::string_view text, std::size_t max_chars) {
  std::string out;
  const std::size_t n = std::min(text.size(), max_chars);
  for (std::size_t i = 0; i < n; ++i) {
    const auto ch = static_cast<unsigned char>(text[i]);
    if (ch == '\t') {
      out += "\\t";
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\r') {
      out += "\\r";
    } else if (ch < 0x20 || ch >= 0x7f) {
      out += fmt::format("\\x{:02X}", static_cast<unsigned>(ch));
    } else {
      out += static_cast<char>(ch);
    }
  }
  if (text.size() > max_chars) out += "...";
  return out;
}

// (Built by insert and push_back: "'" + excerpt + "'" trips g++ 12's -Wrestrict.)
std::string quoted_excerpt(std::string_view text) {
  std::string q = excerpt(text);
  q.insert(q.begin(), '\'');
  q.push_back('\'');
  return q;
}

void check_input_file(const std::string& path, const std::string& what) {
  if (path.empty()) throw InputError(what, "the " + what + " path is empty");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw InputError(path, "cannot read " + what + " '" + path + "': " + std::strerror(errno));
  if (S_ISDIR(st.st_mode))
    throw InputError(path, "cannot read " + what + " '" + path + "': it is a directory, not a file");
  if (::access(path.c_str(), R_OK) != 0)
    throw InputError(path, "cannot read " + what + " '" + path + "': " + std::strerror(errno));
}

std::optional<std::int64_t> checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

namespace {

// The value in kB of "Key:   N kB" in a /proc file, or -1.
long long proc_kb(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) != 0 || line.size() <= key.size() || line[key.size()] != ':') continue;
    return std::atoll(line.c_str() + key.size() + 1);
  }
  return -1;
}

// A number from a cgroup file ("max" and anything unreadable: -1).
long long cgroup_value(const std::string& file) {
  std::ifstream in(file);
  std::string text;
  if (!(in >> text) || text == "max") return -1;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  return *end == '\0' && v >= 0 ? v : -1;
}

// This process's memory cgroup: the v2 directory ("0::/path") or the v1 memory controller's
// ("N:memory:/path") in /proc/self/cgroup, with the names of its limit and usage files.
struct Cgroup {
  std::string dir, limit, usage;
};
std::vector<Cgroup> memory_cgroups() {
  std::vector<Cgroup> out;
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const auto c1 = line.find(':'), c2 = c1 == std::string::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string::npos) continue;
    const std::string controllers = line.substr(c1 + 1, c2 - c1 - 1), path = line.substr(c2 + 1);
    const std::string sub = path == "/" ? "" : path;
    if (controllers.empty() && line.rfind("0:", 0) == 0)
      out.push_back({"/sys/fs/cgroup" + sub, "memory.max", "memory.current"});
    else if (controllers == "memory")
      out.push_back({"/sys/fs/cgroup/memory" + sub, "memory.limit_in_bytes", "memory.usage_in_bytes"});
  }
  return out;
}

void take(Available& a, long double bytes, const std::string& source) {
  if (bytes < 0) bytes = 0;
  const auto b = bytes >= static_cast<long double>(std::numeric_limits<std::uint64_t>::max())
                     ? std::numeric_limits<std::uint64_t>::max()
                     : static_cast<std::uint64_t>(bytes);
  if (a.source.empty() || b < a.bytes) {
    a.bytes = b;
    a.source = source;
  }
}

}  // namespace

Available available_memory(int sharing) {
  if (sharing < 1) sharing = 1;
  const std::string shared = sharing > 1 ? ", shared by " + std::to_string(sharing) + " ranks" : "";
  Available a;
  if (const long long kb = proc_kb("/proc/meminfo", "MemAvailable"); kb >= 0) {
    take(a, static_cast<long double>(kb) * 1024 / sharing, "MemAvailable in /proc/meminfo" + shared);
  } else {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0)
      take(a, static_cast<long double>(pages) * static_cast<long double>(page) / sharing,
           "the physical memory" + shared);
  }
  rlimit lim{};
  if (::getrlimit(RLIMIT_AS, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
    const long long vm_kb = proc_kb("/proc/self/status", "VmSize");
    const long double used = vm_kb > 0 ? static_cast<long double>(vm_kb) * 1024 : 0;
    take(a, static_cast<long double>(lim.rlim_cur) - used,
         "the address-space limit (ulimit -v) less what the process maps");
  }
  for (const Cgroup& cg : memory_cgroups()) {
    const long long max = cgroup_value(cg.dir + "/" + cg.limit);
    if (max < 0 || max >= (1LL << 60)) continue;  // "max", or v1's "no limit"
    const long long current = cgroup_value(cg.dir + "/" + cg.usage);
    take(a, (static_cast<long double>(max) - static_cast<long double>(current > 0 ? current : 0)) / sharing,
         "the cgroup limit " + cg.dir + "/" + cg.limit + " less what the cgroup uses" + shared);
  }
  if (a.source.empty()) {
    a.bytes = std::numeric_limits<std::uint64_t>::max();
    a.source = "nothing (the available memory is unknown)";
  }
  return a;
}

std::string format_size(double bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) {
    bytes /= 1024;
    ++u;
  }
  if (u == 0) return fmt::format("{:.0f} B", bytes);
  return bytes < 1e4 ? fmt::format("{:.2f} {}", bytes, units[u]) : fmt::format("{:.3g} {}", bytes, units[u]);
}

}  // namespace plexus::input
