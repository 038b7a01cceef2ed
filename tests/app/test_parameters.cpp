// Parameters: validation messages (unknown names, types, ranges, choices), overrides, defaults,
// XML round trip; problem parameters.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "plexus/error.hpp"
#include "plexus/parameters.hpp"
#include "plexus/problem.hpp"

namespace {

using plexus::InputError;
using plexus::ParameterList;

const int kIntMax = std::numeric_limits<int>::max();

// A valid list shaped like the program's: plexus { Solver, Problem {...}, Communication {...} }.
ParameterList make_valid() {
  ParameterList v("plexus");
  plexus::declare_string(v, "Solver", "multiply", "the solver");
  ParameterList& problem = v.sublist("Problem", false, "the problem");
  plexus::declare_int(problem, "Blocks", 160, "block rows", 1, kIntMax);
  plexus::declare_double(problem, "Occupancy", 0.1, "fraction of blocks", 0.0, 1.0);
  plexus::declare_bool(problem, "Symmetric", true, "symmetric A and B");
  plexus::declare_choice(problem, "Distribution", "random", {"block-cyclic", "random"}, "distribution");
  ParameterList& comm = v.sublist("Communication", false, "strategy");
  plexus::declare_choice(comm, "Strategy", "cannon", {"cannon", "rma25d", "ring"}, "the strategy");
  comm.sublist("cannon");
  return v;
}

// Runs f, expects an InputError, returns its message.
template <class F>
std::string input_error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected plexus::InputError, got another exception: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected plexus::InputError, nothing was thrown";
  return {};
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("plexus_test_" + std::to_string(::getpid()) + "_" + name)).string();
}

TEST(Parameters, UnknownNameSuggestsNearest) {
  ParameterList user("plexus");
  user.sublist("Communication").set("Strategyy", std::string("cannon"));
  std::string where;
  try {
    plexus::validate_and_fill(user, make_valid(), "plexus");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(
        std::string(e.what()).find("unknown parameter 'plexus/Communication/Strategyy'; did you mean 'Strategy'?"),
        std::string::npos)
        << e.what();
    where = e.where();
  }
  EXPECT_EQ(where, "plexus/Communication/Strategyy");
}

TEST(Parameters, UnknownSublistSuggestsNearest) {
  ParameterList user("plexus");
  user.sublist("Problme").set("Blocks", 3);
  const std::string msg = input_error_of([&] { plexus::validate_and_fill(user, make_valid(), "plexus"); });
  EXPECT_NE(msg.find("'plexus/Problme'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'Problem'?"), std::string::npos) << msg;
}

TEST(Parameters, UnknownNameFarFromEverythingHasNoSuggestion) {
  ParameterList user("plexus");
  user.set("Zzzzzzzzzz", 1);
  const std::string msg = input_error_of([&] { plexus::validate_and_fill(user, make_valid(), "plexus"); });
  EXPECT_NE(msg.find("'plexus/Zzzzzzzzzz'"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("did you mean"), std::string::npos) << msg;
}

TEST(Parameters, WrongTypeNamesPathTypeAndValue) {
  ParameterList user("plexus");
  user.sublist("Problem").set("Blocks", std::string("abc"));
  std::string msg = input_error_of([&] { plexus::validate_and_fill(user, make_valid(), "plexus"); });
  EXPECT_NE(msg.find("plexus/Problem/Blocks"), std::string::npos) << msg;
  EXPECT_NE(msg.find("int"), std::string::npos) << msg;
  EXPECT_NE(msg.find("abc"), std::string::npos) << msg;

  ParameterList user2("plexus");
  user2.sublist("Problem").set("Symmetric", std::string("maybe"));
  msg = input_error_of([&] { plexus::validate_and_fill(user2, make_valid(), "plexus"); });
  EXPECT_NE(msg.find("plexus/Problem/Symmetric"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bool"), std::string::npos) << msg;
  EXPECT_NE(msg.find("maybe"), std::string::npos) << msg;

  // A typed value of the wrong type (not a string) is refused too.
  ParameterList user3("plexus");
  user3.sublist("Problem").set("Blocks", true);
  msg = input_error_of([&] { plexus::validate_and_fill(user3, make_valid(), "plexus"); });
  EXPECT_NE(msg.find("plexus/Problem/Blocks"), std::string::npos) << msg;
  EXPECT_NE(msg.find("int"), std::string::npos) << msg;

  // A parameter where a sublist belongs.
  ParameterList user4("plexus");
  user4.set("Problem", 3);
  msg = input_error_of([&] { plexus::validate_and_fill(user4, make_valid(), "plexus"); });
  EXPECT_NE(msg.find("'plexus/Problem' must be a sublist"), std::string::npos) << msg;
}

TEST(Parameters, OutOfRangeNamesPathValueAndRange) {
  ParameterList user("plexus");
  user.sublist("Problem").set("Blocks", 0);
  std::string msg = input_error_of([&] { plexus::validate_and_fill(user, make_valid(), "plexus"); });
  EXPECT_NE(msg.find("plexus/Problem/Blocks"), std::string::npos) << msg;
  EXPECT_NE(msg.find("= 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find(">= 1"), std::string::npos) << msg;

  ParameterList user2("plexus");
  user2.sublist("Problem").set("Occupancy", std::string("1.5"));
  msg = input_error_of([&] { plexus::validate_and_fill(user2, make_valid(), "plexus"); });
  EXPECT_NE(msg.find("plexus/Problem/Occupancy"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1.5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[0.0, 1.0]"), std::string::npos) << msg;
}

TEST(Parameters, ChoiceSuggestsNearestValue) {
  ParameterList user("plexus");
  user.sublist("Communication").set("Strategy", std::string("rma25"));
  const std::string msg = input_error_of([&] { plexus::validate_and_fill(user, make_valid(), "plexus"); });
  EXPECT_NE(msg.find("plexus/Communication/Strategy"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'rma25'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'rma25d'?"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cannon, rma25d, ring"), std::string::npos) << msg;
}

TEST(Parameters, OverridesAreConvertedToTheValidType) {
  ParameterList user("plexus");
  plexus::apply_override(user, "Problem/Blocks=42");
  plexus::apply_override(user, "Problem/Occupancy= 2.5e-1");
  plexus::apply_override(user, "Problem/Symmetric=no");
  plexus::apply_override(user, "Communication/Strategy=ring");
  EXPECT_TRUE(user.sublist("Problem").getEntry("Blocks").isType<std::string>());  // stored as text
  plexus::validate_and_fill(user, make_valid(), "plexus");
  EXPECT_EQ(user.sublist("Problem").get<int>("Blocks"), 42);
  EXPECT_DOUBLE_EQ(user.sublist("Problem").get<double>("Occupancy"), 0.25);
  EXPECT_FALSE(user.sublist("Problem").get<bool>("Symmetric"));
  EXPECT_EQ(user.sublist("Communication").get<std::string>("Strategy"), "ring");

  for (const char* text : {"true", "1", "yes", "YES", "on"}) {
    ParameterList u("plexus");
    plexus::apply_override(u, std::string("Problem/Symmetric=") + text);
    plexus::validate_and_fill(u, make_valid(), "plexus");
    EXPECT_TRUE(u.sublist("Problem").get<bool>("Symmetric")) << text;
  }
  // An int is accepted for a double.
  ParameterList u("plexus");
  u.sublist("Problem").set("Occupancy", 1);
  plexus::validate_and_fill(u, make_valid(), "plexus");
  EXPECT_DOUBLE_EQ(u.sublist("Problem").get<double>("Occupancy"), 1.0);
}

TEST(Parameters, OverrideSyntaxErrors) {
  ParameterList user("plexus");
  EXPECT_NE(input_error_of([&] { plexus::apply_override(user, "Problem/Blocks"); }).find("Path/To/Key=value"),
            std::string::npos);
  EXPECT_NE(input_error_of([&] { plexus::apply_override(user, "Problem//Blocks=3"); }).find("empty name"),
            std::string::npos);
  plexus::apply_override(user, "Solver=x");
  EXPECT_NE(input_error_of([&] { plexus::apply_override(user, "Solver/Inner=3"); }).find("not a sublist"),
            std::string::npos);
  plexus::apply_override(user, "Problem/Blocks=1");
  EXPECT_NE(input_error_of([&] { plexus::apply_override(user, "Problem=3"); }).find("is a sublist"), std::string::npos);
  // A leading root name is accepted.
  plexus::apply_override(user, "plexus/Problem/Blocks=7");
  EXPECT_EQ(user.sublist("Problem").get<std::string>("Blocks"), "7");
}

TEST(Parameters, DefaultsAreFilledWithDocumentation) {
  ParameterList user("plexus");
  plexus::validate_and_fill(user, make_valid(), "plexus");
  EXPECT_EQ(user.get<std::string>("Solver"), "multiply");
  ASSERT_TRUE(user.isSublist("Problem"));
  EXPECT_EQ(user.sublist("Problem").get<int>("Blocks"), 160);
  EXPECT_DOUBLE_EQ(user.sublist("Problem").get<double>("Occupancy"), 0.1);
  EXPECT_TRUE(user.sublist("Problem").get<bool>("Symmetric"));
  EXPECT_EQ(user.sublist("Problem").get<std::string>("Distribution"), "random");
  EXPECT_EQ(user.sublist("Problem").getEntry("Blocks").docString(), "block rows");
  EXPECT_EQ(user.sublist("Communication").get<std::string>("Strategy"), "cannon");
  // Validating twice changes nothing.
  ParameterList again(user);
  plexus::validate_and_fill(again, make_valid(), "plexus");
  EXPECT_EQ(plexus::to_xml(again), plexus::to_xml(user));
}

TEST(Parameters, SkippedSublistsAreLeftAlone) {
  ParameterList user("plexus");
  user.sublist("Communication").set("Anything", 3);  // would be unknown
  user.sublist("mysolver").set("Whatever", 1);       // unknown sublist, but skipped
  plexus::validate_and_fill(user, make_valid(), "plexus", {"Communication", "mysolver"});
  EXPECT_EQ(user.sublist("Communication").get<int>("Anything"), 3);
  EXPECT_FALSE(user.sublist("Communication").isParameter("Strategy"));  // not filled either
  // An unknown skipped name must still be a sublist.
  ParameterList user2("plexus");
  user2.set("mysolver", 1);
  EXPECT_FALSE(input_error_of([&] { plexus::validate_and_fill(user2, make_valid(), "plexus", {"mysolver"}); }).empty());
}

TEST(Parameters, XmlRoundTrip) {
  ParameterList user("plexus");
  plexus::apply_override(user, "Problem/Blocks=12");
  plexus::apply_override(user, "Problem/Occupancy=0.3");
  plexus::validate_and_fill(user, make_valid(), "plexus");
  user.sublist("Communication").sublist("cannon").set("Note", std::string("a \"quoted\" <text> & more"));
  const std::string path = temp_path("roundtrip.xml");
  plexus::write_parameter_file(user, path);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp." + std::to_string(::getpid())));
  auto back = plexus::read_parameter_file(path);
  EXPECT_EQ(back->sublist("Problem").get<int>("Blocks"), 12);
  EXPECT_DOUBLE_EQ(back->sublist("Problem").get<double>("Occupancy"), 0.3);
  EXPECT_TRUE(back->sublist("Problem").get<bool>("Symmetric"));
  EXPECT_EQ(back->get<std::string>("Solver"), "multiply");
  EXPECT_EQ(back->sublist("Communication").sublist("cannon").get<std::string>("Note"), "a \"quoted\" <text> & more");
  EXPECT_EQ(back->sublist("Problem").getEntry("Blocks").docString(), "block rows");
  // Validating what was read back gives the same list.
  plexus::validate_and_fill(*back, make_valid(), "plexus", {"Communication"});
  back->setName("plexus");
  EXPECT_EQ(plexus::to_xml(*back), plexus::to_xml(user));
  // The echo is tidy: no Teuchos bookkeeping, short doubles.
  const std::string xml = plexus::to_xml(user);
  EXPECT_EQ(xml.find("isUsed"), std::string::npos) << xml;
  EXPECT_EQ(xml.find(" id="), std::string::npos) << xml;
  EXPECT_NE(xml.find("value=\"0.3\""), std::string::npos) << xml;
  std::remove(path.c_str());
}

TEST(Parameters, FileErrorsNameTheFile) {
  const std::string missing = temp_path("does_not_exist.xml");
  std::string msg = input_error_of([&] { plexus::read_parameter_file(missing); });
  EXPECT_NE(msg.find(missing), std::string::npos) << msg;

  const std::string bad = temp_path("bad.xml");
  {
    std::ofstream out(bad);
    out << "<ParameterList name=\"plexus\">\n  <Parameter name=\"a\" type=\"int\" value=\"1\"/>\n";
  }
  msg = input_error_of([&] { plexus::read_parameter_file(bad); });
  EXPECT_NE(msg.find(bad), std::string::npos) << msg;
  EXPECT_NE(msg.find("line"), std::string::npos) << msg;
  std::remove(bad.c_str());

  try {
    plexus::write_parameter_file(ParameterList("x"), "/nonexistent-dir/params.xml");
    FAIL() << "no error";
  } catch (const plexus::Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/params.xml"), std::string::npos) << e.what();
  }
}

// Writes `text` to a temporary parameter file and returns the InputError of reading it.
std::string xml_error(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  {
    std::ofstream out(path, std::ios::binary);
    out << text;
  }
  const std::string msg = input_error_of([&] { plexus::read_parameter_file(path); });
  std::remove(path.c_str());
  return msg;
}

std::string in_problem(const std::string& parameter) {
  return "<ParameterList name=\"plexus\">\n  <ParameterList name=\"Problem\">\n    " + parameter +
         "\n  </ParameterList>\n</ParameterList>\n";
}

// Issue 9 item 5: Teuchos reads "12abc" as 12, "abc" as 0, "0.5abc" as 0.5 and wraps
// 99999999999; every such value is an error naming the file, line, parameter, text and type.
TEST(StrictInput, XmlValuesMustBeEntirelyOfTheirType) {
  struct Case {
    const char* type;
    const char* value;
    const char* why;
  };
  for (const Case& c :
       {Case{"int", "12abc", "is not a whole number"}, Case{"int", "abc", "is not a whole number"},
        Case{"int", "1.5", "is not a whole number"}, Case{"int", "", "is empty"},
        Case{"int", "99999999999", "is outside the range of int, [-2147483648, 2147483647]"},
        Case{"double", "0.5abc", "is not a number"}, Case{"double", "nan", "is not a finite number"},
        Case{"double", "-inf", "is not a finite number"}, Case{"double", "1e400", "is outside the range of double"},
        Case{"bool", "maybe", "is not a boolean (true/false, 1/0, yes/no, on/off)"}}) {
    const std::string msg = xml_error("typed.xml", in_problem(std::string("<Parameter name=\"X\" type=\"") + c.type +
                                                              "\" value=\"" + c.value + "\"/>"));
    EXPECT_NE(msg.find("typed.xml', line 3: parameter 'plexus/Problem/X' = '" + std::string(c.value) + "' " + c.why),
              std::string::npos)
        << c.type << " " << c.value << ": " << msg;
    EXPECT_NE(msg.find(std::string("(its type is ") + c.type + ")"), std::string::npos) << msg;
  }
  // Types plexus never declares are refused with the valid ones.
  const std::string msg = xml_error("float.xml", in_problem("<Parameter name=\"X\" type=\"float\" value=\"1\"/>"));
  EXPECT_NE(msg.find("line 3: parameter 'plexus/Problem/X' has type 'float'; plexus parameters are of type int, "
                     "double, bool or string"),
            std::string::npos)
      << msg;
}

TEST(StrictInput, XmlValuesThatAreRightAreReadExactly) {
  const std::string path = temp_path("good_values.xml");
  {
    std::ofstream out(path);
    out << "<ParameterList name=\"plexus\">\n <!-- a <comment> -->\n <ParameterList name=\"Problem\">\n"
           "  <Parameter name=\"I\" type=\"int\" value=\" -12 \"/>\n"
           "  <Parameter name=\"D\" type=\"double\" value=\"2.5e-1\"/>\n"
           "  <Parameter name=\"B\" type=\"bool\" value=\"yes\"/>\n"
           "  <Parameter name=\"S\" type=\"string\" value=\"12abc\"/>\n </ParameterList>\n</ParameterList>\n";
  }
  auto list = plexus::read_parameter_file(path);
  EXPECT_EQ(list->sublist("Problem").get<int>("I"), -12);
  EXPECT_DOUBLE_EQ(list->sublist("Problem").get<double>("D"), 0.25);
  EXPECT_TRUE(list->sublist("Problem").get<bool>("B"));
  EXPECT_EQ(list->sublist("Problem").get<std::string>("S"), "12abc");
  std::remove(path.c_str());
}

TEST(StrictInput, XmlDuplicateNamesAreRefusedWithBothLines) {
  std::string msg = xml_error("dup.xml",
                              "<ParameterList name=\"plexus\">\n <ParameterList name=\"multiply\">\n"
                              "  <Parameter name=\"Repetitions\" type=\"int\" value=\"1\"/>\n"
                              "  <!-- <Parameter name=\"Repetitions\"> in a comment is no element -->\n"
                              "  <Parameter name=\"Repetitions\"\n     type=\"int\" value=\"2\"/>\n"
                              " </ParameterList>\n</ParameterList>\n");
  EXPECT_NE(msg.find("dup.xml', line 5: 'plexus/multiply/Repetitions' is given twice in list 'plexus/multiply' "
                     "(lines 3 and 5)"),
            std::string::npos)
      << msg;
  // Sublists too, and a sublist and a parameter of the same name.
  msg = xml_error(
      "dup_list.xml",
      "<ParameterList name=\"plexus\">\n <ParameterList name=\"Problem\"/>\n <ParameterList name=\"Problem\"/>\n"
      "</ParameterList>\n");
  EXPECT_NE(msg.find("'plexus/Problem' is given twice in list 'plexus' (lines 2 and 3)"), std::string::npos) << msg;
  msg = xml_error("dup_mixed.xml",
                  "<ParameterList name=\"plexus\">\n <Parameter name=\"Problem\" type=\"int\" "
                  "value=\"1\"/>\n <ParameterList name=\"Problem\"/>\n</ParameterList>\n");
  EXPECT_NE(msg.find("(lines 2 and 3)"), std::string::npos) << msg;
}

TEST(StrictInput, XmlRootMustBeNamedPlexus) {
  const std::string msg = xml_error("root.xml", "<ParameterList name=\"foo\">\n</ParameterList>\n");
  EXPECT_NE(msg.find("root.xml', line 1: the root list is named 'foo'; a plexus parameter file starts with "
                     "<ParameterList name=\"plexus\">"),
            std::string::npos)
      << msg;
  // A root without a name is not misnamed; another root name may be asked for.
  const std::string path = temp_path("anonymous.xml");
  std::ofstream(path) << "<ParameterList>\n <Parameter name=\"a\" type=\"int\" value=\"1\"/>\n</ParameterList>\n";
  EXPECT_EQ(plexus::read_parameter_file(path)->get<int>("a"), 1);
  std::ofstream(path) << "<ParameterList name=\"other\">\n</ParameterList>\n";
  EXPECT_EQ(plexus::read_parameter_file(path, "other")->name(), "other");
  EXPECT_EQ(plexus::read_parameter_file(path, "")->name(), "other");
  std::remove(path.c_str());
}

TEST(StrictInput, XmlDirectoryAndBinaryAreToldAsSuch) {
  const std::string dir = temp_path("params_dir");
  std::filesystem::create_directory(dir);
  std::string msg = input_error_of([&] { plexus::read_parameter_file(dir); });
  EXPECT_NE(msg.find("cannot read parameter file '" + dir + "': it is a directory"), std::string::npos) << msg;
  std::filesystem::remove(dir);

  // Binary garbage: the byte is named, the excerpt escaped and short; nothing raw is echoed.
  std::string garbage =
      "\x7f"
      "ELF\x02\x01\x01";
  garbage += std::string(1, '\0') + std::string(500, '\xff');
  msg = xml_error("garbage.xml", garbage);
  EXPECT_NE(msg.find("garbage.xml', line 1: holds the byte 0x7F"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\\x7FELF\\x02\\x01\\x01\\x00"), std::string::npos) << msg;
  EXPECT_LT(msg.size(), 400u) << msg;
  for (char ch : msg) EXPECT_TRUE(ch >= 0x20 && ch < 0x7f) << msg;
  // A parse error quoting the file is escaped too.
  msg = xml_error("unclosed.xml", "<ParameterList name=\"plexus\">\n <Parameter name=\"\xc3\xa9\xff\" type=\"int\"");
  for (char ch : msg) EXPECT_TRUE(ch >= 0x20 && ch < 0x7f) << msg;
  EXPECT_NE(msg.find("unclosed.xml"), std::string::npos) << msg;
  msg = xml_error("empty.xml", "  \n");
  EXPECT_NE(msg.find("parameter file '"), std::string::npos) << msg;
  EXPECT_NE(msg.find("empty.xml' is empty"), std::string::npos) << msg;
}

// --set values take the same strict path as XML values.
TEST(StrictInput, OverridesAreParsedStrictly) {
  struct Case {
    const char* assignment;
    const char* message;
  };
  for (const Case& c :
       {Case{"Problem/Blocks=12abc",
             "'plexus/Problem/Blocks' expects a value of type int, got '12abc', which is not a "
             "whole number"},
        Case{"Problem/Blocks=99999999999", "got '99999999999', which is outside the range of int"},
        Case{"Problem/Occupancy=0.5abc", "got '0.5abc', which is not a number"},
        Case{"Problem/Occupancy=nan",
             "'plexus/Problem/Occupancy' expects a value of type double, got 'nan', which is "
             "not a finite number"},
        Case{"Problem/Occupancy=inf", "got 'inf', which is not a finite number"},
        Case{"Problem/Symmetric=maybe", "got 'maybe', which is not a boolean (true/false, 1/0, yes/no, on/off)"}}) {
    ParameterList user("plexus");
    plexus::apply_override(user, c.assignment);
    const std::string msg = input_error_of([&] { plexus::validate_and_fill(user, make_valid(), "plexus"); });
    EXPECT_NE(msg.find(c.message), std::string::npos) << c.assignment << ": " << msg;
  }
}

// A NaN set in code is "not a finite number", not "out of range; valid: " with nothing after it.
TEST(StrictInput, NonFiniteDoublesAreNotFinite) {
  ParameterList valid("plexus");
  plexus::declare_double(valid, "Alpha", 1.0, "any", std::numeric_limits<double>::lowest(),
                         std::numeric_limits<double>::max());
  ParameterList user("plexus");
  user.set("Alpha", std::numeric_limits<double>::quiet_NaN());
  std::string msg = input_error_of([&] { plexus::validate_and_fill(user, valid, "plexus"); });
  EXPECT_NE(msg.find("parameter 'plexus/Alpha' = nan is not a finite number; valid: any finite number"),
            std::string::npos)
      << msg;
  user.set("Alpha", std::numeric_limits<double>::infinity());
  msg = input_error_of([&] { plexus::validate_and_fill(user, valid, "plexus"); });
  EXPECT_NE(msg.find("is not a finite number"), std::string::npos) << msg;
}

// Occupancy = 0 was advertised as valid ([0.0, 1.0]) and then refused by the problem: the range
// now says (0.0, 1.0], and validation refuses 0 with that range.
TEST(StrictInput, OccupancyRangeIsWhatIsChecked) {
  auto valid = plexus::problem_valid_parameters();
  std::string all;
  for (const auto& l : plexus::describe_parameters(*valid)) all += l + "\n";
  EXPECT_NE(all.find("Occupancy (double, default 0.1): random: fraction of blocks present, in (0, 1] (the diagonal "
                     "always is) (0.0, 1.0]"),
            std::string::npos)
      << all;
  ParameterList problem("Problem");
  plexus::apply_override(problem, "Occupancy=0");
  const std::string msg = input_error_of([&] { plexus::validate_and_fill(problem, *valid, "plexus/Problem"); });
  EXPECT_NE(msg.find("'plexus/Problem/Occupancy' = 0.0 is out of range; valid: (0.0, 1.0]"), std::string::npos) << msg;
  ParameterList one("Problem");
  plexus::apply_override(one, "Occupancy=1");
  plexus::validate_and_fill(one, *valid, "plexus/Problem");
  EXPECT_DOUBLE_EQ(one.get<double>("Occupancy"), 1.0);
}

TEST(Parameters, EditDistanceAndNearest) {
  EXPECT_EQ(plexus::edit_distance("", ""), 0u);
  EXPECT_EQ(plexus::edit_distance("abc", ""), 3u);
  EXPECT_EQ(plexus::edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(plexus::edit_distance("Strategyy", "Strategy"), 1u);
  EXPECT_EQ(plexus::nearest("Strategyy", {"Strategy", "cannon"}), "Strategy");
  EXPECT_EQ(plexus::nearest("strategy", {"Strategy", "cannon"}), "Strategy");  // case differences are cheap
  EXPECT_EQ(plexus::nearest("cpuu", {"cpu", "cuda", "reference"}), "cpu");
  EXPECT_EQ(plexus::nearest("refrence", {"cpu", "cuda", "reference"}), "reference");
  EXPECT_EQ(plexus::nearest("xyzzy", {"cpu", "cuda", "reference"}), "");
  EXPECT_EQ(plexus::nearest("", {"cpu"}), "");
  EXPECT_EQ(plexus::nearest("rma", {"cannon", "rma25d"}), "rma25d");  // a prefix is close enough
}

TEST(Parameters, DescribeListsTypesDefaultsAndRanges) {
  const auto lines = plexus::describe_parameters(make_valid());
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  EXPECT_NE(all.find("Solver (string, default 'multiply'): the solver"), std::string::npos) << all;
  EXPECT_NE(all.find("Problem (sublist): the problem"), std::string::npos) << all;
  EXPECT_NE(all.find("  Blocks (int, default 160): block rows [>= 1]"), std::string::npos) << all;
  EXPECT_NE(all.find("Occupancy (double, default 0.1): fraction of blocks [0.0, 1.0]"), std::string::npos) << all;
  EXPECT_NE(all.find("Symmetric (bool, default true)"), std::string::npos) << all;
  EXPECT_NE(all.find("[cannon|rma25d|ring]"), std::string::npos) << all;
}

TEST(Parameters, DeclareRejectsBadDefaults) {
  ParameterList v;
  EXPECT_THROW(plexus::declare_int(v, "X", 0, "doc", 1, 10), plexus::Error);
  EXPECT_THROW(plexus::declare_choice(v, "Y", "c", {"a", "b"}, "doc"), plexus::Error);
}

TEST(Problem, ValidParametersAndIntLists) {
  auto v = plexus::problem_valid_parameters();
  EXPECT_EQ(v->get<int>("Blocks"), 160);
  EXPECT_EQ(v->get<std::string>("BlockSizes"), "23");
  EXPECT_DOUBLE_EQ(v->get<double>("Occupancy"), 0.1);
  EXPECT_EQ(v->get<std::string>("Generator"), "random");
  EXPECT_EQ(v->get<std::string>("Distribution"), "random");
  EXPECT_EQ(plexus::parse_int_list("23", "w"), std::vector<int>{23});
  EXPECT_EQ(plexus::parse_int_list(" 1, 5,13 ", "w"), (std::vector<int>{1, 5, 13}));
  for (const char* bad : {"", "0", "1,,2", "1,", "a", "-3", "1.5", "99999999999"}) {
    const std::string msg = input_error_of([&] { plexus::parse_int_list(bad, "Problem/BlockSizes"); });
    EXPECT_NE(msg.find("Problem/BlockSizes"), std::string::npos) << bad << ": " << msg;
  }
}

}  // namespace
