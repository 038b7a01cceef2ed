#pragma once
// Component specs of the conformance suites: "name[:Key=Value[:Key=Value...]]", comma-separated,
// as in PLEXUS_CONFORMANCE_ONLY / PLEXUS_CONFORMANCE_EXTRA (docs/plugin-guide.md).
#include <cstdlib>
#include <string>
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
/// PLEXUS_CONFORMANCE_EXTRA.
inline std::vector<Spec> specs_under_test(std::vector<Spec> defaults) {
  if (const char* only = std::getenv("PLEXUS_CONFORMANCE_ONLY"); only != nullptr && *only != '\0')
    return parse_specs(only);
  for (const auto& s : parse_specs(std::getenv("PLEXUS_CONFORMANCE_EXTRA"))) defaults.push_back(s);
  return defaults;
}

}  // namespace plexus::test
