// The plugin registry: refused plugins (other ABI, duplicate names, not a plugin, unloadable,
// missing), lookups with suggestions, validated factories, search path.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "plexus/error.hpp"
#include "plexus/kernel.hpp"
#include "plexus/registry.hpp"
#include "scoped_env.hpp"

namespace {

using plexus::ComponentKind;
using plexus::Registry;
using plexus::test::ScopedEnv;

std::string base(const std::string& path) { return std::filesystem::path(path).filename().string(); }

// Runs f, expects a plexus::Error, returns its message.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const plexus::Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected plexus::Error, got another exception: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected plexus::Error, nothing was thrown";
  return {};
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Registry, ReferenceKernelIsBuiltIn) {
  const auto* e = Registry::global().find(ComponentKind::Kernel, "reference");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->plugin, "core");
  EXPECT_EQ(e->file, "<core>");
  plexus::ParameterList empty;
  auto k = Registry::global().make_kernel("reference", empty, "plexus/Kernel/reference");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->name(), "reference");
  EXPECT_NE(dynamic_cast<plexus::ReferenceKernel*>(k.get()), nullptr);
}

TEST(Registry, MisspelledNameSuggestsNearest) {
  try {
    Registry::global().get(ComponentKind::Kernel, "refrence");
    FAIL() << "no error";
  } catch (const plexus::InputError& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(contains(msg, "kernel 'refrence'")) << msg;
    EXPECT_TRUE(contains(msg, "did you mean 'reference'?")) << msg;
    EXPECT_TRUE(contains(msg, "available: ")) << msg;
  }
  EXPECT_EQ(Registry::global().find(ComponentKind::Kernel, "refrence"), nullptr);
}

TEST(Registry, MissingFileIsAClearError) {
  const std::string path = "/nonexistent/libplexus_nothing.so";
  const std::string msg = error_of([&] { Registry::global().load_file(path); });
  EXPECT_TRUE(contains(msg, path)) << msg;
  EXPECT_TRUE(contains(msg, "no such file")) << msg;
}

TEST(Registry, LibraryWithoutEntryPointsIsRefused) {
  const std::string msg = error_of([&] { Registry::global().load_file(PLEXUS_TEST_NOT_A_PLUGIN); });
  EXPECT_TRUE(contains(msg, PLEXUS_TEST_NOT_A_PLUGIN)) << msg;
  EXPECT_TRUE(contains(msg, "not a plexus plugin")) << msg;
}

TEST(Registry, UnloadableFileGivesTheLoadersMessage) {
  const auto path =
      std::filesystem::temp_directory_path() / ("libplexus_garbage_" + std::to_string(::getpid()) + ".so");
  {
    std::ofstream out(path);
    out << "this is not an ELF file, but long enough to have a header to look at........................\n";
  }
  const std::string msg = error_of([&] { Registry::global().load_file(path.string()); });
  EXPECT_TRUE(contains(msg, path.string())) << msg;
  EXPECT_TRUE(contains(msg, "dlerror") || contains(msg, "ELF") || contains(msg, "invalid")) << msg;
  std::filesystem::remove(path);
}

TEST(Registry, OtherAbiVersionIsRefused) {
  const std::string msg = error_of([&] { Registry::global().load_file(PLEXUS_TEST_BAD_ABI); });
  EXPECT_TRUE(contains(msg, PLEXUS_TEST_BAD_ABI)) << msg;
  EXPECT_TRUE(contains(msg, "ABI version " + std::to_string(plexus::kAbiVersion + 1000))) << msg;
  EXPECT_TRUE(contains(msg, "ABI version " + std::to_string(plexus::kAbiVersion) + ";")) << msg;
  EXPECT_EQ(Registry::global().find(ComponentKind::Kernel, "test-bad-abi"), nullptr);
}

TEST(Registry, DuplicateOfARealPluginIsRefusedNamingBothFiles) {
  auto& reg = Registry::global();
  reg.load_file(PLEXUS_TEST_CPU_PLUGIN);
  const auto* cpu = reg.find(ComponentKind::Kernel, "cpu");
  ASSERT_NE(cpu, nullptr);
  const std::string msg = error_of([&] { reg.load_file(PLEXUS_TEST_DUP_CPU); });
  EXPECT_TRUE(contains(msg, "duplicate kernel 'cpu'")) << msg;
  EXPECT_TRUE(contains(msg, base(PLEXUS_TEST_DUP_CPU))) << msg;
  EXPECT_TRUE(contains(msg, base(PLEXUS_TEST_CPU_PLUGIN))) << msg;
  // Nothing of the refused plugin is registered, and the original stays.
  EXPECT_EQ(reg.find(ComponentKind::Kernel, "test-dup-extra"), nullptr);
  EXPECT_EQ(reg.find(ComponentKind::Kernel, "cpu"), cpu);
  EXPECT_TRUE(contains(cpu->file, base(PLEXUS_TEST_CPU_PLUGIN)));
}

TEST(Registry, DuplicateOfAnEarlierSiblingIsRefusedNamingBothFiles) {
  auto& reg = Registry::global();
  reg.load_file(PLEXUS_TEST_GOOD);
  reg.load_file(PLEXUS_TEST_GOOD);  // loading the same file again is a no-op
  const auto* good = reg.find(ComponentKind::Kernel, "test-good");
  ASSERT_NE(good, nullptr);
  EXPECT_EQ(good->plugin, "test_good");
  EXPECT_EQ(good->version, "9.9.9");
  const std::string msg = error_of([&] { reg.load_file(PLEXUS_TEST_DUP_SIBLING); });
  EXPECT_TRUE(contains(msg, "duplicate kernel 'test-good'")) << msg;
  EXPECT_TRUE(contains(msg, base(PLEXUS_TEST_DUP_SIBLING))) << msg;
  EXPECT_TRUE(contains(msg, base(PLEXUS_TEST_GOOD))) << msg;
  EXPECT_TRUE(contains(msg, "test_good")) << msg;
}

TEST(Registry, FactoriesValidateTheirSublist) {
  auto& reg = Registry::global();
  reg.load_file(PLEXUS_TEST_GOOD);
  plexus::ParameterList l;
  auto k = reg.make_kernel("test-good", l, "plexus/Kernel/test-good");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(l.get<int>("Scale"), 1);  // default filled

  plexus::ParameterList bad;
  bad.set("Scael", 2);
  try {
    reg.make_kernel("test-good", bad, "plexus/Kernel/test-good");
    FAIL() << "no error";
  } catch (const plexus::InputError& e) {
    EXPECT_TRUE(contains(e.what(), "'plexus/Kernel/test-good/Scael'")) << e.what();
    EXPECT_TRUE(contains(e.what(), "did you mean 'Scale'?")) << e.what();
  }
  plexus::ParameterList range;
  range.set("Scale", std::string("11"));
  try {
    reg.make_kernel("test-good", range, "plexus/Kernel/test-good");
    FAIL() << "no error";
  } catch (const plexus::InputError& e) {
    EXPECT_TRUE(contains(e.what(), "[1, 10]")) << e.what();
  }
  // The plugin's kernel works across the library boundary, and its type is known here.
  EXPECT_NE(dynamic_cast<plexus::HostKernel*>(k.get()), nullptr);
  plexus::StackEntry e{.m = 1, .n = 1, .k = 1, .first = 0, .a = 0, .b = 0, .c = 0};
  const double a = 2, b = 3;
  plexus::PanelView av, bv;
  av.data = &a;
  bv.data = &b;
  av.data_size = bv.data_size = 1;
  auto session = k->begin(plexus::MatrixData(1, 1.0), 1);
  session->stage(av, bv);
  session->process(&e, 1, 0);
  session->unstage();
  EXPECT_DOUBLE_EQ(session->finish()[0], 7.0);
}

TEST(Registry, ProvidersAndListings) {
  auto& reg = Registry::global();
  reg.load_file(PLEXUS_TEST_CANNON_PLUGIN);
  const auto comms = reg.names(ComponentKind::Comm);
  EXPECT_NE(std::find(comms.begin(), comms.end(), "cannon"), comms.end());
  EXPECT_STREQ(plexus::kind_name(ComponentKind::Collectives), "collectives");
  EXPECT_NE(reg.find(ComponentKind::Collectives, "mpi"), nullptr) << "core's collectives are always there";
  const auto kernels = reg.names(ComponentKind::Kernel);
  EXPECT_TRUE(std::is_sorted(kernels.begin(), kernels.end()));
  EXPECT_NE(std::find(kernels.begin(), kernels.end(), "reference"), kernels.end());
  EXPECT_STREQ(plexus::kind_name(ComponentKind::Comm), "comm");
  EXPECT_STREQ(plexus::kind_name(ComponentKind::Solver), "solver");
}

TEST(Registry, SearchPathReadsThePluginPathFirst) {
  const ScopedEnv path("PLEXUS_PLUGIN_PATH", "/first::/second:");
  const auto dirs = Registry::global().search_path();
  ASSERT_EQ(dirs.size(), 3u);
  EXPECT_EQ(dirs[0], "/first");
  EXPECT_EQ(dirs[1], "/second");
  EXPECT_TRUE(contains(dirs[2], "plexus/plugins")) << dirs[2];
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(dirs[2]).parent_path().parent_path()));
}

// Issue 9 item 5: one foreign library (or a stale plugin) in a plugin folder made load_default()
// throw, and every command with it, even `plexus plugins`. Now the file is skipped with a
// warning, the others load, and selecting what it would have offered says why.
TEST(Registry, DefaultLoadingSkipsFilesThatCannotBeUsed) {
  const std::string dir = std::filesystem::path(PLEXUS_TEST_NOT_A_PLUGIN).parent_path().string();
  auto& reg = Registry::global();
  {
    const ScopedEnv path("PLEXUS_PLUGIN_PATH", dir);
    EXPECT_NO_THROW(reg.load_default());
  }
  std::string failed, warnings;
  for (const auto& f : reg.load_failures()) failed += f.file + ": " + f.reason + "\n";
  for (const auto& w : reg.warnings()) warnings += w + "\n";
  EXPECT_TRUE(contains(failed, base(PLEXUS_TEST_NOT_A_PLUGIN) + ": ")) << failed;
  EXPECT_TRUE(contains(failed, base(PLEXUS_TEST_BAD_ABI) + ": ")) << failed;
  EXPECT_TRUE(contains(warnings, "is not a plexus plugin")) << warnings;
  EXPECT_TRUE(contains(warnings, "ABI version")) << warnings;
  // The shipped plugins beside them are there.
  EXPECT_NE(reg.find(ComponentKind::Comm, "cannon"), nullptr);
  // What a skipped file would have offered: the error names the files that were not loaded.
  const std::string msg = error_of([&] { reg.get(ComponentKind::Kernel, "test-bad-abi"); });
  EXPECT_TRUE(contains(msg, "unknown kernel 'test-bad-abi'")) << msg;
  EXPECT_TRUE(contains(msg, "plugin files were not loaded")) << msg;
  EXPECT_TRUE(contains(msg, base(PLEXUS_TEST_BAD_ABI))) << msg;
  // Explicit loading of such a file stays an error.
  EXPECT_TRUE(contains(error_of([&] { reg.load_file(PLEXUS_TEST_BAD_ABI); }), "ABI version"));
}

}  // namespace
