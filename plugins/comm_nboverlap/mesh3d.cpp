#include "mesh3d.hpp"

#include <algorithm>
#include <utility>

#include "cannon25d.hpp"
#include "mesh.hpp"
#include "plane.hpp"
#include "plexus/error.hpp"
#include "plexus/log.hpp"
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
    case Variant::Original:
      return "original";
    case Variant::Baseline:
      return "baseline";
    case Variant::Optimized:
      return "optimized";
  }
  return "?";
}

MeshShape Mesh3D::shape(int ranks, int rank) const {
  const MeshShape s = mesh_shape(ranks, opt_.active_ranks, opt_.replication);
  if (opt_.replication > s.c && !warned_) {  // the same on every rank
    if (rank == 0)
      log().warn(
          "nboverlap: Replication={} needs {} active ranks at least (a q x q x c mesh with q >= c); using "
          "Replication={} on a {}x{}x{} mesh",
          opt_.replication, opt_.replication * opt_.replication * opt_.replication, s.c, s.q, s.q, s.c);
    warned_ = true;
  }
  return s;
}

std::shared_ptr<const Distribution> Mesh3D::distribution_for(std::shared_ptr<const Distribution> proposal) const {
  const Grid& g = proposal->grid();
  if (g.nlayers() != 1) return proposal;  // refused by the driver with its own message
  const int P = g.size(), q = shape(P, g.rank()).q;
  if (P % q != 0) return proposal;  // moved to the plane in every multiply
  const std::shared_ptr<const Grid> plane = g.reshaped(P / q, q);
  return std::make_shared<const Distribution>(plane, cyclic(proposal->nblkrows(), q), cyclic(proposal->nblkcols(), q),
                                              "nboverlap-plane");
}

namespace {

// The 3D schedule of one multiply on an active rank: C_{i,j} on P_{i,j,0}, an empty panel elsewhere.
Panel mesh_product(MultiplyTask& task, const Mesh& m, Transport& tr, const PartPlan& plan, const PlaneOperand& pa,
                   const PlaneOperand& pb, const std::vector<int>& rows_i) {
  const DistMatrix &A = task.a(), &B = task.b(), &C = task.c();
  auto plane_rank = [&m](int gi, int gj) { return m.rank_of(gi, gj, 0); };  // in m.all as in m.mesh
  const PlaneSizes sizes = gather_sizes(m, m.k == 0 ? pa.panel : nullptr, m.k == 0 ? pb.panel : nullptr, tr.traffic());
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
    send_panel(tr, red.sum, m.rank_of(m.i, m.k, 0), m.mesh, kTagReturn, red.header, &red.header_req, [&](int e) {
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
      return Panel::copy_of(red.sum.view());
    } else {
      tr.wait_all(back);
      return Panel::copy_of(back.view());
    }
  }
  return Panel(rows_i);
}

}  // namespace

Panel Mesh3D::run(MultiplyTask& task) {
  const DistMatrix &A = task.a(), &B = task.b(), &C = task.c();
  const PartPlan plan = opt_.variant == Variant::Optimized ? opt_.plan : PartPlan{1, 0};
  const Mesh m = make_mesh(C.grid(), shape(C.grid().size(), C.grid().rank()), plan);
  const int p = m.q;
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
    result_plane = opt_.replication > 0 ? cannon_product(task, m, tr, plan, pa, pb, rows_i)
                                        : mesh_product(task, m, tr, plan, pa, pb, rows_i);
    idle_until_released(m, nullptr);
  }

  // C's panel: beta C plus the plane's result, moved to C's owners when C is not on the plane.
  LocalProduct& acc = task.c_accumulator();
  const Panel mine = from_plane(std::move(result_plane), C, c_in, m, traffic);
  task.traffic().absorb(traffic);
  const LayerSteps steps = layer_steps(m.q, m.c, m.k);  // 2.5D: this layer's Cannon steps
  task.report().ticks = !m.active ? 0 : opt_.replication > 0 ? steps.last - steps.first : 1;
  mesh_figures(task.report().extra, m, plan, &idle, tr.model());
  Panel start = acc.finish();
  return add_panels(start.view(), 1.0, mine.view(), 1.0, C.layout());
}

// Dry run of one multiply: dense operands spread evenly over the plane (each plane panel holds
// P / q^2 of the spec's local panels), placed there by distribution_for (P divisible by q: else
// they are moved in every multiply, which the note says and the figures leave out). Values only.
std::optional<ModelPrediction> Mesh3D::model(const ModelSpec& spec, int prow, int pcol) const {
  const int P = spec.nprows * spec.npcols, r = prow * spec.npcols + pcol;
  const MeshShape s = mesh_shape(P, opt_.active_ranks, opt_.replication);
  const int q = s.q;
  const std::int64_t q2 = std::int64_t{q} * q;
  const std::int64_t a = spec.bytes_a * P / q2, b = spec.bytes_b * P / q2, c = spec.bytes_c * P / q2;
  ModelPrediction m;
  m.note = (opt_.replication > 0 ? "2.5D " : "3D ") + std::to_string(q) + "x" + std::to_string(q) + "x" +
           std::to_string(s.c) + (s.ranks() < P ? ", " + std::to_string(P - s.ranks()) + " idle" : "") +
           (P % q != 0 ? ", operands moved to the plane (not counted here)" : "");
  if (r >= s.ranks()) return m;  // idle: nothing moves through this rank
  const int i = (r / q) % q, j = r % q, k = static_cast<int>(r / q2);
  if (opt_.replication == 0) {
    // A along the fibre; B to P_{k,j,k} from P_{j,k,0}, then along P_{:,j,k}; C reduced along
    // P_{i,:,k} onto P_{i,k,k} and returned to P_{i,k,0}.
    const bool origin = i == 0 && j == 0 && k == 0;
    m.ticks = 1;
    m.bytes_a = k > 0 ? a : 0;
    m.bytes_b = origin ? 0 : b;
    m.bytes_c = j == 0 && k == 0 ? 0 : c;
    // Wires of A and B, B sent from the plane, the union and my partial of C, C returned.
    m.buffer_bytes = a + b + (k == 0 && !(i == 0 && j == 0) ? b : 0) + 2 * c + (k == 0 && j != 0 ? c : 0);
    return m;
  }
  // 2.5D: the skewed start from the plane, n - 1 shifts within the layer, C reduced along the
  // fibre onto the plane.
  const LayerSteps st = layer_steps(q, s.c, k);
  const int n = st.last - st.first, s0 = st.first;
  const int shifts = n - 1;
  m.ticks = n;
  m.bytes_a = (k == 0 && (i + j + s0) % q == j ? 0 : a) + shifts * a;
  m.bytes_b = (k == 0 && (i + j + s0) % q == i ? 0 : b) + shifts * b;
  m.bytes_c = k > 0 ? c : 0;
  // Peak of the phases: the skew (the plane's panels in flight too), the steps (two panels of
  // each operand arriving at most), the reduction (the union and my partial).
  const std::int64_t start = a + b;
  m.buffer_bytes = std::max({start + (k == 0 ? a + b : 0), start + std::min(shifts, 2) * (a + b), start + 2 * c});
  return m;
}

}  // namespace plexus::nboverlap
