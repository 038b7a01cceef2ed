#include "plane.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <utility>

#include "plexus/error.hpp"
#include "plexus/exchange.hpp"
#include "plexus/multiply_support.hpp"

namespace plexus::nboverlap {

using mpi::Payload;
using mpi::Role;
using mpi::Traffic;

namespace {

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

}  // namespace

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
  std::sort(refs.begin(), refs.end(),
            [](const Ref& x, const Ref& y) { return x.row != y.row ? x.row < y.row : x.col < y.col; });
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

Panel filtered(const PanelView& v, const BlockLayout& layout, double eps, int threads) {
  std::int64_t dropped = 0;
  std::optional<Panel> kept = without_small_blocks(v, layout, eps, dropped, threads);
  return kept ? std::move(*kept) : Panel::copy_of(v);
}

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

Panel from_plane(Panel&& plane, const DistMatrix& target, bool in, const Mesh& m, Traffic& traffic) {
  const Distribution& d = target.distribution();
  if (!in)
    return moved(
        plane.view(), target.layout(), m.all, [&d](int r, int c) { return d.owner(r, c); }, d.local_rows(), traffic,
        Role::C);
  if (m.active && m.k == 0) return std::move(plane);
  return Panel(d.local_rows());
}

void mesh_figures(Figures& extra, const Mesh& m, const PartPlan& plan, const IdleTime* idle,
                  const AlphaBeta& model) {
  extra["model_latency_terms"] = model.latency_terms;
  extra["model_bandwidth_bytes"] = model.bandwidth_bytes;
  extra["mesh_side"] = m.q;
  extra["layers"] = m.c;
  extra["active_ranks"] = m.n;
  extra["parts"] = plan.ndup;
  if (m.n < m.P) {
    extra["idle_seconds"] = idle ? idle->seconds : 0.0;
    extra["idle_cpu_seconds"] = idle ? idle->cpu_seconds : 0.0;
  }
}

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

}  // namespace plexus::nboverlap
