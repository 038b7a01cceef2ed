// DBCSR's .perf benchmark input (plexus/perf_file.hpp): the reader on files shaped like DBCSR's,
// the translation into multiply parameters, and every malformed or unsupported file refused with
// the line and what was expected there.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plexus/error.hpp"
#include "plexus/perf_file.hpp"

namespace {

using plexus::InputError;
namespace perf = plexus::perf;

// The values of a file in DBCSR's layout, with its comment lines; `rma` adds the MPI-RMA line.
struct Fields {
  std::string npcols = "0", rma = "", operation = "dbcsr_multiply";
  std::string m = "2208", n = "2208", k = "2208";
  std::string sa = "0.2d0", sb = "0.2d0", sc = "0.2d0";
  std::string ta = "N", tb = "N";
  std::string syma = "N", symb = "N", symc = "N";
  std::string type = "3";
  std::string alpha_re = "1.0d0", alpha_im = "0.0d0", beta_re = "1.0d0", beta_im = "0.0d0";
  std::vector<std::string> limits = {"0", "0", "0", "0", "0", "0"};
  std::string retain = "F", reps = "3";
  std::string nm = "1", nn = "1", nk = "1";
  std::vector<std::string> mblocks = {"1", "23"}, nblocks = {"1", "23"}, kblocks = {"1", "23"};
  std::vector<std::string> checksum = {"F", "0.", "0.", "0."};
  std::string tail;

  std::string text() const {
    std::string t = "# npcols MPI grid, 0 leaves MPI to find the best grid.\n" + npcols + "\n";
    if (!rma.empty()) t += "# Use MPI-RMA\n" + rma + "\n";
    t += "# operation\n" + operation + "\n# matrix sizes (M, N, K)\n" + m + "\n" + n + "\n" + k + "\n";
    t += "# sparsity (A, B, C)\n" + sa + "\n" + sb + "\n" + sc + "\n# transposes\n" + ta + "\n" + tb + "\n";
    t += "# symmetries\n" + syma + "\n" + symb + "\n" + symc + "\n# data type\n" + type + "\n";
    t += "# alpha (real, imag)\n" + alpha_re + "\n" + alpha_im + "\n# beta (real, imag)\n" + beta_re + "\n" + beta_im +
         "          \n# limits (0 means full size)\n# row\n" + limits[0] + "\n" + limits[1] + "\n# col\n" + limits[2] +
         "\n" + limits[3] + "\n# k\n" + limits[4] + "\n" + limits[5] + "\n";
    t += "# retain sparsity (T/F)\n" + retain + "\n# number of repetitions\n" + reps + "\n";
    t += "# number of different blocks to read (m, n, k)\n" + nm + "\n" + nn + "\n" + nk + "\n";
    for (const auto* list : {&mblocks, &nblocks, &kblocks}) {
      t += "# the blocks (multiplicity, block size, ...)\n";
      for (const auto& v : *list) t += v + "\n";
    }
    t += "# checksum (check, threshold, references)\n";
    for (const auto& v : checksum) t += v + "\n";
    return t + tail;
  }
};

// Replaces a list of values (out of line: GCC 12 sees false -Wrestrict overlaps in the inlined copy).
[[gnu::noinline]] void set(std::string& field, const char* value) { field = value; }
[[gnu::noinline]] void set_list(std::vector<std::string>& list, const std::vector<const char*>& values) {
  list.assign(values.begin(), values.end());
}

// Line `n` (1-based) of `text`.
std::string line_text(const std::string& text, int n) {
  std::size_t start = 0;
  for (int i = 1; i < n && start != std::string::npos; ++i) {
    start = text.find('\n', start);
    if (start != std::string::npos) ++start;
  }
  if (start == std::string::npos) return "";
  return text.substr(start, text.find('\n', start) - start);
}

std::string parse_error(const std::string& text) {
  try {
    perf::parse_perf(text, "t.perf");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

std::string translate_error(const std::string& text, int ranks = 4) {
  try {
    perf::translate(perf::parse_perf(text, "t.perf"), ranks);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

#define EXPECT_HAS(haystack, needle) EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)

// A file with one field changed, and the error it must give.
struct Case {
  const char* what;
  int line;  // the line the error names; it holds `value`
  void (*change)(Fields&);
  std::string value;
  const char* expected;
};

// Each case's file gives an error naming its line and saying what was expected.
template <class ErrorOf>
void expect_errors(const std::vector<Case>& cases, ErrorOf error_of) {
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    Fields f;
    c.change(f);
    const std::string text = f.text();
    ASSERT_EQ(line_text(text, c.line), c.value);
    const std::string msg = error_of(text);
    EXPECT_HAS(msg, "t.perf, line " + std::to_string(c.line) + ": ");
    EXPECT_HAS(msg, c.expected);
  }
}

TEST(PerfFile, ReadsTheH2OLayoutWithoutTheRmaLine) {
  const Fields f;
  const std::string text = f.text();
  const perf::PerfFile p = perf::parse_perf(text, "h2o.perf");
  EXPECT_EQ(p.npcols.value, 0);
  EXPECT_FALSE(p.has_rma);
  EXPECT_EQ(p.operation.value, "dbcsr_multiply");
  EXPECT_EQ(p.operation.line, 4);
  EXPECT_EQ(p.sizes[0].value, 2208);
  EXPECT_DOUBLE_EQ(p.sparsities[2].value, 0.2);
  EXPECT_EQ(p.transposes[1].value, 'N');
  EXPECT_EQ(p.data_type.value, 3);
  EXPECT_DOUBLE_EQ(p.beta[0].value, 1.0);
  EXPECT_EQ(p.repetitions.value, 3);
  ASSERT_EQ(p.blocks[2].size(), 1u);
  EXPECT_EQ(p.blocks[2][0].size.value, 23);
  EXPECT_FALSE(p.checksum_check.value);

  const perf::PerfRun run = perf::translate(p, 4);
  EXPECT_EQ(run.default_strategy, "cannon");
  const auto& problem = run.parameters->sublist("Problem");
  const auto& mult = run.parameters->sublist("multiply");
  EXPECT_EQ(run.parameters->get<std::string>("Solver"), "multiply");
  EXPECT_EQ(problem.get<int>("Rows"), 2208);
  EXPECT_EQ(problem.get<std::string>("BlockSizes"), "23");
  EXPECT_DOUBLE_EQ(problem.get<double>("OccupancyB"), 0.8);
  EXPECT_FALSE(problem.get<bool>("Symmetric"));
  EXPECT_FALSE(problem.isParameter("GridRows"));
  EXPECT_EQ(mult.get<int>("Repetitions"), 3);
  EXPECT_TRUE(mult.get<bool>("ResetC"));
  EXPECT_EQ(mult.get<std::string>("TransA"), "N");
  EXPECT_FALSE(mult.get<bool>("Check"));  // no check asked for
  // One note a field, in the order of the file.
  ASSERT_FALSE(run.notes.empty());
  EXPECT_HAS(run.notes.front(), "line   2  npcols = 0");
  EXPECT_HAS(run.notes.back(), "checksum check = F");
}

TEST(PerfFile, ReadsTheRmaLinePairsAndFortranNumbers) {
  Fields f;
  set(f.npcols, "2");
  set(f.rma, "T");
  set(f.m, "97");
  set(f.n, "61");
  set(f.k, "80");
  set(f.sa, "0.5D0");
  set(f.sc, ".25");
  set(f.ta, "T");
  set(f.tb, "c");
  set(f.alpha_re, "-5.0E-01");
  set(f.beta_im, "1.d0");  // ignored for real data, as DBCSR does
  f.limits = {"1", "97", "0", "61", "0", "0"};
  set(f.retain, ".TRUE.");
  set(f.nm, "2");
  set_list(f.mblocks, {"2", "5", "1", "13"});
  set(f.nk, "2");
  set_list(f.kblocks, {"3", "4", "1", "9"});
  set_list(f.checksum, {"T", "0.1E-10", "0.996149460464712E+07", "0.299382963262912E+08"});
  set(f.tail, "\n\n");
  const perf::PerfFile p = perf::parse_perf(f.text(), "rect.perf");
  EXPECT_TRUE(p.has_rma);
  EXPECT_TRUE(p.use_rma.value);
  EXPECT_DOUBLE_EQ(p.sparsities[2].value, 0.25);
  EXPECT_EQ(p.transposes[1].value, 'C');
  EXPECT_DOUBLE_EQ(p.alpha[0].value, -0.5);
  EXPECT_TRUE(p.retain_sparsity.value);
  EXPECT_DOUBLE_EQ(p.checksum_reference.value, 0.996149460464712e7);

  const perf::PerfRun run = perf::translate(p, 6);
  EXPECT_EQ(run.default_strategy, "rma25d");
  const auto& problem = run.parameters->sublist("Problem");
  const auto& mult = run.parameters->sublist("multiply");
  EXPECT_EQ(problem.get<int>("GridRows"), 3);
  EXPECT_EQ(problem.get<int>("GridCols"), 2);
  EXPECT_EQ(problem.get<std::string>("RowBlockSizes"), "5,5,13");
  EXPECT_EQ(problem.get<std::string>("BlockSizes"), "4,4,4,9");
  EXPECT_DOUBLE_EQ(problem.get<double>("OccupancyA"), 0.5);
  EXPECT_EQ(mult.get<std::string>("TransA"), "T");
  EXPECT_EQ(mult.get<std::string>("TransB"), "T");  // C: the conjugate transpose of real data
  EXPECT_DOUBLE_EQ(mult.get<double>("Alpha"), -0.5);
  EXPECT_TRUE(mult.get<bool>("RetainSparsity"));
  EXPECT_TRUE(mult.get<bool>("Check"));  // small enough for the dense check
  bool ignored_imaginary = false;
  for (const auto& n : run.notes) ignored_imaginary |= n.find("imaginary part is ignored") != std::string::npos;
  EXPECT_TRUE(ignored_imaginary);

  // A large multiply with check T is not checked (and says so).
  set(f.m, "5000");
  set(f.n, "5000");
  set(f.k, "5000");
  f.limits = {"0", "0", "0", "0", "0", "0"};
  const perf::PerfRun big = perf::translate(perf::parse_perf(f.text(), "big.perf"), 6);
  EXPECT_FALSE(big.parameters->sublist("multiply").get<bool>("Check"));
  EXPECT_HAS(big.notes.back(), "not checked: the matrices are too large");
  // A multiplicity larger than the dimension needs: the pattern stops where the dimension does.
  set(f.nm, "1");
  set_list(f.mblocks, {"1000000000", "5"});
  EXPECT_EQ(perf::translate(perf::parse_perf(f.text(), "many.perf"), 6)
                .parameters->sublist("Problem")
                .get<std::string>("RowBlockSizes")
                .size(),
            std::string("5,").size() * 1000 - 1);
}

TEST(PerfFile, MalformedFilesNameTheLineAndWhatWasExpected) {
  const std::vector<Case> cases = {
      {"npcols", 2, [](Fields& f) { set(f.npcols, "-1"); }, "-1", "expected npcols"},
      {"operation", 4, [](Fields& f) { set(f.operation, "dbcsr_add"); }, "dbcsr_add",
       "expected the MPI-RMA flag (T or F) or the operation dbcsr_multiply, got 'dbcsr_add'"},
      {"operation after rma", 6,
       [](Fields& f) {
         set(f.rma, "F");
         set(f.operation, "dbcsr_mult");
       },
       "dbcsr_mult", "expected the operation dbcsr_multiply"},
      {"M", 6, [](Fields& f) { set(f.m, "12abc"); }, "12abc",
       "expected matrix size M (rows of C), a whole number >= 1"},
      {"K zero", 8, [](Fields& f) { set(f.k, "0"); }, "0", "expected matrix size K"},
      {"sparsity", 11, [](Fields& f) { set(f.sb, "0.2x0"); }, "0.2x0", "expected the sparsity of B"},
      {"sparsity range", 12, [](Fields& f) { set(f.sc, "1.5d0"); }, "1.5d0",
       "fraction of zero blocks, from 0 to 1; got 1.5"},
      {"transpose", 15, [](Fields& f) { set(f.tb, "X"); }, "X", "expected the transpose of B (N, T or C)"},
      {"symmetry", 19, [](Fields& f) { set(f.symc, "Q"); }, "Q", "expected the symmetry of C"},
      {"alpha", 24, [](Fields& f) { set(f.alpha_im, "i"); }, "i", "expected the imaginary part of alpha"},
      {"limit", 34, [](Fields& f) { set(f.limits[3], "x"); }, "x", "expected limit: the last column"},
      {"retain", 39, [](Fields& f) { set(f.retain, "maybe"); }, "maybe", "expected retain sparsity (T or F)"},
      {"repetitions", 41, [](Fields& f) { set(f.reps, "0"); }, "0", "expected the number of repetitions"},
      {"pairs", 44, [](Fields& f) { set(f.nn, "none"); }, "none",
       "expected the number of (multiplicity, size) pairs of the n"},
      {"block size", 54,
       [](Fields& f) {
         set_list(f.kblocks, {"1", "50000"});
       },
       "50000", "expected the block size of pair 1 of 1 of the k blocks (a whole number from 1 to 46340)"},
      {"two values a line", 47, [](Fields& f) { set_list(f.mblocks, {"1 23"}); }, "1 23",
       "expected one value, got '1 23'"},
      {"checksum", 56, [](Fields& f) { set(f.checksum[0], "yes"); }, "yes", "expected the checksum check (T or F)"},
      {"threshold", 57,
       [](Fields& f) {
         set_list(f.checksum, {"T", "0.", "1.", "2."});
       },
       "0.", "the checksum threshold must be positive"},
      {"trailing", 60, [](Fields& f) { set(f.tail, "42\n"); }, "42",
       "expected the end of the file after the checksum line"},
  };
  expect_errors(cases, parse_error);
  // A file that ends early says what is missing.
  Fields f;
  set_list(f.checksum, {"F", "0."});
  EXPECT_HAS(parse_error(f.text()), "ends after line");
  EXPECT_HAS(parse_error(f.text()), "expected the checksum reference");
  EXPECT_HAS(parse_error(""), "t.perf ends: expected npcols");
}

TEST(PerfFile, UnsupportedFieldsAreRefusedNamingTheLine) {
  const std::vector<Case> cases = {
      {"complex", 21, [](Fields& f) { set(f.type, "7"); }, "7",
       "data type 7 (complex double precision) is not supported"},
      {"single", 21, [](Fields& f) { set(f.type, "1"); }, "1", "data type 1 (real single precision) is not supported"},
      {"unknown type", 21, [](Fields& f) { set(f.type, "4"); }, "4", "is not one of DBCSR's (1, 3, 5, 7)"},
      {"limits", 31, [](Fields& f) { set(f.limits[1], "100"); }, "100", "the row limits 0 to 100 are not supported"},
      {"antisymmetric C", 19, [](Fields& f) { set(f.symc, "A"); }, "A", "symmetry 'A' of C is not supported"},
      {"symmetric A only", 18, [](Fields& f) { set(f.syma, "S"); }, "N", "symmetry 'N' of B is not supported"},
      {"empty", 10, [](Fields& f) { set(f.sa, "1.0d0"); }, "1.0d0", "the sparsity of A is 1 (no blocks at all)"},
      {"npcols", 2, [](Fields& f) { set(f.npcols, "3"); }, "3", "npcols = 3 does not divide the job's 4 ranks"},
  };
  expect_errors(cases, [](const std::string& text) { return translate_error(text); });
  // Symmetric A and B need one blocking of equal dimensions.
  Fields f;
  set(f.syma, "S");
  set(f.symb, "S");
  EXPECT_EQ(translate_error(f.text()), "no error");
  set(f.n, "2300");
  EXPECT_HAS(translate_error(f.text()), "symmetric A and B (S S N) need M = N = K");
}

}  // namespace

namespace {

// The files the program's tests run (tests/app/inputs/perf) read and translate.
TEST(PerfFile, ReadsTheProgramTestsFiles) {
  const std::string dir = PLEXUS_PERF_INPUTS;
  const auto h2o = perf::read_perf_file(dir + "/h2o_small.perf");
  EXPECT_FALSE(h2o.has_rma);
  EXPECT_EQ(h2o.sizes[0].value, 230);
  const auto rect = perf::read_perf_file(dir + "/rect_trans.perf");
  EXPECT_TRUE(rect.use_rma.value);
  EXPECT_EQ(rect.transposes[0].value, 'T');
  EXPECT_EQ(perf::translate(rect, 3).parameters->sublist("Problem").get<std::string>("RowBlockSizes"), "5,5,13");
  const auto sym = perf::read_perf_file(dir + "/square_sym.perf");
  EXPECT_TRUE(perf::translate(sym, 2).parameters->sublist("Problem").get<bool>("Symmetric"));
  EXPECT_THROW(perf::read_perf_file(dir + "/missing.perf"), InputError);
  EXPECT_THROW(perf::read_perf_file(dir), InputError);  // a directory
}

}  // namespace
