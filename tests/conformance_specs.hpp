#pragma once
// Component specs of the conformance suites: "name[:Key=Value[:Key=Value...]]", comma-separated,
// as in PLEXUS_CONFORMANCE_ONLY / PLEXUS_CONFORMANCE_EXTRA (docs/plugin-guide.md).
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace plexus::test {

struct Spec {
  std::string text, name;
  std::vector<std::string> params;  // Key=Value
};

inline std::vector<Spec> parse_specs(const char* text) {
  std::vector<Spec> out;
  if (text == nullptr) return out;
  const std::string all(text);
  std::size_t start = 0;
  while (start <= all.size()) {
    const std::size_t comma = all.find(',', start);
    const std::string item = all.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? all.size() + 1 : comma + 1;
    if (item.empty()) continue;
    Spec s;
    s.text = item;
    std::size_t p = 0;
    while (true) {
      const std::size_t colon = item.find(':', p);
      const std::string part = item.substr(p, colon == std::string::npos ? std::string::npos : colon - p);
      if (p == 0)
        s.name = part;
      else
        s.params.push_back(part);
      if (colon == std::string::npos) break;
      p = colon + 1;
    }
    out.push_back(s);
  }
  return out;
}

/// The specs under test: PLEXUS_CONFORMANCE_ONLY if set, else `defaults` followed by
/// PLEXUS_CONFORMANCE_EXTRA; either less the components PLEXUS_CONFORMANCE_EXCLUDE names
/// (comma-separated names, e.g. "dbcsr" where a run tests a local backend the dbcsr algorithm
/// does not use).
inline std::vector<Spec> specs_under_test(std::vector<Spec> defaults) {
  std::vector<Spec> specs;
  if (const char* only = std::getenv("PLEXUS_CONFORMANCE_ONLY"); only != nullptr && *only != '\0') {
    specs = parse_specs(only);
  } else {
    specs = std::move(defaults);
    for (const auto& s : parse_specs(std::getenv("PLEXUS_CONFORMANCE_EXTRA"))) specs.push_back(s);
  }
  const std::vector<Spec> excluded = parse_specs(std::getenv("PLEXUS_CONFORMANCE_EXCLUDE"));
  std::erase_if(specs, [&](const Spec& s) {
    for (const auto& x : excluded)
      if (x.name == s.name) return true;
    return false;
  });
  return specs;
}

}  // namespace plexus::test
