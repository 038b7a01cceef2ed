#include "plexus/exchange.hpp"

#include <algorithm>
#include <numeric>

#include "plexus/error.hpp"

namespace plexus {

namespace {

bool block_less(const ExchangedBlocks::Block& x, const ExchangedBlocks::Block& y) {
  return x.tag != y.tag ? x.tag < y.tag : (x.row != y.row ? x.row < y.row : x.col < y.col);
}

// Sorts the blocks by (tag, row, col), given that the blocks of each source (from run_start[s] to
// run_start[s + 1]) with one tag ascend by (row, col): a stable counting pass by tag when the tags
// are few for the blocks, then each tag's runs merged. Otherwise a plain sort.
void sort_blocks(std::vector<ExchangedBlocks::Block>& blocks, const std::vector<std::size_t>& run_start, int tag_min,
                 int tag_max) {
  const std::size_t n = blocks.size();
  if (n < 2) return;
  const auto ntags = static_cast<std::size_t>(static_cast<std::int64_t>(tag_max) - tag_min + 1);
  if (ntags > n) {
    std::sort(blocks.begin(), blocks.end(), block_less);
    return;
  }
  // Each block's source, then a stable counting pass by tag (sources stay in order within a tag).
  std::vector<int> source(n);
  for (std::size_t s = 0; s + 1 < run_start.size(); ++s)
    std::fill(source.begin() + static_cast<std::ptrdiff_t>(run_start[s]),
              source.begin() + static_cast<std::ptrdiff_t>(run_start[s + 1]), static_cast<int>(s));
  std::vector<std::size_t> at(ntags + 1, 0);
  for (const auto& b : blocks) ++at[static_cast<std::size_t>(b.tag - tag_min) + 1];
  for (std::size_t t = 0; t < ntags; ++t) at[t + 1] += at[t];
  const std::vector<std::size_t> tag_start(at.begin(), at.end());
  std::vector<ExchangedBlocks::Block> sorted(n);
  std::vector<int> sorted_source(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t to = at[static_cast<std::size_t>(blocks[i].tag - tag_min)]++;
    sorted[to] = blocks[i];
    sorted_source[to] = source[i];
  }
  // Within a tag: one sorted run per source, in source order; merged pairwise from the left.
  for (std::size_t t = 0; t < ntags; ++t) {
    const std::size_t b = tag_start[t], e = tag_start[t + 1];
    for (std::size_t i = b + 1; i < e; ++i)
      if (sorted_source[i] != sorted_source[i - 1])
        std::inplace_merge(sorted.begin() + static_cast<std::ptrdiff_t>(b),
                           sorted.begin() + static_cast<std::ptrdiff_t>(i),
                           sorted.begin() + static_cast<std::ptrdiff_t>(std::upper_bound(
                                                sorted_source.begin() + static_cast<std::ptrdiff_t>(i),
                                                sorted_source.begin() + static_cast<std::ptrdiff_t>(e),
                                                sorted_source[i]) -
                                            sorted_source.begin()),
                           block_less);
  }
  blocks.swap(sorted);
}

}  // namespace

ExchangedBlocks exchange_blocks(const PanelView& v, const BlockLayout& layout, MPI_Comm comm,
                                const std::function<int(int row, int col, int& tag)>& dest, mpi::Traffic& traffic,
                                mpi::Role role, ExchangeRoute* route) {
  const int p = mpi::size(comm), me = mpi::rank(comm);
  auto values_of = [&](int i, int j) { return std::int64_t{layout.rows.size(i)} * layout.cols.size(j); };
  // Per destination: (tag, row, col) triples and values, in local block order. A rank's own blocks
  // do not go through the send buffer and the Alltoallv: they are copied once, straight from v.
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
  const auto self = static_cast<std::size_t>(me);
  const int own_idx = nidx[self], own_val = nval[self];
  nidx[self] = nval[self] = 0;
  std::vector<int> ip(static_cast<std::size_t>(p), 0), vp(static_cast<std::size_t>(p), 0);
  for (int d = 1; d < p; ++d) {
    ip[d] = ip[d - 1] + nidx[d - 1];
    vp[d] = vp[d - 1] + nval[d - 1];
  }
  // Both counts in one MPI_Alltoall: (index words, values) per rank.
  std::vector<int> scount(2 * static_cast<std::size_t>(p)), rcount(2 * static_cast<std::size_t>(p));
  for (std::size_t d = 0; d < static_cast<std::size_t>(p); ++d) {
    scount[2 * d] = nidx[d];
    scount[2 * d + 1] = nval[d];
  }
  if (p > 1) mpi::check(MPI_Alltoall(scount.data(), 2, MPI_INT, rcount.data(), 2, MPI_INT, comm), "MPI_Alltoall");
  std::vector<int> ridx(static_cast<std::size_t>(p)), rval(static_cast<std::size_t>(p));
  for (std::size_t d = 0; d < static_cast<std::size_t>(p); ++d) {
    ridx[d] = rcount[2 * d];
    rval[d] = rcount[2 * d + 1];
  }
  // My own part goes after the others' in the receive buffers (the blocks are sorted below).
  const std::int64_t others_idx = std::accumulate(ridx.begin(), ridx.end(), std::int64_t{0});
  const std::int64_t others_val = std::accumulate(rval.begin(), rval.end(), std::int64_t{0});
  const std::int64_t tri = others_idx + own_idx, trv = others_val + own_val;
  ExchangedBlocks out;
  out.values_from_others = others_val;  // a rank's own part is not traffic
  CommBuffer<std::int64_t> sidx(static_cast<std::size_t>(ip.back() + nidx.back()));
  CommBuffer<double> sval(static_cast<std::size_t>(vp.back() + nval.back()));
  CommBuffer<std::int64_t> ridx_buf(static_cast<std::size_t>(tri));
  out.values.resize(static_cast<std::size_t>(trv));
  std::int64_t own_i = others_idx, own_v = others_val;
  for (int r = 0; r < v.nrows; ++r)
    for (std::int64_t b = v.row_ptr[r]; b < v.row_ptr[r + 1]; ++b) {
      const int i = static_cast<int>(v.row_ids[r]), j = static_cast<int>(v.cols[b]);
      const auto d = static_cast<std::size_t>(to[static_cast<std::size_t>(b)]);
      const std::int64_t n = values_of(i, j);
      const bool own = d == self;
      std::int64_t* idx = own ? ridx_buf.data() + own_i : sidx.data() + ip[d];
      double* val = own ? out.values.data() + own_v : sval.data() + vp[d];
      idx[0] = tags[static_cast<std::size_t>(b)];
      idx[1] = i;
      idx[2] = j;
      std::copy(v.data + v.offsets[b], v.data + v.offsets[b] + n, val);
      if (own) {
        own_i += 3;
        own_v += n;
      } else {
        ip[d] += 3;
        vp[d] += static_cast<int>(n);
      }
    }
  if (p > 1) {
    traffic.alltoallv(sidx.data(), nidx, ridx_buf.data(), ridx, MPI_INT64_T, comm, role, mpi::Payload::Index);
    traffic.alltoallv(sval.data(), nval, out.values.data(), rval, MPI_DOUBLE, comm, role, mpi::Payload::Data);
  }
  // The received blocks in source order (the others' in rank order, then my own): each source
  // sent its blocks in its panel's (row, col) order, so each source's blocks of one tag are a
  // sorted run.
  std::vector<ExchangedBlocks::Block> got;
  got.reserve(static_cast<std::size_t>(tri / 3));
  std::vector<std::size_t> run_start;  // where each source's blocks begin in `got`
  std::int64_t off = 0, q = 0;
  int tag_min = 0, tag_max = 0;
  for (int src = 0; src <= p; ++src) {  // the p others' parts (mine is empty there), then my own
    const std::int64_t words = src < p ? ridx[static_cast<std::size_t>(src)] : own_idx;
    run_start.push_back(got.size());
    for (const std::int64_t end = q + words; q < end; q += 3) {
      const ExchangedBlocks::Block blk{static_cast<int>(ridx_buf[static_cast<std::size_t>(q)]),
                                       static_cast<int>(ridx_buf[static_cast<std::size_t>(q + 1)]),
                                       static_cast<int>(ridx_buf[static_cast<std::size_t>(q + 2)]), off};
      off += values_of(blk.row, blk.col);
      tag_min = got.empty() ? blk.tag : std::min(tag_min, blk.tag);
      tag_max = got.empty() ? blk.tag : std::max(tag_max, blk.tag);
      got.push_back(blk);
    }
  }
  run_start.push_back(got.size());
  sort_blocks(got, run_start, tag_min, tag_max);
  out.blocks = std::move(got);
  if (route != nullptr) {
    route->to.assign(to.begin(), to.end());
    route->send_values = std::move(nval);
    route->recv_values = std::move(rval);
    route->own_values = own_val;
    route->blocks.assign(out.blocks.begin(), out.blocks.end());
    route->values_from_others = out.values_from_others;
  }
  return out;
}

ExchangedBlocks exchange_values(const PanelView& v, const BlockLayout& layout, MPI_Comm comm,
                                const ExchangeRoute& route, mpi::Traffic& traffic, mpi::Role role) {
  const int p = mpi::size(comm), me = mpi::rank(comm);
  const auto np = static_cast<std::size_t>(p);
  if (route.to.size() != static_cast<std::size_t>(v.nblocks) || route.send_values.size() != np ||
      route.recv_values.size() != np)
    throw Error("exchange_values", "the route was recorded for another panel or communicator");
  // The panel's blocks must fill the route's counts exactly (checked before anything is written).
  auto values_of = [&](int r, std::int64_t b) {
    return layout.rows.size(static_cast<int>(v.row_ids[r])) * layout.cols.size(static_cast<int>(v.cols[b]));
  };
  std::vector<std::int64_t> sum(static_cast<std::size_t>(p), 0);
  for (int r = 0; r < v.nrows; ++r)
    for (std::int64_t b = v.row_ptr[r]; b < v.row_ptr[r + 1]; ++b) {
      const int d = route.to[static_cast<std::size_t>(b)];
      if (d < 0 || d >= p) throw Error("exchange_values", "the route sends a block to no rank of the communicator");
      sum[static_cast<std::size_t>(d)] += values_of(r, b);
    }
  for (std::size_t d = 0; d < np; ++d)
    if (sum[d] != (static_cast<int>(d) == me ? route.own_values : route.send_values[d]))
      throw Error("exchange_values", "the panel's blocks are not the route's");
  std::vector<int> vp(static_cast<std::size_t>(p), 0);
  for (int d = 1; d < p; ++d) vp[d] = vp[d - 1] + route.send_values[d - 1];
  const std::int64_t others = std::accumulate(route.recv_values.begin(), route.recv_values.end(), std::int64_t{0});
  ExchangedBlocks out;
  out.values_from_others = route.values_from_others;
  out.values.resize(static_cast<std::size_t>(others + route.own_values));
  CommBuffer<double> sval(static_cast<std::size_t>(vp.back() + route.send_values.back()));
  std::int64_t own = others;
  for (int r = 0; r < v.nrows; ++r)
    for (std::int64_t b = v.row_ptr[r]; b < v.row_ptr[r + 1]; ++b) {
      const int n = values_of(r, b);
      const int d = route.to[static_cast<std::size_t>(b)];
      double* at = d == me ? out.values.data() + own : sval.data() + vp[static_cast<std::size_t>(d)];
      std::copy(v.data + v.offsets[b], v.data + v.offsets[b] + n, at);
      if (d == me)
        own += n;
      else
        vp[static_cast<std::size_t>(d)] += n;
    }
  if (p > 1)
    traffic.alltoallv(sval.data(), route.send_values, out.values.data(), route.recv_values, MPI_DOUBLE, comm, role,
                      mpi::Payload::Data);
  out.blocks.assign(route.blocks.begin(), route.blocks.end());
  return out;
}

}  // namespace plexus
