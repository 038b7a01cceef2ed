// Parameters: command-line overrides, validation against documented valid lists, declarations.
// Files are read and written by parameter_xml.cpp, values given as text parsed by
// parameter_values.cpp.
#include "plexus/parameters.hpp"

#include <spdlog/fmt/fmt.h>

#include <Teuchos_ParameterEntryValidator.hpp>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>
#include <type_traits>

#include "parameter_values.hpp"
#include "plexus/error.hpp"
#include "plexus/input.hpp"

namespace plexus {

namespace {

using input::lower;
using input::trim;

std::string join_path(const std::string& path, const std::string& name) {
  return path.empty() ? name : path + "/" + name;
}

std::string format_double(double v) {
  std::string s = fmt::format("{:.15g}", v);
  // Keep it recognisable as a floating-point value.
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out += sep;
    out += v[i];
  }
  return out;
}

template <class T>
bool unbounded_below(T min) {
  return min <= std::numeric_limits<T>::lowest();
}

template <class T>
bool unbounded(T max) {
  if constexpr (std::is_same_v<T, double>)
    return max >= std::numeric_limits<double>::max();
  else
    return max == std::numeric_limits<T>::max();
}

// Our own validators: Teuchos' standard validators header does not compile as C++20 (a
// template-id used as a constructor name), so ranges and choices are checked by these.
template <class T>
class RangeValidator final : public Teuchos::ParameterEntryValidator {
 public:
  RangeValidator(T min, T max, bool min_excluded = false) : min_(min), max_(max), min_excluded_(min_excluded) {}
  T min() const { return min_; }
  T max() const { return max_; }
  /// Whether v is in the range (never for a NaN or an infinity).
  bool contains(T v) const {
    if constexpr (std::is_same_v<T, double>)
      if (!std::isfinite(v)) return false;
    return (min_excluded_ ? v > min_ : v >= min_) && v <= max_;
  }
  std::string range_text() const {
    auto fmt = [](T x) {
      if constexpr (std::is_same_v<T, double>)
        return format_double(x);
      else
        return std::to_string(x);
    };
    const bool no_min = unbounded_below(min_), no_max = unbounded(max_);
    std::string r;
    if (no_min && no_max) return std::is_same_v<T, double> ? "any finite number" : "any value";
    if (no_min) {
      r = "<= ";
      r += fmt(max_);
    } else if (no_max) {
      r = min_excluded_ ? "> " : ">= ";
      r += fmt(min_);
    } else {
      r = min_excluded_ ? "(" : "[";
      r += fmt(min_);
      r += ", ";
      r += fmt(max_);
      r += "]";
    }
    return r;
  }
  const std::string getXMLTypeName() const override {
    return std::is_same_v<T, int> ? "plexusIntRange" : "plexusDoubleRange";
  }
  void printDoc(const std::string& doc, std::ostream& out) const override {
    out << "# " << doc << "\n# valid: " << range_text() << "\n";
  }
  ValidStringsList validStringValues() const override { return Teuchos::null; }
  void validate(const Teuchos::ParameterEntry& entry, const std::string& name,
                const std::string& sublist) const override {
    if (!entry.isType<T>()) return;  // types are checked (and converted) by validate_and_fill
    const T v = Teuchos::getValue<T>(entry);
    if (!contains(v))
      throw InputError(sublist + "/" + name, "parameter '" + name + "' is out of range; valid: " + range_text());
  }

 private:
  T min_, max_;
  bool min_excluded_;
};

class ChoiceValidator final : public Teuchos::ParameterEntryValidator {
 public:
  explicit ChoiceValidator(const std::vector<std::string>& choices)
      : choices_(Teuchos::rcp(new Teuchos::Array<std::string>(choices.begin(), choices.end()))) {}
  const std::string getXMLTypeName() const override { return "plexusChoice"; }
  void printDoc(const std::string& doc, std::ostream& out) const override {
    out << "# " << doc << "\n# valid:";
    for (const auto& c : *choices_) out << " " << c;
    out << "\n";
  }
  ValidStringsList validStringValues() const override { return choices_; }
  void validate(const Teuchos::ParameterEntry& entry, const std::string& name,
                const std::string& sublist) const override {
    if (!entry.isType<std::string>()) return;
    const std::string v = Teuchos::getValue<std::string>(entry);
    if (std::find(choices_->begin(), choices_->end(), v) == choices_->end())
      throw InputError(sublist + "/" + name, "parameter '" + name + "' = '" + v + "' is not a valid choice");
  }

 private:
  ValidStringsList choices_;
};

std::string bracketed(const std::string& range) {
  if (range.rfind("any ", 0) == 0) return {};
  return range.front() == '[' || range.front() == '(' ? " " + range : " [" + range + "]";
}

using IntRange = RangeValidator<int>;
using DoubleRange = RangeValidator<double>;

enum class Type { Int, Double, Bool, String, List, Other };

Type type_of(const Teuchos::ParameterEntry& e) {
  if (e.isList()) return Type::List;
  if (e.isType<int>()) return Type::Int;
  if (e.isType<double>()) return Type::Double;
  if (e.isType<bool>()) return Type::Bool;
  if (e.isType<std::string>()) return Type::String;
  return Type::Other;
}

const char* type_name(Type t) {
  switch (t) {
    case Type::Int:
      return "int";
    case Type::Double:
      return "double";
    case Type::Bool:
      return "bool";
    case Type::String:
      return "string";
    case Type::List:
      return "sublist";
    case Type::Other:
      break;
  }
  return "other";
}

std::string value_text(const Teuchos::ParameterEntry& e) {
  switch (type_of(e)) {
    case Type::Int:
      return std::to_string(Teuchos::getValue<int>(e));
    case Type::Double:
      return format_double(Teuchos::getValue<double>(e));
    case Type::Bool:
      return Teuchos::getValue<bool>(e) ? "true" : "false";
    case Type::String:
      return "'" + Teuchos::getValue<std::string>(e) + "'";
    case Type::List:
      return "(sublist)";
    case Type::Other:
      break;
  }
  std::ostringstream os;
  os << e.getAny(false);
  return os.str();
}

std::vector<std::string> names_of(const ParameterList& list) {
  std::vector<std::string> out;
  for (auto it = list.begin(); it != list.end(); ++it) out.push_back(list.name(it));
  return out;
}

std::string did_you_mean(const std::string& name, const std::vector<std::string>& candidates) {
  std::string n = nearest(name, candidates);
  return n.empty() ? std::string() : "; did you mean '" + n + "'?";
}

[[noreturn]] void wrong_type(const std::string& full, Type expected, const Teuchos::ParameterEntry& got) {
  throw InputError(full, "parameter '" + full + "' expects a value of type " + type_name(expected) + ", got " +
                             type_name(type_of(got)) + " " + value_text(got));
}

// Converts the user's entry to the type of the valid one (strings are parsed; an int is accepted
// for a double). Keeps the user's value otherwise; throws for incompatible types.
void convert_entry(ParameterList& user, const std::string& name, const Teuchos::ParameterEntry& valid,
                   const std::string& full) {
  Teuchos::ParameterEntry& entry = user.getEntry(name);
  const Type want = type_of(valid);
  const Type have = type_of(entry);
  if (want == have || want == Type::Other) return;
  const std::string doc = valid.docString();
  if (have == Type::String) {
    const std::string text = Teuchos::getValue<std::string>(entry);
    std::string why = "cannot be converted";
    switch (want) {
      case Type::Int: {
        int v = 0;
        why = detail::parse_int_value(text, v);
        if (why.empty()) user.set(name, v, doc);
        break;
      }
      case Type::Double: {
        double v = 0;
        why = detail::parse_double_value(text, v);
        if (why.empty()) user.set(name, v, doc);
        break;
      }
      case Type::Bool: {
        bool v = false;
        why = detail::parse_bool_value(text, v);
        if (why.empty()) user.set(name, v, doc);
        break;
      }
      default:
        break;
    }
    if (!why.empty())
      throw InputError(full, "parameter '" + full + "' expects a value of type " + type_name(want) + ", got '" +
                                 input::excerpt(text) + "', which " + why);
    return;
  }
  if (have == Type::Int && want == Type::Double) {
    user.set(name, static_cast<double>(Teuchos::getValue<int>(entry)), doc);
    return;
  }
  if (have == Type::Double && want == Type::Int) {
    const double d = Teuchos::getValue<double>(entry);
    if (d == std::floor(d) && std::abs(d) <= std::numeric_limits<int>::max()) {
      user.set(name, static_cast<int>(d), doc);
      return;
    }
  }
  if (want == Type::String && (have == Type::Int || have == Type::Double || have == Type::Bool)) {
    std::string text = value_text(entry);
    user.set(name, text, doc);
    return;
  }
  wrong_type(full, want, entry);
}

template <class T>
void check_range(const RangeValidator<T>& v, T value, const std::string& full, const std::string& shown) {
  if (v.contains(value)) return;
  if constexpr (std::is_same_v<T, double>)
    if (!std::isfinite(value))
      throw InputError(full,
                       "parameter '" + full + "' = " + shown + " is not a finite number; valid: " + v.range_text());
  throw InputError(full, "parameter '" + full + "' = " + shown + " is out of range; valid: " + v.range_text());
}

void check_validator(const ParameterList& user, const std::string& name, const Teuchos::ParameterEntry& valid,
                     const std::string& full, const std::string& path) {
  auto validator = valid.validator();
  if (validator.is_null()) return;
  const Teuchos::ParameterEntry& entry = user.getEntry(name);
  if (auto iv = Teuchos::rcp_dynamic_cast<const IntRange>(validator); !iv.is_null() && entry.isType<int>()) {
    const int v = Teuchos::getValue<int>(entry);
    check_range(*iv, v, full, std::to_string(v));
    return;
  }
  if (auto dv = Teuchos::rcp_dynamic_cast<const DoubleRange>(validator); !dv.is_null() && entry.isType<double>()) {
    const double v = Teuchos::getValue<double>(entry);
    check_range(*dv, v, full, format_double(v));
    return;
  }
  auto strings = validator->validStringValues();
  if (!strings.is_null() && entry.isType<std::string>()) {
    const std::string v = Teuchos::getValue<std::string>(entry);
    std::vector<std::string> choices(strings->begin(), strings->end());
    if (std::find(choices.begin(), choices.end(), v) != choices.end()) return;
    throw InputError(full, "parameter '" + full + "' = '" + v + "' is not a valid choice" + did_you_mean(v, choices) +
                               " (valid: " + join(choices, ", ") + ")");
  }
  try {
    validator->validate(entry, name, path);
  } catch (const std::exception& e) {
    throw InputError(full, "parameter '" + full + "' = " + value_text(entry) + " is refused: " + e.what());
  }
}

}  // namespace

// ---- overrides ------------------------------------------------------------------------------

void apply_override(ParameterList& list, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError("--set " + assignment, "override '" + assignment + "' is not of the form Path/To/Key=value");
  const std::string key = trim(assignment.substr(0, eq));
  const std::string value = assignment.substr(eq + 1);
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    auto slash = key.find('/', start);
    std::string part = trim(key.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (part.empty())
      throw InputError("--set " + assignment, "override '" + assignment + "' has an empty name in its path");
    parts.push_back(part);
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  // A leading root name ("plexus/Solver=...") is accepted when the list carries that name.
  if (parts.size() > 1 && parts.front() == list.name() && !list.isParameter(parts.front())) parts.erase(parts.begin());
  ParameterList* current = &list;
  std::string walked = list.name();
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    walked = join_path(walked, parts[i]);
    if (current->isParameter(parts[i]) && !current->isSublist(parts[i]))
      throw InputError("--set " + assignment,
                       "override '" + assignment + "': '" + walked + "' is a parameter, not a sublist");
    current = &current->sublist(parts[i]);
  }
  const std::string& leaf = parts.back();
  if (current->isSublist(leaf))
    throw InputError("--set " + assignment,
                     "override '" + assignment + "': '" + join_path(walked, leaf) + "' is a sublist, not a parameter");
  std::string doc;
  if (current->isParameter(leaf)) doc = current->getEntry(leaf).docString();
  current->set(leaf, value, doc);
}

// ---- validation -----------------------------------------------------------------------------

void validate_and_fill(ParameterList& user, const ParameterList& valid, const std::string& path,
                       const std::vector<std::string>& skip_sublists) {
  const std::vector<std::string> valid_names = names_of(valid);
  // 1. every user entry must be known, of the right type, and accepted by its validator.
  for (const std::string& name : names_of(user)) {
    const std::string full = join_path(path, name);
    const bool skipped = std::find(skip_sublists.begin(), skip_sublists.end(), name) != skip_sublists.end();
    if (!valid.isParameter(name)) {
      if (skipped && user.isSublist(name)) continue;
      throw InputError(full, "unknown " + std::string(user.isSublist(name) ? "sublist" : "parameter") + " '" + full +
                                 "'" + did_you_mean(name, valid_names) +
                                 (valid_names.empty() ? " (this list takes no parameters)"
                                                      : " (valid: " + join(valid_names, ", ") + ")"));
    }
    const Teuchos::ParameterEntry& ventry = valid.getEntry(name);
    if (ventry.isList()) {
      if (!user.isSublist(name))
        throw InputError(full, "'" + full + "' must be a sublist, got a parameter " + value_text(user.getEntry(name)));
      if (!skipped) validate_and_fill(user.sublist(name), valid.sublist(name), full);
      continue;
    }
    if (user.isSublist(name))
      throw InputError(full,
                       "'" + full + "' must be a parameter of type " + type_name(type_of(ventry)) + ", got a sublist");
    convert_entry(user, name, ventry, full);
    check_validator(user, name, ventry, full, path);
    // Carry the documentation along, so the echoed list stays self-explaining.
    if (user.getEntry(name).docString().empty() && !ventry.docString().empty())
      user.getEntry(name).setDocString(ventry.docString());
  }
  // 2. fill in what is missing (sublists recursively, unless validated elsewhere).
  for (auto it = valid.begin(); it != valid.end(); ++it) {
    const std::string& name = valid.name(it);
    const Teuchos::ParameterEntry& ventry = valid.entry(it);
    const bool skipped = std::find(skip_sublists.begin(), skip_sublists.end(), name) != skip_sublists.end();
    if (ventry.isList()) {
      if (skipped || user.isSublist(name)) continue;
      ParameterList& sub = user.sublist(name, false, ventry.docString());
      validate_and_fill(sub, valid.sublist(name), join_path(path, name));
      continue;
    }
    if (user.isParameter(name)) continue;
    Teuchos::ParameterEntry copy(ventry);
    copy.setValidator(Teuchos::null);
    user.setEntry(name, copy);
  }
}

// ---- edit distance --------------------------------------------------------------------------

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string nearest(const std::string& name, const std::vector<std::string>& candidates) {
  if (name.empty()) return {};
  const std::string lname = lower(name);
  std::string best;
  std::size_t best_d = std::numeric_limits<std::size_t>::max();
  for (const auto& c : candidates) {
    if (c == name) return c;
    const std::string lc = lower(c);
    std::size_t d = edit_distance(lname, lc);
    const std::size_t cutoff = std::max<std::size_t>(2, std::max(lname.size(), lc.size()) / 3);
    // A candidate that starts with (or is a prefix of) the name is close enough too.
    const bool prefix = lname.size() >= 3 && (lc.rfind(lname, 0) == 0 || lname.rfind(lc, 0) == 0);
    if (d > cutoff && !prefix) continue;
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

// ---- declarations ---------------------------------------------------------------------------

void declare_int(ParameterList& valid, const std::string& name, int def, const std::string& doc, int min, int max) {
  PLEXUS_CHECK(min <= def && def <= max, "declare_int: default of '" + name + "' is out of its range");
  auto v = Teuchos::rcp(new IntRange(min, max));
  valid.set(name, def, doc, v);
}

void declare_double(ParameterList& valid, const std::string& name, double def, const std::string& doc, double min,
                    double max) {
  declare_double(valid, name, def, doc, min, max, false);
}

void declare_double(ParameterList& valid, const std::string& name, double def, const std::string& doc, double min,
                    double max, bool min_excluded) {
  auto v = Teuchos::rcp(new DoubleRange(min, max, min_excluded));
  PLEXUS_CHECK(v->contains(def), "declare_double: default of '" + name + "' is out of its range");
  valid.set(name, def, doc, v);
}

void declare_bool(ParameterList& valid, const std::string& name, bool def, const std::string& doc) {
  valid.set(name, def, doc);
}

void declare_string(ParameterList& valid, const std::string& name, const std::string& def, const std::string& doc) {
  valid.set(name, def, doc);
}

void declare_choice(ParameterList& valid, const std::string& name, const std::string& def,
                    const std::vector<std::string>& choices, const std::string& doc) {
  PLEXUS_CHECK(std::find(choices.begin(), choices.end(), def) != choices.end() || choices.empty(),
               "declare_choice: default '" + def + "' of '" + name + "' is not among its choices");
  auto v = Teuchos::rcp(new ChoiceValidator(choices));
  valid.set(name, def, doc, v);
}

namespace {
void collect_infos(const ParameterList& valid, const std::string& prefix, int depth, std::vector<ParameterInfo>& out) {
  for (auto it = valid.begin(); it != valid.end(); ++it) {
    const std::string& name = valid.name(it);
    const Teuchos::ParameterEntry& e = valid.entry(it);
    ParameterInfo info;
    info.path = prefix + name;
    info.depth = depth;
    info.doc = e.docString();
    if (e.isList()) {
      info.sublist = true;
      out.push_back(info);
      collect_infos(valid.sublist(name), info.path + "/", depth + 1, out);
      continue;
    }
    info.type = type_name(type_of(e));
    info.default_text = type_of(e) == Type::String ? Teuchos::getValue<std::string>(e) : value_text(e);
    auto validator = e.validator();
    if (!validator.is_null()) {
      if (auto iv = Teuchos::rcp_dynamic_cast<const IntRange>(validator); !iv.is_null()) {
        info.range = iv->range_text();
      } else if (auto dv = Teuchos::rcp_dynamic_cast<const DoubleRange>(validator); !dv.is_null()) {
        info.range = dv->range_text();
      } else if (auto strings = validator->validStringValues(); !strings.is_null()) {
        info.choices.assign(strings->begin(), strings->end());
      }
    }
    out.push_back(std::move(info));
  }
}
}  // namespace

std::vector<ParameterInfo> parameter_infos(const ParameterList& valid) {
  std::vector<ParameterInfo> out;
  collect_infos(valid, "", 0, out);
  return out;
}

std::vector<std::string> describe_parameters(const ParameterList& valid, const std::string& indent) {
  std::vector<std::string> lines;
  for (const ParameterInfo& p : parameter_infos(valid)) {
    const std::string pad = indent + std::string(2 * static_cast<std::size_t>(p.depth), ' ');
    const std::string name = p.path.substr(p.path.rfind('/') == std::string::npos ? 0 : p.path.rfind('/') + 1);
    const std::string def = p.type == "string" ? "'" + p.default_text + "'" : p.default_text;
    std::string line = pad + name + (p.sublist ? " (sublist)" : " (" + p.type + ", default " + def + ")");
    if (!p.doc.empty()) line += ": " + p.doc;
    if (!p.range.empty()) line += bracketed(p.range);
    if (!p.choices.empty()) line += " [" + join(p.choices, "|") + "]";
    lines.push_back(line);
  }
  return lines;
}

}  // namespace plexus
