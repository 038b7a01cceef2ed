// Output files (output.hpp): regular files replaced atomically, devices and pipes written in
// place and left what they are, bad targets refused before anything is written.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "plexus/error.hpp"
#include "plexus/output.hpp"
#include "scratch_dir.hpp"

namespace fs = std::filesystem;
using namespace plexus;

namespace {

struct Scratch : test::ScratchDir {
  Scratch() : ScratchDir("plexus-output") {}
};

std::string read_all(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

mode_t mode_of(const std::string& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode;
}

std::string input_error(const std::string& path) {
  try {
    output::check(path, "--json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Output, RegularFilesAreReplacedWholeAndNoTemporaryStays) {
  Scratch s;
  const std::string f = (s.dir / "table.csv").string();
  EXPECT_EQ(output::check(f, "--csv").kind, output::Kind::File);
  output::write_text(f, "first\n", "--csv");
  EXPECT_EQ(read_all(f), "first\n");
  output::write_text(f, "second\n", "--csv");
  EXPECT_EQ(read_all(f), "second\n");
  int entries = 0;
  for (const auto& e : fs::directory_iterator(s.dir)) entries += e.path().filename() == "table.csv" ? 1 : 100;
  EXPECT_EQ(entries, 1) << "a temporary file was left behind";
}

TEST(Output, AnUncommittedWriteLeavesTheOldFile) {
  Scratch s;
  const std::string f = (s.dir / "keep.txt").string();
  output::write_text(f, "old\n", "x");
  {
    output::Writer w(f, "x");
    std::fputs("half of the new", w.file());
    // no commit: an error on the way
  }
  EXPECT_EQ(read_all(f), "old\n");
  int entries = 0;
  for (const auto& e : fs::directory_iterator(s.dir)) entries += e.path().filename() == "keep.txt" ? 1 : 100;
  EXPECT_EQ(entries, 1);
}

TEST(Output, CharacterDevicesAreWrittenInPlace) {
  ASSERT_TRUE(S_ISCHR(mode_of("/dev/null")));
  EXPECT_EQ(output::check("/dev/null", "--csv").kind, output::Kind::Stream);
  output::write_text("/dev/null", std::string(100000, 'x'), "--csv");
  EXPECT_TRUE(S_ISCHR(mode_of("/dev/null"))) << "/dev/null was replaced";
}

TEST(Output, NamedPipesAreWrittenInPlace) {
  Scratch s;
  const std::string fifo = (s.dir / "pipe").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(output::check(fifo, "--json").kind, output::Kind::Stream);
  std::string got;
  std::thread reader([&] { got = read_all(fifo); });
  output::write_text(fifo, "through the pipe\n", "--json");
  reader.join();
  EXPECT_EQ(got, "through the pipe\n");
  EXPECT_TRUE(S_ISFIFO(mode_of(fifo))) << "the pipe was replaced by a file";
}

TEST(Output, DashIsStandardOutput) { EXPECT_EQ(output::check("-", "--json").kind, output::Kind::Stdout); }

TEST(Output, BadTargetsAreRefusedBeforeAnythingIsWritten) {
  Scratch s;
  EXPECT_NE(input_error(s.dir.string()).find("is a directory"), std::string::npos);
  EXPECT_NE(input_error((s.dir / "missing" / "x.json").string()).find("missing"), std::string::npos);
  EXPECT_NE(input_error("").find("empty"), std::string::npos);
  const fs::path file = s.dir / "plain";
  output::write_text(file.string(), "x", "x");
  EXPECT_NE(input_error((file / "x.json").string()).find("ot a directory"), std::string::npos);
  EXPECT_THROW(output::Writer(s.dir.string(), "--json"), InputError);
}
