// build_hamiltonian (core/src/problem.cpp) on every rank count: H and S from Matrix Market and
// CP2K CSR files (plain or gzip) alike, and the problems it refuses.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "multiply_fixtures.hpp"
#include "plexus/context.hpp"
#include "plexus/error.hpp"
#include "plexus/parameters.hpp"
#include "plexus/problem.hpp"

using namespace plexus;

namespace {

std::unique_ptr<Context> make_context() {
  std::shared_ptr<MultiplyAlgorithm> algo = test::strategy("cannon");
  std::shared_ptr<Kernel> kern = test::kernel("cpu");
  return std::make_unique<Context>(MPI_COMM_WORLD, algo, kern);
}

// A path every rank names alike (rank 0's process id).
std::string shared_path(const std::string& name) {
  int pid = static_cast<int>(::getpid());
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return "/tmp/plexus_test_" + std::to_string(pid) + "_" + name;
}

// Rank 0 writes `text` (gzip-compressed when `gz`); every rank returns once it is there.
std::string write_shared(const std::string& name, const std::string& text, bool gz = false) {
  const std::string path = shared_path(name);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    if (gz) {
      gzFile f = gzopen(path.c_str(), "wb");
      gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
      gzclose(f);
    } else {
      std::ofstream(path) << text;
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return path;
}

void remove_shared(const std::string& path) {
  MPI_Barrier(MPI_COMM_WORLD);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) std::remove(path.c_str());
}

// A symmetric n x n test matrix with zeros (sparse blocks), column-major: the independent side.
std::vector<double> symmetric_matrix(int n, double shift) {
  std::vector<double> d(static_cast<std::size_t>(n) * n, 0.0);
  for (int j = 0; j < n; ++j)
    for (int i = j; i < n; ++i) {
      if (i != j && (i + 2 * j) % 3 == 0) continue;
      const double v = i == j ? shift + i : std::sin(1.0 + i * 7 + j) / (1 + i - j);
      d[static_cast<std::size_t>(i + j * n)] = d[static_cast<std::size_t>(j + i * n)] = v;
    }
  return d;
}

// Its lower triangle as Matrix Market, its upper one as CP2K writes it (%.17g keeps every bit).
std::string as_matrix_market(const std::vector<double>& d, int n) {
  std::string body;
  int count = 0;
  char line[96];
  for (int j = 0; j < n; ++j)
    for (int i = j; i < n; ++i)
      if (const double v = d[static_cast<std::size_t>(i + j * n)]; v != 0.0) {
        std::snprintf(line, sizeof(line), "%d %d %.17g\n", i + 1, j + 1, v);
        body += line;
        ++count;
      }
  return "%%MatrixMarket matrix coordinate real symmetric\n" + std::to_string(n) + " " + std::to_string(n) + " " +
         std::to_string(count) + "\n" + body;
}
std::string as_cp2k_upper(const std::vector<double>& d, int n) {
  std::string out;
  char line[96];
  for (int i = 0; i < n; ++i)
    for (int j = i; j < n; ++j)
      if (const double v = d[static_cast<std::size_t>(i + j * n)]; v != 0.0) {
        std::snprintf(line, sizeof(line), "%12d%12d  %.17g\n", i + 1, j + 1, v);
        out += line;
      }
  return out;
}

ParameterList problem(const std::string& generator, const std::string& h, const std::string& s,
                      const std::string& sizes) {
  ParameterList p("Problem");
  p.set("Generator", generator);
  p.set("FileH", h);
  p.set("FileS", s);
  p.set("BlockSizes", sizes);
  return p;
}

std::string input_error(const ParameterList& p, Context& ctx) {
  try {
    build_hamiltonian(p, ctx);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(Hamiltonian, Cp2kCsrAndMatrixMarketGiveTheSameMatrices) {
  auto ctx = make_context();
  const int n = 18;
  const auto h = symmetric_matrix(n, -3.0), s = symmetric_matrix(n, 10.0);
  const std::string h_mtx = write_shared("H.mtx", as_matrix_market(h, n));
  const std::string s_mtx = write_shared("S.mtx.gz", as_matrix_market(s, n), true);
  const std::string h_csr = write_shared("H.csr.gz", as_cp2k_upper(h, n), true);
  const std::string s_csr = write_shared("S.csr", as_cp2k_upper(s, n));
  for (const char* sizes : {"2,3,1", "6", "1"}) {
    const auto mm = build_hamiltonian(problem("matrix-market", h_mtx, s_mtx, sizes), *ctx);
    const auto csr = build_hamiltonian(problem("cp2k-csr", h_csr, s_csr, sizes), *ctx);
    ASSERT_TRUE(mm.s && csr.s);
    EXPECT_EQ(mm.h->to_dense(), h) << sizes;
    EXPECT_EQ(csr.h->to_dense(), h) << sizes;
    EXPECT_EQ(csr.s->to_dense(), s) << sizes;
    EXPECT_EQ(mm.s->to_dense(), s) << sizes;
    EXPECT_EQ(csr.h->layout(), mm.h->layout());
    EXPECT_EQ(csr.h->layout().rows.total(), n);
  }
  // No FileS: an orthogonal basis.
  EXPECT_FALSE(build_hamiltonian(problem("cp2k-csr", h_csr, "", "3"), *ctx).s);
  for (const auto& f : {h_mtx, s_mtx, h_csr, s_csr}) remove_shared(f);
  ctx->release();
}

TEST(Hamiltonian, RefusedProblemsSayWhy) {
  auto ctx = make_context();
  const int n = 18;
  const std::string h_csr = write_shared("H.csr", as_cp2k_upper(symmetric_matrix(n, 1.0), n));
  const std::string small = write_shared("S_small.csr", as_cp2k_upper(symmetric_matrix(n - 1, 1.0), n - 1));
  std::string msg = input_error(problem("cp2k-csr", "", "", "6"), *ctx);
  EXPECT_NE(msg.find("Problem/Generator = 'cp2k-csr' for a density-matrix solver needs Problem/FileH"),
            std::string::npos)
      << msg;
  msg = input_error(problem("cp2k-csr", h_csr, "", "4"), *ctx);
  EXPECT_NE(msg.find("Problem/BlockSizes '4' does not add up to the dimension 18 of '" + h_csr + "'"),
            std::string::npos)
      << msg;
  msg = input_error(problem("cp2k-csr", h_csr, small, "6"), *ctx);
  EXPECT_NE(msg.find("S ('" + small + "') is 17 x 17; the overlap must be square with H's dimension 18"),
            std::string::npos)
      << msg;
  msg = input_error(problem("random", h_csr, "", "6"), *ctx);
  EXPECT_NE(msg.find("Problem/Generator = 'random' does not give them"), std::string::npos) << msg;
  // A CP2K file is no Matrix Market file, and the other way round.
  msg = input_error(problem("matrix-market", h_csr, "", "6"), *ctx);
  EXPECT_NE(msg.find("expected '%%MatrixMarket' banner"), std::string::npos) << msg;
  remove_shared(h_csr);
  remove_shared(small);
  ctx->release();
}
