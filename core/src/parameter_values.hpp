#pragma once
// Strict conversion of parameter values given as text (XML attributes, --set): the whole text
// must be the value (surrounding blanks aside), integers must fit in int, doubles must be finite.
// Private to core: parameters.cpp and parameter_xml.cpp use the same rules.
#include <string>

namespace plexus::detail {

/// Each returns "" and sets `out`, or says why `text` is not such a value ("is not a whole
/// number", "is outside the range of int, [-2147483648, 2147483647]", "is not a finite number").
std::string parse_int_value(const std::string& text, int& out);
std::string parse_double_value(const std::string& text, double& out);
/// true/false, 1/0, yes/no, on/off (any case).
std::string parse_bool_value(const std::string& text, bool& out);

/// "%.17g": reads back as the same double.
std::string exact_double_text(double v);

}  // namespace plexus::detail
