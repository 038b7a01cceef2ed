#include "rma25d_windows.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace plexus_rma25d {

Staged stage(const DistMatrix& M, const Geometry& geo, bool is_a) {
  const PanelView v = M.local().view();
  const auto& layout = M.layout();
  const auto G = static_cast<std::size_t>(geo.G);
  Staged s;
  s.panel = v;
  s.blocks.resize(G);
  s.block_rows.resize(G);
  s.rows.assign(G, 0);
  s.values.assign(G, 0);
  std::vector<int> last_row(G, -1);
  // Blocks bucketed by k-group, keeping (row, col) order.
  for (int r = 0; r < v.nrows; ++r) {
    const int m = layout.rows.size(static_cast<int>(v.row_ids[r]));
    for (std::int64_t b = v.row_ptr[r]; b < v.row_ptr[r + 1]; ++b) {
      const int k = static_cast<int>(is_a ? v.cols[b] : v.row_ids[r]);
      const auto g = static_cast<std::size_t>(geo.kgroup[static_cast<std::size_t>(k)]);
      s.blocks[g].push_back(b);
      s.block_rows[g].push_back(r);
      if (last_row[g] != r) {
        last_row[g] = r;
        ++s.rows[g];
      }
      s.values[g] += std::int64_t{m} * layout.cols.size(static_cast<int>(v.cols[b]));
    }
  }
  for (std::size_t g = 0; g < G; ++g) {
    if (s.blocks[g].empty()) continue;
    s.words += PanelView::packed_words(static_cast<int>(s.rows[g]), static_cast<std::int64_t>(s.blocks[g].size()));
    s.values_total += s.values[g];
  }
  return s;
}

std::vector<std::int64_t> expose(const Staged& s, const plexus::BlockLayout& layout, Exposed& e) {
  const PanelView& v = s.panel;
  std::vector<std::int64_t> dir(s.blocks.size() * kPieceWords, 0);
  std::int64_t wo = 0, vo = 0;
  for (std::size_t g = 0; g < s.blocks.size(); ++g) {
    const std::vector<std::int64_t>& blocks = s.blocks[g];
    if (blocks.empty()) continue;
    const std::int64_t nrows = s.rows[g], nblocks = static_cast<std::int64_t>(blocks.size());
    const std::int64_t words = PanelView::packed_words(static_cast<int>(nrows), nblocks);
    // The packed index (PanelView::from_packed): header, row ids, row pointers, columns, offsets.
    std::int64_t* const w = e.index.data() + wo;
    w[0] = nrows;
    w[1] = nblocks;
    w[2] = s.values[g];
    std::int64_t* const row_ids = w + 3;
    std::int64_t* const row_ptr = row_ids + nrows;
    std::int64_t* const cols = row_ptr + nrows + 1;
    std::int64_t* const offsets = cols + nblocks;
    double* const values = e.data.data() + vo;
    std::int64_t pr = -1, off = 0;
    int last = -1, m = 0;  // the row in hand, and its block rows
    for (std::int64_t q = 0; q < nblocks; ++q) {
      const std::int64_t b = blocks[static_cast<std::size_t>(q)];
      const int r = s.block_rows[g][static_cast<std::size_t>(q)];
      if (r != last) {
        last = r;
        row_ids[++pr] = v.row_ids[r];
        row_ptr[pr] = q;
        m = layout.rows.size(static_cast<int>(v.row_ids[r]));
      }
      cols[q] = v.cols[b];
      offsets[q] = off;
      const std::int64_t n = std::int64_t{m} * layout.cols.size(static_cast<int>(v.cols[b]));
      std::copy(v.data + v.offsets[b], v.data + v.offsets[b] + n, values + off);
      off += n;
    }
    row_ptr[nrows] = nblocks;
    std::int64_t* d = dir.data() + g * kPieceWords;
    d[0] = wo;
    d[1] = words;
    d[2] = vo;
    d[3] = s.values[g];
    wo += words;
    vo += s.values[g];
  }
  return dir;
}

void post_fetch(const std::vector<Fetch>& fetches, const Exposed& e, Role role, FetchBuffer& buf, std::int64_t& wpos,
                std::int64_t& vpos, Traffic& traffic) {
  for (const auto& f : fetches) {
    traffic.rget(buf.index.data() + wpos, f.piece.idx_words, MPI_INT64_T, f.owner, f.piece.idx_off, e.win_index(), role,
                 Payload::Index);
    traffic.rget(buf.data.data() + vpos, f.piece.data_vals, MPI_DOUBLE, f.owner, f.piece.data_off, e.win_data(), role,
                 Payload::Data);
    buf.placed.emplace_back(wpos, vpos);
    wpos += f.piece.idx_words;
    vpos += f.piece.data_vals;
  }
}

void make_views(FetchBuffer& buf, const std::vector<int>& pieces_per_panel) {
  buf.panels.assign(pieces_per_panel.size(), {});
  std::size_t q = 0;
  for (std::size_t p = 0; p < pieces_per_panel.size(); ++p)
    for (int n = 0; n < pieces_per_panel[p]; ++n, ++q) {
      const auto [wo, vo] = buf.placed[q];
      const std::int64_t* w = buf.index.data() + wo;
      buf.panels[p].push_back(PanelView::from_packed(w, PanelView::packed_words(w[0], w[1]), buf.data.data() + vo));
    }
  buf.placed.clear();
}

}  // namespace plexus_rma25d
