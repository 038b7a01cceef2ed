// The facts every output file of the program and of the benchmarks records about the run: the
// build as JSON, the date, the host, the MPI library, a parameter list as JSON (build_info.hpp).
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <sstream>
#include <string>

#include "build_info.hpp"

namespace plexus::app {

nlohmann::json build_info_json() {
  const BuildInfo& b = build_info();
  return {{"version", b.version},   {"git", b.git},    {"build_type", b.build_type},
          {"compiler", b.compiler}, {"cuda", b.cuda},  {"libxsmm", b.libxsmm},
          {"hdf5", b.hdf5},         {"dbcsr", b.dbcsr}};
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string host_name() {
  char name[256] = {0};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

// The first line of the MPI library's description ("Open MPI v4.1.4, ...").
std::string mpi_library() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string l(text, static_cast<std::size_t>(std::max(0, len)));
  l = l.substr(0, l.find('\n'));
  while (!l.empty() && (l.back() == '\0' || l.back() == ' ' || l.back() == ',')) l.pop_back();
  return l;
}

nlohmann::json parameters_object(const ParameterList& list) {
  nlohmann::json out = nlohmann::json::object();
  for (auto it = list.begin(); it != list.end(); ++it) {
    const std::string& name = list.name(it);
    const Teuchos::ParameterEntry& e = list.entry(it);
    const Teuchos::any& value = e.getAny(false);  // reading it for the record does not mark it used
    if (e.isList())
      out[name] = parameters_object(Teuchos::any_cast<ParameterList>(value));
    else if (e.isType<int>())
      out[name] = Teuchos::any_cast<int>(value);
    else if (e.isType<long long>())
      out[name] = Teuchos::any_cast<long long>(value);
    else if (e.isType<double>())
      out[name] = [&] {
        const double v = Teuchos::any_cast<double>(value);
        return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);  // JSON has no NaN
      }();
    else if (e.isType<bool>())
      out[name] = Teuchos::any_cast<bool>(value);
    else if (e.isType<std::string>())
      out[name] = Teuchos::any_cast<std::string>(value);
    else {
      std::ostringstream text;
      text << value;
      out[name] = text.str();
    }
  }
  return out;
}

}  // namespace plexus::app
