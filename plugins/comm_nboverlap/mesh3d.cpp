#include "mesh3d.hpp"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>

#include "plexus/error.hpp"
#include "plexus/exchange.hpp"
#include "plexus/multiply_support.hpp"

namespace plexus::nboverlap {

Variant variant_of(const std::string& name) {
  if (name == "original") return Variant::Original;
  if (name == "baseline") return Variant::Baseline;
  if (name == "optimized") return Variant::Optimized;
  throw InputError("Communication/nboverlap/Variant",
                   "unknown Variant '" + name + "' (valid: original, baseline, optimized)");
}

const char* variant_name(Variant v) {
  switch (v) {
    case Variant::Original: return "original";
    case Variant::Baseline: return "baseline";
    case Variant::Optimized: return "optimized";
  }
  return "?";
}

int mesh_side(int ranks, int active_ranks) {
  const int n = active_ranks > 0 ? std::min(active_ranks, ranks) : ranks;
  int p = 1;
  while ((p + 1) * (p + 1) * (p + 1) <= n) ++p;
  return p;
}

namespace {

using mpi::Payload;
using mpi::Role;
using mpi::Traffic;

// Tags of the point-to-point streams (+ element: 0 the index, 1 + c part c).
constexpr int kTagB = 7600, kTagReturn = 7700, kTagReturn2 = 7800, kTagTranspose = 7900, kTagHeader = 7590;

std::vector<int> cyclic(int n, int p) {
  std::vector<int> m(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) m[static_cast<std::size_t>(i)] = i % p;
  return m;
}

// The active mesh of one operation over a 2D grid.
struct Mesh {
  MPI_Comm all = MPI_COMM_NULL;  // the operands' grid
  int P = 1, me = 0, p = 1, n = 1;
  bool active = true;
  std::shared_ptr<const Grid> grid;  // p x p x p over the active ranks; null on idle ranks
  int i = 0, j = 0, k = 0;           // my P_{i,j,k}
  MPI_Comm fibre = MPI_COMM_NULL;    // P_{i,j,:}, by k
  MPI_Comm bcol = MPI_COMM_NULL;     // P_{:,j,k}, by i (the paper's row_comm: B travels here)
  MPI_Comm rrow = MPI_COMM_NULL;     // P_{i,:,k}, by j (the paper's col_comm: C is reduced here)
  MPI_Comm mesh = MPI_COMM_NULL;     // the active ranks, rank (k p + i) p + j
  CommPool* pool = nullptr;
  MPI_Comm release = MPI_COMM_NULL;  // all ranks, for the idle ranks' release (when n < P)
  int rank_of(int pi, int pj, int pk) const { return (pk * p + pi) * p + pj; }
};

// The part communicators of every mesh communicator, made before the schedule (a duplicate is
// collective: made inside a pipeline, one rank's wait for a part could stand before another's
// MPI_Comm_dup). Same order on every rank: the mesh, the fibres, the B columns, the C rows.
Mesh make_mesh(const Grid& g, int active_ranks, const PartPlan& plan) {
  Mesh m;
  m.all = g.comm();
  m.P = g.size();
  m.me = g.rank();
  m.p = mesh_side(m.P, active_ranks);
  m.n = m.p * m.p * m.p;
  m.active = m.me < m.n;
  m.pool = &g.pool();
  const MPI_Comm act = m.n == m.P ? m.all
                                  : m.pool->split(m.all, m.active ? 0 : MPI_UNDEFINED, m.me,
                                                  "nboverlap active " + std::to_string(m.n) + " of " +
                                                      std::to_string(m.P));
  if (m.n < m.P) m.release = m.pool->dup(m.all, "nboverlap idle release");
  if (!m.active) return m;
  m.grid = Grid::create(*m.pool, act, m.p, m.p, m.p);
  m.i = m.grid->myprow();
  m.j = m.grid->mypcol();
  m.k = m.grid->mylayer();
  m.fibre = m.grid->fibre_comm();
  m.bcol = m.grid->col_comm();
  m.rrow = m.grid->row_comm();
  m.mesh = m.grid->comm();
  for (const MPI_Comm c : {m.mesh, m.fibre, m.bcol, m.rrow})
    for (int part = 1; part < plan.ndup; ++part) part_comm(*m.pool, c, part);
  return m;
}

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// The ranks beyond the mesh wait for the operation's end: MPI_Ibarrier, then MPI_Test every 10 ms
// (Huang and Chow's mechanism); the active ranks join the barrier when they are done. An idle rank
// tells how long it waited and the CPU time its thread used meanwhile.
struct IdleTime {
  double seconds = 0, cpu_seconds = 0;
};

void idle_until_released(const Mesh& m, IdleTime* idle) {
  if (m.n == m.P) return;
  MPI_Request r = MPI_REQUEST_NULL;
  mpi::check(MPI_Ibarrier(m.release, &r), "MPI_Ibarrier");
  const double t0 = mpi::now(), c0 = cpu_seconds();
  int done = 0;
  while (true) {
    mpi::check(MPI_Test(&r, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) break;
    if (!m.active) usleep(10000);
  }
  if (idle) *idle = IdleTime{mpi::now() - t0, cpu_seconds() - c0};
}

// Whether X's blocks sit on the plane already: a 2D grid of p columns whose first p process rows
// are the plane's ranks P_{i,j,0} = i p + j.
bool on_plane(const DistMatrix& X, int p) {
  const Grid& g = X.grid();
  if (g.nlayers() != 1 || g.group_rows() * g.group_cols() != 1 || g.npcols() != p) return false;
  const auto& rd = X.distribution().row_dist();
  return std::all_of(rd.begin(), rd.end(), [p](int r) { return r < p; });
}

std::vector<int> rows_of_group(const std::vector<int>& map, int g) {
  std::vector<int> rows;
  for (int r = 0; r < static_cast<int>(map.size()); ++r)
    if (map[static_cast<std::size_t>(r)] == g) rows.push_back(r);
  return rows;
}

// A panel over `rows` from exchanged blocks (sorted by row, then column).
Panel panel_of(const ExchangedBlocks& got, const BlockLayout& layout, const std::vector<int>& rows) {
  Panel out(rows);
  std::map<int, int> row_index;
  for (int r = 0; r < static_cast<int>(rows.size()); ++r) row_index[rows[static_cast<std::size_t>(r)]] = r;
  for (const auto& b : got.blocks) {
    const auto it = row_index.find(b.row);
    if (it == row_index.end()) throw Error("nboverlap", "a block of a row this rank does not hold arrived");
    const int n = layout.rows.size(b.row) * layout.cols.size(b.col);
    std::memcpy(out.append_block(it->second, b.col, n), got.values.data() + b.offset, sizeof(double) * n);
  }
  return out;
}

// The blocks of a panel moved to the ranks `dest` names (one counted exchange over comm).
Panel moved(const PanelView& v, const BlockLayout& layout, MPI_Comm comm, const std::function<int(int, int)>& dest,
            const std::vector<int>& my_rows, Traffic& t, Role role) {
  const ExchangedBlocks got = exchange_blocks(
      v, layout, comm,
      [&](int r, int c, int& tag) {
        tag = 0;
        return dest(r, c);
      },
      t, role);
  return panel_of(got, layout, my_rows);
}

// The transpose of a panel of a matrix with square blocks of the same sizes on rows and columns
// (D_kj -> D_kj^T, which is D_jk for a symmetric D), over `rows` (the old columns).
Panel transposed(const PanelView& v, const BlockLayout& layout, const std::vector<int>& rows) {
  struct Ref {
    int row, col;
    std::int64_t b;
    int src_row;
  };
  std::vector<Ref> refs;
  refs.reserve(static_cast<std::size_t>(v.nblocks));
  for (int r = 0; r < v.nrows; ++r)
    for (std::int64_t b = v.row_ptr[r]; b < v.row_ptr[r + 1]; ++b)
      refs.push_back({static_cast<int>(v.cols[b]), static_cast<int>(v.row_ids[r]), b, static_cast<int>(v.row_ids[r])});
  std::sort(refs.begin(), refs.end(), [](const Ref& x, const Ref& y) { return x.row != y.row ? x.row < y.row : x.col < y.col; });
  Panel out(rows);
  std::size_t ri = 0;
  for (const Ref& f : refs) {
    while (ri < rows.size() && rows[ri] != f.row) ++ri;
    if (ri == rows.size()) throw Error("nboverlap", "a transposed block falls outside the panel's rows");
    const int m = layout.cols.size(f.row), n = layout.rows.size(f.src_row);  // new block: m x n
    double* dst = out.append_block(static_cast<int>(ri), f.col, m * n);
    const double* src = v.data + v.offsets[f.b];  // n x m, column-major
    for (int c = 0; c < n; ++c)
      for (int r = 0; r < m; ++r) dst[r + static_cast<std::size_t>(c) * m] = src[c + static_cast<std::size_t>(r) * n];
  }
  return out;
}

// The blocks of a view whose Frobenius norm is at least eps (DistMatrix::filter's rule).
Panel filtered(const PanelView& v, const BlockLayout& layout, double eps) {
  const std::vector<double> norms = block_norms(v, layout);
  std::vector<int> rows(v.row_ids, v.row_ids + v.nrows);
  Panel out(rows);
  for (int r = 0; r < v.nrows; ++r)
    for (std::int64_t b = v.row_ptr[r]; b < v.row_ptr[r + 1]; ++b) {
      if (norms[static_cast<std::size_t>(b)] < eps) continue;
      const int n = layout.rows.size(static_cast<int>(v.row_ids[r])) * layout.cols.size(static_cast<int>(v.cols[b]));
      std::copy(v.data + v.offsets[b], v.data + v.offsets[b] + n, out.append_block(r, static_cast<int>(v.cols[b]), n));
    }
  return out;
}

// A panel in flight: packed index words and values, cut into parts; element 0 is the index,
// element 1 + c part c of the values.
struct Wire {
  CommBuffer<std::int64_t> index;
  CommBuffer<double> values;
  int parts = 1;
  std::vector<MPI_Request> req;  // one per element
  Role role = Role::Other;

  void size(std::int64_t words, std::int64_t nvalues, const PartPlan& plan) {
    index.assign(static_cast<std::size_t>(words), 0);
    values.assign(static_cast<std::size_t>(nvalues), 0.0);
    parts = plan.parts(nvalues);
    req.assign(static_cast<std::size_t>(parts) + 1, MPI_REQUEST_NULL);
  }
  void fill(const Panel& p, const PartPlan& plan) {
    size(PanelView::packed_words(p.nrows(), p.nblocks()), p.data_size(), plan);
    p.pack_to(index.data());
    std::copy(p.data().begin(), p.data().end(), values.begin());
  }
  int elements() const { return parts + 1; }
  // Pointer, count, datatype and payload of element e.
  void* ptr(int e) { return e == 0 ? static_cast<void*>(index.data()) : values.data() + range(e).first; }
  int count(int e) const {
    if (e == 0) return static_cast<int>(index.size());
    const auto [b, x] = range(e);
    return static_cast<int>(x - b);
  }
  std::pair<std::int64_t, std::int64_t> range(int e) const {
    return part_range(static_cast<std::int64_t>(values.size()), parts, e - 1);
  }
  static MPI_Datatype type(int e) { return e == 0 ? MPI_INT64_T : MPI_DOUBLE; }
  static Payload payload(int e) { return e == 0 ? Payload::Index : Payload::Data; }
  PanelView view() const {
    return PanelView::from_packed(index.data(), static_cast<std::int64_t>(index.size()), values.data());
  }
};

// The schedule's transport: every element counted per role, waits timed.
class Transport {
 public:
  Transport(CommPool& pool, Traffic& traffic) : pool_(pool), t_(traffic) {}

  MPI_Comm part(MPI_Comm comm, int e) { return part_comm(pool_, comm, e == 0 ? 0 : e - 1); }

  void bcast(Wire& w, int e, MPI_Comm comm, int root) {
    const int np = mpi::size(comm), me = mpi::rank(comm);
    mpi::check(MPI_Ibcast(w.ptr(e), w.count(e), Wire::type(e), root, part(comm, e), &w.req[static_cast<std::size_t>(e)]),
               "MPI_Ibcast");
    if (np == 1) return;
    if (me == root)
      t_.add_sent(w.role, Wire::payload(e), 8 * std::int64_t{w.count(e)}, 1);
    else
      t_.add_received(w.role, Wire::payload(e), 8 * std::int64_t{w.count(e)}, 1);
  }
  void send(Wire& w, int e, int dest, MPI_Comm comm, int tag) {
    mpi::check(MPI_Isend(w.ptr(e), w.count(e), Wire::type(e), dest, tag + e, part(comm, e),
                         &w.req[static_cast<std::size_t>(e)]),
               "MPI_Isend");
    t_.add_sent(w.role, Wire::payload(e), 8 * std::int64_t{w.count(e)}, 1);
  }
  void recv(Wire& w, int e, int src, MPI_Comm comm, int tag) {
    mpi::check(MPI_Irecv(w.ptr(e), w.count(e), Wire::type(e), src, tag + e, part(comm, e),
                         &w.req[static_cast<std::size_t>(e)]),
               "MPI_Irecv");
    t_.add_received(w.role, Wire::payload(e), 8 * std::int64_t{w.count(e)}, 1);
  }
  // Part e of `in` summed into part e of out's values on root (the index is not reduced).
  void reduce(const CommBuffer<double>& in, Wire& out, int e, MPI_Comm comm, int root) {
    const int np = mpi::size(comm), me = mpi::rank(comm);
    const auto [b, x] = out.range(e);
    mpi::check(MPI_Ireduce(in.data() + b, me == root ? out.values.data() + b : nullptr, static_cast<int>(x - b),
                           MPI_DOUBLE, MPI_SUM, root, part(comm, e), &out.req[static_cast<std::size_t>(e)]),
               "MPI_Ireduce");
    if (me == root)
      t_.add_received(out.role, Payload::Data, 8 * (x - b) * (np - 1), np - 1);
    else
      t_.add_sent(out.role, Payload::Data, 8 * (x - b), 1);
  }
  void wait(Wire& w, int e) {
    const double t0 = mpi::now();
    mpi::check(MPI_Wait(&w.req[static_cast<std::size_t>(e)], MPI_STATUS_IGNORE), "MPI_Wait");
    t_.add_wait(w.role, mpi::now() - t0);
  }
  void wait_all(Wire& w) {
    for (int e = 0; e < w.elements(); ++e) wait(w, e);
  }
  // Sizes (index words, values) of a panel from root to the others of comm (blocking, small).
  std::pair<std::int64_t, std::int64_t> bcast_sizes(std::int64_t words, std::int64_t nvalues, MPI_Comm comm, int root,
                                                    Role role) {
    std::int64_t s[2] = {words, nvalues};
    const double t0 = mpi::now();
    mpi::check(MPI_Bcast(s, 2, MPI_INT64_T, root, part(comm, 0)), "MPI_Bcast");
    t_.add_wait(role, mpi::now() - t0);
    if (mpi::size(comm) > 1) {
      if (mpi::rank(comm) == root)
        t_.add_sent(role, Payload::Index, 16, 1);
      else
        t_.add_received(role, Payload::Index, 16, 1);
    }
    return {s[0], s[1]};
  }
  Traffic& traffic() { return t_; }

 private:
  CommPool& pool_;
  Traffic& t_;
};

// C_{i,:,k} reduced over rrow: the union of the partial panels' patterns (gathered), the values
// laid out on it and summed in parts onto the root.
struct Reduction {
  Wire sum;                 // the union's index everywhere; the summed values on the root
  CommBuffer<double> mine;  // my partial panel on the union pattern
  int root = 0;
  std::int64_t header[2] = {0, 0};
  MPI_Request header_req = MPI_REQUEST_NULL;
};

void start_reduction(Transport& tr, const Panel& partial, const BlockLayout& layout, const std::vector<int>& rows,
                     MPI_Comm rrow, int root, const PartPlan& plan, Reduction& red, Role role) {
  const int np = mpi::size(rrow), me = mpi::rank(rrow);
  // The members' patterns: packed index words, gathered.
  std::vector<std::int64_t> words;
  partial.pack_index(words);
  const int mine = static_cast<int>(words.size());
  std::vector<int> counts(static_cast<std::size_t>(np)), displs(static_cast<std::size_t>(np), 0);
  mpi::check(MPI_Allgather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, rrow), "MPI_Allgather");
  for (int q = 1; q < np; ++q) displs[static_cast<std::size_t>(q)] = displs[static_cast<std::size_t>(q - 1)] + counts[static_cast<std::size_t>(q - 1)];
  CommBuffer<std::int64_t> all(static_cast<std::size_t>(displs.back() + counts.back()));
  const double t0 = mpi::now();
  mpi::check(MPI_Allgatherv(words.data(), mine, MPI_INT64_T, all.data(), counts.data(), displs.data(), MPI_INT64_T,
                            rrow),
             "MPI_Allgatherv");
  tr.traffic().add_wait(role, mpi::now() - t0);
  for (int q = 0; q < np; ++q)
    if (q != me) {
      tr.traffic().add_sent(role, Payload::Index, 8 * std::int64_t{mine}, 1);
      tr.traffic().add_received(role, Payload::Index, 8 * std::int64_t{counts[static_cast<std::size_t>(q)]}, 1);
    }
  // The union, row by row (every member holds the same rows).
  std::vector<std::vector<int>> cols(rows.size());
  for (int q = 0; q < np; ++q) {
    const std::int64_t* w = all.data() + displs[static_cast<std::size_t>(q)];
    const PanelView v = PanelView::from_packed(w, counts[static_cast<std::size_t>(q)], nullptr);
    for (int r = 0; r < v.nrows; ++r)
      for (std::int64_t b = v.row_ptr[r]; b < v.row_ptr[r + 1]; ++b) cols[static_cast<std::size_t>(r)].push_back(static_cast<int>(v.cols[b]));
  }
  IndexArray row_ids(rows.begin(), rows.end()), row_ptr(1, 0), ucols, offsets;
  std::int64_t nvalues = 0;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    auto& c = cols[r];
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
    for (int col : c) {
      ucols.push_back(col);
      offsets.push_back(nvalues);
      nvalues += std::int64_t{layout.rows.size(rows[r])} * layout.cols.size(col);
    }
    row_ptr.push_back(static_cast<std::int64_t>(ucols.size()));
  }
  const Panel pattern = Panel::adopt(std::move(row_ids), std::move(row_ptr), std::move(ucols), std::move(offsets),
                                     MatrixData(static_cast<std::size_t>(nvalues), 0.0));
  red.sum.role = role;
  red.sum.fill(pattern, plan);  // index and zero values
  red.root = root;
  // My blocks on the union.
  red.mine.assign(static_cast<std::size_t>(nvalues), 0.0);
  const PanelView u = pattern.view(), v = partial.view();
  for (int r = 0; r < v.nrows; ++r) {
    std::int64_t ub = u.row_ptr[r];
    for (std::int64_t b = v.row_ptr[r]; b < v.row_ptr[r + 1]; ++b) {
      while (u.cols[ub] != v.cols[b]) ++ub;
      const std::int64_t n = std::int64_t{layout.rows.size(static_cast<int>(v.row_ids[r]))} * layout.cols.size(static_cast<int>(v.cols[b]));
      std::copy(v.data + v.offsets[b], v.data + v.offsets[b] + n, red.mine.data() + u.offsets[ub]);
    }
  }
  for (int e = 1; e < red.sum.elements(); ++e) tr.reduce(red.mine, red.sum, e, rrow, root);
}

// A panel from src to dest over `comm` (mesh ranks): a small header (sizes), then the index and
// the parts. The sender posts everything it can; `ready(e)` is waited before part e is sent (the
// pipeline's upstream); the receiver learns the sizes from the header.
void send_panel(Transport& tr, Wire& w, int dest, MPI_Comm comm, int tag, std::int64_t* header, MPI_Request* hreq,
                const std::function<void(int)>& ready) {
  header[0] = static_cast<std::int64_t>(w.index.size());
  header[1] = static_cast<std::int64_t>(w.values.size());
  mpi::check(MPI_Isend(header, 2, MPI_INT64_T, dest, kTagHeader + tag, comm, hreq), "MPI_Isend");
  tr.traffic().add_sent(w.role, Payload::Index, 16, 1);
  for (int e = 0; e < w.elements(); ++e) {
    if (ready) ready(e);
    tr.send(w, e, dest, comm, tag);
  }
}

void recv_panel(Transport& tr, Wire& w, int src, MPI_Comm comm, int tag, const PartPlan& plan) {
  std::int64_t header[2] = {0, 0};
  const double t0 = mpi::now();
  mpi::check(MPI_Recv(header, 2, MPI_INT64_T, src, kTagHeader + tag, comm, MPI_STATUS_IGNORE), "MPI_Recv");
  tr.traffic().add_wait(w.role, mpi::now() - t0);
  tr.traffic().add_received(w.role, Payload::Index, 16, 1);
  w.size(header[0], header[1], plan);
  for (int e = 0; e < w.elements(); ++e) tr.recv(w, e, src, comm, tag);
}

void wait_header(MPI_Request* r) { mpi::check(MPI_Wait(r, MPI_STATUS_IGNORE), "MPI_Wait"); }

// What one rank of the plane holds of an operand: its panel (in place or moved there).
struct PlaneOperand {
  const Panel* panel = nullptr;  // the plane panel (layer 0 only)
  Panel owned;                   // when moved
};

// X's panel on the plane: X's own when it is placed by the maps (`in`), else its blocks moved to
// P_{rm(r), cm(c), 0} (one counted exchange over all ranks, idle ones included).
void to_plane(const DistMatrix& X, const std::vector<int>& rm, const std::vector<int>& cm, bool in, const Mesh& m,
              Traffic& traffic, Role role, PlaneOperand& out) {
  if (in) {
    out.panel = &X.local();
    return;
  }
  out.owned = moved(
      X.local().view(), X.layout(), m.all,
      [&](int r, int c) { return m.rank_of(rm[static_cast<std::size_t>(r)], cm[static_cast<std::size_t>(c)], 0); },
      m.active && m.k == 0 ? rows_of_group(rm, m.i) : std::vector<int>{}, traffic, role);
  out.panel = &out.owned;
}

// A result held on the plane as the panel of `target`'s distribution on this rank: moved to the
// owners (role C) when the target is not placed on the plane (`in` false), else kept by the plane
// ranks (the others hold no rows).
Panel from_plane(Panel&& plane, const DistMatrix& target, bool in, const Mesh& m, Traffic& traffic) {
  const Distribution& d = target.distribution();
  if (!in)
    return moved(plane.view(), target.layout(), m.all, [&d](int r, int c) { return d.owner(r, c); }, d.local_rows(),
                 traffic, Role::C);
  if (m.active && m.k == 0) return std::move(plane);
  return Panel(d.local_rows());
}

// The strategy figures of one operation on the mesh.
void mesh_figures(std::map<std::string, double>& extra, const Mesh& m, const PartPlan& plan, const IdleTime* idle) {
  extra["mesh_side"] = m.p;
  extra["active_ranks"] = m.n;
  extra["parts"] = plan.ndup;
  if (m.n < m.P) {
    extra["idle_seconds"] = idle ? idle->seconds : 0.0;
    extra["idle_cpu_seconds"] = idle ? idle->cpu_seconds : 0.0;
  }
}

// Sizes of every plane panel of up to two operands, known to every active rank (one allgather).
struct PlaneSizes {
  std::vector<std::int64_t> s;  // per mesh rank: words and values of operand 0, then of operand 1
  std::int64_t words(int rank, int op) const { return s[static_cast<std::size_t>(4 * rank + 2 * op)]; }
  std::int64_t values(int rank, int op) const { return s[static_cast<std::size_t>(4 * rank + 2 * op + 1)]; }
};

PlaneSizes gather_sizes(const Mesh& m, const Panel* a, const Panel* b, Traffic& t) {
  std::int64_t mine[4] = {0, 0, 0, 0};
  if (m.k == 0) {
    if (a) mine[0] = PanelView::packed_words(a->nrows(), a->nblocks()), mine[1] = a->data_size();
    if (b) mine[2] = PanelView::packed_words(b->nrows(), b->nblocks()), mine[3] = b->data_size();
  }
  PlaneSizes ps;
  ps.s.resize(static_cast<std::size_t>(4 * m.n));
  mpi::check(MPI_Allgather(mine, 4, MPI_INT64_T, ps.s.data(), 4, MPI_INT64_T, m.mesh), "MPI_Allgather");
  if (m.n > 1) {
    t.add_sent(Role::Other, Payload::Index, 32 * (m.n - 1), m.n - 1);
    t.add_received(Role::Other, Payload::Index, 32 * (m.n - 1), m.n - 1);
  }
  return ps;
}

// One local product C_{i,k} (partial, inner group j) of A_ij and B_jk over the rows of group i.
Panel local_product(Kernel& kernel, const PanelView& a, const BlockLayout& a_layout, const PanelView& b,
                    const BlockLayout& b_layout, const BlockLayout& c_layout, const std::vector<int>& rows,
                    const std::vector<double>& thresholds, LocalMultiplyStats& stats) {
  const Panel empty(rows);
  LocalProduct product(empty.view(), c_layout, kernel, kernel.threads(), thresholds_of_rows(thresholds, rows));
  product.multiply(a, a_layout, b, b_layout);
  Panel out = product.finish();
  stats += product.stats();
  return out;
}

}  // namespace

std::shared_ptr<const Distribution> Mesh3D::distribution_for(std::shared_ptr<const Distribution> proposal) const {
  const Grid& g = proposal->grid();
  if (g.nlayers() != 1) return proposal;  // refused by the driver with its own message
  const int P = g.size(), p = mesh_side(P, opt_.active_ranks);
  if (P % p != 0) return proposal;  // moved to the plane in every multiply
  const std::shared_ptr<const Grid> plane = g.reshaped(P / p, p);
  return std::make_shared<const Distribution>(plane, cyclic(proposal->nblkrows(), p), cyclic(proposal->nblkcols(), p),
                                              "nboverlap-plane");
}

Panel Mesh3D::run(MultiplyTask& task) {
  const DistMatrix &A = task.a(), &B = task.b(), &C = task.c();
  const PartPlan plan = opt_.variant == Variant::Optimized ? opt_.plan : PartPlan{1, 0};
  const Mesh m = make_mesh(C.grid(), opt_.active_ranks, plan);
  const int p = m.p;
  const int nr = C.distribution().nblkrows(), nk = A.distribution().nblkcols(), nc = C.distribution().nblkcols();
  // The group maps: C's (and so op(A)'s rows, op(B)'s columns) when C is on the plane, the inner
  // dimension A's or B's when one of them is; block-cyclic otherwise.
  const bool c_in = on_plane(C, p);
  const std::vector<int> mr = c_in ? C.distribution().row_dist() : cyclic(nr, p);
  const std::vector<int> mc = c_in ? C.distribution().col_dist() : cyclic(nc, p);
  const std::vector<int> mk = on_plane(A, p)   ? A.distribution().col_dist()
                              : on_plane(B, p) ? B.distribution().row_dist()
                                               : cyclic(nk, p);
  Traffic traffic;
  Transport tr(*m.pool, traffic);
  auto plane_rank = [&m](int gi, int gj) { return m.rank_of(gi, gj, 0); };  // in m.all as in m.mesh

  // Operands onto the plane (counted), or in place.
  auto placed = [&](const DistMatrix& X, const std::vector<int>& rm, const std::vector<int>& cm) {
    return on_plane(X, p) && X.distribution().row_dist() == rm && X.distribution().col_dist() == cm;
  };
  PlaneOperand pa, pb;
  to_plane(A, mr, mk, placed(A, mr, mk), m, traffic, Role::A, pa);
  to_plane(B, mk, mc, placed(B, mk, mc), m, traffic, Role::B, pb);

  Panel result_plane;  // C_{i,j} on P_{i,j,0}
  IdleTime idle;
  if (!m.active) {
    idle_until_released(m, &idle);
  } else {
    const std::vector<int> rows_i = rows_of_group(mr, m.i);
    const PlaneSizes sizes = gather_sizes(m, m.k == 0 ? pa.panel : nullptr, m.k == 0 ? pb.panel : nullptr, traffic);
    // A_ij along the fibre from P_{i,j,0}.
    Wire wa;
    wa.role = Role::A;
    if (m.k == 0)
      wa.fill(*pa.panel, plan);
    else
      wa.size(sizes.words(plane_rank(m.i, m.j), 0), sizes.values(plane_rank(m.i, m.j), 0), plan);
    for (int e = 0; e < wa.elements(); ++e) tr.bcast(wa, e, m.fibre, 0);
    // B_jk: from P_{j,k,0} to the root P_{k,j,k} of P_{:,j,k}, then along P_{:,j,k}.
    Wire wb, wout;
    wb.role = Role::B;
    wout.role = Role::B;
    std::int64_t header[2];
    MPI_Request hreq = MPI_REQUEST_NULL;
    if (m.k == 0) {  // my B panel B_{i,j} goes to P_{j,i,j}
      const int dest = m.rank_of(m.j, m.i, m.j);
      if (dest != m.rank_of(m.i, m.j, 0)) {
        wout.fill(*pb.panel, plan);
        send_panel(tr, wout, dest, m.mesh, kTagB, header, &hreq, {});
      }
    }
    const int src = m.rank_of(m.j, m.k, 0);
    if (m.i == m.k) {  // the root of P_{:,j,k}
      if (src == m.rank_of(m.i, m.j, m.k))
        wb.fill(*pb.panel, plan);
      else
        recv_panel(tr, wb, src, m.mesh, kTagB, plan);
      for (int e = 0; e < wb.elements(); ++e) {
        if (src != m.rank_of(m.i, m.j, m.k)) tr.wait(wb, e);
        tr.bcast(wb, e, m.bcol, m.k);
      }
    } else {
      wb.size(sizes.words(src, 1), sizes.values(src, 1), plan);
      for (int e = 0; e < wb.elements(); ++e) tr.bcast(wb, e, m.bcol, m.k);
    }
    tr.wait_all(wa);
    tr.wait_all(wb);
    if (hreq != MPI_REQUEST_NULL) {
      tr.wait_all(wout);
      wait_header(&hreq);
    }
    // The local product (counted by the task) and the reduction of C_{i,:,k} onto P_{i,k,k}, then
    // to P_{i,k,0}.
    LocalProduct& product = task.partial_accumulator(rows_i);
    product.multiply(wa.view(), A.layout(), wb.view(), B.layout());
    const Panel partial = product.finish();
    Reduction red;
    start_reduction(tr, partial, C.layout(), rows_i, m.rrow, m.k, plan, red, Role::C);
    Wire back;
    back.role = Role::C;
    if (m.j == m.k && m.k != 0)  // the root: each part to P_{i,k,0} as soon as it is summed
      send_panel(tr, red.sum, m.rank_of(m.i, m.k, 0), m.mesh, kTagReturn, red.header, &red.header_req,
                 [&](int e) {
                   if (e > 0) tr.wait(red.sum, e);
                 });
    if (m.k == 0 && m.j != 0) recv_panel(tr, back, m.rank_of(m.i, m.j, m.j), m.mesh, kTagReturn, plan);
    if (m.j == m.k && m.k != 0) {
      tr.wait_all(red.sum);
      wait_header(&red.header_req);
    } else {
      for (int e = 1; e < red.sum.elements(); ++e) tr.wait(red.sum, e);
    }
    if (m.k == 0) {
      if (m.j == 0) {
        result_plane = Panel::copy_of(red.sum.view());
      } else {
        tr.wait_all(back);
        result_plane = Panel::copy_of(back.view());
      }
    }
    idle_until_released(m, nullptr);
  }

  // C's panel: beta C plus the plane's result, moved to C's owners when C is not on the plane.
  LocalProduct& acc = task.c_accumulator();
  const Panel mine = from_plane(std::move(result_plane), C, c_in, m, traffic);
  task.traffic().absorb(traffic);
  task.report().ticks = 1;
  mesh_figures(task.report().extra, m, plan, &idle);
  Panel start = acc.finish();
  return add_panels(start.view(), 1.0, mine.view(), 1.0, C.layout());
}



bool Mesh3D::square_and_cube(Kernel& kernel, const DistMatrix& D, DistMatrix& D2, DistMatrix& D3,
                             const MultiplyOptions& options, std::vector<MultiplyReport>& reports) {
  const std::string where = "square_and_cube(nboverlap)";
  if (!(D.layout().rows == D.layout().cols))
    throw Error(where, "D must be square with the same blocking of rows and columns");
  if (D.grid().nlayers() > 1)
    throw Error(where, "D is on a grid with layers (" + D.grid().describe() + "); the mesh is made here");
  for (const DistMatrix* x : {&D2, &D3})
    if (!(x->layout() == D.layout()) || !x->distribution().same_maps(D.distribution()))
      throw Error(where, "D2 and D3 must have D's layout and distribution");
  if (!D.finalized()) throw Error(where, "D has blocks put since the last finalize()");
  memory::reset_peak(memory::Category::CommBuffer);
  memory::reset_peak_total();
  const double t_start = mpi::now();
  const PartPlan plan = opt_.variant == Variant::Optimized ? opt_.plan : PartPlan{1, 0};
  const Mesh m = make_mesh(D.grid(), opt_.active_ranks, plan);
  const int p = m.p, nb = D.distribution().nblkrows();
  const std::vector<double> thresholds = global_row_thresholds(D, options.filter_eps);
  const bool in = on_plane(D, p) && D.distribution().row_dist() == D.distribution().col_dist();
  const std::vector<int> map = in ? D.distribution().row_dist() : cyclic(nb, p);
  Traffic traffic;
  Transport tr(*m.pool, traffic);
  PlaneOperand pd;
  to_plane(D, map, map, in, m, traffic, Role::A, pd);
  LocalMultiplyStats s2, s3;
  std::array<mpi::RoleCounts, mpi::kRoles> after_square{};
  double t_square = 0;
  IdleTime idle;
  Panel d2_plane, d3_plane;
  const bool original = opt_.variant == Variant::Original;
  if (!m.active) {
    idle_until_released(m, &idle);
  } else {
    const std::vector<int> rows_i = rows_of_group(map, m.i), rows_j = rows_of_group(map, m.j);
    const PlaneSizes sizes = gather_sizes(m, m.k == 0 ? pd.panel : nullptr, nullptr, traffic);
    // (1) D_ij as A_ij along the fibre; (2) P_{k,j,k} passes each part on along P_{:,j,k}: D_kj,
    // whose transpose is B_jk (D symmetric).
    Wire wa, wb;
    wa.role = Role::A;
    wb.role = Role::B;
    const int plane_ij = m.rank_of(m.i, m.j, 0), plane_kj = m.rank_of(m.k, m.j, 0);
    if (m.k == 0)
      wa.fill(*pd.panel, plan);
    else
      wa.size(sizes.words(plane_ij, 0), sizes.values(plane_ij, 0), plan);
    for (int e = 0; e < wa.elements(); ++e) tr.bcast(wa, e, m.fibre, 0);
    const bool b_root = m.i == m.k;
    if (b_root) {
      for (int e = 0; e < wa.elements(); ++e) {
        tr.wait(wa, e);
        tr.bcast(wa, e, m.bcol, m.k);
      }
    } else {
      wb.size(sizes.words(plane_kj, 0), sizes.values(plane_kj, 0), plan);
      for (int e = 0; e < wb.elements(); ++e) tr.bcast(wb, e, m.bcol, m.k);
      tr.wait_all(wb);
    }
    tr.wait_all(wa);
    const Panel b1 = transposed(b_root ? wa.view() : wb.view(), D.layout(), rows_j);
    const Panel part2 = local_product(kernel, wa.view(), D.layout(), b1.view(), D.layout(), D.layout(), rows_i,
                                      thresholds, s2);
    // (3) D2_ik reduced over P_{i,:,k}: onto P_{i,i,k} (Alg. 4/5), P_{i,k,k} (Alg. 3).
    Reduction r2;
    start_reduction(tr, part2, D.layout(), rows_i, m.rrow, original ? m.k : m.i, plan, r2, Role::C);
    Wire w2, back2;  // D2_jk as B along P_{:,j,k}; D2 returning to the plane
    w2.role = Role::B;
    back2.role = Role::C;
    const Wire* b2 = nullptr;
    if (original) {
      // Alg. 3: D2_ik to P_{i,k,0}, then P_{j,k,k} sends D2_jk to P_{k,j,k}, which broadcasts it.
      for (int e = 1; e < r2.sum.elements(); ++e) tr.wait(r2.sum, e);
      const bool holder = m.j == m.k;  // holds D2_{i,k}
      Wire tpose;
      tpose.role = Role::C;
      std::int64_t h[2];
      MPI_Request hr = MPI_REQUEST_NULL, ht = MPI_REQUEST_NULL;
      std::int64_t h2[2];
      if (holder && m.k != 0) send_panel(tr, r2.sum, m.rank_of(m.i, m.k, 0), m.mesh, kTagReturn2, h, &hr, {});
      if (m.k == 0 && m.j != 0) recv_panel(tr, back2, m.rank_of(m.i, m.j, m.j), m.mesh, kTagReturn2, plan);
      if (hr != MPI_REQUEST_NULL) {
        tr.wait_all(r2.sum);
        wait_header(&hr);
      }
      if (m.k == 0 && m.j != 0) tr.wait_all(back2);
      // the transpose within layer k: P_{x,k,k} -> P_{k,x,k}
      Wire sent;
      sent.role = Role::C;
      if (holder && m.rank_of(m.k, m.i, m.k) != m.rank_of(m.i, m.j, m.k)) {
        sent.fill(Panel::copy_of(r2.sum.view()), plan);
        send_panel(tr, sent, m.rank_of(m.k, m.i, m.k), m.mesh, kTagTranspose, h2, &ht, {});
      }
      if (b_root) {  // receives D2_{j,k} from P_{j,k,k}
        if (m.rank_of(m.j, m.k, m.k) == m.rank_of(m.i, m.j, m.k))
          w2.fill(Panel::copy_of(r2.sum.view()), plan);
        else {
          recv_panel(tr, w2, m.rank_of(m.j, m.k, m.k), m.mesh, kTagTranspose, plan);
          tr.wait_all(w2);
        }
        tr.bcast_sizes(static_cast<std::int64_t>(w2.index.size()), static_cast<std::int64_t>(w2.values.size()),
                       m.bcol, m.k, Role::B);
        for (int e = 0; e < w2.elements(); ++e) tr.bcast(w2, e, m.bcol, m.k);
      } else {
        const auto [words, values] = tr.bcast_sizes(0, 0, m.bcol, m.k, Role::B);
        w2.size(words, values, plan);
        for (int e = 0; e < w2.elements(); ++e) tr.bcast(w2, e, m.bcol, m.k);
      }
      tr.wait_all(w2);
      if (ht != MPI_REQUEST_NULL) {
        tr.wait_all(sent);
        wait_header(&ht);
      }
      b2 = &w2;
      if (m.k == 0) d2_plane = m.j == 0 ? Panel::copy_of(r2.sum.view()) : Panel::copy_of(back2.view());
    } else {
      // Alg. 4/5: P_{j,j,k} passes each summed part of D2_jk on along P_{:,j,k}.
      if (m.i == m.j) {
        tr.bcast_sizes(static_cast<std::int64_t>(r2.sum.index.size()), static_cast<std::int64_t>(r2.sum.values.size()),
                       m.bcol, m.i, Role::B);
        for (int e = 0; e < r2.sum.elements(); ++e) {
          if (e > 0) tr.wait(r2.sum, e);
          tr.bcast(r2.sum, e, m.bcol, m.i);
        }
        tr.wait_all(r2.sum);
        b2 = &r2.sum;
      } else {
        const auto [words, values] = tr.bcast_sizes(0, 0, m.bcol, m.j, Role::B);
        w2.size(words, values, plan);
        for (int e = 0; e < w2.elements(); ++e) tr.bcast(w2, e, m.bcol, m.j);
        for (int e = 1; e < r2.sum.elements(); ++e) tr.wait(r2.sum, e);
        tr.wait_all(w2);
        b2 = &w2;
      }
    }
    after_square = traffic.all_counts();
    t_square = mpi::now() - t_start;
    // (4) D3 partial = A_ij D2_jk, reduced onto P_{i,k,k}; D2 and D3 return to the plane.
    // D2 as B is filtered first, as a filtered D2 = D D would be before D3 = D D2.
    const Panel b2f = options.filter_eps > 0 ? filtered(b2->view(), D.layout(), options.filter_eps) : Panel();
    const Panel part3 = local_product(kernel, wa.view(), D.layout(), options.filter_eps > 0 ? b2f.view() : b2->view(),
                                      D.layout(), D.layout(), rows_i, thresholds, s3);
    Reduction r3;
    start_reduction(tr, part3, D.layout(), rows_i, m.rrow, m.k, plan, r3, Role::C);
    std::int64_t h2r[2], h3r[2];
    MPI_Request hq2 = MPI_REQUEST_NULL, hq3 = MPI_REQUEST_NULL;
    if (!original && m.i == m.j && m.rank_of(m.i, m.k, 0) != m.rank_of(m.i, m.j, m.k))
      send_panel(tr, r2.sum, m.rank_of(m.i, m.k, 0), m.mesh, kTagReturn2, h2r, &hq2, {});
    if (m.j == m.k && m.k != 0)
      send_panel(tr, r3.sum, m.rank_of(m.i, m.k, 0), m.mesh, kTagReturn, h3r, &hq3, [&](int e) {
        if (e > 0) tr.wait(r3.sum, e);
      });
    Wire back3;
    back3.role = Role::C;
    if (m.k == 0) {
      if (!original && m.rank_of(m.i, m.i, m.j) != m.rank_of(m.i, m.j, 0))
        recv_panel(tr, back2, m.rank_of(m.i, m.i, m.j), m.mesh, kTagReturn2, plan);
      if (m.j != 0) recv_panel(tr, back3, m.rank_of(m.i, m.j, m.j), m.mesh, kTagReturn, plan);
    }
    if (hq3 != MPI_REQUEST_NULL) {
      tr.wait_all(r3.sum);
      wait_header(&hq3);
    } else {
      for (int e = 1; e < r3.sum.elements(); ++e) tr.wait(r3.sum, e);
    }
    if (hq2 != MPI_REQUEST_NULL) {
      tr.wait_all(r2.sum);
      wait_header(&hq2);
    }
    if (m.k == 0) {
      if (!original) {
        if (m.rank_of(m.i, m.i, m.j) != m.rank_of(m.i, m.j, 0)) {
          tr.wait_all(back2);
          d2_plane = Panel::copy_of(back2.view());
        } else {
          d2_plane = Panel::copy_of(r2.sum.view());
        }
      }
      if (m.j != 0) tr.wait_all(back3);
      d3_plane = Panel::copy_of(m.j == 0 ? r3.sum.view() : back3.view());
    }
    idle_until_released(m, nullptr);
  }
  // D2 and D3 on D's distribution.
  Panel n2 = from_plane(std::move(d2_plane), D, in, m, traffic), n3 = from_plane(std::move(d3_plane), D, in, m, traffic);
  D2.set_local(std::move(n2));
  D3.set_local(std::move(n3));
  if (options.filter_eps > 0) {
    D2.filter(options.filter_eps);
    D3.filter(options.filter_eps);
  }
  // Two reports: D^2 (to the end of its broadcast as B) and D^3 (the rest).
  const double t_end = mpi::now() - t_start;
  for (int r = 0; r < 2; ++r) {
    MultiplyReport rep;
    rep.strategy = name();
    rep.kernel = kernel.name();
    rep.ticks = 1;
    const LocalMultiplyStats& st = r == 0 ? s2 : s3;
    rep.flops = st.flops;
    rep.products = st.products;
    rep.skipped_products = st.skipped;
    rep.kernel_seconds = st.kernel_seconds;
    rep.stack_seconds = st.stack_seconds;
    for (int q = 0; q < mpi::kRoles; ++q) {
      rep.traffic[q] = after_square[q];
      if (r == 1) {
        mpi::RoleCounts rest = traffic.all_counts()[q];
        rest.bytes_sent -= after_square[q].bytes_sent;
        rest.bytes_received -= after_square[q].bytes_received;
        rest.index_bytes_sent -= after_square[q].index_bytes_sent;
        rest.index_bytes_received -= after_square[q].index_bytes_received;
        rest.messages_sent -= after_square[q].messages_sent;
        rest.messages_received -= after_square[q].messages_received;
        rest.wait_seconds -= after_square[q].wait_seconds;
        rep.traffic[q] = rest;
      }
    }
    rep.seconds = r == 0 ? t_square : t_end - t_square;
    rep.peak_buffer_bytes = memory::peak(memory::Category::CommBuffer);
    rep.peak_memory_bytes = memory::peak_total();
    mesh_figures(rep.extra, m, plan, r == 0 ? &idle : nullptr);
    rep.extra["symm_square_cube"] = 1;
    reports.push_back(std::move(rep));
  }
  return true;
}

std::optional<ModelPrediction> Mesh3D::model(const ModelSpec&, int, int) const { return std::nullopt; }

}  // namespace plexus::nboverlap
