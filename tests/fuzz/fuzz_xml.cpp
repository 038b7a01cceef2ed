// Fuzz target: a parameter file as the `plexus` program's run and compare read it
// (load_parameters in apps/app_job.cpp, then validate_top_level): read_parameter_file (Teuchos'
// XML parser), the root renamed "plexus", validated against the top-level list of every registered
// component (the plugins of the build tree loaded), then the selection and timing read from it. A
// list that validates is written as XML (the echo every run prints) and must read back and validate
// to the same XML.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "app.hpp"
#include "fuzz_support.hpp"
#include "plexus/parameters.hpp"
#include "plexus/registry.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  plexus::Registry::global().load_default();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static plexus::fuzz::MemoryFile file;
  const std::string& path = file.write(data, size);
  plexus::fuzz::expect_input_errors_only([&] {
    plexus::ParameterListPtr params = plexus::read_parameter_file(path);
    params->setName("plexus");
    plexus::app::validate_top_level(*params);
    (void)plexus::app::selection_of(*params);
    (void)plexus::app::timing_of(*params);
    const std::string echo = plexus::to_xml(*params);
    const std::uint8_t* bytes = reinterpret_cast<const std::uint8_t*>(echo.data());
    plexus::ParameterListPtr again = plexus::read_parameter_file(file.write(bytes, echo.size()));
    again->setName("plexus");
    plexus::app::validate_top_level(*again);
    if (plexus::to_xml(*again) != echo) {
      std::fprintf(stderr, "fuzz: the echoed list does not read back the same:\n%s\n---- read back:\n%s\n",
                   echo.c_str(), plexus::to_xml(*again).c_str());
      std::abort();
    }
  });
  return 0;
}
