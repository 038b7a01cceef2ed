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
