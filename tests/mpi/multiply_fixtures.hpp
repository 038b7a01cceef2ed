#pragma once
// Shared by the multiply tests: plugins, grids, operands built from the generator, gathered
// block lists, and C as plexus's filtered multiply defines it (computed block by block).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "conformance_specs.hpp"
#include "dense_reference.hpp"
#include "plexus/distribution.hpp"
#include "plexus/error.hpp"
#include "plexus/generator.hpp"
#include "plexus/registry.hpp"

namespace plexus::test {

/// Loads the plugins the multiply tests use (once): the in-tree files the test was built with,
/// or (a suite built to be installed) the default search path.
inline void load_plugins() {
  static bool loaded = false;
  if (loaded) return;
#ifdef PLEXUS_CANNON_PATH
  for (const char* path : {PLEXUS_CANNON_PATH, PLEXUS_RMA25D_PATH, PLEXUS_RING_PATH, PLEXUS_KERNELS_CPU_PATH})
    Registry::global().load_file(path);
#else
  Registry::global().load_default();
#endif
  loaded = true;
}

/// A strategy by name, with "Key=Value" parameters.
inline std::unique_ptr<CommStrategy> strategy(const std::string& name, const std::vector<std::string>& params = {}) {
  load_plugins();
  ParameterList p(name);
  for (const auto& kv : params) apply_override(p, kv);
  return Registry::global().make_comm(name, p, "Communication/" + name);
}

/// A local backend by spec: its name, then any ":Key=Value" parameters ("cpu:DenseMinSize=1"), as
/// the conformance suites' specs are written.
inline std::unique_ptr<Kernel> kernel(const std::string& spec) {
  load_plugins();
  const std::vector<Spec> specs = parse_specs(spec.c_str());
  if (specs.size() != 1) throw Error("test::kernel", "one kernel spec expected, got '" + spec + "'");
  ParameterList p(specs[0].name);
  for (const auto& kv : specs[0].params) apply_override(p, kv);
  return Registry::global().make_kernel(specs[0].name, p, "Kernel/" + specs[0].name);
}

/// The grids a test runs on: MPI_Dims_create's and its transpose.
inline std::vector<std::shared_ptr<const Grid>> grids() {
  auto g = Grid::create(MPI_COMM_WORLD);
  std::vector<std::shared_ptr<const Grid>> out{g};
  if (g->nprows() != g->npcols()) out.push_back(Grid::create(MPI_COMM_WORLD, g->npcols(), g->nprows()));
  return out;
}

struct Case {
  std::string name;
  int rows, inner, cols;   // block counts of C rows, the k dimension, C cols
  std::vector<int> sizes;  // block sizes, cycled
  double occupancy;
  double alpha, beta;
  std::string dist;
  std::string kernel;
  double filter_eps = 0;
  int repeat = 1;
};

struct Operands {
  DistMatrix a, b, c;
};

inline Operands make_operands(const Case& k, std::shared_ptr<const Grid> grid) {
  const std::uint64_t dseed = 17;
  auto bs = [&](int n) { return BlockSizes::cyclic(n, k.sizes); };
  BlockLayout la{bs(k.rows), bs(k.inner)}, lb{bs(k.inner), bs(k.cols)}, lc{bs(k.rows), bs(k.cols)};
  // The same seed per dimension gives C the rows of A and the columns of B.
  GeneratorSpec sa, sb, sc;
  sa.occupancy = sb.occupancy = sc.occupancy = k.occupancy;
  sa.seed = 101;
  sb.seed = 202;
  sc.seed = 303;
  return Operands{generate_random("A", Distribution::by_name(k.dist, grid, k.rows, k.inner, dseed), la, sa),
                  generate_random("B", Distribution::by_name(k.dist, grid, k.inner, k.cols, dseed), lb, sb),
                  k.beta != 0 ? generate_random("C", Distribution::by_name(k.dist, grid, k.rows, k.cols, dseed), lc, sc)
                              : DistMatrix("C", Distribution::by_name(k.dist, grid, k.rows, k.cols, dseed), lc)};
}

/// Blocks of a gathered matrix: (i, j) -> values.
inline std::map<std::pair<int, int>, std::vector<double>> blocks_of(const DistMatrix& m) {
  const auto g = m.gather_blocks();
  std::map<std::pair<int, int>, std::vector<double>> out;
  std::size_t off = 0;
  for (std::size_t q = 0; q < g.index.size(); q += 2) {
    const int i = static_cast<int>(g.index[q]), j = static_cast<int>(g.index[q + 1]);
    const std::size_t n = static_cast<std::size_t>(m.layout().rows.size(i)) * m.layout().cols.size(j);
    out[{i, j}].assign(g.values.begin() + static_cast<long>(off), g.values.begin() + static_cast<long>(off + n));
    off += n;
  }
  return out;
}

inline double norm(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += v * v;
  return std::sqrt(s);
}

/// C as plexus's filtered multiply defines it (docs/architecture.md), block by block: a product
/// A(i,k)B(k,j) is skipped when |A(i,k)|*|B(k,j)| < eps / (blocks in row i of A); then blocks with
/// |C(i,j)| < eps go.
/// on_the_fly = false: no product is skipped, only the final filter (what a multiply without
/// on-the-fly filtering would give).
inline std::vector<double> filtered_reference(const Case& k, const Operands& o, bool on_the_fly = true) {
  auto A = blocks_of(o.a), B = blocks_of(o.b);
  const auto &la = o.a.layout(), &lb = o.b.layout();
  std::map<int, int> row_count;
  for (const auto& [ij, v] : A) ++row_count[ij.first];
  std::map<std::pair<int, int>, std::vector<double>> C;
  for (const auto& [ik, av] : A)
    for (int j = 0; j < k.cols; ++j) {
      auto bit = B.find({ik.second, j});
      if (bit == B.end()) continue;
      if (on_the_fly && norm(av) * norm(bit->second) < k.filter_eps / row_count[ik.first]) continue;
      const int m = la.rows.size(ik.first), kk = la.cols.size(ik.second), n = lb.cols.size(j);
      auto& c = C[{ik.first, j}];
      if (c.empty()) c.assign(static_cast<std::size_t>(m * n), 0.0);
      dense_gemm(m, n, kk, k.alpha, av, bit->second, 1.0, c);
    }
  const std::int64_t nr = la.rows.total();
  std::vector<double> dense(static_cast<std::size_t>(nr * lb.cols.total()), 0.0);
  for (const auto& [ij, c] : C) {
    if (norm(c) < k.filter_eps) continue;
    const int m = la.rows.size(ij.first);
    for (int cc = 0; cc < lb.cols.size(ij.second); ++cc)
      for (int r = 0; r < m; ++r)
        dense[static_cast<std::size_t>((lb.cols.offset(ij.second) + cc) * nr + la.rows.offset(ij.first) + r)] =
            c[static_cast<std::size_t>(r + cc * m)];
  }
  return dense;
}

/// The expected C of a case: dense alpha*A*B + beta*C repeated, or the filtered definition.
inline std::vector<double> expected_c(const Case& k, const Operands& o) {
  if (k.filter_eps > 0) return filtered_reference(k, o);
  const auto A = o.a.to_dense(), B = o.b.to_dense();
  std::vector<double> ref = o.c.to_dense();
  for (int r = 0; r < k.repeat; ++r) dense_gemm(o.a.nrows(), o.b.ncols(), o.a.ncols(), k.alpha, A, B, k.beta, ref);
  return ref;
}

}  // namespace plexus::test
