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

/// Sends every block (row, col) of v to the rank of comm that dest(row, col, tag) returns, with the
/// tag it sets, in one counted MPI_Alltoallv for the index and one for the values (role `role`),
/// after an MPI_Alltoall of the counts. The blocks a rank sends to itself are copied once, not
/// through MPI (on a communicator of one rank, no MPI call is made). Returns the blocks this rank
/// receives. Collective.
ExchangedBlocks exchange_blocks(const PanelView& v, const BlockLayout& layout, MPI_Comm comm,
                                const std::function<int(int row, int col, int& tag)>& dest, mpi::Traffic& traffic,
                                mpi::Role role);

}  // namespace plexus
