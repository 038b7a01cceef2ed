#pragma once
// What cannon (cannon.cpp) keeps of a multiply for the next ones: the sizes of the images on each
// ring, and the routes of the pre-shift, replayed when the operands come back with the same
// patterns; and the agreement over the grid on which kept routes serve a multiply.
#include <mpi.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <vector>

#include "image_queue.hpp"
#include "plexus/exchange.hpp"
#include "plexus/layout.hpp"
#include "plexus/local_multiply.hpp"
#include "plexus/matrix.hpp"
#include "plexus/memory.hpp"
#include "plexus/mpi.hpp"
#include "plexus/panel.hpp"
#include "schedule.hpp"

namespace plexus::cannon {

template <class T>
using Kept = memory::vector<T, memory::Category::Other>;

// How one operand's pre-shift went in one multiply, and what it depended on.
struct OperandRoute {
  // The key: the local panel's index and block sizes, the distribution, the k-groups (from A's
  // column distribution) and the ring.
  Kept<std::int64_t> row_ids, row_ptr, cols;
  BlockLayout layout;
  std::vector<int> row_dist, col_dist, k_dist;
  mpi::CommWatch ring;  // the communicator itself, not a handle MPI may hand out again
  // Of fused ticks also the local panel's value area (data_size, gaps included), or -1: it is
  // sent or copied as it is, so the ring's sizes (the peer's buffer, the shared window) hold only
  // for that size.
  std::int64_t fused_values = -1;
  // The route: the received blocks (by slot, row, col), where their values come from (the
  // exchange's buffer, or the local panel when no block changes rank), and the ring's sizes.
  bool stays_home = false;
  ExchangeRoute exchange;  // its blocks also serve the stays-home case (offsets in the panel)
  std::int64_t planned_recv = 0;
  RingSizes sizes;
  KeptMerge merge;  // fused ticks: both images' index, as the last multiply had it

  bool matches(const DistMatrix& M, const std::vector<int>& k_owner, MPI_Comm comm) const {
    const PanelView v = M.local().view();
    return ring.is(comm) && static_cast<std::int64_t>(cols.size()) == v.nblocks &&
           static_cast<int>(row_ids.size()) == v.nrows && std::equal(cols.begin(), cols.end(), v.cols) &&
           std::equal(row_ids.begin(), row_ids.end(), v.row_ids) &&
           std::equal(row_ptr.begin(), row_ptr.end(), v.row_ptr) && layout == M.layout() &&
           row_dist == M.distribution().row_dist() && col_dist == M.distribution().col_dist() && k_dist == k_owner &&
           (fused_values < 0 || fused_values == v.data_size);
  }
  void keep_key(const DistMatrix& M, const std::vector<int>& k_owner, MPI_Comm comm) {
    const PanelView v = M.local().view();
    row_ids.assign(v.row_ids, v.row_ids + v.nrows);
    row_ptr.assign(v.row_ptr, v.row_ptr + v.nrows + 1);
    cols.assign(v.cols, v.cols + v.nblocks);
    layout = M.layout();
    row_dist = M.distribution().row_dist();
    col_dist = M.distribution().col_dist();
    k_dist = k_owner;
    ring.watch(comm);
    fused_values = -1;
  }
};

// The routes of one multiply: A's (along the process row) and B's (along the column); an operand
// that does not move has none.
struct Routes {
  bool valid = false;
  std::uint64_t used = 0;  // when it was last recorded or replayed (the same on every rank)
  int PR = 0, PC = 0, pr = -1, pc = -1;
  bool fused = false;  // the two ticks in one pass (agreed over the grid when recorded)
  OperandRoute a, b;
};
// The routes kept: enough for the few products an iteration alternates between (X*X and X*X^2 of
// a sign or purification step), the least recently used replaced.
constexpr int kKeptRoutes = 4;

// Whether B's images, whose indices entry `r` knows, can go into the shared window as one dense
// matrix on this rank: the window kept where the index was made, room for the whole matrix, and a
// dense tick with this rank's A (its local panel, or where A moves the index of both its images).
inline bool dense_b_fits(Routes& r, const DistMatrix& A, const DistMatrix& B, const Plan& plan,
                         const LocalProduct& product, const SharedRing& b_ring) {
  if (plan.PR != 2 || !b_ring.fits(A.grid().col_comm(), r.b.sizes.values)) return false;
  KeptMerge& k = r.b.merge;
  const std::shared_ptr<const DenseLayout>& d = k.dense_layout(B.layout());
  if (!d || k.mine_at() != b_ring.mine_offset() || k.theirs_at() != b_ring.peer_offset() ||
      d->K * d->N > b_ring.area_values())
    return false;
  if (plan.PC > 1 && !r.a.merge.index) return false;
  const PanelView a = plan.PC > 1 ? r.a.merge.index->view(nullptr, 0) : A.local().view();
  return product.would_be_dense(a, A.layout(), k.index->view(nullptr, 0));
}

// Of cannon's kept routes (`routes`, the same entries on every rank), the entry whose routes serve
// this multiply, or -1: on every rank of the grid, the same grid position and, for each operand
// that moves, the same local index, block sizes, distribution and k-groups. Each rank's set of
// matching entries meets the others' in one MPI_Allreduce (bitwise and) over the grid, so all
// ranks replay the same entry or none does.
//
// With it, whether the entry's fused ticks know both packed indices of every moving operand:
// where every rank's local panel shows the very index object whose packing the entry's merge
// kept, or one that packs to the same words (KeptMerge::knows), each rank's own packed index is
// the kept one, and so is its peer's, which then sends none (ticks.cpp). Agreed in the same
// call: a rank whose panel changed (other blocks, or its values at other offsets) makes every
// rank send its index in full.
//
// And with that, whether B's two images go into the shared window as one dense matrix
// (FusedOperand::dense): where the kept index of both is dense and fits the window, and every
// rank's tick would be a dense one (LocalProduct::would_be_dense; on a non-square grid each rank
// has other A rows).
struct Agreed {
  int entry = -1;
  bool known = false, dense_b = false;
};
inline Agreed agreed_routes(std::array<Routes, kKeptRoutes>& routes, const DistMatrix& A, const DistMatrix& B,
                            const Plan& plan, const LocalProduct& product, const SharedRing& b_ring) {
  unsigned bits[3] = {0, 0, 0};  // matching entries, entries whose indices are known, with B dense
  for (std::size_t e = 0; e < routes.size(); ++e) {
    const Routes& r = routes[e];
    bool same = r.valid && r.PR == plan.PR && r.PC == plan.PC && r.pr == plan.pr && r.pc == plan.pc;
    if (same && plan.PC > 1) same = r.a.matches(A, plan.kgroup, A.grid().row_comm());
    if (same && plan.PR > 1) same = r.b.matches(B, plan.kgroup, A.grid().col_comm());
    if (same) bits[0] |= 1U << e;
    const bool known = same && r.fused && (plan.PC == 1 || r.a.merge.knows(A.local().view())) &&
                       (plan.PR == 1 || r.b.merge.knows(B.local().view()));
    if (known) bits[1] |= 1U << e;
    if (known && dense_b_fits(routes[e], A, B, plan, product, b_ring)) bits[2] |= 1U << e;
  }
  mpi::check(MPI_Allreduce(MPI_IN_PLACE, bits, 3, MPI_UNSIGNED, MPI_BAND, A.grid().plane_comm()), "MPI_Allreduce");
  if (bits[0] == 0) return {};
  const int e = std::countr_zero(bits[0]);
  return {e, ((bits[1] >> e) & 1U) != 0, ((bits[2] >> e) & 1U) != 0};
}

}  // namespace plexus::cannon
