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
  // Blocks bucketed by k-group, keeping (row, col) order.
  std::vector<std::vector<std::int64_t>> bucket(static_cast<std::size_t>(geo.G));
  std::vector<std::vector<int>> bucket_row(static_cast<std::size_t>(geo.G));
  for (int r = 0; r < v.nrows; ++r)
    for (std::int64_t b = v.row_ptr[r]; b < v.row_ptr[r + 1]; ++b) {
      const int k = static_cast<int>(is_a ? v.cols[b] : v.row_ids[r]);
      const auto g = static_cast<std::size_t>(geo.kgroup[static_cast<std::size_t>(k)]);
      bucket[g].push_back(b);
      bucket_row[g].push_back(r);
    }
  Staged s;
  s.pieces.resize(static_cast<std::size_t>(geo.G));
  for (std::size_t g = 0; g < bucket.size(); ++g) {
    std::vector<int> rows;
    for (int r : bucket_row[g])
      if (rows.empty() || rows.back() != static_cast<int>(v.row_ids[r])) rows.push_back(static_cast<int>(v.row_ids[r]));
    Panel p(rows);
    int pr = -1, last = -1;
    for (std::size_t q = 0; q < bucket[g].size(); ++q) {
      const std::int64_t b = bucket[g][q];
      const int row = static_cast<int>(v.row_ids[bucket_row[g][q]]);
      if (row != last) {
        ++pr;
        last = row;
      }
      const int col = static_cast<int>(v.cols[b]);
      const int n = layout.rows.size(row) * layout.cols.size(col);
      std::copy(v.data + v.offsets[b], v.data + v.offsets[b] + n, p.append_block(pr, col, n));
    }
    if (p.nblocks() > 0) {
      s.words += PanelView::packed_words(p.nrows(), p.nblocks());
      s.values += p.data_size();
    }
    s.pieces[g] = std::move(p);
  }
  return s;
}

std::vector<std::int64_t> expose(Staged& s, Exposed& e) {
  std::vector<std::int64_t> dir(s.pieces.size() * kPieceWords, 0);
  std::int64_t wo = 0, vo = 0;
  for (std::size_t g = 0; g < s.pieces.size(); ++g) {
    Panel& p = s.pieces[g];
    if (p.nblocks() == 0) continue;
    const std::int64_t words = PanelView::packed_words(p.nrows(), p.nblocks());
    p.pack_to(e.index.data() + wo);
    std::copy(p.data().begin(), p.data().end(), e.data.data() + vo);
    std::int64_t* d = dir.data() + g * kPieceWords;
    d[0] = wo;
    d[1] = words;
    d[2] = vo;
    d[3] = p.data_size();
    wo += words;
    vo += p.data_size();
  }
  s.pieces.clear();
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
