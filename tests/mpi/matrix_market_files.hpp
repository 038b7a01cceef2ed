#pragma once
// What the Matrix Market and CP2K CSR reading tests share: files every rank names alike, written by
// rank 0, sparse matrices as the tests know them, and checks over the ranks.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "multiply_fixtures.hpp"
#include "plexus/distribution.hpp"
#include "plexus/error.hpp"
#include "plexus/matrix_market.hpp"

namespace plexus::test_files {

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

// A path every rank names alike (rank 0's process id); rank 0 writes `text` there.
inline std::string write_shared(const std::string& name, const std::string& text) {
  int pid = static_cast<int>(::getpid());
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  const std::string path = "/tmp/plexus_test_" + std::to_string(pid) + "_" + name;
  if (world_rank() == 0) std::ofstream(path) << text;
  MPI_Barrier(MPI_COMM_WORLD);
  return path;
}

inline void remove_shared(const std::string& path) {
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) std::remove(path.c_str());
}

// A sparse matrix as the test knows it: its elements (0-based) and values, column-major dense.
struct Known {
  std::int64_t rows = 0, cols = 0;
  std::vector<double> dense;
  std::set<std::pair<std::int64_t, std::int64_t>> given;  // every element a file gives (mirrors too)
};

// A file of `rows` x `cols` with about `fill` of its elements, as `field` ("real", "integer",
// "pattern") and `symmetry` ("general", "symmetric": the lower triangle), entries in a shuffled
// order, with comments and blank lines between them; `known` gets what it holds.
inline std::string coordinate_file(std::int64_t rows, std::int64_t cols, double fill, const std::string& field,
                                   const std::string& symmetry, unsigned seed, Known& known) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  known = Known{rows, cols, std::vector<double>(static_cast<std::size_t>(rows * cols), 0.0), {}};
  std::vector<std::string> lines;
  char text[96];
  for (std::int64_t j = 0; j < cols; ++j)
    for (std::int64_t i = symmetry == "symmetric" ? j : 0; i < rows; ++i) {
      if (u(rng) > fill) continue;
      double v = 1.0;
      if (field == "real") {
        v = (u(rng) - 0.5) * 1e3;
        std::snprintf(text, sizeof(text), "%lld %lld %.17g", static_cast<long long>(i + 1),
                      static_cast<long long>(j + 1), v);
      } else if (field == "integer") {
        v = static_cast<double>(static_cast<int>(u(rng) * 2000) - 1000);
        std::snprintf(text, sizeof(text), "%lld  %lld\t%d", static_cast<long long>(i + 1),
                      static_cast<long long>(j + 1), static_cast<int>(v));
      } else {
        std::snprintf(text, sizeof(text), "%lld %lld", static_cast<long long>(i + 1), static_cast<long long>(j + 1));
      }
      lines.emplace_back(text);
      known.dense[static_cast<std::size_t>(i + j * rows)] = v;
      known.given.insert({i, j});
      if (symmetry == "symmetric") {
        known.dense[static_cast<std::size_t>(j + i * rows)] = v;
        known.given.insert({j, i});
      }
    }
  std::shuffle(lines.begin(), lines.end(), rng);
  std::string out = "%%MatrixMarket matrix coordinate " + field + " " + symmetry + "\n% made by the test\n" +
                    std::to_string(rows) + " " + std::to_string(cols) + " " + std::to_string(lines.size()) + "\n";
  for (std::size_t q = 0; q < lines.size(); ++q) {
    out += lines[q] + "\n";
    if (q % 7 == 3) out += "% a comment\n\n";
  }
  return out;
}

// The blocks a matrix of `known` has: those with any element the file gives.
inline std::set<std::pair<int, int>> expected_blocks(const Known& known, const BlockLayout& layout) {
  std::set<std::pair<int, int>> out;
  for (const auto& [i, j] : known.given) out.insert({layout.rows.block_of(i), layout.cols.block_of(j)});
  return out;
}

inline std::set<std::pair<int, int>> present_blocks(const DistMatrix& m) {
  const auto g = m.gather_blocks();
  std::set<std::pair<int, int>> out;
  for (std::size_t q = 0; q < g.index.size(); q += 2)
    out.insert({static_cast<int>(g.index[q]), static_cast<int>(g.index[q + 1])});
  return out;
}

// The distributions a matrix is read into: random and block-cyclic on MPI_Dims_create's grid and
// its transpose.
inline std::vector<std::shared_ptr<const Distribution>> distributions(const BlockLayout& layout) {
  std::vector<std::shared_ptr<const Distribution>> out;
  for (const auto& g : test::grids()) {
    out.push_back(Distribution::random_permuted(g, layout.rows.count(), layout.cols.count(), 5));
    out.push_back(Distribution::block_cyclic(g, layout.rows.count(), layout.cols.count()));
  }
  return out;
}

// The message of the InputError every rank throws reading `path` (with chunks of `chunk`).
inline std::string read_error(const std::string& path, const BlockLayout& layout, std::size_t chunk) {
  auto dist = Distribution::random_permuted(Grid::create(MPI_COMM_WORLD), layout.rows.count(), layout.cols.count(), 3);
  try {
    read_matrix_market(path, "M", dist, layout, chunk);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// Whether every rank holds the same text.
inline bool same_on_every_rank(const std::string& text) {
  int len = static_cast<int>(text.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string root = text;
  root.resize(static_cast<std::size_t>(len));
  MPI_Bcast(root.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD);
  int same = root == text ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return same == 1;
}

}  // namespace plexus::test_files
