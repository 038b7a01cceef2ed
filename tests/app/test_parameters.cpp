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
