#pragma once
// The command line of the `plexus` program: its options and their parser (apps/app_cli.cpp),
// apart from the program so that tests and the fuzz target (tests/fuzz/fuzz_cli.cpp) can call it.
#include <cstdint>
#include <string>
#include <vector>

namespace plexus::app {

struct Options {
  std::string command;
  std::string file;
  std::vector<std::string> sets;
  std::string write_params;
  std::string log_level;
  std::vector<std::string> strategies, kernels;
  std::string csv, json;
  std::string grid, bytes;         // model
  std::vector<std::string> files;  // g4-diff
  int repetitions = 0;             // logp: 0 = the default of logp::MeasureOptions
  std::int64_t max_bytes = 0;      // logp: 0 = the default of logp::MeasureOptions
  double tolerance = 1e-10;
  bool tolerance_given = false;
  bool echo_params = false;     // run, compare, perf: print the complete parameter list
  bool no_params_file = false;  // run, compare, perf: no parameter record file
  bool wide = false;            // compare, perf: every column in the table
  bool no_progress = false;     // run, compare, perf: no progress line
  bool verbose = false;
  bool help = false;
};

/// Splits `s` at every `sep`; empty pieces are kept ("a,,b" gives three).
std::vector<std::string> split(const std::string& s, char sep);
/// The comma-separated entries of an option's value; UsageError for an empty entry.
std::vector<std::string> spec_list(const std::string& option, const std::string& value);
/// Parses argv (argv[0] is the program). UsageError for every mistake; nothing else is thrown for
/// bad input.
Options parse_command_line(int argc, char** argv);

}  // namespace plexus::app
