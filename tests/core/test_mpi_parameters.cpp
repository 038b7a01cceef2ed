// Open MPI's parameters as the user set them (plexus::mpi::open_mpi_parameter): the environment
// first, then the parameter files in their order, each file's last line; no MPI call.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "plexus/mpi.hpp"
#include "scoped_env.hpp"
#include "scratch_dir.hpp"

namespace fs = std::filesystem;
using plexus::mpi::open_mpi_parameter;
using plexus::mpi::open_mpi_parameter_files;
using plexus::mpi::open_mpi_tune_files;
using plexus::test::ScopedEnv;

namespace {

struct Scratch : plexus::test::ScratchDir {
  Scratch() : ScratchDir("plexus-mpi-parameters") {}
};

}  // namespace

TEST(OpenMpiParameter, TheEnvironmentWinsOverTheFiles) {
  const Scratch s;
  const std::string f = s.write("a.conf", "osc_sm_backing_directory = /from/file\n");
  EXPECT_EQ(open_mpi_parameter("osc_sm_backing_directory", "/from/env", {f}), "/from/env");
  // An empty value in the environment counts as not set.
  EXPECT_EQ(open_mpi_parameter("osc_sm_backing_directory", "", {f}), "/from/file");
  EXPECT_EQ(open_mpi_parameter("osc_sm_backing_directory", nullptr, {f}), "/from/file");
}

TEST(OpenMpiParameter, TheFirstFileThatSetsItWinsAndItsLastLine) {
  const Scratch s;
  const std::string user = s.write("user.conf",
                                   "# a comment = not a value\n"
                                   "btl = ^openib\n"
                                   "  osc_sm_backing_directory   =   /first   # trailing comment\n"
                                   "osc_sm_backing_directory=\"/second with space\"\n");
  const std::string system = s.write("system.conf", "osc_sm_backing_directory = /system\n");
  const std::string other = s.write("other.conf", "osc_sm_backing_directory_extra = /no\nbtl = self\n");
  EXPECT_EQ(open_mpi_parameter("osc_sm_backing_directory", nullptr, {user, system}), "/second with space");
  EXPECT_EQ(open_mpi_parameter("osc_sm_backing_directory", nullptr, {other, system}), "/system");
  EXPECT_EQ(open_mpi_parameter("btl", nullptr, {other, user}), "self");
  // A name that only starts like another is not it; missing files set nothing.
  EXPECT_EQ(open_mpi_parameter("osc_sm_backing_directory", nullptr, {other}), "");
  EXPECT_EQ(open_mpi_parameter("osc_sm_backing_directory", nullptr, {(s.dir / "missing.conf").string(), system}),
            "/system");
  EXPECT_EQ(open_mpi_parameter("osc_sm_backing_directory", nullptr, {}), "");
}

// mpirun's --tune files (command-line words): after the environment, before the parameter files;
// the first file that sets the name wins, within a file its last setting; -x and the words after
// a '#' are passed over, and a setting without its value sets nothing.
TEST(OpenMpiParameter, TuneFilesComeBetweenTheEnvironmentAndTheParameterFiles) {
  const Scratch s;
  const std::string name = "osc_sm_backing_directory";
  const std::string tune1 = s.write("tune1.conf",
                                    "-mca osc_sm_backing_directory /tune1 -x FOO=1\n"
                                    "# -mca osc_sm_backing_directory /comment\n"
                                    "--mca btl self --mca osc_sm_backing_directory /tune1-last  # end\n");
  const std::string tune2 = s.write("tune2.conf", "--mca osc_sm_backing_directory /tune2\n");
  const std::string other = s.write("other.conf", "-x OMPI_MCA_osc_sm_backing_directory=/x -mca btl tcp\n");
  const std::string dangling = s.write("dangling.conf", "-mca btl self -mca osc_sm_backing_directory\n");
  const std::string param = s.write("param.conf", "osc_sm_backing_directory = /param\n");
  EXPECT_EQ(open_mpi_parameter(name, nullptr, {tune1, tune2}, {param}), "/tune1-last");
  EXPECT_EQ(open_mpi_parameter(name, nullptr, {tune2, tune1}, {param}), "/tune2");
  EXPECT_EQ(open_mpi_parameter(name, "/env", {tune1}, {param}), "/env");
  EXPECT_EQ(open_mpi_parameter(name, nullptr, {other, dangling}, {param}), "/param");
  EXPECT_EQ(open_mpi_parameter("btl", nullptr, {tune1, other}, {}), "self");
  EXPECT_EQ(open_mpi_parameter("btl", nullptr, {other, tune1}, {}), "tcp");
  EXPECT_EQ(open_mpi_parameter(name, nullptr, {(s.dir / "missing.conf").string(), tune2}, {param}), "/tune2");
  EXPECT_EQ(open_mpi_parameter(name, nullptr, {other}, {}), "");
}

TEST(OpenMpiParameter, ReadsTheTuneFilesMpirunLists) {
  const Scratch s;
  const std::string t = s.write("listed.tune", "-mca osc_sm_backing_directory /tuned\n");
  const std::string u = s.write("unused.tune", "-mca btl self\n");
  const ScopedEnv tune("OMPI_MCA_mca_base_envar_file_prefix", (u + " ," + t).c_str());
  EXPECT_EQ(open_mpi_tune_files(), (std::vector<std::string>{u, t}));
  const ScopedEnv files("OMPI_MCA_mca_base_param_files", s.write("param.conf", "osc_sm_backing_directory = /p\n"));
  const ScopedEnv unset("OMPI_MCA_osc_sm_backing_directory", nullptr);
  EXPECT_EQ(open_mpi_parameter("osc_sm_backing_directory"), "/tuned");
  const ScopedEnv none("OMPI_MCA_mca_base_envar_file_prefix", nullptr);
  EXPECT_TRUE(open_mpi_tune_files().empty());
  EXPECT_EQ(open_mpi_parameter("osc_sm_backing_directory"), "/p");
}

TEST(OpenMpiParameter, ReadsTheVariableAndTheFilesItIsGiven) {
  const Scratch s;
  const std::string f = s.write("listed.conf", "osc_sm_backing_directory = /listed\n");
  const std::string g = s.write("second.conf", "osc_sm_backing_directory = /second\n");
  const ScopedEnv files("OMPI_MCA_mca_base_param_files", (f + " , " + g).c_str());
  const ScopedEnv older("OMPI_MCA_mca_param_files", nullptr);
  EXPECT_EQ(open_mpi_parameter_files(), (std::vector<std::string>{f, g}));
  {
    const ScopedEnv unset("OMPI_MCA_osc_sm_backing_directory", nullptr);
    EXPECT_EQ(open_mpi_parameter("osc_sm_backing_directory"), "/listed");
  }
  const ScopedEnv set("OMPI_MCA_osc_sm_backing_directory", "/env");
  EXPECT_EQ(open_mpi_parameter("osc_sm_backing_directory"), "/env");
}

TEST(OpenMpiParameter, WithoutAListTheUsersFileComesFirst) {
  const Scratch s;
  const ScopedEnv files("OMPI_MCA_mca_base_param_files", nullptr);
  const ScopedEnv older("OMPI_MCA_mca_param_files", nullptr);
  const ScopedEnv home("HOME", s.dir.c_str());
  const std::vector<std::string> got = open_mpi_parameter_files();
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.front(), (s.dir / ".openmpi" / "mca-params.conf").string());
  EXPECT_LE(got.size(), 2u);  // and the system's file, where the build found Open MPI's sysconfdir
  if (got.size() == 2) {
    EXPECT_EQ(fs::path(got[1]).filename(), "openmpi-mca-params.conf");
  }
}

// Open MPI's booleans as Open MPI 4.1 reads them (mca_base_var_enum's bool): numbers, its words,
// nothing else.
TEST(OpenMpiParameter, BooleansAreReadAsOpenMpiReadsThem) {
  using plexus::mpi::open_mpi_bool;
  for (const char* yes : {"1", "2", "-1", " 1", "true", "t", "enabled", "yes", "y"})
    EXPECT_EQ(open_mpi_bool(yes), std::optional<bool>(true)) << yes;
  for (const char* no : {"0", "", "  ", "false", "f", "disabled", "no", "n"})
    EXPECT_EQ(open_mpi_bool(no), std::optional<bool>(false)) << no;
  for (const char* bad : {"1x", "TRUE", "on", "yes please"}) EXPECT_EQ(open_mpi_bool(bad), std::nullopt) << bad;
}

// Whether a waiting rank yields its core: mpi_yield_when_idle set true, or mpirun's
// mpi_oversubscribe (a job with more ranks than slots); neither, from the environment or from the
// files, means it spins.
TEST(OpenMpiParameter, WaitsYieldWhereTheUserOrMpirunSaysSo) {
#ifdef OPEN_MPI
  const Scratch s;
  const ScopedEnv tune("OMPI_MCA_mca_base_envar_file_prefix", nullptr);
  const ScopedEnv files("OMPI_MCA_mca_base_param_files", s.write("empty.conf", "# nothing\n"));
  const ScopedEnv yield("OMPI_MCA_mpi_yield_when_idle", nullptr);
  const ScopedEnv over("OMPI_MCA_mpi_oversubscribe", nullptr);
  EXPECT_FALSE(plexus::mpi::open_mpi_waits_yield());  // Open MPI's defaults: off, off
  over.set("0");
  yield.set("false");
  EXPECT_FALSE(plexus::mpi::open_mpi_waits_yield());
  yield.set("1");
  EXPECT_TRUE(plexus::mpi::open_mpi_waits_yield());
  yield.set("0");
  over.set("1");
  EXPECT_TRUE(plexus::mpi::open_mpi_waits_yield());
  over.set(nullptr);
  yield.set(nullptr);
  files.set(s.write("yield.conf", "mpi_yield_when_idle = true\n").c_str());
  EXPECT_TRUE(plexus::mpi::open_mpi_waits_yield());
#else
  EXPECT_TRUE(plexus::mpi::open_mpi_waits_yield());  // another MPI: nothing to warn about
#endif
}
