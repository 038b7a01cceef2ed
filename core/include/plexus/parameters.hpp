#pragma once
// Parameters: one Teuchos::ParameterList, read from XML, overridden from the command line,
// validated against each component's documented valid parameters.
#include <Teuchos_ParameterList.hpp>
#include <Teuchos_RCP.hpp>

#include <string>
#include <vector>

namespace plexus {

using ParameterList = Teuchos::ParameterList;
using ParameterListPtr = Teuchos::RCP<ParameterList>;

/// Reads an XML parameter file strictly; errors name the file and, where known, the line:
/// a directory or binary data instead of XML, a value that is not entirely of its declared type
/// (int values must fit in int, double values must be finite), a type other than int, double,
/// bool or string, a name given twice in one list, and a root list named otherwise than
/// `root_name` (a root without a name is accepted; "" accepts any name).
ParameterListPtr read_parameter_file(const std::string& path, const std::string& root_name = "plexus");
/// Writes a parameter list as XML (atomically).
void write_parameter_file(const ParameterList& list, const std::string& path);
std::string to_xml(const ParameterList& list);

/// Applies "Path/To/Key=value" (value as a string; converted to the type of the existing or
/// valid entry during validation). Creates sublists as needed.
void apply_override(ParameterList& list, const std::string& assignment);

/// Validates `user` (at `path`, e.g. "plexus/Communication/cannon") against `valid`: unknown
/// names (with the nearest valid name), wrong types, values refused by a validator. String
/// values given for int/double/bool entries are converted. Missing entries are filled with the
/// defaults. Sublists are validated recursively unless their name is in `skip_sublists`
/// (validated elsewhere, e.g. by the component they select).
void validate_and_fill(ParameterList& user, const ParameterList& valid, const std::string& path,
                       const std::vector<std::string>& skip_sublists = {});

/// Levenshtein distance; nearest(name, candidates) or "" when none is close.
std::size_t edit_distance(const std::string& a, const std::string& b);
std::string nearest(const std::string& name, const std::vector<std::string>& candidates);

/// Helpers to declare valid parameters with documentation. Ranges and choices are checked by
/// plexus' own validators (Teuchos_StandardParameterEntryValidators.hpp does not compile as
/// C++20), so a valid list is described by describe_parameters, not written as XML. For an
/// unbounded range pass std::numeric_limits<T>::max() (or lowest()).
void declare_int(ParameterList& valid, const std::string& name, int def, const std::string& doc, int min, int max);
/// A double parameter: finite values in [min, max], or in (min, max] when min_excluded.
void declare_double(ParameterList& valid, const std::string& name, double def, const std::string& doc,
                    double min, double max);
void declare_double(ParameterList& valid, const std::string& name, double def, const std::string& doc, double min,
                    double max, bool min_excluded);
void declare_bool(ParameterList& valid, const std::string& name, bool def, const std::string& doc);
void declare_string(ParameterList& valid, const std::string& name, const std::string& def, const std::string& doc);
/// A string that must be one of `choices`.
void declare_choice(ParameterList& valid, const std::string& name, const std::string& def,
                    const std::vector<std::string>& choices, const std::string& doc);

/// One valid parameter (or sublist) as listings and tools see it.
struct ParameterInfo {
  std::string path;  ///< "Name" or "Sublist/Name" below the list described
  int depth = 0;     ///< sublists above it
  bool sublist = false;
  std::string type;          ///< "int", "double", "bool", "string" ("" for a sublist)
  std::string default_text;  ///< the default as text
  std::string doc;
  std::string range;                 ///< "[0, 4096]" style bounds, or ""
  std::vector<std::string> choices;  ///< the allowed strings of a choice, or empty
};
/// Every parameter of a valid list, depth first (a sublist before its parameters).
std::vector<ParameterInfo> parameter_infos(const ParameterList& valid);
/// One line per parameter "name (type, default D): doc [range/choices]" for listings.
std::vector<std::string> describe_parameters(const ParameterList& valid, const std::string& indent = "");

}  // namespace plexus
