#include "cannon25d.hpp"

#include <deque>
#include <utility>

#include "plexus/multiply_support.hpp"

namespace plexus::nboverlap {

namespace {

// Tags of the 2.5D point-to-point streams (+ element, as the 3D ones).
constexpr int kTagSkewA = 8100, kTagSkewB = 8200, kTagShiftA = 8300, kTagShiftB = 8400, kTagSkewD2 = 8500;

int mod(int x, int q) { return ((x % q) + q) % q; }

// The skewed start of one operand on P_{i,j,l}: X_{i,(i+j+s0)} as A, X_{(i+j+s0),j} as B, with s0
// the layer's first step, fetched from the plane. A plane rank puts its panel on one wire
// (`mine`) and posts it to the rank of every layer that starts from it; `got` is posted for
// receiving (or filled here when the panel is my own).
void skew_from_plane(Transport& tr, const Mesh& m, const PartPlan& plan, const Panel* plane, bool as_a, int tag,
                     Wire& mine, Wire& got, std::deque<Outgoing>& out) {
  const int q = m.q, me = m.rank_of(m.i, m.j, m.k);
  if (m.k == 0) {
    mine.fill(*plane, plan);
    for (int l = 0; l < m.c; ++l) {
      const int s0 = layer_steps(q, m.c, l).first;
      const int dest = as_a ? m.rank_of(m.i, mod(m.j - m.i - s0, q), l) : m.rank_of(mod(m.i - m.j - s0, q), m.j, l);
      if (dest != me) post_panel(tr, mine, dest, m.mesh, tag, out.emplace_back());
    }
  }
  const int s0 = layer_steps(q, m.c, m.k).first;
  const int src = as_a ? m.rank_of(m.i, (m.i + m.j + s0) % q, 0) : m.rank_of((m.i + m.j + s0) % q, m.j, 0);
  if (src == me)
    got.fill(*plane, plan);
  else
    recv_panel(tr, got, src, m.mesh, tag, plan);
}

// Both operands skewed from the plane and arrived.
void skew_both(Transport& tr, const Mesh& m, const PartPlan& plan, const Panel* a_plane, const Panel* b_plane, Wire& a0,
               Wire& b0) {
  Wire sa, sb;  // the plane's panels in flight
  sa.role = a0.role = Role::A;
  sb.role = b0.role = Role::B;
  std::deque<Outgoing> out_a, out_b;
  const int me = m.rank_of(m.i, m.j, m.k);
  skew_from_plane(tr, m, plan, a_plane, true, kTagSkewA, sa, a0, out_a);
  skew_from_plane(tr, m, plan, b_plane, false, kTagSkewB, sb, b0, out_b);
  const int s0 = layer_steps(m.q, m.c, m.k).first;
  if (m.rank_of(m.i, (m.i + m.j + s0) % m.q, 0) != me) tr.wait_all(a0);
  if (m.rank_of((m.i + m.j + s0) % m.q, m.j, 0) != me) tr.wait_all(b0);
  for (auto& o : out_a) finish_panel(tr, sa, o);
  for (auto& o : out_b) finish_panel(tr, sb, o);
}

// Layer l's share of Cannon's algorithm: the sum over its steps s of A_{i,(i+j+s)} B_{(i+j+s),j}
// into `product`, starting from a0 and b0 (left unchanged). While step t multiplies, the current
// panels travel on: A to P_{i,j-1,l}, B to P_{i-1,j,l}, and the next ones arrive from P_{i,j+1,l}
// and P_{i+1,j,l}.
void cannon_steps(Transport& tr, const Mesh& m, const PartPlan& plan, const Wire& a0, const Wire& b0, LayerSteps st,
                  const BlockLayout& la, const BlockLayout& lb, LocalProduct& product) {
  const int n = st.last - st.first, q = m.q;
  const Wire* a = &a0;
  const Wire* b = &b0;
  Wire abuf[2], bbuf[2];
  int next = 0;
  for (int t = 0; t < n; ++t) {
    const bool shift = t + 1 < n;  // n <= q: a shift has another rank at both ends
    std::deque<Outgoing> out;
    Wire& an = abuf[next];
    Wire& bn = bbuf[next];
    if (shift) {
      an.role = Role::A;
      bn.role = Role::B;
      post_panel(tr, *a, m.rank_of(m.i, mod(m.j - 1, q), m.k), m.mesh, kTagShiftA, out.emplace_back());
      post_panel(tr, *b, m.rank_of(mod(m.i - 1, q), m.j, m.k), m.mesh, kTagShiftB, out.emplace_back());
      recv_panel(tr, an, m.rank_of(m.i, (m.j + 1) % q, m.k), m.mesh, kTagShiftA, plan);
      recv_panel(tr, bn, m.rank_of((m.i + 1) % q, m.j, m.k), m.mesh, kTagShiftB, plan);
    }
    product.multiply(a->view(), la, b->view(), lb);
    if (shift) {
      tr.wait_all(an);
      tr.wait_all(bn);
      finish_panel(tr, *a, out[0]);
      finish_panel(tr, *b, out[1]);
      a = &an;
      b = &bn;
      next ^= 1;
    }
  }
}

void wait_sum(Transport& tr, Reduction& red) {
  for (int e = 1; e < red.sum.elements(); ++e) tr.wait(red.sum, e);
}

}  // namespace

LayerSteps layer_steps(int q, int c, int l) {
  return LayerSteps{static_cast<int>(std::int64_t{l} * q / c), static_cast<int>(std::int64_t{l + 1} * q / c)};
}

Panel cannon_product(MultiplyTask& task, const Mesh& m, Transport& tr, const PartPlan& plan, const PlaneOperand& pa,
                     const PlaneOperand& pb, const std::vector<int>& rows_i) {
  const DistMatrix &A = task.a(), &B = task.b(), &C = task.c();
  Wire a0, b0;
  skew_both(tr, m, plan, m.k == 0 ? pa.panel : nullptr, m.k == 0 ? pb.panel : nullptr, a0, b0);
  LocalProduct& product = task.partial_accumulator(rows_i);
  cannon_steps(tr, m, plan, a0, b0, layer_steps(m.q, m.c, m.k), A.layout(), B.layout(), product);
  const Panel partial = product.finish();
  Reduction red;
  start_reduction(tr, partial, C.layout(), rows_i, m.fibre, 0, plan, red, Role::C);  // onto the plane
  wait_sum(tr, red);
  if (m.k == 0) return Panel::copy_of(red.sum.view());
  return Panel(rows_i);
}

void cannon_square_cube(const SquareCubeJob& job, SquareCube& out) {
  const Mesh& m = job.m;
  Transport& tr = job.tr;
  const PartPlan& plan = job.plan;
  const BlockLayout& layout = job.D.layout();
  const LayerSteps st = layer_steps(m.q, m.c, m.k);
  const std::vector<int> rows_i = rows_of_group(job.map, m.i);
  const Panel empty(rows_i);
  const std::vector<double> thresholds = thresholds_of_rows(job.thresholds, rows_i);
  // D^2: D skewed from the plane as A and as B, the layer's Cannon steps, the partial panels
  // summed on every layer.
  Wire a0, b0;
  skew_both(tr, m, plan, job.plane, job.plane, a0, b0);
  LocalProduct p2(empty.view(), layout, job.kernel, job.kernel.threads(), thresholds);
  cannon_steps(tr, m, plan, a0, b0, st, layout, layout, p2);
  const Panel part2 = p2.finish();
  out.s2 += p2.stats();
  Reduction r2;
  start_reduction(tr, part2, layout, rows_i, m.fibre, -1, plan, r2, Role::C);  // onto every layer
  // D^2 as B of D^3, skewed within the layer: D2_{(i+j+s0),j} from P_{(i+j+s0),j,l}. Unfiltered,
  // each summed part goes on as soon as it is complete (Algorithm 5's pipelining); filtered, the
  // whole D^2 is summed and filtered first, as a filtered D^2 = D D would be before D^3 = D D^2.
  const int me = m.rank_of(m.i, m.j, m.k), s0 = st.first;
  const int dest = m.rank_of(mod(m.i - m.j - s0, m.q), m.j, m.k), src = m.rank_of((m.i + m.j + s0) % m.q, m.j, m.k);
  Wire filtered_d2, b2;
  filtered_d2.role = b2.role = Role::B;
  const bool filter = job.filter_eps > 0;
  if (filter) {
    wait_sum(tr, r2);
    filtered_d2.fill(filtered(r2.sum.view(), layout, job.filter_eps, job.kernel.threads()), plan);
  }
  const Wire& d2_out = filter ? filtered_d2 : r2.sum;
  std::deque<Outgoing> sent;
  if (dest != me) {  // sending waits for every summed part
    post_panel(tr, d2_out, dest, m.mesh, kTagSkewD2, sent.emplace_back(), [&](int e) {
      if (!filter && e > 0) tr.wait(r2.sum, e);
    });
    recv_panel(tr, b2, src, m.mesh, kTagSkewD2, plan);
    tr.wait_all(b2);
  } else if (!filter) {
    wait_sum(tr, r2);
  }
  const Wire& b_d2 = dest != me ? b2 : d2_out;
  out.after_square = tr.traffic().all_counts();
  out.model_square = tr.model();
  out.t_square = mpi::now() - job.t_start;
  // D^3: the skewed D again as A, the skewed D^2 as B, summed onto the plane.
  LocalProduct p3(empty.view(), layout, job.kernel, job.kernel.threads(), thresholds);
  cannon_steps(tr, m, plan, a0, b_d2, st, layout, layout, p3);
  const Panel part3 = p3.finish();
  out.s3 += p3.stats();
  Reduction r3;
  start_reduction(tr, part3, layout, rows_i, m.fibre, 0, plan, r3, Role::C);
  wait_sum(tr, r3);
  for (auto& o : sent) finish_panel(tr, d2_out, o);
  if (m.k == 0) {
    out.d2 = Panel::copy_of(r2.sum.view());
    out.d3 = Panel::copy_of(r3.sum.view());
  }
}

}  // namespace plexus::nboverlap
