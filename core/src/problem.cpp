// The "Problem" sublist: generated or Matrix Market matrices on a grid and distribution.
#include "plexus/problem.hpp"

#include <cctype>
#include <climits>
#include <cstdlib>
#include <limits>

#include "plexus/distribution.hpp"
#include "plexus/error.hpp"
#include "plexus/generator.hpp"
#include "plexus/layout.hpp"
#include "plexus/matrix_market.hpp"

namespace plexus {

namespace {

constexpr int kIntMax = std::numeric_limits<int>::max();

// Block sizes covering n scalar rows: one size -> BlockSizes::covering; several -> cycled, the
// last block cut so that the sizes add up to n.
BlockSizes covering_sizes(std::int64_t n, const std::vector<int>& pattern, const std::string& where) {
  if (n <= 0) throw InputError(where, "matrix dimension " + std::to_string(n) + " must be positive");
  if (pattern.size() == 1) return BlockSizes::covering(n, pattern[0]);
  std::vector<int> sizes;
  std::int64_t total = 0;
  for (std::size_t i = 0; total < n; ++i) {
    const int s = pattern[i % pattern.size()];
    const std::int64_t take = std::min<std::int64_t>(s, n - total);
    sizes.push_back(static_cast<int>(take));
    total += take;
  }
  return BlockSizes(std::move(sizes));
}

std::shared_ptr<const Distribution> strategy_distribution(const MultiplyAlgorithm& strategy,
                                                          std::shared_ptr<const Distribution> proposal) {
  auto d = strategy.distribution_for(std::move(proposal));
  PLEXUS_CHECK(d != nullptr, "multiply algorithm '" + strategy.name() + "' returned no distribution");
  return d;
}

}  // namespace

std::vector<int> parse_int_list(const std::string& text, const std::string& where) {
  std::vector<int> out;
  std::size_t i = 0;
  const std::size_t n = text.size();
  auto skip_space = [&] {
    while (i < n && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  };
  skip_space();
  if (i == n) throw InputError(where, "'" + where + "' is empty; expected a list of positive integers like 1,5,13");
  while (i < n) {
    skip_space();
    std::size_t start = i;
    while (i < n && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (start == i)
      throw InputError(where, "'" + where + "' = '" + text + "' is not a list of positive integers (like 1,5,13)");
    const std::string digits = text.substr(start, i - start);
    const long long v = digits.size() > 10 ? LLONG_MAX : std::atoll(digits.c_str());
    if (v <= 0 || v > kIntMax)
      throw InputError(where, "'" + where + "' = '" + text + "': " + digits + " is not a positive block size");
    out.push_back(static_cast<int>(v));
    skip_space();
    if (i < n) {
      if (text[i] != ',')
        throw InputError(where, "'" + where + "' = '" + text + "' is not a list of positive integers (like 1,5,13)");
      ++i;
      skip_space();
      if (i == n) throw InputError(where, "'" + where + "' = '" + text + "' ends with a comma");
    }
  }
  return out;
}

ParameterListPtr problem_valid_parameters() {
  auto v = Teuchos::rcp(new ParameterList("Problem"));
  declare_choice(*v, "Generator", "random", {"random", "matrix-market"},
                 "where A, B (and C) come from: 'random' generates them, 'matrix-market' reads FileA, FileB, FileC");
  declare_int(*v, "Blocks", 160, "random: block rows = block columns of the square matrices A, B and C", 1, kIntMax);
  declare_string(*v, "BlockSizes", "23",
                 "block sizes, cycled over the blocks (\"23\" or \"1,5,13\"); matrix-market: cycled to cover the "
                 "file's dimensions");
  declare_double(*v, "Occupancy", 0.1, "random: fraction of blocks present, in (0, 1] (the diagonal always is)", 0.0,
                 1.0, true);
  declare_bool(*v, "Symmetric", true, "random: generate symmetric A and B (square problems)");
  declare_int(*v, "Bandwidth", -1,
              "random: locality; >= 0 keeps only blocks with |i-j| <= Bandwidth, and Occupancy is then the "
              "fraction present inside that band (-1: no locality)",
              -1, 1 << 30);
  declare_int(*v, "Seed", 1, "random: seed of A; B uses Seed+1, C uses Seed+2", 0, kIntMax - 2);
  declare_string(*v, "FileA", "", "matrix-market: file of A");
  declare_string(*v, "FileB", "", "matrix-market: file of B");
  declare_string(*v, "FileC", "", "matrix-market: file of C (optional; empty: C starts empty)");
  declare_choice(*v, "Distribution", "random", {"block-cyclic", "random", "rows-1d"},
                 "proposed distribution of the blocks over the grid (a strategy may ask for another one); "
                 "rows-1d: a P x 1 grid");
  declare_int(*v, "DistributionSeed", 7, "seed of the 'random' distribution's permutation", 0, kIntMax);
  declare_int(*v, "GridRows", 0, "process rows of the grid (0: chosen by MPI_Dims_create)", 0, kIntMax);
  declare_int(*v, "GridCols", 0, "process columns of the grid (0: chosen by MPI_Dims_create)", 0, kIntMax);
  return v;
}

ProblemMatrices build_problem(const ParameterList& given, Context& ctx, bool with_c) {
  const MPI_Comm comm = ctx.comm();
  const MultiplyAlgorithm& strategy = ctx.multiply_algorithm();
  // Work on a validated, default-filled copy: callers may pass a partial list.
  ParameterList problem(given);
  validate_and_fill(problem, *problem_valid_parameters(), "plexus/Problem");
  const std::string generator = problem.get<std::string>("Generator");
  const std::string sizes_text = problem.get<std::string>("BlockSizes");
  const auto pattern = parse_int_list(sizes_text, "Problem/BlockSizes");
  const std::string dist_kind = problem.get<std::string>("Distribution");
  const auto dist_seed = static_cast<std::uint64_t>(problem.get<int>("DistributionSeed"));
  int grid_rows = problem.get<int>("GridRows");
  int grid_cols = problem.get<int>("GridCols");
  if (dist_kind == "rows-1d") {
    if (grid_rows == 0 && grid_cols == 0) {
      MPI_Comm_size(comm, &grid_rows);  // 1D block rows: a P x 1 grid
      grid_cols = 1;
    } else if (grid_cols != 1) {
      throw InputError("Problem/Distribution", "Problem/Distribution = 'rows-1d' needs Problem/GridCols = 1 (got " +
                                                   std::to_string(grid_cols) + ")");
    }
  }
  if ((grid_rows == 0) != (grid_cols == 0))
    throw InputError("Problem/GridRows",
                     "Problem/GridRows and Problem/GridCols must both be 0 (automatic) or both set");
  if (grid_rows > 0) {
    int size = 0;
    MPI_Comm_size(comm, &size);
    if (grid_rows * grid_cols != size)
      throw InputError("Problem/GridRows",
                       "the grid Problem/GridRows x Problem/GridCols = " + std::to_string(grid_rows) + "x" +
                           std::to_string(grid_cols) + " does not have " + std::to_string(size) + " ranks");
  }
  auto grid = ctx.grid(grid_rows, grid_cols);

  ProblemMatrices out;
  if (generator == "random") {
    const int blocks = problem.get<int>("Blocks");
    const double occupancy = problem.get<double>("Occupancy");
    if (!(occupancy > 0.0 && occupancy <= 1.0))
      throw InputError("Problem/Occupancy", "Problem/Occupancy must be in (0, 1], got " + std::to_string(occupancy));
    const int seed = problem.get<int>("Seed");
    const bool symmetric = problem.get<bool>("Symmetric");
    const BlockSizes sizes = BlockSizes::cyclic(blocks, pattern);
    const BlockLayout layout{sizes, sizes};
    auto dist = strategy_distribution(strategy, Distribution::by_name(dist_kind, grid, blocks, blocks, dist_seed));
    GeneratorSpec spec;
    spec.occupancy = occupancy;
    spec.symmetric = symmetric;
    spec.force_diagonal = true;
    spec.bandwidth = problem.get<int>("Bandwidth");
    spec.seed = static_cast<std::uint64_t>(seed);
    out.a = std::make_shared<DistMatrix>(generate_random("A", dist, layout, spec));
    spec.seed = static_cast<std::uint64_t>(seed) + 1;
    out.b = std::make_shared<DistMatrix>(generate_random("B", dist, layout, spec));
    if (with_c) {
      spec.seed = static_cast<std::uint64_t>(seed) + 2;
      out.c = std::make_shared<DistMatrix>(generate_random("C", dist, layout, spec));
    } else {
      out.c = std::make_shared<DistMatrix>("C", dist, layout);
      out.c->finalize();
    }
    return out;
  }

  if (generator != "matrix-market")
    throw InputError("Problem/Generator", "unknown Problem/Generator '" + generator + "'");
  const std::string file_a = problem.get<std::string>("FileA");
  const std::string file_b = problem.get<std::string>("FileB");
  const std::string file_c = problem.get<std::string>("FileC");
  if (file_a.empty() || file_b.empty())
    throw InputError("Problem/FileA", "Problem/Generator = 'matrix-market' needs Problem/FileA and Problem/FileB");
  const auto ha = read_matrix_market_header(file_a);
  const auto hb = read_matrix_market_header(file_b);
  if (ha.cols != hb.rows)
    throw InputError("Problem/FileB", "A ('" + file_a + "', " + std::to_string(ha.rows) + "x" +
                                          std::to_string(ha.cols) + ") and B ('" + file_b + "', " +
                                          std::to_string(hb.rows) + "x" + std::to_string(hb.cols) +
                                          ") cannot be multiplied");
  const BlockSizes m = covering_sizes(ha.rows, pattern, "Problem/FileA");
  const BlockSizes k = covering_sizes(ha.cols, pattern, "Problem/FileA");
  const BlockSizes n = covering_sizes(hb.cols, pattern, "Problem/FileB");
  const BlockLayout la{m, k}, lb{k, n}, lc{m, n};
  std::shared_ptr<const Distribution> da, db, dc;
  if (m == k && k == n) {
    // Square with equal layouts: one distribution for all three, as for generated problems.
    da = db = dc =
        strategy_distribution(strategy, Distribution::by_name(dist_kind, grid, m.count(), m.count(), dist_seed));
  } else {
    auto pa = Distribution::by_name(dist_kind, grid, m.count(), k.count(), dist_seed);
    auto pb = Distribution::by_name(dist_kind, grid, k.count(), n.count(), dist_seed);
    auto pc = std::make_shared<const Distribution>(grid, pa->row_dist(), pb->col_dist(), pa->kind());
    da = strategy_distribution(strategy, pa);
    db = strategy_distribution(strategy, pb);
    dc = strategy_distribution(strategy, pc);
  }
  out.a = std::make_shared<DistMatrix>(read_matrix_market(file_a, "A", da, la));
  out.b = std::make_shared<DistMatrix>(read_matrix_market(file_b, "B", db, lb));
  if (with_c && !file_c.empty()) {
    const auto hc = read_matrix_market_header(file_c);
    if (hc.rows != ha.rows || hc.cols != hb.cols)
      throw InputError("Problem/FileC", "C ('" + file_c + "', " + std::to_string(hc.rows) + "x" +
                                            std::to_string(hc.cols) + ") does not match A*B (" +
                                            std::to_string(ha.rows) + "x" + std::to_string(hb.cols) + ")");
    out.c = std::make_shared<DistMatrix>(read_matrix_market(file_c, "C", dc, lc));
  } else {
    out.c = std::make_shared<DistMatrix>("C", dc, lc);
    out.c->finalize();
  }
  return out;
}

}  // namespace plexus
