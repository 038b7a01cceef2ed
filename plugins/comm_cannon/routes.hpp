#pragma once
// What cannon (cannon.cpp) keeps of a multiply for the next ones: the sizes of the images on each
// ring, and the routes of the pre-shift, replayed when the operands come back with the same
// patterns.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "image_queue.hpp"
#include "plexus/exchange.hpp"
#include "plexus/layout.hpp"
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

}  // namespace plexus::cannon
