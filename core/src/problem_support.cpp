// What building a problem's matrices takes (problem_support.hpp).
#include "problem_support.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

#include "plexus/input.hpp"
#include "plexus/mpi.hpp"
#include "plexus/problem.hpp"

namespace plexus::detail {

namespace {

// A block holds at most INT_MAX elements (its size is an int everywhere): block sizes up to
// 46340, whose square still fits.
constexpr int kMaxBlockSize = 46340;

}  // namespace

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

void check_block_sizes(const std::vector<int>& pattern, const std::string& name) {
  for (int s : pattern)
    if (s > kMaxBlockSize)
      throw InputError("Problem/" + name, "Problem/" + name + ": a block of " + std::to_string(s) + " x " +
                                              std::to_string(s) + " has " + std::to_string(std::int64_t{s} * s) +
                                              " elements, more than a block can hold (" + std::to_string(kIntMax) +
                                              "); block sizes are at most " + std::to_string(kMaxBlockSize));
}

std::int64_t covering_count(std::int64_t n, const std::vector<int>& pattern) {
  const std::int64_t cycle = std::accumulate(pattern.begin(), pattern.end(), std::int64_t{0});
  std::int64_t count = n / cycle * static_cast<std::int64_t>(pattern.size());
  for (std::int64_t rest = n % cycle, i = 0; rest > 0; ++i, ++count) rest -= pattern[static_cast<std::size_t>(i)];
  return count;
}

double mean_size(const std::vector<int>& pattern) {
  return static_cast<double>(std::accumulate(pattern.begin(), pattern.end(), std::int64_t{0})) /
         static_cast<double>(pattern.size());
}

void require_memory(double need_per_rank, const std::string& what, MPI_Comm comm) {
  MPI_Comm node = MPI_COMM_NULL;
  mpi::check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
  const int on_node = mpi::size(node);
  MPI_Comm_free(&node);
  const input::Available avail = input::available_memory(on_node);
  struct {
    double bytes;
    int rank;
  } mine{static_cast<double>(avail.bytes), mpi::rank(comm)}, least{};
  mpi::check(MPI_Allreduce(&mine, &least, 1, MPI_DOUBLE_INT, MPI_MINLOC, comm), "MPI_Allreduce");
  if (need_per_rank <= least.bytes) return;
  // Everyone fails alike; the message tells what the least provided rank found.
  std::string source = avail.source;
  int len = static_cast<int>(source.size());
  mpi::check(MPI_Bcast(&len, 1, MPI_INT, least.rank, comm), "MPI_Bcast");
  source.resize(static_cast<std::size_t>(len));
  mpi::check(MPI_Bcast(source.data(), len, MPI_CHAR, least.rank, comm), "MPI_Bcast");
  throw InputError("Problem", what + " needs at least " + input::format_size(need_per_rank) + " per rank, but rank " +
                                  std::to_string(least.rank) + " can get " + input::format_size(least.bytes) + " (" +
                                  source + ")");
}

std::vector<int> dimension_pattern(const ParameterList& problem, const std::string& name,
                                   const std::vector<int>& fallback) {
  const std::string text = problem.get<std::string>(name);
  if (input::trim(text).empty()) return fallback;
  auto p = parse_int_list(text, "Problem/" + name);
  check_block_sizes(p, name);
  return p;
}

std::shared_ptr<const Grid> problem_grid(const ParameterList& problem, Context& ctx) {
  const MPI_Comm comm = ctx.comm();
  const std::string dist_kind = problem.get<std::string>("Distribution");
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
  const int ranks = mpi::size(comm);
  if (grid_rows > 0 && std::int64_t{grid_rows} * grid_cols != ranks)
    throw InputError("Problem/GridRows", "the grid Problem/GridRows x Problem/GridCols = " + std::to_string(grid_rows) +
                                             "x" + std::to_string(grid_cols) + " has " +
                                             std::to_string(std::int64_t{grid_rows} * grid_cols) +
                                             " ranks, but the job has " + std::to_string(ranks));
  return ctx.grid(grid_rows, grid_cols);
}

}  // namespace plexus::detail
