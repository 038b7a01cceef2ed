#pragma once
// What building a problem's matrices takes, shared by problem.cpp (A, B and C of a multiply) and
// hamiltonian.cpp (H and S of the density-matrix solvers): block sizes from the Problem sublist's
// patterns, the memory check made before anything is allocated, the grid and the distribution
// the strategy asks for. Internal to core.
#include <mpi.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "plexus/context.hpp"
#include "plexus/distribution.hpp"
#include "plexus/error.hpp"
#include "plexus/layout.hpp"
#include "plexus/parameters.hpp"

namespace plexus::detail {

inline constexpr int kIntMax = std::numeric_limits<int>::max();

/// Block sizes covering n scalar rows: one size -> BlockSizes::covering; several -> cycled, the
/// last block cut so that the sizes add up to n. `where` names the parameter in an error.
BlockSizes covering_sizes(std::int64_t n, const std::vector<int>& pattern, const std::string& where);

/// The number of blocks covering n rows (as covering_sizes cuts them), without making them.
std::int64_t covering_count(std::int64_t n, const std::vector<int>& pattern);

/// The mean of a pattern's block sizes.
double mean_size(const std::vector<int>& pattern);

/// Refuses (InputError, Problem/<name>) block sizes whose blocks would hold more than INT_MAX
/// elements.
void check_block_sizes(const std::vector<int>& pattern, const std::string& name = "BlockSizes");

/// RowBlockSizes or ColBlockSizes: its pattern, or `fallback` (BlockSizes') when empty.
std::vector<int> dimension_pattern(const ParameterList& problem, const std::string& name,
                                   const std::vector<int>& fallback);

/// The strategy's distribution for a proposal (MultiplyAlgorithm::distribution_for).
std::shared_ptr<const Distribution> strategy_distribution(const MultiplyAlgorithm& strategy,
                                                          std::shared_ptr<const Distribution> proposal);

/// The grid Problem/GridRows x GridCols (or Distribution = rows-1d) asks for. Collective.
std::shared_ptr<const Grid> problem_grid(const ParameterList& problem, Context& ctx);

/// Bytes of index arrays per block row or column of one matrix on one rank: the layout's size and
/// offset, the distribution's map, the panel's row index and block lists (an estimate from below).
inline constexpr double kIndexBytesPerBlock = 40;

/// What the problem needs at least on every rank, checked before anything is allocated: refused
/// when more than the memory the least provided rank can get (the node's available memory shared
/// by the ranks on it, and the rank's own limits). The same answer and message on every rank.
/// Collective over comm.
void require_memory(double need_per_rank, const std::string& what, MPI_Comm comm);

/// Runs an allocating step; a std::bad_alloc that still happens says what ran out and when.
template <class F>
auto allocating(const std::string& step, F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    throw Error("Problem", "out of memory while " + step +
                               " (std::bad_alloc; the estimate before it was within the "
                               "available memory, so other ranks or processes may have taken it)");
  }
}

}  // namespace plexus::detail
