// The "Problem" sublist and the multiply's problem (build_problem): A, B and C generated or read from
// Matrix Market files. H and S of the density-matrix solvers: hamiltonian.cpp.
#include "plexus/problem.hpp"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <numeric>
#include <tuple>
#include <utility>
#include <vector>

#include "plexus/distribution.hpp"
#include "plexus/error.hpp"
#include "plexus/generator.hpp"
#include "plexus/input.hpp"
#include "plexus/layout.hpp"
#include "plexus/matrix_market.hpp"
#include "plexus/mpi.hpp"
#include "problem_support.hpp"

namespace plexus {

using namespace detail;

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

namespace {

// A's, B's and C's distributions, from Problem/Distribution and DistributionSeed on the grid, as
// the strategy takes them. trans_a, trans_b: op(A) = A^T, op(B) = B^T. `one`: square operands with
// equal layouts, neither transposed, which get one distribution for all three (one proposal; the
// strategy may change it). Else C's rows are distributed like A's rows and its columns like B's
// columns; a transposed operand (stored K x M, N x K) keeps a distribution of its own, which the
// multiply redistributes.
struct OperandDistributions {
  std::shared_ptr<const Distribution> a, b, c;
};
OperandDistributions operand_distributions(Context& ctx, const std::shared_ptr<const Grid>& grid,
                                           const ParameterList& problem, const BlockLayout& la, const BlockLayout& lb,
                                           const BlockLayout& lc, bool trans_a, bool trans_b, bool one) {
  const MultiplyAlgorithm& strategy = ctx.multiply_algorithm();
  const std::string kind = problem.get<std::string>("Distribution");
  const auto seed = static_cast<std::uint64_t>(problem.get<int>("DistributionSeed"));
  auto proposal = [&](const BlockLayout& l) {
    return Distribution::by_name(kind, grid, l.rows.count(), l.cols.count(), seed);
  };
  if (one) {
    auto d = strategy_distribution(strategy, proposal(lc));
    return {d, d, d};
  }
  auto pc = proposal(lc), pa = proposal(la), pb = proposal(lb);
  if (!trans_a) pa = std::make_shared<const Distribution>(grid, pc->row_dist(), pa->col_dist(), pa->kind());
  if (!trans_b) pb = std::make_shared<const Distribution>(grid, pb->row_dist(), pc->col_dist(), pb->kind());
  return {strategy_distribution(strategy, pa), strategy_distribution(strategy, pb),
          strategy_distribution(strategy, pc)};
}

// A multiply's problem as build_problem was asked for it: the validated Problem sublist, the grid,
// the block size patterns of its dimensions (validated), whether C is made, and which operands the
// multiply transposes. Its two ways to make the matrices read them by these names.
struct MultiplyProblem {
  const ParameterList& problem;
  Context& ctx;
  std::shared_ptr<const Grid> grid;
  MPI_Comm comm = MPI_COMM_NULL;
  int ranks = 1;
  std::string sizes_text;                              // Problem/BlockSizes as given
  std::vector<int> pattern, row_pattern, col_pattern;  // the inner dimension; rows of A and C; columns of B and C
  bool with_c = false, trans_a = false, trans_b = false;

  ProblemMatrices random() const;         // Problem/Generator = random
  ProblemMatrices matrix_market() const;  // Problem/Generator = matrix-market
};

// A, B (and C) generated on the grid.
ProblemMatrices MultiplyProblem::random() const {
  const bool one_pattern = row_pattern == pattern && col_pattern == pattern;
  ProblemMatrices out;
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
    throw InputError("Problem/Symmetric",
                     "Problem/Symmetric = true generates square symmetric A and B, whose rows and "
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
  // Not a structured binding: clang before 16 cannot capture one in a lambda.
  const OperandDistributions dists =
      operand_distributions(ctx, grid, problem, la, lb, lc, trans_a, trans_b, square && !trans_a && !trans_b);
  const std::shared_ptr<const Distribution>& da = dists.a;
  const std::shared_ptr<const Distribution>& db = dists.b;
  const std::shared_ptr<const Distribution>& dc = dists.c;
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
  return out;
}

// A, B (and C) read from FileA, FileB (and FileC).
ProblemMatrices MultiplyProblem::matrix_market() const {
  ProblemMatrices out;
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
  auto shown = [](const std::string& op, const std::string& file, const MatrixMarketHeader& h, bool trans) {
    return op + " ('" + file + "', " + std::to_string(trans ? h.cols : h.rows) + "x" +
           std::to_string(trans ? h.rows : h.cols) +
           (trans ? ", the transpose of the file's " + std::to_string(h.rows) + "x" + std::to_string(h.cols)
                  : std::string()) +
           ")";
  };
  const std::string op_a = trans_a ? "op(A) = A^T" : "A", op_b = trans_b ? "op(B) = B^T" : "B";
  if (dim_k != dim_kb)
    throw InputError("Problem/FileB", shown(op_a, file_a, ha, trans_a) + " and " + shown(op_b, file_b, hb, trans_b) +
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
  // Not a structured binding: clang before 16 cannot capture one in a lambda.
  const OperandDistributions dists =
      operand_distributions(ctx, grid, problem, la, lb, lc, trans_a, trans_b, m == k && k == n && !trans_a && !trans_b);
  const std::shared_ptr<const Distribution>& da = dists.a;
  const std::shared_ptr<const Distribution>& db = dists.b;
  const std::shared_ptr<const Distribution>& dc = dists.c;
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

}  // namespace

ProblemMatrices build_problem(const ParameterList& given, Context& ctx, bool with_c, bool trans_a, bool trans_b) {
  // Work on a validated, default-filled copy: callers may pass a partial list.
  ParameterList problem(given);
  validate_and_fill(problem, *problem_valid_parameters(), "plexus/Problem");
  const std::string generator = problem.get<std::string>("Generator");
  std::string sizes_text = problem.get<std::string>("BlockSizes");
  std::vector<int> pattern = parse_int_list(sizes_text, "Problem/BlockSizes");
  check_block_sizes(pattern);
  std::vector<int> row_pattern = dimension_pattern(problem, "RowBlockSizes", pattern);
  std::vector<int> col_pattern = dimension_pattern(problem, "ColBlockSizes", pattern);
  auto grid = problem_grid(problem, ctx);
  const MultiplyProblem m{problem,
                          ctx,
                          std::move(grid),
                          ctx.comm(),
                          mpi::size(ctx.comm()),
                          std::move(sizes_text),
                          std::move(pattern),
                          std::move(row_pattern),
                          std::move(col_pattern),
                          with_c,
                          trans_a,
                          trans_b};
  if (generator == "random") return m.random();
  if (generator == "cp2k-csr" || generator == "model")
    throw InputError("Problem/Generator", "Problem/Generator = '" + generator +
                                              "' gives the Kohn-Sham matrices H and S of the "
                                              "density-matrix solvers (sign, purification), not A and B; use "
                                              "'matrix-market' or 'random' for a multiply problem");
  if (generator != "matrix-market")
    throw InputError("Problem/Generator", "unknown Problem/Generator '" + generator + "'");
  return m.matrix_market();
}

}  // namespace plexus
