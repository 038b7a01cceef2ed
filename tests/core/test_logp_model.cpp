// The LogGP models of plexus/logp.hpp against values computed by hand from the formulas of
// docs/logp.md, and the JSON form of the parameters (round trip, and the errors of read_file).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "plexus/error.hpp"
#include "plexus/logp.hpp"
#include "scratch_dir.hpp"

namespace fs = std::filesystem;
using namespace plexus;

namespace {

// L = 2 us, o_s = 1 us, o_r = 0.5 us, g = 3 us, G = 1 ns/byte: one 1-byte message 3.5 us.
logp::Parameters example() {
  logp::Parameters p;
  p.L = 2e-6;
  p.o_s = 1e-6;
  p.o_r = 0.5e-6;
  p.g = 3e-6;
  p.G = 1e-9;
  p.ranks = 4;
  p.source = "example";
  return p;
}

constexpr double kTol = 1e-15;

TEST(LogpModel, MessageAndPingPong) {
  const auto p = example();
  EXPECT_NEAR(logp::message_seconds(p, 1), 3.5e-6, kTol);
  EXPECT_NEAR(logp::message_seconds(p, 0), 3.5e-6, kTol);     // (k - 1)+: no negative bytes
  EXPECT_NEAR(logp::message_seconds(p, 1001), 4.5e-6, kTol);  // + 1000 ns
  EXPECT_NEAR(logp::pingpong_seconds(p, 1), 7e-6, kTol);      // 2 (o_s + L + o_r)
  EXPECT_NEAR(logp::pingpong_seconds(p, 1001), 9e-6, kTol);
  EXPECT_DOUBLE_EQ(p.o(), 0.75e-6);
}

TEST(LogpModel, AllreduceRounds) {
  // floor(log2 P), + 2 for the pairing before and after the doubling when P is not a power of two.
  const int expected[] = {0, 0, 1, 3, 2, 4, 4, 4, 3, 5};  // P = 0 .. 9
  for (int P = 0; P <= 9; ++P) EXPECT_EQ(logp::allreduce_rounds(P), expected[P]) << "P = " << P;
  EXPECT_EQ(logp::allreduce_rounds(-3), 0);
  EXPECT_EQ(logp::allreduce_rounds(16), 4);
  EXPECT_EQ(logp::allreduce_rounds(17), 6);
  EXPECT_EQ(logp::allreduce_rounds(1000), 11);
  EXPECT_EQ(logp::allreduce_rounds(1024), 10);
  EXPECT_EQ(logp::allreduce_rounds(1 << 30), 30);
}

TEST(LogpModel, Allreduce) {
  const auto p = example();
  EXPECT_EQ(logp::allreduce_seconds(p, 1, 8), 0.0);
  EXPECT_EQ(logp::allreduce_seconds(p, 0, 8), 0.0);
  EXPECT_NEAR(logp::allreduce_seconds(p, 2, 1), 3.5e-6, kTol);
  EXPECT_NEAR(logp::allreduce_seconds(p, 4, 1), 7e-6, kTol);        // 2 rounds
  EXPECT_NEAR(logp::allreduce_seconds(p, 3, 1001), 13.5e-6, kTol);  // 3 rounds of 4.5 us
  EXPECT_NEAR(logp::allreduce_seconds(p, 8, 1001), 13.5e-6, kTol);  // 3 rounds
  EXPECT_NEAR(logp::allreduce_seconds(p, 5, 1), 14e-6, kTol);       // 4 rounds: 5 ranks cost more than 8
  EXPECT_GT(logp::allreduce_seconds(p, 5, 1), logp::allreduce_seconds(p, 8, 1));
}

TEST(LogpModel, AllreduceMonotone) {
  const auto p = example();
  // In bytes, for every P; in P along the powers of two, and within each run of non-powers.
  for (int P = 2; P <= 64; ++P)
    for (double k = 1; k < 1e7; k *= 3)
      EXPECT_LE(logp::allreduce_seconds(p, P, k), logp::allreduce_seconds(p, P, 3 * k)) << P << " " << k;
  for (int P = 1; P <= 512; P *= 2)
    EXPECT_LT(logp::allreduce_seconds(p, P, 8), logp::allreduce_seconds(p, 2 * P, 8)) << P;
  for (int m = 2; m <= 8; ++m)
    for (int P = (1 << m) + 1; P + 1 < (1 << (m + 1)); ++P)
      EXPECT_LE(logp::allreduce_seconds(p, P, 8), logp::allreduce_seconds(p, P + 1, 8)) << P;
}

TEST(LogpModel, Alltoall) {
  const auto p = example();
  EXPECT_EQ(logp::alltoall_seconds(p, 1, 1000), 0.0);
  EXPECT_NEAR(logp::alltoall_seconds(p, 2, 1), 3.5e-6, kTol);  // one exchange
  EXPECT_NEAR(logp::alltoall_seconds(p, 2, 1001), 4.5e-6, kTol);
  // Network-bound: max(g + (k-1)G, o_s + o_r) = g = 3 us; 2 x 3 + 3.5.
  EXPECT_NEAR(logp::alltoall_seconds(p, 4, 1), 9.5e-6, kTol);
  // k = 10001: 3 + 10 = 13 us per message; 2 x 13 + 13.5.
  EXPECT_NEAR(logp::alltoall_seconds(p, 4, 10001), 39.5e-6, kTol);
  // Processor-bound: g = 1 us < o_s + o_r = 4 us.
  logp::Parameters q = p;
  q.g = 1e-6;
  q.o_s = 2e-6;
  q.o_r = 2e-6;
  EXPECT_NEAR(logp::alltoall_seconds(q, 3, 1), 4e-6 + 6e-6, kTol);  // 1 x 4 + (2 + 2 + 2)
  EXPECT_NEAR(logp::alltoall_seconds(q, 10, 1), 8 * 4e-6 + 6e-6, kTol);
}

TEST(LogpModel, AlltoallMonotone) {
  const auto p = example();
  for (int P = 1; P <= 64; ++P)
    for (double k = 1; k < 1e7; k *= 3) {
      EXPECT_LE(logp::alltoall_seconds(p, P, k), logp::alltoall_seconds(p, P + 1, k)) << P << " " << k;
      EXPECT_LE(logp::alltoall_seconds(p, P, k), logp::alltoall_seconds(p, P, 3 * k)) << P << " " << k;
    }
}

TEST(LogpModel, ZeroParametersGiveZero) {
  const logp::Parameters zero;
  EXPECT_EQ(logp::allreduce_seconds(zero, 7, 1e6), 0.0);
  EXPECT_EQ(logp::alltoall_seconds(zero, 7, 1e6), 0.0);
  EXPECT_EQ(logp::pingpong_seconds(zero, 1e6), 0.0);
}

TEST(LogpModel, MessageSizes) {
  EXPECT_EQ(logp::message_sizes(1024), (std::vector<std::int64_t>{1, 4, 16, 64, 256, 1024}));
  EXPECT_EQ(logp::message_sizes(1000), (std::vector<std::int64_t>{1, 4, 16, 64, 256, 1000}));
  EXPECT_EQ(logp::message_sizes(1), (std::vector<std::int64_t>{1}));
}

// ---- JSON ---------------------------------------------------------------------------------------

struct Scratch : test::ScratchDir {
  Scratch() : ScratchDir("plexus-logp") {}
};

// The message of the InputError `f` throws (empty, and a test failure, when it throws none).
template <class F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError";
  return "";
}

TEST(LogpJson, RoundTrip) {
  auto p = example();
  p.samples.push_back({1, 7e-6, 1e-6, 0.5e-6, 3e-6});
  p.samples.push_back({1024, 9e-6, 1.5e-6, 0.7e-6, 4e-6});
  p.notes.push_back("L set to 0");
  const auto j = logp::to_json(p);
  for (const char* key : {"L", "o_s", "o_r", "g", "G", "ranks", "units", "samples", "notes"})
    EXPECT_TRUE(j.contains(key)) << key;
  const auto q = logp::from_json(nlohmann::json::parse(j.dump()), "text");
  EXPECT_EQ(q.L, p.L);
  EXPECT_EQ(q.o_s, p.o_s);
  EXPECT_EQ(q.o_r, p.o_r);
  EXPECT_EQ(q.g, p.g);
  EXPECT_EQ(q.G, p.G);
  EXPECT_EQ(q.ranks, 4);
  EXPECT_EQ(q.source, "text");
  ASSERT_EQ(q.samples.size(), 2u);
  EXPECT_EQ(q.samples[1].bytes, 1024);
  EXPECT_EQ(q.samples[1].rtt, 9e-6);
  EXPECT_EQ(q.samples[1].o_r, 0.7e-6);
  EXPECT_EQ(q.samples[1].g, 4e-6);
  EXPECT_EQ(q.notes, p.notes);
  EXPECT_EQ(logp::allreduce_seconds(q, 6, 8), logp::allreduce_seconds(p, 6, 8));
}

TEST(LogpJson, ReadFile) {
  Scratch s;
  const auto path = s.write("logp.json", logp::to_json(example()).dump(2));
  const auto p = logp::read_file(path);
  EXPECT_EQ(p.source, path);
  EXPECT_EQ(p.G, 1e-9);
  // What `plexus logp --json` adds (the collectives table) and a file without ranks or samples.
  const auto q = logp::read_file(
      s.write("min.json", R"({"L": 1e-6, "o_s": 2e-7, "o_r": 3e-7, "g": 4e-7, "G": 0, "collectives": []})"));
  EXPECT_EQ(q.ranks, 0);
  EXPECT_EQ(q.o_r, 3e-7);
  EXPECT_TRUE(q.samples.empty());
}

TEST(LogpJson, Errors) {
  Scratch s;
  const std::string missing = (s.dir / "nothing.json").string();
  auto e = input_error([&] { logp::read_file(missing); });
  EXPECT_NE(e.find("'" + missing + "'"), std::string::npos) << e;
  EXPECT_NE(e.find("No such file"), std::string::npos) << e;

  e = input_error([&] { logp::read_file(s.dir.string()); });
  EXPECT_NE(e.find("is a directory"), std::string::npos) << e;

  const auto bad = s.write("bad.json", "{\"L\": 1e-6, ");
  e = input_error([&] { logp::read_file(bad); });
  EXPECT_NE(e.find("'" + bad + "' are not valid JSON"), std::string::npos) << e;

  const auto no_g = s.write("no_g.json", R"({"L": 1e-6, "o_s": 2e-7, "o_r": 3e-7, "g": 4e-7})");
  e = input_error([&] { logp::read_file(no_g); });
  EXPECT_NE(e.find("'" + no_g + "': key 'G' is missing"), std::string::npos) << e;

  const auto negative = s.write("neg.json", R"({"L": -1e-6, "o_s": 2e-7, "o_r": 3e-7, "g": 4e-7, "G": 1e-9})");
  e = input_error([&] { logp::read_file(negative); });
  EXPECT_NE(e.find("'L' = -1e-06 is negative"), std::string::npos) << e;

  const auto text = s.write("text.json", R"({"L": "fast", "o_s": 2e-7, "o_r": 3e-7, "g": 4e-7, "G": 1e-9})");
  e = input_error([&] { logp::read_file(text); });
  EXPECT_NE(e.find("'L' is not a number (\"fast\")"), std::string::npos) << e;

  const auto array = s.write("array.json", "[1, 2]");
  e = input_error([&] { logp::read_file(array); });
  EXPECT_NE(e.find("expected a JSON object, got array"), std::string::npos) << e;

  const auto ranks = s.write("ranks.json", R"({"L": 1, "o_s": 2, "o_r": 3, "g": 4, "G": 1, "ranks": 2.5})");
  e = input_error([&] { logp::read_file(ranks); });
  EXPECT_NE(e.find("'ranks' must be a non-negative integer, got 2.5"), std::string::npos) << e;

  const auto sample = s.write(
      "sample.json", R"({"L": 1, "o_s": 2, "o_r": 3, "g": 4, "G": 1, "samples": [{"bytes": 1, "rtt": 1, "o_s": 1,
      "o_r": 1}]})");
  e = input_error([&] { logp::read_file(sample); });
  EXPECT_NE(e.find("key 'samples[0].g' is missing"), std::string::npos) << e;
}

}  // namespace
