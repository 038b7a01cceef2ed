#pragma once
// Moving blocks between ranks: every block of a panel goes to the rank (and with the tag) a
// function chooses, in counted all-to-all exchanges. Redistribution and Cannon's pre-shift use it.
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "plexus/layout.hpp"
#include "plexus/memory.hpp"
#include "plexus/mpi.hpp"
#include "plexus/panel.hpp"

namespace plexus {

struct ExchangedBlocks {
  struct Block {
    int tag, row, col;
    std::int64_t offset;  ///< of the block's values in `values`
  };
  std::vector<Block> blocks;  ///< sorted by (tag, row, col)
  CommBuffer<double> values;
  std::int64_t values_from_others = 0;  ///< values received from other ranks, known before the data moved
};

/// How an exchange went, for exchanges of the same blocks again: where each local block went, the
/// values counts per rank, and the blocks received (sorted, with their offsets in `values`). Valid
/// for an exchange over the same communicator in which every rank sends a panel of the same index
/// (rows, blocks, block sizes) to the same destinations and tags as when it was recorded.
/// Its arrays, sized by block counts and kept as long as the route, are counted as
/// memory::Category::Other.
struct ExchangeRoute {
  memory::vector<int, memory::Category::Other> to;  ///< the destination rank of each local block
  std::vector<int> send_values, recv_values;         ///< values to and from each rank (0 for this rank)
  std::int64_t own_values = 0;                       ///< values this rank keeps (after the others' in `values`)
  /// The received blocks, as exchange_blocks returned them.
  memory::vector<ExchangedBlocks::Block, memory::Category::Other> blocks;
  std::int64_t values_from_others = 0;
};

/// Sends every block (row, col) of v to the rank of comm that dest(row, col, tag) returns, with the
/// tag it sets, in one counted MPI_Alltoallv for the index and one for the values (role `role`),
/// after an MPI_Alltoall of the counts. The blocks a rank sends to itself are copied once, not
/// through MPI (on a communicator of one rank, no MPI call is made). Returns the blocks this rank
/// receives; `route`, if given, receives how the exchange went (exchange_values). Collective.
ExchangedBlocks exchange_blocks(const PanelView& v, const BlockLayout& layout, MPI_Comm comm,
                                const std::function<int(int row, int col, int& tag)>& dest, mpi::Traffic& traffic,
                                mpi::Role role, ExchangeRoute* route = nullptr);

/// The exchange of a recorded route again, with v's current values: one counted MPI_Alltoallv of
/// the values, no counts and no index (the received blocks are the route's). Every rank of comm
/// must replay a route recorded by the same exchange, from a panel with the same index and
/// destinations as then (the caller makes sure all agree). Collective.
ExchangedBlocks exchange_values(const PanelView& v, const BlockLayout& layout, MPI_Comm comm,
                                const ExchangeRoute& route, mpi::Traffic& traffic, mpi::Role role);

}  // namespace plexus
