// SymmSquareCube on the 3D mesh: Huang and Chow's Algorithms 3 (original), 4 (baseline) and 5
// (optimized), D^2 and D^3 of a symmetric D sharing D's broadcasts.
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "cannon25d.hpp"
#include "mesh.hpp"
#include "mesh3d.hpp"
#include "plane.hpp"
#include "plexus/error.hpp"
#include "plexus/memory.hpp"
#include "plexus/multiply_support.hpp"
#include "wire.hpp"

namespace plexus::nboverlap {

namespace {

// Algorithms 3, 4 and 5 on an active rank of the 3D mesh.
void mesh_square_cube(const SquareCubeJob& job, SquareCube& out) {
  Kernel& kernel = job.kernel;
  const DistMatrix& D = job.D;
  const Mesh& m = job.m;
  Transport& tr = job.tr;
  const PartPlan& plan = job.plan;
  const std::vector<int>& map = job.map;
  const std::vector<double>& thresholds = job.thresholds;
  const double t_start = job.t_start;
  const bool original = job.variant == Variant::Original;
  const std::vector<int> rows_i = rows_of_group(map, m.i), rows_j = rows_of_group(map, m.j);
  const PlaneSizes sizes = gather_sizes(m, m.k == 0 ? job.plane : nullptr, nullptr, tr.traffic());
  // (1) D_ij as A_ij along the fibre; (2) P_{k,j,k} passes each part on along P_{:,j,k}: D_kj,
  // whose transpose is B_jk (D symmetric).
  Wire wa, wb;
  wa.role = Role::A;
  wb.role = Role::B;
  const int plane_ij = m.rank_of(m.i, m.j, 0), plane_kj = m.rank_of(m.k, m.j, 0);
  if (m.k == 0)
    wa.fill(*job.plane, plan);
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
  const Panel part2 =
      local_product(kernel, wa.view(), D.layout(), b1.view(), D.layout(), D.layout(), rows_i, thresholds, out.s2);
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
      tr.bcast_sizes(static_cast<std::int64_t>(w2.index.size()), static_cast<std::int64_t>(w2.values.size()), m.bcol,
                     m.k, Role::B);
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
    if (m.k == 0) out.d2 = m.j == 0 ? Panel::copy_of(r2.sum.view()) : Panel::copy_of(back2.view());
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
  out.after_square = tr.traffic().all_counts();
  out.model_square = tr.model();
  out.t_square = mpi::now() - t_start;
  // (4) D3 partial = A_ij D2_jk, reduced onto P_{i,k,k}; D2 and D3 return to the plane.
  // D2 as B is filtered first, as a filtered D2 = D D would be before D3 = D D2.
  const Panel b2f = job.filter_eps > 0 ? filtered(b2->view(), D.layout(), job.filter_eps, kernel.threads()) : Panel();
  const Panel part3 = local_product(kernel, wa.view(), D.layout(), job.filter_eps > 0 ? b2f.view() : b2->view(),
                                    D.layout(), D.layout(), rows_i, thresholds, out.s3);
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
        out.d2 = Panel::copy_of(back2.view());
      } else {
        out.d2 = Panel::copy_of(r2.sum.view());
      }
    }
    if (m.j != 0) tr.wait_all(back3);
    out.d3 = Panel::copy_of(m.j == 0 ? r3.sum.view() : back3.view());
  }
}

}  // namespace

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
  const Mesh m = make_mesh(D.grid(), shape(D.grid().size(), D.grid().rank()), plan);
  const int p = m.q, nb = D.distribution().nblkrows();
  const std::vector<double> thresholds = global_row_thresholds(D, options.filter_eps);
  const bool in = on_plane(D, p) && D.distribution().row_dist() == D.distribution().col_dist();
  const std::vector<int> map = in ? D.distribution().row_dist() : cyclic(nb, p);
  Traffic traffic;
  Transport tr(*m.pool, traffic);
  PlaneOperand pd;
  to_plane(D, map, map, in, m, traffic, Role::A, pd);
  SquareCube sc;
  IdleTime idle;
  if (!m.active) {
    idle_until_released(m, &idle);
  } else {
    const SquareCubeJob job{kernel, D,  pd.panel, map,          thresholds, options.filter_eps,
                            m,      tr, plan,     opt_.variant, t_start};
    if (opt_.replication > 0)
      cannon_square_cube(job, sc);
    else
      mesh_square_cube(job, sc);
    idle_until_released(m, nullptr);
  }
  // D2 and D3 on D's distribution.
  Panel n2 = from_plane(std::move(sc.d2), D, in, m, traffic), n3 = from_plane(std::move(sc.d3), D, in, m, traffic);
  D2.set_local(std::move(n2));
  D3.set_local(std::move(n3));
  if (options.filter_eps > 0) {
    D2.filter(options.filter_eps, kernel.threads());
    D3.filter(options.filter_eps, kernel.threads());
  }
  // Two reports: D^2 (to the end of its broadcast as B) and D^3 (the rest).
  const double t_end = mpi::now() - t_start;
  for (int r = 0; r < 2; ++r) {
    MultiplyReport rep;
    rep.strategy = name();
    rep.kernel = kernel.name();
    rep.ticks = 1;
    const LocalMultiplyStats& st = r == 0 ? sc.s2 : sc.s3;
    rep.flops = st.flops;
    rep.products = st.products;
    rep.skipped_products = st.skipped;
    rep.kernel_seconds = st.kernel_seconds;
    rep.stack_seconds = st.stack_seconds;
    for (int q = 0; q < mpi::kRoles; ++q) {
      rep.traffic[q] = sc.after_square[q];
      if (r == 1) {
        mpi::RoleCounts rest = traffic.all_counts()[q];
        rest.bytes_sent -= sc.after_square[q].bytes_sent;
        rest.bytes_received -= sc.after_square[q].bytes_received;
        rest.index_bytes_sent -= sc.after_square[q].index_bytes_sent;
        rest.index_bytes_received -= sc.after_square[q].index_bytes_received;
        rest.messages_sent -= sc.after_square[q].messages_sent;
        rest.messages_received -= sc.after_square[q].messages_received;
        rest.wait_seconds -= sc.after_square[q].wait_seconds;
        rep.traffic[q] = rest;
      }
    }
    rep.seconds = r == 0 ? sc.t_square : t_end - sc.t_square;
    rep.peak_buffer_bytes = memory::peak(memory::Category::CommBuffer);
    rep.peak_memory_bytes = memory::peak_total();
    AlphaBeta model = sc.model_square;
    if (r == 1) {
      model.latency_terms = tr.model().latency_terms - sc.model_square.latency_terms;
      model.bandwidth_bytes = tr.model().bandwidth_bytes - sc.model_square.bandwidth_bytes;
    }
    mesh_figures(rep.extra, m, plan, r == 0 ? &idle : nullptr, model);
    rep.extra["symm_square_cube"] = 1;
    reports.push_back(std::move(rep));
  }
  return true;
}

}  // namespace plexus::nboverlap
