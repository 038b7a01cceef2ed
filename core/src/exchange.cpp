#include "plexus/exchange.hpp"

#include <algorithm>
#include <numeric>

namespace plexus {

ExchangedBlocks exchange_blocks(const PanelView& v, const BlockLayout& layout, MPI_Comm comm,
                                const std::function<int(int row, int col, int& tag)>& dest, mpi::Traffic& traffic,
                                mpi::Role role) {
  const int p = mpi::size(comm), me = mpi::rank(comm);
  auto values_of = [&](int i, int j) { return std::int64_t{layout.rows.size(i)} * layout.cols.size(j); };
  // Per destination: (tag, row, col) triples and values, in local block order.
  std::vector<int> nidx(static_cast<std::size_t>(p), 0), nval(static_cast<std::size_t>(p), 0);
  std::vector<int> to(static_cast<std::size_t>(v.nblocks)), tags(static_cast<std::size_t>(v.nblocks));
  for (int r = 0; r < v.nrows; ++r)
    for (std::int64_t b = v.row_ptr[r]; b < v.row_ptr[r + 1]; ++b) {
      const int i = static_cast<int>(v.row_ids[r]), j = static_cast<int>(v.cols[b]);
      int tag = 0;
      const int d = dest(i, j, tag);
      to[static_cast<std::size_t>(b)] = d;
      tags[static_cast<std::size_t>(b)] = tag;
      nidx[static_cast<std::size_t>(d)] += 3;
      nval[static_cast<std::size_t>(d)] += static_cast<int>(values_of(i, j));
    }
  std::vector<int> ip(static_cast<std::size_t>(p), 0), vp(static_cast<std::size_t>(p), 0);
  for (int d = 1; d < p; ++d) {
    ip[d] = ip[d - 1] + nidx[d - 1];
    vp[d] = vp[d - 1] + nval[d - 1];
  }
  CommBuffer<std::int64_t> sidx(static_cast<std::size_t>(ip.back() + nidx.back()));
  CommBuffer<double> sval(static_cast<std::size_t>(vp.back() + nval.back()));
  for (int r = 0; r < v.nrows; ++r)
    for (std::int64_t b = v.row_ptr[r]; b < v.row_ptr[r + 1]; ++b) {
      const int i = static_cast<int>(v.row_ids[r]), j = static_cast<int>(v.cols[b]);
      const auto d = static_cast<std::size_t>(to[static_cast<std::size_t>(b)]);
      sidx[static_cast<std::size_t>(ip[d]++)] = tags[static_cast<std::size_t>(b)];
      sidx[static_cast<std::size_t>(ip[d]++)] = i;
      sidx[static_cast<std::size_t>(ip[d]++)] = j;
      const std::int64_t n = values_of(i, j);
      std::copy(v.data + v.offsets[b], v.data + v.offsets[b] + n, sval.data() + vp[d]);
      vp[d] += static_cast<int>(n);
    }
  std::vector<int> ridx(static_cast<std::size_t>(p)), rval(static_cast<std::size_t>(p));
  mpi::check(MPI_Alltoall(nidx.data(), 1, MPI_INT, ridx.data(), 1, MPI_INT, comm), "MPI_Alltoall");
  mpi::check(MPI_Alltoall(nval.data(), 1, MPI_INT, rval.data(), 1, MPI_INT, comm), "MPI_Alltoall");
  const std::int64_t tri = std::accumulate(ridx.begin(), ridx.end(), std::int64_t{0});
  const std::int64_t trv = std::accumulate(rval.begin(), rval.end(), std::int64_t{0});
  ExchangedBlocks out;
  out.values_from_others = trv - rval[static_cast<std::size_t>(me)];  // a rank's own part is not traffic
  CommBuffer<std::int64_t> ridx_buf(static_cast<std::size_t>(tri));
  out.values.resize(static_cast<std::size_t>(trv));
  traffic.alltoallv(sidx.data(), nidx, ridx_buf.data(), ridx, MPI_INT64_T, comm, role, mpi::Payload::Index);
  traffic.alltoallv(sval.data(), nval, out.values.data(), rval, MPI_DOUBLE, comm, role, mpi::Payload::Data);
  out.blocks.reserve(static_cast<std::size_t>(tri / 3));
  std::int64_t off = 0;
  for (std::int64_t q = 0; q < tri; q += 3) {
    const ExchangedBlocks::Block blk{static_cast<int>(ridx_buf[static_cast<std::size_t>(q)]),
                                     static_cast<int>(ridx_buf[static_cast<std::size_t>(q + 1)]),
                                     static_cast<int>(ridx_buf[static_cast<std::size_t>(q + 2)]), off};
    off += values_of(blk.row, blk.col);
    out.blocks.push_back(blk);
  }
  std::sort(out.blocks.begin(), out.blocks.end(), [](const auto& x, const auto& y) {
    return x.tag != y.tag ? x.tag < y.tag : (x.row != y.row ? x.row < y.row : x.col < y.col);
  });
  return out;
}

}  // namespace plexus
