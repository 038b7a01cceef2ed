// Strict conversion of parameter values given as text (see parameter_values.hpp).
#include "parameter_values.hpp"

#include <spdlog/fmt/fmt.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "plexus/input.hpp"

namespace plexus::detail {

using input::lower;
using input::trim;

std::string parse_int_value(const std::string& text, int& out) {
  const std::string t = trim(text);
  if (t.empty()) return "is empty; expected a whole number";
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(t.c_str(), &end, 10);
  if (end == t.c_str() || *end != '\0') return "is not a whole number";
  if (errno == ERANGE || v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    return "is outside the range of int, [" + std::to_string(std::numeric_limits<int>::min()) + ", " +
           std::to_string(std::numeric_limits<int>::max()) + "]";
  out = static_cast<int>(v);
  return {};
}

std::string parse_double_value(const std::string& text, double& out) {
  const std::string t = trim(text);
  if (t.empty()) return "is empty; expected a number";
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end == t.c_str() || *end != '\0') return "is not a number";
  if (errno == ERANGE && std::isinf(v)) return "is outside the range of double (about -1.8e308 to 1.8e308)";
  if (std::isnan(v) || std::isinf(v)) return "is not a finite number";
  // Underflow (|v| below the smallest normal double) is accepted as the nearest double.
  out = v;
  return {};
}

std::string parse_bool_value(const std::string& text, bool& out) {
  const std::string t = lower(trim(text));
  if (t == "true" || t == "1" || t == "yes" || t == "on") {
    out = true;
    return {};
  }
  if (t == "false" || t == "0" || t == "no" || t == "off") {
    out = false;
    return {};
  }
  return "is not a boolean (true/false, 1/0, yes/no, on/off)";
}

std::string exact_double_text(double v) { return fmt::format("{:.17g}", v); }

}  // namespace plexus::detail
