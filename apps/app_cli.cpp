// The command line of the `plexus` program (moved verbatim from apps/plexus.cpp).
#include "app_cli.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "app.hpp"
#include "plexus/parameters.hpp"

namespace plexus::app {
namespace {

const std::vector<std::string> kCommands = {"run", "compare", "perf", "plugins", "model", "g4-diff", "logp", "help"};
constexpr double kG4DiffTolerance = 5e-7;

// Bounds of `plexus logp` (logp::measure refuses the same sizes).
constexpr int kMaxLogpRepetitions = 1000000;
constexpr std::int64_t kMinLogpBytes = 1024, kMaxLogpBytes = std::int64_t(1) << 30;

int logp_repetitions(const std::string& value) {
  const bool digits = !value.empty() && value.size() <= 7 &&
                      std::all_of(value.begin(), value.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  const long v = digits ? std::stol(value) : 0;
  if (v < 1 || v > kMaxLogpRepetitions)
    throw UsageError("--repetitions", "--repetitions needs a whole number from 1 to " +
                                          std::to_string(kMaxLogpRepetitions) + ", got '" + value + "'");
  return static_cast<int>(v);
}

// A size in bytes with an optional suffix K, M, G (powers of 1024), 1 KiB .. 1 GiB.
std::int64_t logp_max_bytes(const std::string& value) {
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  const std::string suffix = end ? std::string(end) : std::string();
  double unit = -1;
  if (suffix.empty() || suffix == "B") unit = 1;
  if (suffix == "K" || suffix == "KiB") unit = 1024.0;
  if (suffix == "M" || suffix == "MiB") unit = 1024.0 * 1024;
  if (suffix == "G" || suffix == "GiB") unit = 1024.0 * 1024 * 1024;
  const double bytes = v * unit;
  if (value.empty() || end == value.c_str() || unit < 0 || !std::isfinite(bytes) || bytes < double(kMinLogpBytes) ||
      bytes > double(kMaxLogpBytes))
    throw UsageError("--max-bytes",
                     "--max-bytes needs a size from 1K to 1G (e.g. 65536, 64K, 4M), got '" + value + "'");
  return static_cast<std::int64_t>(bytes);
}

}  // namespace

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    auto pos = s.find(sep, start);
    out.push_back(s.substr(start, pos == std::string::npos ? std::string::npos : pos - start));
    if (pos == std::string::npos) break;
    start = pos + 1;
  }
  return out;
}

std::vector<std::string> spec_list(const std::string& option, const std::string& value) {
  auto items = split(value, ',');
  for (const auto& it : items)
    if (it.empty()) throw UsageError(option, "option " + option + " has an empty entry in '" + value + "'");
  return items;
}

Options parse_command_line(int argc, char** argv) {
  Options o;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) throw UsageError("command line", "no command given");
  std::size_t i = 0;
  const std::string first = args[0];
  if (first == "-h" || first == "--help") {
    o.command = "help";
    o.help = true;
    return o;
  }
  if (first == "--version") {
    if (args.size() > 1) throw UsageError("--version", "--version takes no other argument");
    o.command = "version";
    return o;
  }
  if (std::find(kCommands.begin(), kCommands.end(), first) == kCommands.end()) {
    std::string msg = "unknown command '" + first + "'";
    const std::string near = nearest(first, kCommands);
    if (!near.empty())
      msg += "; did you mean '" + near + "'?";
    else if (first.size() > 4 && first.substr(first.size() - 4) == ".xml")
      msg += "; did you mean 'plexus run " + first + "'?";
    else if (!first.empty() && first[0] == '-')
      msg = "unknown option '" + first + "' before the command";
    throw UsageError("command line", msg + " (commands: run, compare, perf, plugins, model, g4-diff, logp, help)");
  }
  o.command = first;
  ++i;
  if (o.command == "help") {
    o.help = true;
    if (i < args.size()) {
      const std::string topic = args[i];
      if (std::find(kCommands.begin(), kCommands.end(), topic) == kCommands.end()) {
        const std::string near = nearest(topic, kCommands);
        throw UsageError("help", "no help for '" + topic + "'" +
                                     (near.empty() ? std::string() : "; did you mean '" + near + "'?") +
                                     " (commands: run, compare, perf, plugins, model, g4-diff, logp)");
      }
      o.command = topic == "help" ? "help" : topic;
      if (i + 1 < args.size()) throw UsageError("help", "help takes at most one command");
    } else {
      o.command = "help";
    }
    return o;
  }

  std::vector<std::string> valued, flags = {"--help", "-h"};
  if (o.command == "run") valued = {"--set", "--write-params", "--log-level", "--json"};
  if (o.command == "compare" || o.command == "perf")
    valued = {"--set", "--strategies", "--kernels", "--csv", "--json", "--tolerance", "--log-level", "--write-params"};
  if (o.command == "run" || o.command == "compare" || o.command == "perf")
    flags = {"--help", "-h", "--echo-params", "--no-params-file", "--no-progress"};
  if (o.command == "compare" || o.command == "perf") flags.push_back("--wide");
  if (o.command == "plugins") {
    flags = {"--help", "-h", "--verbose", "-v"};
    valued = {"--json"};
  }
  if (o.command == "model") valued = {"--strategies", "--grid", "--bytes", "--json"};
  if (o.command == "g4-diff") valued = {"--tolerance"};
  if (o.command == "logp") valued = {"--json", "--repetitions", "--max-bytes"};
  const bool takes_file = o.command == "run" || o.command == "compare" || o.command == "perf";

  for (; i < args.size(); ++i) {
    std::string a = args[i];
    if (a.size() > 1 && a[0] == '-') {
      std::string name = a, value;
      bool has_value = false;
      if (auto eq = a.find('='); eq != std::string::npos && a.rfind("--", 0) == 0) {
        name = a.substr(0, eq);
        value = a.substr(eq + 1);
        has_value = true;
      }
      if (std::find(flags.begin(), flags.end(), name) != flags.end()) {
        if (has_value) throw UsageError(name, "option " + name + " takes no value");
        if (name == "--help" || name == "-h") o.help = true;
        if (name == "--verbose" || name == "-v") o.verbose = true;
        if (name == "--echo-params") o.echo_params = true;
        if (name == "--no-params-file") o.no_params_file = true;
        if (name == "--wide") o.wide = true;
        if (name == "--no-progress") o.no_progress = true;
        continue;
      }
      if (std::find(valued.begin(), valued.end(), name) == valued.end()) {
        auto all = valued;
        all.insert(all.end(), flags.begin(), flags.end());
        const std::string near = nearest(name, all);
        throw UsageError(name, "unknown option '" + name + "' for 'plexus " + o.command + "'" +
                                   (near.empty() ? std::string() : "; did you mean '" + near + "'?"));
      }
      if (!has_value) {
        if (i + 1 >= args.size()) throw UsageError(name, "option " + name + " needs a value");
        value = args[++i];
      }
      if (name == "--set") {
        if (value.find('=') == std::string::npos || value[0] == '=')
          throw UsageError(name, "--set needs Path/To/Key=value, got '" + value + "'");
        o.sets.push_back(value);
      } else if (name == "--write-params") {
        o.write_params = value;
      } else if (name == "--log-level") {
        if (value != "error" && value != "warn" && value != "info" && value != "debug")
          throw UsageError(name, "--log-level needs error, warn, info or debug, got '" + value + "'");
        o.log_level = value;
      } else if (name == "--strategies") {
        auto v = spec_list(name, value);
        o.strategies.insert(o.strategies.end(), v.begin(), v.end());
      } else if (name == "--kernels") {
        auto v = spec_list(name, value);
        o.kernels.insert(o.kernels.end(), v.begin(), v.end());
      } else if (name == "--grid") {
        o.grid = value;
      } else if (name == "--bytes") {
        o.bytes = value;
      } else if (name == "--csv") {
        o.csv = value;
      } else if (name == "--json") {
        o.json = value;
      } else if (name == "--tolerance") {
        char* end = nullptr;
        o.tolerance = std::strtod(value.c_str(), &end);
        if (value.empty() || *end != '\0' || !(o.tolerance >= 0) || !std::isfinite(o.tolerance))
          throw UsageError(name, "--tolerance needs a non-negative number, got '" + value + "'");
        o.tolerance_given = true;
      } else if (name == "--repetitions") {
        o.repetitions = logp_repetitions(value);
      } else if (name == "--max-bytes") {
        o.max_bytes = logp_max_bytes(value);
      }
      continue;
    }
    if (o.command == "g4-diff") {
      o.files.push_back(a);
      continue;
    }
    if (!takes_file) throw UsageError("command line", "'plexus " + o.command + "' takes no argument '" + a + "'");
    if (!o.file.empty())
      throw UsageError("command line", "only one parameter file can be given ('" + o.file + "' and '" + a + "')");
    o.file = a;
  }
  if (o.command == "compare" && o.strategies.empty() && !o.help)
    throw UsageError("--strategies", "'plexus compare' needs --strategies S1,S2,... (e.g. --strategies cannon)");
  if (o.command == "perf" && o.file.empty() && !o.help)
    throw UsageError("perf", "'plexus perf' needs a DBCSR benchmark input file, e.g. plexus perf test_H2O.perf");
  if (o.command == "g4-diff" && !o.help) {
    if (o.files.size() != 2)
      throw UsageError("g4-diff",
                       "'plexus g4-diff' needs two files, A.h5 B.h5 (got " + std::to_string(o.files.size()) + ")");
    if (!o.tolerance_given) o.tolerance = kG4DiffTolerance;
  }
  if (o.command == "model" && !o.help) {
    if (o.strategies.empty()) throw UsageError("--strategies", "'plexus model' needs --strategies S1,S2,...");
    if (o.grid.empty()) throw UsageError("--grid", "'plexus model' needs --grid PRxPC (e.g. --grid 4x4)");
    if (o.bytes.empty()) throw UsageError("--bytes", "'plexus model' needs --bytes SA[,SB[,SC]] (e.g. --bytes 64M)");
  }
  return o;
}

}  // namespace plexus::app
