// The "Problem" sublist: generated or Matrix Market matrices on a grid and distribution.
#include "plexus/problem.hpp"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <new>
#include <numeric>
#include <tuple>
#include <utility>
#include <vector>

#include "plexus/cp2k_csr.hpp"
#include "plexus/distribution.hpp"
#include "plexus/error.hpp"
#include "plexus/generator.hpp"
#include "plexus/input.hpp"
#include "plexus/layout.hpp"
#include "plexus/log.hpp"
#include "plexus/matrix_market.hpp"
#include "plexus/model.hpp"
#include "plexus/mpi.hpp"

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

// A block holds at most INT_MAX elements (its size is an int everywhere): block sizes up to
// 46340, whose square still fits.
constexpr int kMaxBlockSize = 46340;

void check_block_sizes(const std::vector<int>& pattern, const std::string& name = "BlockSizes") {
  for (int s : pattern)
    if (s > kMaxBlockSize)
      throw InputError("Problem/" + name, "Problem/" + name + ": a block of " + std::to_string(s) + " x " +
                                                 std::to_string(s) + " has " + std::to_string(std::int64_t{s} * s) +
                                                 " elements, more than a block can hold (" + std::to_string(kIntMax) +
                                                 "); block sizes are at most " + std::to_string(kMaxBlockSize));
}

// The number of blocks covering n rows (as covering_sizes cuts them), without making them.
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

// Bytes of index arrays per block row or column of one matrix on one rank: the layout's size and
// offset, the distribution's map, the panel's row index and block lists (an estimate from below).
constexpr double kIndexBytesPerBlock = 40;

// What the problem needs at least on every rank, checked before anything is allocated: refused
// when more than the memory the least provided rank can get (the node's available memory shared
// by the ranks on it, and the rank's own limits). The same answer and message on every rank. Collective over comm.
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

// Runs an allocating step; a std::bad_alloc that still happens says what ran out and when.
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

// RowBlockSizes or ColBlockSizes: its pattern, or BlockSizes' when empty.
std::vector<int> dimension_pattern(const ParameterList& problem, const std::string& name,
                                   const std::vector<int>& fallback) {
  const std::string text = problem.get<std::string>(name);
  if (input::trim(text).empty()) return fallback;
  auto p = parse_int_list(text, "Problem/" + name);
  check_block_sizes(p, name);
  return p;
}

// The grid Problem/GridRows x GridCols (or Distribution = rows-1d) asks for. Collective.
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

// Problem/Generator = model: H and S generated on the grid (docs/model-generator.md).
HamiltonianMatrices build_model(const ParameterList& problem, Context& ctx) {
  const MoleculeModel spec = model_spec(problem);
  const MoleculeModelBounds bounds = model_bounds(spec);
  const int ranks = mpi::size(ctx.comm());
  const double n = static_cast<double>(spec.molecules), b = spec.block;
  const double value_bytes = 2 * n * bounds.max_blocks_per_row * b * b * sizeof(double);
  require_memory(2 * n * kIndexBytesPerBlock + value_bytes / ranks,
                 "the model problem (Problem/Molecules = " + std::to_string(spec.molecules) + ", blocks of " +
                     std::to_string(spec.block) + ", at most " + std::to_string(bounds.max_blocks_per_row) +
                     " blocks a block row: up to " + input::format_size(value_bytes) + " of values for H and S)",
                 ctx.comm());
  auto grid = problem_grid(problem, ctx);
  const int blocks = static_cast<int>(spec.molecules);
  auto dist = strategy_distribution(
      ctx.multiply_algorithm(),
      Distribution::by_name(problem.get<std::string>("Distribution"), grid, blocks, blocks,
                            static_cast<std::uint64_t>(problem.get<int>("DistributionSeed"))));
  const auto box = model_box(spec.molecules);
  log().info("model: {} molecules ({}x{}x{} box), blocks of {}: Electrons = {}; the generalized eigenvalues of (H, "
             "S) lie in [-{:.4g}, {:.4g}] with none in ({:.4g}, {:.4g}); S's in [{:.4g}, {:.4g}]; at most {} blocks "
             "a block row",
             spec.molecules, box[0], box[1], box[2], spec.block, spec.molecules * spec.block, bounds.spectrum_max,
             bounds.spectrum_max, bounds.homo_max, bounds.lumo_min, bounds.s_min, bounds.s_max,
             bounds.max_blocks_per_row);
  return allocating("generating the model's H and S", [&] { return generate_model(spec, dist); });
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
  declare_choice(*v, "Generator", "random", {"random", "matrix-market", "cp2k-csr", "model"},
                 "where the matrices come from: 'random' generates A, B and C; 'matrix-market' reads FileA, FileB, "
                 "FileC (multiply) or FileH, FileS (sign, purification); 'cp2k-csr' reads FileH, FileS written by "
                 "CP2K's KS_CSR_WRITE / S_CSR_WRITE (density-matrix solvers only); files may be gzip-compressed; "
                 "'model' generates H and S of Molecules molecules (density-matrix solvers only; "
                 "docs/model-generator.md)");
  declare_int(*v, "Blocks", 160, "random: block rows = block columns of the square matrices A, B and C", 1, kIntMax);
  declare_string(*v, "BlockSizes", "23",
                 "block sizes, cycled over the blocks (\"23\" or \"1,5,13\"); matrix-market: cycled to cover the "
                 "file's dimensions");
  declare_string(*v, "RowBlockSizes", "",
                 "multiply problem (random or matrix-market): block sizes of M, the rows of op(A) and C, where they "
                 "differ from BlockSizes (empty: BlockSizes)");
  declare_string(*v, "ColBlockSizes", "",
                 "multiply problem (random or matrix-market): block sizes of N, the columns of op(B) and C, where "
                 "they differ from BlockSizes (empty: BlockSizes); BlockSizes then cuts the inner dimension K "
                 "(op(A)'s columns, op(B)'s rows)");
  declare_double(*v, "Occupancy", 0.1, "random: fraction of blocks present, in (0, 1] (the diagonal always is)", 0.0,
                 1.0, true);
  for (const char* m : {"A", "B", "C"})
    declare_double(*v, std::string("Occupancy") + m, 0.0,
                   std::string("random: fraction of the blocks of ") + m +
                       " present, in (0, 1] (0: Problem/Occupancy; the diagonal always is)",
                   0.0, 1.0);
  declare_int(*v, "Rows", 0,
              "random multiply problem: rows M of A and C (scalar), cut into blocks of RowBlockSizes (or BlockSizes), "
              "cycled, the last block cut to fit (0: Blocks blocks)",
              0, kIntMax);
  declare_int(*v, "Cols", 0,
              "random multiply problem: columns N of B and C (scalar), cut into blocks of ColBlockSizes (or "
              "BlockSizes) as Rows is (0: Blocks blocks)",
              0, kIntMax);
  declare_int(*v, "Inner", 0,
              "random multiply problem: the inner dimension K (columns of A, rows of B; scalar), cut into blocks of "
              "BlockSizes as Rows is (0: Blocks blocks)",
              0, kIntMax);
  declare_bool(*v, "Symmetric", true, "random: generate symmetric A and B (square problems)");
  declare_int(*v, "Bandwidth", -1,
              "random: locality; >= 0 keeps only blocks with |i-j| <= Bandwidth, and Occupancy is then the "
              "fraction present inside that band (-1: no locality)",
              -1, 1 << 30);
  declare_int(*v, "Seed", 1, "random: seed of A; B uses Seed+1, C uses Seed+2", 0, kIntMax - 2);
  declare_string(*v, "FileA", "",
                 "matrix-market: file of A, M x K (K x M with multiply/TransA = T); coordinate (real, integer or "
                 "pattern: entries 1) or array, general or symmetric, plain or gzip; rank 0 reads it");
  declare_string(*v, "FileB", "", "matrix-market: file of B, K x N (N x K with multiply/TransB = T)");
  declare_string(*v, "FileC", "", "matrix-market: file of C (optional; empty: C starts empty)");
  declare_string(*v, "FileH", "",
                 "matrix-market or cp2k-csr, density-matrix solvers (sign, purification): file of the Kohn-Sham "
                 "matrix H (square, symmetric)");
  declare_string(*v, "FileS", "",
                 "matrix-market or cp2k-csr, density-matrix solvers: file of the overlap matrix S (symmetric "
                 "positive definite, H's dimension; empty: an orthogonal basis, S = I)");
  declare_int(*v, "Molecules", 64,
              "model: molecules N on a periodic simple cubic lattice of spacing 1 (n1 x n2 x n3 = N, as near a cube "
              "as N's factors allow); each is one block of BlockSizes (a single even size b); electrons: N*b",
              1, kIntMax);
  declare_double(*v, "ModelGap", 0.25, "model: gap between a molecule's b/2 occupied and b/2 empty levels", 0.0,
                 1e6, true);
  declare_double(*v, "ModelWidth", 1.0, "model: width of each band of on-site levels", 0.0, 1e6);
  declare_double(*v, "ModelRadius", 1.8,
                 "model: coupling cut-off distance in lattice spacings (1.8: 26 neighbours undisplaced)", 0.0, 10.0,
                 true);
  declare_double(*v, "ModelDecay", 0.5,
                 "model: couplings of H decay as exp(-d/ModelDecay), those of S as exp(-2d/ModelDecay)", 0.0, 10.0,
                 true);
  declare_double(*v, "ModelCoupling", 0.5,
                 "model: the couplings of H move no level by more than ModelCoupling * ModelGap/2 (the gap "
                 "survives)",
                 0.0, 0.95);
  declare_double(*v, "ModelOverlap", 0.3, "model: ||S - I||_2 <= ModelOverlap (S positive definite)", 0.0, 0.95);
  declare_double(*v, "ModelDisplacement", 0.1,
                 "model: each coordinate of a molecule moved off its lattice site by up to this (0: a perfect "
                 "lattice)",
                 0.0, 0.25);
  declare_int(*v, "ModelSeed", 1, "model: seed of the displacements, levels, rotations and couplings", 0, kIntMax);
  declare_choice(*v, "Distribution", "random", {"block-cyclic", "random", "rows-1d"},
                 "proposed distribution of the blocks over the grid (a strategy may ask for another one); "
                 "rows-1d: a P x 1 grid");
  declare_int(*v, "DistributionSeed", 7, "seed of the 'random' distribution's permutation", 0, kIntMax);
  declare_int(*v, "GridRows", 0, "process rows of the grid (0: chosen by MPI_Dims_create)", 0, kIntMax);
  declare_int(*v, "GridCols", 0, "process columns of the grid (0: chosen by MPI_Dims_create)", 0, kIntMax);
  return v;
}

ProblemMatrices build_problem(const ParameterList& given, Context& ctx, bool with_c, bool trans_a, bool trans_b) {
  const MPI_Comm comm = ctx.comm();
  const MultiplyAlgorithm& strategy = ctx.multiply_algorithm();
  // Work on a validated, default-filled copy: callers may pass a partial list.
  ParameterList problem(given);
  validate_and_fill(problem, *problem_valid_parameters(), "plexus/Problem");
  const std::string generator = problem.get<std::string>("Generator");
  const std::string sizes_text = problem.get<std::string>("BlockSizes");
  const auto pattern = parse_int_list(sizes_text, "Problem/BlockSizes");
  check_block_sizes(pattern);
  // Rows of A and C, inner dimension, columns of B and C.
  const auto row_pattern = dimension_pattern(problem, "RowBlockSizes", pattern);
  const auto col_pattern = dimension_pattern(problem, "ColBlockSizes", pattern);
  const bool one_pattern = row_pattern == pattern && col_pattern == pattern;
  const std::string dist_kind = problem.get<std::string>("Distribution");
  const auto dist_seed = static_cast<std::uint64_t>(problem.get<int>("DistributionSeed"));
  const int ranks = mpi::size(comm);
  auto grid = problem_grid(problem, ctx);

  ProblemMatrices out;
  if (generator == "random") {
    const int blocks = problem.get<int>("Blocks");
    const double occupancy = problem.get<double>("Occupancy");
    if (!(occupancy > 0.0 && occupancy <= 1.0))
      throw InputError("Problem/Occupancy", "Problem/Occupancy must be in (0, 1], got " + std::to_string(occupancy));
    // OccupancyA/B/C: 0 stands for Occupancy.
    auto occupancy_of = [&](const char* m) {
      const double o = problem.get<double>(std::string("Occupancy") + m);
      return o > 0.0 ? o : occupancy;
    };
    const double occ_a = occupancy_of("A"), occ_b = occupancy_of("B"), occ_c = occupancy_of("C");
    const int seed = problem.get<int>("Seed");
    const bool symmetric = problem.get<bool>("Symmetric");
    const int bandwidth = problem.get<int>("Bandwidth");
    const int dim_m = problem.get<int>("Rows"), dim_k = problem.get<int>("Inner"), dim_n = problem.get<int>("Cols");
    const bool square = dim_m == 0 && dim_k == 0 && dim_n == 0;
    // The block count of a dimension: Blocks, or the blocks of its pattern covering Rows/Cols/Inner.
    auto count_of = [&](const char* dim, int n, const std::vector<int>& pat, const char* by) -> std::int64_t {
      if (n == 0) return blocks;
      const std::int64_t count = covering_count(n, pat);
      if (count > kIntMax)
        throw InputError(std::string("Problem/") + dim, std::string("Problem/") + dim + " = " + std::to_string(n) +
                                                            " makes " + std::to_string(count) + " blocks of Problem/" +
                                                            by + "; at most " + std::to_string(kIntMax) +
                                                            " blocks a dimension are supported");
      return count;
    };
    const std::int64_t mb = count_of("Rows", dim_m, row_pattern, "RowBlockSizes");
    const std::int64_t kb = count_of("Inner", dim_k, pattern, "BlockSizes");
    const std::int64_t nb = count_of("Cols", dim_n, col_pattern, "ColBlockSizes");
    if (symmetric && !one_pattern)
      throw InputError("Problem/Symmetric", "Problem/Symmetric = true generates square symmetric A and B, whose rows and "
                                            "columns are cut alike: give Problem/RowBlockSizes and ColBlockSizes only "
                                            "with Problem/Symmetric = false");
    if (symmetric && !(dim_m == dim_k && dim_k == dim_n))
      throw InputError("Problem/Symmetric",
                       "Problem/Symmetric = true generates square symmetric A and B: give "
                       "Problem/Rows, Inner and Cols equal (or all 0), or Problem/Symmetric = "
                       "false");
    {
      // Blocks present in each matrix: its diagonal, and its occupancy of the others (inside the band).
      auto present = [&](double r, double c, double occ) {
        const double diagonal = std::min(r, c);
        const double inside = bandwidth < 0 ? r * c : std::min(r * c, diagonal * (2.0 * bandwidth + 1));
        return diagonal + occ * std::max(0.0, inside - diagonal);
      };
      const double rm = static_cast<double>(mb), rk = static_cast<double>(kb), rn = static_cast<double>(nb);
      const double sm = mean_size(row_pattern), sk = mean_size(pattern), sn = mean_size(col_pattern);
      const double bytes_a = present(rm, rk, occ_a) * sm * sk * sizeof(double);
      const double bytes_b = present(rk, rn, occ_b) * sk * sn * sizeof(double);
      const double bytes_c = with_c ? present(rm, rn, occ_c) * sm * sn * sizeof(double) : 0.0;
      const double need = (bytes_a + bytes_b + bytes_c) / ranks + 2 * (rm + rk + rn) * kIndexBytesPerBlock;
      const std::string shown = fmt::format("{:g}", occupancy);
      require_memory(need,
                     "the random problem (" +
                         (square ? "Problem/Blocks = " + std::to_string(blocks)
                                 : "M x K x N = " + std::to_string(mb) + " x " + std::to_string(kb) + " x " +
                                       std::to_string(nb) + " blocks") +
                         ", BlockSizes '" + sizes_text + "', Occupancy " + shown + ": about " +
                         input::format_size(std::max({bytes_a, bytes_b, bytes_c})) + " for each of its " +
                         (with_c ? "3" : "2") + " matrices, over " + std::to_string(ranks) + " ranks)",
                     comm);
    }
    auto sizes_of = [&](const char* dim, int n, const std::vector<int>& pat) {
      return n == 0 ? BlockSizes::cyclic(blocks, pat) : covering_sizes(n, pat, std::string("Problem/") + dim);
    };
    const auto [rows, inner, cols] = allocating("making the block sizes", [&] {
      return std::tuple{sizes_of("Rows", dim_m, row_pattern), sizes_of("Inner", dim_k, pattern),
                        sizes_of("Cols", dim_n, col_pattern)};
    });
    // Stored shapes: A is rows x inner (inner x rows when op(A) = A^T), B inner x cols (cols x inner).
    const BlockLayout la = trans_a ? BlockLayout{inner, rows} : BlockLayout{rows, inner};
    const BlockLayout lb = trans_b ? BlockLayout{cols, inner} : BlockLayout{inner, cols};
    const BlockLayout lc{rows, cols};
    std::shared_ptr<const Distribution> da, db, dc;
    if (square && !trans_a && !trans_b) {
      // One proposal for all three (the block counts are equal); the strategy may change it.
      da = db = dc = strategy_distribution(strategy, Distribution::by_name(dist_kind, grid, blocks, blocks, dist_seed));
    } else {
      // C's rows are distributed like A's rows, its columns like B's columns; a transposed operand
      // keeps a distribution of its own (the multiply redistributes it).
      auto pc = Distribution::by_name(dist_kind, grid, lc.rows.count(), lc.cols.count(), dist_seed);
      auto pa = Distribution::by_name(dist_kind, grid, la.rows.count(), la.cols.count(), dist_seed);
      auto pb = Distribution::by_name(dist_kind, grid, lb.rows.count(), lb.cols.count(), dist_seed);
      if (!trans_a) pa = std::make_shared<const Distribution>(grid, pc->row_dist(), pa->col_dist(), pa->kind());
      if (!trans_b) pb = std::make_shared<const Distribution>(grid, pb->row_dist(), pc->col_dist(), pb->kind());
      da = strategy_distribution(strategy, pa);
      db = strategy_distribution(strategy, pb);
      dc = strategy_distribution(strategy, pc);
    }
    GeneratorSpec spec;
    spec.symmetric = symmetric;
    spec.force_diagonal = true;
    spec.bandwidth = bandwidth;
    auto generate = [&](const char* name, std::uint64_t offset, double occ, std::shared_ptr<const Distribution> d,
                        const BlockLayout& layout) {
      spec.seed = static_cast<std::uint64_t>(seed) + offset;
      spec.occupancy = occ;
      return allocating(std::string("generating the random matrix ") + name,
                        [&] { return std::make_shared<DistMatrix>(generate_random(name, d, layout, spec)); });
    };
    out.a = generate("A", 0, occ_a, da, la);
    out.b = generate("B", 1, occ_b, db, lb);
    if (with_c) {
      out.c = generate("C", 2, occ_c, dc, lc);
    } else {
      out.c = std::make_shared<DistMatrix>("C", dc, lc);
      out.c->finalize();
    }
    return out;
  }

  if (generator == "cp2k-csr" || generator == "model")
    throw InputError("Problem/Generator", "Problem/Generator = '" + generator + "' gives the Kohn-Sham matrices H and S of the "
                                          "density-matrix solvers (sign, purification), not A and B; use "
                                          "'matrix-market' or 'random' for a multiply problem");
  if (generator != "matrix-market")
    throw InputError("Problem/Generator", "unknown Problem/Generator '" + generator + "'");
  const std::string file_a = problem.get<std::string>("FileA");
  const std::string file_b = problem.get<std::string>("FileB");
  const std::string file_c = problem.get<std::string>("FileC");
  if (file_a.empty() || file_b.empty())
    throw InputError("Problem/FileA", "Problem/Generator = 'matrix-market' needs Problem/FileA and Problem/FileB");
  const auto ha = read_matrix_market_header(file_a, comm);
  const auto hb = read_matrix_market_header(file_b, comm);
  // The files give A and B as stored; op(A) = A^T (multiply/TransA = T) is then K x M.
  const std::int64_t dim_m = trans_a ? ha.cols : ha.rows, dim_k = trans_a ? ha.rows : ha.cols;
  const std::int64_t dim_kb = trans_b ? hb.cols : hb.rows, dim_n = trans_b ? hb.rows : hb.cols;
  auto shape = [](const std::string& op, const std::string& file, const MatrixMarketHeader& h, bool trans) {
    return op + " ('" + file + "', " + std::to_string(trans ? h.cols : h.rows) + "x" +
           std::to_string(trans ? h.rows : h.cols) +
           (trans ? ", the transpose of the file's " + std::to_string(h.rows) + "x" + std::to_string(h.cols)
                  : std::string()) +
           ")";
  };
  const std::string op_a = trans_a ? "op(A) = A^T" : "A", op_b = trans_b ? "op(B) = B^T" : "B";
  if (dim_k != dim_kb)
    throw InputError("Problem/FileB", shape(op_a, file_a, ha, trans_a) + " and " + shape(op_b, file_b, hb, trans_b) +
                                          " cannot be multiplied: " + std::to_string(dim_k) + " columns, " +
                                          std::to_string(dim_kb) + " rows");
  const bool read_c = with_c && !file_c.empty();
  MatrixMarketHeader hc;
  if (read_c) {
    hc = read_matrix_market_header(file_c, comm);
    if (hc.rows != dim_m || hc.cols != dim_n)
      throw InputError("Problem/FileC", "C ('" + file_c + "', " + std::to_string(hc.rows) + "x" +
                                            std::to_string(hc.cols) + ") does not match " +
                                            (trans_a || trans_b ? "op(A)*op(B) (" : "A*B (") + std::to_string(dim_m) +
                                            "x" + std::to_string(dim_n) + ")");
  }
  // The blocks the dimensions are cut into, counted before they are made: a file of two entries
  // may declare 10^12 rows.
  std::int64_t index_blocks = 0;
  // The parameter that cuts each dimension, and its text, for the message.
  auto cut_by = [&](const char* name) {
    const std::string text = problem.get<std::string>(name);
    return input::trim(text).empty() ? std::pair<std::string, std::string>{"BlockSizes", sizes_text}
                                     : std::pair<std::string, std::string>{name, text};
  };
  for (const auto& [dim, file, where, pat, by] :
       {std::tuple{dim_m, file_a, trans_a ? "columns" : "rows", &row_pattern, cut_by("RowBlockSizes")},
        std::tuple{dim_k, file_a, trans_a ? "rows" : "columns", &pattern,
                   std::pair<std::string, std::string>{"BlockSizes", sizes_text}},
        std::tuple{dim_n, file_b, trans_b ? "rows" : "columns", &col_pattern, cut_by("ColBlockSizes")}}) {
    const std::int64_t count = covering_count(dim, *pat);
    if (count > kIntMax)
      throw InputError("Problem/" + by.first, "the " + std::to_string(dim) + " " + where + " of '" + file + "' make " +
                                                  std::to_string(count) + " blocks of Problem/" + by.first + " '" +
                                                  by.second + "'; at most " + std::to_string(kIntMax) +
                                                  " blocks a dimension are supported (larger block sizes make fewer)");
    index_blocks += count;
  }
  {
    // Index arrays by the declared dimensions; values: every one the files give, at least.
    auto values = [](const MatrixMarketHeader& h) {
      const double stored = h.format == "array" ? static_cast<double>(h.rows) * static_cast<double>(h.cols)
                                                : static_cast<double>(h.entries) * (h.symmetry == "symmetric" ? 2 : 1);
      return stored * sizeof(double);
    };
    const double value_bytes = values(ha) + values(hb) + (read_c ? values(hc) : 0.0);
    const double need = 3 * static_cast<double>(index_blocks) * kIndexBytesPerBlock + value_bytes / ranks;
    require_memory(need,
                   "the Matrix Market problem ('" + file_a + "' " + std::to_string(ha.rows) + " x " +
                       std::to_string(ha.cols) + ", '" + file_b + "' " + std::to_string(hb.rows) + " x " +
                       std::to_string(hb.cols) + ", cut into blocks of '" + sizes_text +
                       "': " + std::to_string(index_blocks) + " block rows and columns, and " +
                       input::format_size(value_bytes) + " of values)",
                   comm);
  }
  const auto [m, k, n] = allocating("cutting the matrices into blocks", [&] {
    return std::tuple{covering_sizes(dim_m, row_pattern, "Problem/FileA"),
                      covering_sizes(dim_k, pattern, "Problem/FileA"),
                      covering_sizes(dim_n, col_pattern, "Problem/FileB")};
  });
  // Stored shapes, as for generated operands: A is M x K (K x M when op(A) = A^T), B K x N (N x K).
  const BlockLayout la = trans_a ? BlockLayout{k, m} : BlockLayout{m, k};
  const BlockLayout lb = trans_b ? BlockLayout{n, k} : BlockLayout{k, n};
  const BlockLayout lc{m, n};
  std::shared_ptr<const Distribution> da, db, dc;
  if (m == k && k == n && !trans_a && !trans_b) {
    // Square with equal layouts: one distribution for all three, as for generated problems.
    da = db = dc =
        strategy_distribution(strategy, Distribution::by_name(dist_kind, grid, m.count(), m.count(), dist_seed));
  } else {
    // C's rows are distributed like A's rows, its columns like B's columns; a transposed operand
    // keeps a distribution of its own (the multiply redistributes it).
    auto pc = Distribution::by_name(dist_kind, grid, lc.rows.count(), lc.cols.count(), dist_seed);
    auto pa = Distribution::by_name(dist_kind, grid, la.rows.count(), la.cols.count(), dist_seed);
    auto pb = Distribution::by_name(dist_kind, grid, lb.rows.count(), lb.cols.count(), dist_seed);
    if (!trans_a) pa = std::make_shared<const Distribution>(grid, pc->row_dist(), pa->col_dist(), pa->kind());
    if (!trans_b) pb = std::make_shared<const Distribution>(grid, pb->row_dist(), pc->col_dist(), pb->kind());
    da = strategy_distribution(strategy, pa);
    db = strategy_distribution(strategy, pb);
    dc = strategy_distribution(strategy, pc);
  }
  // A, B (and C) at once: on several ranks each is read by a rank of its own (file f by rank f mod P),
  // where the algorithm put them on one grid (else one after the other).
  std::vector<MatrixFile> files{{file_a, "A", da, la}, {file_b, "B", db, lb}};
  if (read_c) files.push_back({file_c, "C", dc, lc});
  const bool one_grid = std::all_of(files.begin(), files.end(),
                                    [&](const MatrixFile& f) { return f.dist->grid().comm() == da->grid().comm(); });
  std::vector<DistMatrix> read = allocating("reading Matrix Market files '" + file_a + "', '" + file_b + "'" +
                                                (read_c ? " and '" + file_c + "'" : std::string()),
                                            [&] {
                                              if (one_grid) return read_matrix_market_files(files);
                                              std::vector<DistMatrix> each;
                                              for (const MatrixFile& f : files)
                                                each.push_back(read_matrix_market(f.path, f.name, f.dist, f.layout));
                                              return each;
                                            });
  out.a = std::make_shared<DistMatrix>(std::move(read[0]));
  out.b = std::make_shared<DistMatrix>(std::move(read[1]));
  if (read_c) {
    out.c = std::make_shared<DistMatrix>(std::move(read[2]));
  } else {
    out.c = std::make_shared<DistMatrix>("C", dc, lc);
    out.c->finalize();
  }
  return out;
}

HamiltonianMatrices build_hamiltonian(const ParameterList& given, Context& ctx) {
  const MPI_Comm comm = ctx.comm();
  ParameterList problem(given);
  validate_and_fill(problem, *problem_valid_parameters(), "plexus/Problem");
  const std::string generator = problem.get<std::string>("Generator");
  {
    const auto pattern = parse_int_list(problem.get<std::string>("BlockSizes"), "Problem/BlockSizes");
    for (const char* name : {"RowBlockSizes", "ColBlockSizes"})
      if (dimension_pattern(problem, name, pattern) != pattern)
        throw InputError(std::string("Problem/") + name,
                         std::string("Problem/") + name + " cuts rows and columns differently, but H, S and the "
                         "density matrix are square with one blocking: give Problem/BlockSizes only ('23' per "
                         "molecule or '13,5,5' per atom for water)");
  }
  if (generator == "model") return build_model(problem, ctx);
  if (generator != "matrix-market" && generator != "cp2k-csr")
    throw InputError("Problem/Generator", "the density-matrix solvers need H (and S): Problem/Generator = '" +
                                              generator + "' does not give them; use 'matrix-market' or 'cp2k-csr' "
                                              "with Problem/FileH (and Problem/FileS), or 'model'");
  const bool cp2k = generator == "cp2k-csr";
  const std::string file_h = problem.get<std::string>("FileH");
  const std::string file_s = problem.get<std::string>("FileS");
  if (file_h.empty())
    throw InputError("Problem/FileH", "Problem/Generator = '" + generator +
                                          "' for a density-matrix solver needs Problem/FileH (the Kohn-Sham matrix; "
                                          "Problem/FileS, the overlap, is optional)");
  const std::string sizes_text = problem.get<std::string>("BlockSizes");
  const auto pattern = parse_int_list(sizes_text, "Problem/BlockSizes");
  check_block_sizes(pattern);

  // The dimensions, and the bytes of values each file gives at least.
  struct Source {
    std::int64_t rows = 0, cols = 0;
    double value_bytes = 0;
    Cp2kCsrHeader csr;
  };
  // CP2K CSR files are scanned whole for their headers: H's and S's side by side (rank 0 and 1).
  std::vector<Cp2kCsrHeader> csr_headers;
  if (cp2k)
    csr_headers = read_cp2k_csr_headers(
        file_s.empty() ? std::vector<std::string>{file_h} : std::vector<std::string>{file_h, file_s}, comm);
  auto header = [&](const std::string& file, std::size_t f) {
    Source src;
    if (cp2k) {
      src.csr = csr_headers[f];
      src.rows = src.cols = src.csr.dimension;
      src.value_bytes = static_cast<double>(src.csr.entries) * (src.csr.mirrored ? 2 : 1) * sizeof(double);
    } else {
      const auto h = read_matrix_market_header(file, comm);
      src.rows = h.rows;
      src.cols = h.cols;
      const double stored = h.format == "array" ? static_cast<double>(h.rows) * static_cast<double>(h.cols)
                                                : static_cast<double>(h.entries) * (h.symmetry == "symmetric" ? 2 : 1);
      src.value_bytes = stored * sizeof(double);
    }
    return src;
  };
  const Source hh = header(file_h, 0);
  if (hh.rows != hh.cols)
    throw InputError("Problem/FileH", "H ('" + file_h + "') is " + std::to_string(hh.rows) + " x " +
                                          std::to_string(hh.cols) + "; a Kohn-Sham matrix is square");
  Source hs;
  if (!file_s.empty()) {
    hs = header(file_s, 1);
    if (hs.rows != hs.cols || hs.rows != hh.rows)
      throw InputError("Problem/FileS", "S ('" + file_s + "') is " + std::to_string(hs.rows) + " x " +
                                            std::to_string(hs.cols) + "; the overlap must be square with H's dimension " +
                                            std::to_string(hh.rows) +
                                            (cp2k ? " (a CP2K CSR file's dimension is its largest index: a file whose "
                                                    "last rows kept no entry above KS_CSR_WRITE's threshold looks "
                                                    "smaller)"
                                                  : ""));
  }
  const std::int64_t n = hh.rows;
  // The pattern must tile n: blocks are atoms or molecules, and a cut block is a sign of a wrong
  // pattern (13,5,5 on a file that is not water, say).
  const std::int64_t cycle = std::accumulate(pattern.begin(), pattern.end(), std::int64_t{0});
  {
    std::int64_t covered = n / cycle * cycle, rest = n % cycle;
    for (std::size_t i = 0; rest > 0 && i < pattern.size(); ++i) {
      if (pattern[i] > rest) break;
      rest -= pattern[i];
      covered += pattern[i];
    }
    if (covered != n)
      throw InputError("Problem/BlockSizes",
                       "Problem/BlockSizes '" + sizes_text + "' does not add up to the dimension " + std::to_string(n) +
                           " of '" + file_h + "': cycled, the blocks cover " + std::to_string(covered) +
                           " and the next one would pass the end (for water: '23' per molecule or '13,5,5' per atom)");
  }
  const std::int64_t blocks = covering_count(n, pattern);
  if (blocks > kIntMax)
    throw InputError("Problem/BlockSizes", "the " + std::to_string(n) + " rows of '" + file_h + "' make " +
                                               std::to_string(blocks) + " blocks of Problem/BlockSizes '" + sizes_text +
                                               "'; at most " + std::to_string(kIntMax) + " blocks are supported");
  const int ranks = mpi::size(comm);
  {
    const double value_bytes = hh.value_bytes + (file_s.empty() ? 0.0 : hs.value_bytes);
    require_memory(2 * static_cast<double>(blocks) * kIndexBytesPerBlock + value_bytes / ranks,
                   "the Hamiltonian problem ('" + file_h + "' " + std::to_string(n) + " x " + std::to_string(n) +
                       (file_s.empty() ? std::string() : ", '" + file_s + "'") + ", blocks of '" + sizes_text +
                       "': " + input::format_size(value_bytes) + " of values)",
                   comm);
  }
  auto grid = problem_grid(problem, ctx);
  const BlockSizes sizes = allocating("cutting H into blocks", [&] { return covering_sizes(n, pattern, "Problem/FileH"); });
  const BlockLayout layout{sizes, sizes};
  auto dist = strategy_distribution(
      ctx.multiply_algorithm(),
      Distribution::by_name(problem.get<std::string>("Distribution"), grid, sizes.count(), sizes.count(),
                            static_cast<std::uint64_t>(problem.get<int>("DistributionSeed"))));
  // H and S at once: on several ranks each is read by a rank of its own (file f by rank f mod P).
  std::vector<std::string> files{file_h}, names{"H"};
  std::vector<Cp2kCsrHeader> headers{hh.csr};
  if (!file_s.empty()) {
    files.push_back(file_s);
    names.emplace_back("S");
    headers.push_back(hs.csr);
  }
  std::vector<DistMatrix> read =
      allocating(std::string(cp2k ? "reading CP2K CSR file '" : "reading Matrix Market file '") + file_h + "'" +
                     (file_s.empty() ? std::string() : " and '" + file_s + "'"),
                 [&] {
                   return cp2k ? read_cp2k_csr_files(files, names, dist, layout, headers)
                               : read_matrix_market_files(files, names, dist, layout);
                 });
  HamiltonianMatrices out;
  out.h = std::make_shared<DistMatrix>(std::move(read[0]));
  if (!file_s.empty()) out.s = std::make_shared<DistMatrix>(std::move(read[1]));
  return out;
}

}  // namespace plexus
