#include "mesh.hpp"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "plexus/mpi.hpp"

namespace plexus::nboverlap {

namespace {

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace

std::vector<int> cyclic(int n, int p) {
  std::vector<int> m(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) m[static_cast<std::size_t>(i)] = i % p;
  return m;
}

MeshShape mesh_shape(int ranks, int active_ranks, int replication) {
  const int n = active_ranks > 0 ? std::min(active_ranks, ranks) : ranks;
  MeshShape s;
  if (replication == 0) {
    while ((s.q + 1) * (s.q + 1) * (s.q + 1) <= n) ++s.q;
    s.c = s.q;
    return s;
  }
  for (s.c = replication; s.c > 1; --s.c)
    if (std::int64_t{s.c} * s.c * s.c <= n) break;
  while (std::int64_t{s.q + 1} * (s.q + 1) * s.c <= n) ++s.q;
  return s;
}

Mesh make_mesh(const Grid& g, MeshShape shape, const PartPlan& plan) {
  Mesh m;
  m.all = g.comm();
  m.P = g.size();
  m.me = g.rank();
  m.q = shape.q;
  m.c = shape.c;
  m.n = shape.ranks();
  m.active = m.me < m.n;
  m.pool = &g.pool();
  const MPI_Comm act = m.n == m.P
                           ? m.all
                           : m.pool->split(m.all, m.active ? 0 : MPI_UNDEFINED, m.me,
                                           "nboverlap active " + std::to_string(m.n) + " of " + std::to_string(m.P));
  if (m.n < m.P) m.release = m.pool->dup(m.all, "nboverlap idle release");
  if (!m.active) return m;
  m.grid = Grid::create(*m.pool, act, m.q, m.q, m.c);
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

bool on_plane(const DistMatrix& X, int q) {
  const Grid& g = X.grid();
  if (g.nlayers() != 1 || g.group_rows() * g.group_cols() != 1 || g.npcols() != q) return false;
  const auto& rd = X.distribution().row_dist();
  return std::all_of(rd.begin(), rd.end(), [q](int r) { return r < q; });
}

std::vector<int> rows_of_group(const std::vector<int>& map, int g) {
  std::vector<int> rows;
  for (int r = 0; r < static_cast<int>(map.size()); ++r)
    if (map[static_cast<std::size_t>(r)] == g) rows.push_back(r);
  return rows;
}

}  // namespace plexus::nboverlap
