#include "plexus/distribution.hpp"

#include <numeric>
#include <string>

#include "plexus/comm_pool.hpp"
#include "plexus/error.hpp"
#include "plexus/mpi.hpp"

namespace plexus {

// The dimensions and my coordinates, without communicators.
std::shared_ptr<Grid> Grid::shape(MPI_Comm comm, int nprows, int npcols) {
  const int p = mpi::size(comm);
  if (nprows < 0 || npcols < 0) throw InputError("Grid", "grid dimensions must be >= 0 (0 = automatic)");
  int dims[2] = {nprows, npcols};
  if (nprows > 0 && npcols > 0) {
    if (nprows * npcols != p)
      throw InputError("Grid", "grid " + std::to_string(nprows) + "x" + std::to_string(npcols) + " needs " +
                                   std::to_string(nprows * npcols) + " ranks, but the job has " + std::to_string(p));
  } else {
    if ((nprows > 0 && p % nprows != 0) || (npcols > 0 && p % npcols != 0))
      throw InputError("Grid", "grid dimension " + std::to_string(nprows > 0 ? nprows : npcols) +
                                   " does not divide the number of ranks " + std::to_string(p));
    mpi::check(MPI_Dims_create(p, 2, dims), "MPI_Dims_create");
  }
  auto g = std::shared_ptr<Grid>(new Grid());
  g->nprows_ = dims[0];
  g->npcols_ = dims[1];
  g->rank_ = mpi::rank(comm);
  g->myprow_ = g->rank_ / g->npcols_;
  g->mypcol_ = g->rank_ % g->npcols_;
  return g;
}

std::shared_ptr<const Grid> Grid::create(MPI_Comm comm, int nprows, int npcols) {
  auto g = shape(comm, nprows, npcols);
  mpi::check(MPI_Comm_dup(comm, &g->comm_), "MPI_Comm_dup");
  mpi::check(MPI_Comm_split(g->comm_, g->myprow_, g->mypcol_, &g->row_comm_), "MPI_Comm_split");
  mpi::check(MPI_Comm_split(g->comm_, g->mypcol_, g->myprow_, &g->col_comm_), "MPI_Comm_split");
  return g;
}

std::shared_ptr<const Grid> Grid::create(CommPool& pool, MPI_Comm comm, int nprows, int npcols) {
  auto g = shape(comm, nprows, npcols);
  g->owns_comms_ = false;
  const std::string name = "grid " + g->describe();
  g->comm_ = pool.dup(comm, name);
  g->row_comm_ = pool.split(g->comm_, g->myprow_, g->mypcol_, name + " rows");
  g->col_comm_ = pool.split(g->comm_, g->mypcol_, g->myprow_, name + " columns");
  return g;
}

Grid::~Grid() {
  if (!owns_comms_) return;  // the pool frees them
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (MPI_Comm* c : {&row_comm_, &col_comm_, &comm_})
    if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
}

std::string Grid::describe() const { return std::to_string(nprows_) + "x" + std::to_string(npcols_); }

Distribution::Distribution(std::shared_ptr<const Grid> grid, std::vector<int> row_dist, std::vector<int> col_dist,
                           std::string kind)
    : grid_(std::move(grid)), row_dist_(std::move(row_dist)), col_dist_(std::move(col_dist)), kind_(std::move(kind)) {
  for (std::size_t i = 0; i < row_dist_.size(); ++i) {
    if (row_dist_[i] < 0 || row_dist_[i] >= grid_->nprows())
      throw Error("Distribution", "block row " + std::to_string(i) + " mapped to process row " +
                                      std::to_string(row_dist_[i]) + " outside the grid " + grid_->describe());
    if (row_dist_[i] == grid_->myprow()) local_rows_.push_back(static_cast<int>(i));
  }
  for (std::size_t j = 0; j < col_dist_.size(); ++j) {
    if (col_dist_[j] < 0 || col_dist_[j] >= grid_->npcols())
      throw Error("Distribution", "block column " + std::to_string(j) + " mapped to process column " +
                                      std::to_string(col_dist_[j]) + " outside the grid " + grid_->describe());
    if (col_dist_[j] == grid_->mypcol()) local_cols_.push_back(static_cast<int>(j));
  }
}

std::shared_ptr<const Distribution> Distribution::block_cyclic(std::shared_ptr<const Grid> grid, int nblkrows,
                                                               int nblkcols) {
  std::vector<int> r(nblkrows), c(nblkcols);
  for (int i = 0; i < nblkrows; ++i) r[i] = i % grid->nprows();
  for (int j = 0; j < nblkcols; ++j) c[j] = j % grid->npcols();
  return std::make_shared<const Distribution>(grid, std::move(r), std::move(c), "block-cyclic");
}

namespace {
std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Deals a seeded random permutation of n items cyclically over nparts parts (platform-independent).
std::vector<int> permuted_cyclic(int n, int nparts, std::uint64_t seed) {
  std::vector<int> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  std::uint64_t state = seed;
  for (int i = n - 1; i > 0; --i) {
    const auto j = static_cast<int>(splitmix64(state) % static_cast<std::uint64_t>(i + 1));
    std::swap(perm[i], perm[j]);
  }
  std::vector<int> dist(n);
  for (int pos = 0; pos < n; ++pos) dist[perm[pos]] = pos % nparts;
  return dist;
}
}  // namespace

std::shared_ptr<const Distribution> Distribution::random_permuted(std::shared_ptr<const Grid> grid, int nblkrows,
                                                                  int nblkcols, std::uint64_t seed) {
  auto r = permuted_cyclic(nblkrows, grid->nprows(), seed);
  auto c = permuted_cyclic(nblkcols, grid->npcols(), seed ^ 0x5DEECE66DULL);
  return std::make_shared<const Distribution>(grid, std::move(r), std::move(c), "random");
}

std::shared_ptr<const Distribution> Distribution::rows_1d(std::shared_ptr<const Grid> grid, int nblkrows,
                                                          int nblkcols) {
  if (grid->npcols() != 1)
    throw Error("Distribution::rows_1d", "a 1D block-row distribution needs a Px1 grid, got " + grid->describe());
  const int p = grid->nprows();
  std::vector<int> r(nblkrows), c(nblkcols, 0);
  // Contiguous ranges: the first (nblkrows % p) ranks get one block row more.
  const int base = nblkrows / p, extra = nblkrows % p;
  int i = 0;
  for (int q = 0; q < p; ++q)
    for (int k = 0; k < base + (q < extra ? 1 : 0); ++k) r[i++] = q;
  return std::make_shared<const Distribution>(grid, std::move(r), std::move(c), "rows-1d");
}

std::shared_ptr<const Distribution> Distribution::by_name(const std::string& kind, std::shared_ptr<const Grid> grid,
                                                          int nblkrows, int nblkcols, std::uint64_t seed) {
  if (kind == "block-cyclic") return block_cyclic(std::move(grid), nblkrows, nblkcols);
  if (kind == "random") return random_permuted(std::move(grid), nblkrows, nblkcols, seed);
  if (kind == "rows-1d") return rows_1d(std::move(grid), nblkrows, nblkcols);
  throw InputError("Distribution", "unknown distribution '" + kind + "' (block-cyclic, random, rows-1d)");
}

}  // namespace plexus
