#include "mesh3d.hpp"

#include <algorithm>
#include <utility>

#include "mesh.hpp"
#include "plane.hpp"
#include "plexus/error.hpp"
#include "plexus/multiply_support.hpp"
#include "wire.hpp"

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

std::optional<ModelPrediction> Mesh3D::model(const ModelSpec&, int, int) const { return std::nullopt; }

}  // namespace plexus::nboverlap
