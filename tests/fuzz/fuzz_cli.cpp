// Fuzz target: the `plexus` command line (apps/app_cli.cpp, parse_command_line) and the
// parameter overrides it collects (--set), applied as `plexus run` applies them (apply_override). The input is the
// argument list, arguments separated by NUL bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "app.hpp"
#include "app_cli.hpp"
#include "fuzz_support.hpp"
#include "plexus/parameters.hpp"

namespace {
constexpr std::size_t kMaxArguments = 64;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) { return 0; }

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args{"plexus"};
  std::string current;
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      args.push_back(current);
      current.clear();
    } else {
      current.push_back(static_cast<char>(data[i]));
    }
  }
  if (size > 0) args.push_back(current);
  if (args.size() > kMaxArguments) return 0;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  plexus::fuzz::expect_input_errors_only([&] {
    const plexus::app::Options o = plexus::app::parse_command_line(static_cast<int>(args.size()), argv.data());
    plexus::ParameterList params("plexus");
    for (const auto& s : o.sets) plexus::apply_override(params, s);
  });
  return 0;
}
