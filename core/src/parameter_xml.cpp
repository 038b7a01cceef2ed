// Parameter files: strict reading (every value of its declared type, no duplicate names, the
// root named as plexus names it, errors with the file and line) and tidy writing.
#include <spdlog/fmt/fmt.h>

#include <Teuchos_StringInputSource.hpp>
#include <Teuchos_XMLParameterListCoreHelpers.hpp>
#include <Teuchos_XMLParameterListReader.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "parameter_values.hpp"
#include "plexus/error.hpp"
#include "plexus/input.hpp"
#include "plexus/output.hpp"
#include "plexus/parameters.hpp"

namespace plexus {

namespace {

using input::trim;

// The line of every element's start tag, in document order (comments, CDATA, processing
// instructions, declarations and end tags skipped; quoted attribute values may hold '>').
std::vector<long> element_lines(const std::string& text) {
  std::vector<long> lines;
  long line = 1;
  const std::size_t n = text.size();
  auto skip_to = [&](std::size_t from, const char* end) {
    const std::size_t at = text.find(end, from);
    const std::size_t stop = at == std::string::npos ? n : at + std::strlen(end);
    for (std::size_t k = from; k < stop; ++k)
      if (text[k] == '\n') ++line;
    return stop;
  };
  for (std::size_t i = 0; i < n;) {
    if (text[i] == '\n') {
      ++line;
      ++i;
      continue;
    }
    if (text[i] != '<') {
      ++i;
      continue;
    }
    if (text.compare(i, 4, "<!--") == 0) {
      i = skip_to(i, "-->");
    } else if (text.compare(i, 9, "<![CDATA[") == 0) {
      i = skip_to(i, "]]>");
    } else if (text.compare(i, 2, "<?") == 0) {
      i = skip_to(i, "?>");
    } else if (text.compare(i, 2, "<!") == 0 || text.compare(i, 2, "</") == 0) {
      i = skip_to(i, ">");
    } else {
      lines.push_back(line);
      char quote = 0;
      for (++i; i < n; ++i) {
        const char ch = text[i];
        if (ch == '\n') ++line;
        if (quote) {
          if (ch == quote) quote = 0;
        } else if (ch == '"' || ch == '\'') {
          quote = ch;
        } else if (ch == '>') {
          ++i;
          break;
        }
      }
    }
  }
  return lines;
}

std::size_t count_elements(const Teuchos::XMLObject& x) {
  std::size_t n = 1;
  for (int i = 0; i < x.numChildren(); ++i) n += count_elements(x.getChild(i));
  return n;
}

// Walks the parsed file in document order, the i-th element at lines[i].
class Checker {
 public:
  Checker(const std::string& path, std::vector<long> lines) : path_(path), lines_(std::move(lines)) {}

  void root(Teuchos::XMLObject& x, const std::string& root_name) {
    const long line = take(x);
    if (x.getTag() != "ParameterList")
      fail(line, "the file holds <" + input::excerpt(x.getTag()) + ">, not a <ParameterList>");
    std::string name = root_name.empty() ? std::string("plexus") : root_name;
    if (x.hasAttribute("name")) {
      const std::string& given = x.getAttribute("name");
      if (!root_name.empty() && given != root_name)
        fail(line, "the root list is named '" + input::excerpt(given) + "'; a plexus parameter file starts with " +
                       "<ParameterList name=\"" + root_name + "\"> (as the examples and --write-params have it)");
      if (root_name.empty()) name = given;
    }
    list(x, name);
  }

 private:
  [[noreturn]] void fail(long line, const std::string& what) const {
    if (line <= 0) throw InputError(path_, "parameter file '" + path_ + "': " + what);
    throw InputError(path_, "parameter file '" + path_ + "', line " + std::to_string(line) + ": " + what);
  }

  // The line of the next element in document order (0: unknown), and steps past it.
  long take(const Teuchos::XMLObject&) {
    const std::size_t i = next_++;
    return i < lines_.size() ? lines_[i] : 0;
  }

  void skip_children(const Teuchos::XMLObject& x) {
    for (int i = 0; i < x.numChildren(); ++i) next_ += count_elements(x.getChild(i));
  }

  std::string at_lines(long a, long b) const {
    if (a <= 0 || b <= 0) return "";
    return " (lines " + std::to_string(a) + " and " + std::to_string(b) + ")";
  }

  void list(Teuchos::XMLObject& x, const std::string& where) {
    std::map<std::string, long> seen;  // name -> line
    for (int i = 0; i < x.numChildren(); ++i) {
      Teuchos::XMLObject child = x.getChild(i);  // a handle: changes reach the parsed tree
      const long line = take(child);
      const std::string& tag = child.getTag();
      if (tag == "Validators" || tag == "Dependencies") {  // as Teuchos writes them
        skip_children(child);
        continue;
      }
      if (tag != "Parameter" && tag != "ParameterList")
        fail(line, "<" + input::excerpt(tag) + "> in list '" + where +
                       "' is not a plexus parameter element (a list holds <Parameter> and <ParameterList>)");
      if (!child.hasAttribute("name")) fail(line, "a <" + tag + "> in list '" + where + "' has no name attribute");
      const std::string& name = child.getAttribute("name");
      const std::string full = where + "/" + input::excerpt(name);
      if (auto [it, fresh] = seen.emplace(name, line); !fresh)
        fail(line, "'" + full + "' is given twice in list '" + where + "'" + at_lines(it->second, line) +
                       "; give each name once");
      if (tag == "ParameterList") {
        list(child, full);
      } else {
        parameter(child, full, line);
        skip_children(child);
      }
    }
  }

  // Checks the value against its declared type and writes it back in the form Teuchos reads
  // exactly (Teuchos itself reads "12abc" as 12 and "abc" as 0).
  void parameter(Teuchos::XMLObject& x, const std::string& full, long line) {
    if (!x.hasAttribute("type")) fail(line, "parameter '" + full + "' has no type attribute");
    if (!x.hasAttribute("value")) fail(line, "parameter '" + full + "' has no value attribute");
    const std::string type = x.getAttribute("type");
    const std::string value = x.getAttribute("value");
    std::string why;
    if (type == "int") {
      int v = 0;
      why = detail::parse_int_value(value, v);
      if (why.empty()) x.addAttribute("value", std::to_string(v));
    } else if (type == "double") {
      double v = 0;
      why = detail::parse_double_value(value, v);
      if (why.empty()) x.addAttribute("value", detail::exact_double_text(v));
    } else if (type == "bool") {
      bool v = false;
      why = detail::parse_bool_value(value, v);
      if (why.empty()) x.addAttribute("value", std::string(v ? "true" : "false"));
    } else if (type != "string") {
      fail(line, "parameter '" + full + "' has type '" + input::excerpt(type) +
                     "'; plexus parameters are of type int, double, bool or string");
    }
    if (!why.empty())
      fail(line, "parameter '" + full + "' = '" + input::excerpt(value) + "' " + why + " (its type is " + type + ")");
  }

  const std::string& path_;
  std::vector<long> lines_;
  std::size_t next_ = 0;
};

// The first byte that XML text never holds (control characters other than tab, newline and
// carriage return), with its line; a binary file is told as such, not echoed.
void refuse_binary(const std::string& path, const std::string& text) {
  long line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto ch = static_cast<unsigned char>(text[i]);
    if (ch == '\n') {
      ++line;
      line_start = i + 1;
      continue;
    }
    if ((ch < 0x20 && ch != '\t' && ch != '\r') || ch == 0x7f) {
      const std::string byte = fmt::format("0x{:02X}", static_cast<unsigned>(ch));
      throw InputError(path, "parameter file '" + path + "', line " + std::to_string(line) + ": holds the byte " +
                                 byte + ", which XML text never does; is it a parameter file? (the line starts '" +
                                 input::excerpt(std::string_view(text).substr(line_start, 40), 40) + "')");
    }
  }
}

// Teuchos' messages start with its source location and throw counter: the last line says what
// is wrong and where in the file.
std::string teuchos_reason(const std::exception& e) {
  std::string what = trim(e.what());
  if (auto nl = what.rfind('\n'); nl != std::string::npos) what = trim(what.substr(nl + 1));
  return input::excerpt(what, 200);
}

}  // namespace

ParameterListPtr read_parameter_file(const std::string& path, const std::string& root_name) {
  input::check_input_file(path, "parameter file");
  std::string text;
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path, "cannot read parameter file '" + path + "': " + std::strerror(errno));
    std::ostringstream os;
    os << in.rdbuf();
    if (in.bad()) throw InputError(path, "cannot read parameter file '" + path + "': " + std::strerror(errno));
    text = os.str();
  }
  if (trim(text).empty()) throw InputError(path, "parameter file '" + path + "' is empty");
  refuse_binary(path, text);
  Teuchos::XMLObject xml;
  try {
    xml = Teuchos::StringInputSource(text).getObject();
  } catch (const std::exception& e) {
    throw InputError(path, "cannot parse parameter file '" + path + "': " + teuchos_reason(e));
  }
  std::vector<long> lines = element_lines(text);
  if (lines.size() != count_elements(xml)) lines.clear();  // lines unknown rather than wrong
  Checker(path, std::move(lines)).root(xml, root_name);
  try {
    return Teuchos::rcp(new ParameterList(Teuchos::XMLParameterListReader().toParameterList(xml)));
  } catch (const std::exception& e) {
    throw InputError(path, "cannot read parameter file '" + path + "': " + teuchos_reason(e));
  }
}

namespace {

// The shortest text that reads back as the same double.
std::string shortest_double(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0') return text;
  for (int precision = 1; precision <= 17; ++precision) {
    std::string shortest = fmt::format("{:.{}g}", v, precision);
    if (std::strtod(shortest.c_str(), nullptr) == v) return shortest;
  }
  return text;
}

// Teuchos writes bookkeeping attributes (id, isDefault, isUsed), an empty <Validators/> element
// and doubles with 17 digits; a list meant for people reads better without them, and reads back
// the same.
std::string tidy_xml(const std::string& xml) {
  static const std::regex noise(R"re( (id|isDefault|isUsed)="[^"]*")re");
  static const std::regex validators(R"re(\n?[ \t]*<Validators/>)re");
  static const std::regex dbl(R"re(type="double" value="([^"]*)")re");
  std::string out = std::regex_replace(xml, noise, "");
  out = std::regex_replace(out, validators, "");
  std::string result;
  auto begin = std::sregex_iterator(out.begin(), out.end(), dbl);
  std::size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    result.append(out, last, static_cast<std::size_t>(m.position(0)) - last);
    result += "type=\"double\" value=\"" + shortest_double(m.str(1)) + "\"";
    last = static_cast<std::size_t>(m.position(0) + m.length(0));
  }
  result.append(out, last, std::string::npos);
  return result;
}

}  // namespace

std::string to_xml(const ParameterList& list) {
  std::ostringstream os;
  Teuchos::writeParameterListToXmlOStream(list, os);
  // Lists carrying validators (valid lists) are written as Teuchos writes them.
  const std::string xml = os.str();
  if (xml.find("<Validators/>") == std::string::npos) return xml;
  return tidy_xml(xml);
}

void write_parameter_file(const ParameterList& list, const std::string& path) {
  output::write_text(path, to_xml(list), "--write-params");
}

}  // namespace plexus
