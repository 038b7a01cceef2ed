#include "plexus/distribution.hpp"

#include <cstdint>
#include <numeric>
#include <string>

#include "plexus/comm_pool.hpp"
#include "plexus/error.hpp"
#include "plexus/mpi.hpp"
#include "plexus/panel.hpp"
#include "plexus/progress.hpp"

namespace plexus {

namespace {
std::string dims_text(int nprows, int npcols, int nlayers) {
  std::string s = std::to_string(nprows) + "x" + std::to_string(npcols);
  if (nlayers != 1) s.append("x").append(std::to_string(nlayers));
  return s;
}

// PR x PC for the ranks of one layer: given, or completed by MPI_Dims_create (local, no messages).
void plane_dims(int p, int nlayers, int dims[2]) {
  if (p % nlayers != 0)
    throw InputError("Grid",
                     std::to_string(nlayers) + " layers do not divide the number of ranks " + std::to_string(p));
  const int q = p / nlayers;
  const std::string of = nlayers == 1 ? "" : " per layer";
  for (int d : {dims[0], dims[1]})
    if (d > 0 && q % d != 0)
      throw InputError("Grid", "grid dimension " + std::to_string(d) + " does not divide the number of ranks" + of +
                                   " " + std::to_string(q));
  mpi::check(MPI_Dims_create(q, 2, dims), "MPI_Dims_create");
}
}  // namespace

// The dimensions and my coordinates, without communicators. Checks only what every rank knows
// alike, so a bad shape throws on every rank before any communication.
std::shared_ptr<Grid> Grid::shape(MPI_Comm comm, int nprows, int npcols, int nlayers) {
  const int p = mpi::size(comm);
  if (nprows < 0 || npcols < 0) throw InputError("Grid", "grid dimensions must be >= 0 (0 = automatic)");
  if (nlayers < 1) throw InputError("Grid", "the number of layers must be >= 1, got " + std::to_string(nlayers));
  int dims[2] = {nprows, npcols};
  if (nprows > 0 && npcols > 0) {
    const std::int64_t need = std::int64_t{nprows} * npcols * nlayers;
    if (need != p)
      throw InputError("Grid", "grid " + dims_text(nprows, npcols, nlayers) + " needs " + std::to_string(need) +
                                   " ranks, but the job has " + std::to_string(p));
  } else {
    plane_dims(p, nlayers, dims);
  }
  auto g = std::shared_ptr<Grid>(new Grid());
  g->nprows_ = dims[0];
  g->npcols_ = dims[1];
  g->nlayers_ = nlayers;
  g->rank_ = mpi::rank(comm);
  const int plane = g->nprows_ * g->npcols_, in_plane = g->rank_ % plane;
  g->mylayer_ = g->rank_ / plane;  // rank = (layer * PR + prow) * PC + pcol
  g->myprow_ = in_plane / g->npcols_;
  g->mypcol_ = in_plane % g->npcols_;
  return g;
}

// The plane, fibre, row and column communicators of my coordinates, split from comm_. A 2D grid
// makes only rows and columns (its plane is comm_, its fibre MPI_COMM_SELF).
void Grid::make_comms(CommPool& pool, const std::string& name) {
  pool_ = &pool;
  const int in_plane = myprow_ * npcols_ + mypcol_;
  if (nlayers_ > 1) {
    plane_comm_ = pool.split(comm_, mylayer_, in_plane, name + " planes");
    fibre_comm_ = pool.split(comm_, in_plane, mylayer_, name + " fibres");
  } else {
    plane_comm_ = comm_;
    fibre_comm_ = MPI_COMM_SELF;
  }
  row_comm_ = pool.split(plane_comm_, myprow_, mypcol_, name + " rows");
  col_comm_ = pool.split(plane_comm_, mypcol_, myprow_, name + " columns");
}

std::shared_ptr<const Grid> Grid::create(MPI_Comm comm, int nprows, int npcols, int nlayers) {
  auto g = shape(comm, nprows, npcols, nlayers);
  g->own_pool_ = std::make_unique<CommPool>();
  g->comm_ = g->own_pool_->dup(comm, "grid");
  g->make_comms(*g->own_pool_, "grid");
  return g;
}

std::shared_ptr<const Grid> Grid::create(CommPool& pool, MPI_Comm comm, int nprows, int npcols, int nlayers) {
  auto g = shape(comm, nprows, npcols, nlayers);
  const std::string name = "grid " + g->describe();
  g->comm_ = pool.dup(comm, name);
  g->make_comms(pool, name);
  return g;
}

std::shared_ptr<const Grid> Grid::layered(int sr, int sc) const {
  const std::string what = "layered view " + std::to_string(sr) + "x" + std::to_string(sc) + " of grid " + describe();
  if (nlayers_ != 1) throw InputError("Grid", what + ": the grid has layers already");
  if (sr < 1 || sc < 1 || nprows_ % sr != 0 || npcols_ % sc != 0)
    throw InputError("Grid", what + ": the group's rows and columns must divide the grid's (" +
                                 std::to_string(nprows_) + " and " + std::to_string(npcols_) + ")");
  if (sr == 1 && sc == 1) return shared_from_this();
  auto v = std::shared_ptr<Grid>(new Grid());
  v->parent_ = shared_from_this();
  v->comm_ = comm_;
  v->rank_ = rank_;
  v->nprows_ = nprows_ / sr;
  v->npcols_ = npcols_ / sc;
  v->nlayers_ = sr * sc;
  v->group_rows_ = sr;
  v->group_cols_ = sc;
  v->myprow_ = myprow_ / sr;  // my group
  v->mypcol_ = mypcol_ / sc;
  v->mylayer_ = (myprow_ % sr) * sc + mypcol_ % sc;  // my place in it, row-major
  v->make_comms(*pool_, "layers " + std::to_string(sr) + "x" + std::to_string(sc) + " of grid " + describe());
  return v;
}

std::shared_ptr<const Grid> Grid::reshaped(int nprows, int npcols) const {
  if (nprows < 1 || npcols < 1)
    throw InputError("Grid", "a reshaped grid needs positive dimensions, got " + dims_text(nprows, npcols, 1));
  auto g = shape(comm_, nprows, npcols, 1);  // checks PR * PC = size, before any communication
  g->parent_ = shared_from_this();
  g->comm_ = comm_;  // the same ranks in the same order
  g->make_comms(*pool_, "grid " + g->describe() + " reshaped from grid " + describe());
  return g;
}

bool Grid::same_placement(const Grid& o) const {
  if (this == &o) return true;
  if (nprows_ != o.nprows_ || npcols_ != o.npcols_ || nlayers_ != o.nlayers_) return false;
  for (int l = 0; l < nlayers_; ++l)
    for (int r = 0; r < nprows_; ++r)
      for (int c = 0; c < npcols_; ++c)
        if (rank_of(r, c, l) != o.rank_of(r, c, l)) return false;
  return true;
}

Grid::~Grid() {
  if (!own_pool_) return;  // communicators of a pool the grid does not own: its release() frees them
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized || progress::unwinding()) {
    // Too late to free them, or the stack unwinds: MPI_Comm_free is collective, and the other
    // ranks may never join it. They are left to the end of the process.
    own_pool_->forget();
    return;
  }
  try {
    own_pool_->release();
  } catch (...) {
    own_pool_->forget();  // a destructor does not throw; MPI reports its own errors
  }
}

std::string Grid::describe() const {
  std::string s = dims_text(nprows_, npcols_, nlayers_);
  if (parent_)
    s += " (" + std::to_string(group_rows_) + "x" + std::to_string(group_cols_) + " groups of " + parent_->describe() +
         ")";
  return s;
}

Distribution::Distribution(std::shared_ptr<const Grid> grid, std::vector<int> row_dist, std::vector<int> col_dist,
                           std::string kind)
    : grid_(std::move(grid)), row_dist_(std::move(row_dist)), col_dist_(std::move(col_dist)), kind_(std::move(kind)) {
  for (std::size_t i = 0; i < row_dist_.size(); ++i) {
    if (row_dist_[i] < 0 || row_dist_[i] >= grid_->nprows())
      throw Error("Distribution", "block row " + std::to_string(i) + " mapped to process row " +
                                      std::to_string(row_dist_[i]) + " outside the grid " + grid_->describe());
    if (row_dist_[i] == grid_->myprow() && grid_->mylayer() == 0) local_rows_.push_back(static_cast<int>(i));
  }
  for (std::size_t j = 0; j < col_dist_.size(); ++j) {
    if (col_dist_[j] < 0 || col_dist_[j] >= grid_->npcols())
      throw Error("Distribution", "block column " + std::to_string(j) + " mapped to process column " +
                                      std::to_string(col_dist_[j]) + " outside the grid " + grid_->describe());
    if (col_dist_[j] == grid_->mypcol() && grid_->mylayer() == 0) local_cols_.push_back(static_cast<int>(j));
  }
  auto none = std::make_shared<PanelIndex>();
  none->row_ids.assign(local_rows_.begin(), local_rows_.end());
  none->row_ptr.assign(local_rows_.size() + 1, 0);
  no_blocks_ = std::move(none);
}

PanelView Distribution::empty_local_view() const { return no_blocks_->view(nullptr, 0); }

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
