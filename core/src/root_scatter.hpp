#pragma once
// A file read by rank 0 alone, its entries sent to the ranks owning their blocks, chunk by chunk;
// rank 0's errors thrown on every rank alike. Private to core: the Matrix Market and CP2K CSR
// readers share it.
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <vector>

#include "local_blocks.hpp"
#include "plexus/error.hpp"
#include "plexus/matrix.hpp"

namespace plexus::detail {

/// What rank 0 met in a step only it runs: nothing (kind 0), an InputError (1), another plexus
/// Error (2), std::bad_alloc (3) or another exception (4).
struct Outcome {
  std::int64_t kind = 0;
  std::string where, message;
};

/// Runs `step`; what it throws becomes the outcome (nothing escapes but what the catch blocks
/// themselves throw).
template <class F>
Outcome attempt(F&& step) {
  try {
    step();
  } catch (const InputError& e) {
    return {1, e.where(), e.what()};
  } catch (const Error& e) {
    return {2, e.where(), e.what()};
  } catch (const std::bad_alloc&) {
    return {3, "", ""};
  } catch (const std::exception& e) {
    return {4, "", e.what()};
  }
  return {};
}

/// Rank 0's outcome, and rank 0's `flag`, on every rank: each throws the error rank 0 met (the
/// same type and message), so that all leave together. The throw comes after the broadcast: no
/// rank is left waiting in a collective, none unwinds through one. Collective over `comm`.
void share(const Outcome& outcome, std::int64_t& flag, MPI_Comm comm);
void share(const Outcome& outcome, MPI_Comm comm);

/// One element of a matrix (0-based) and the line of the file that gave it.
struct Entry {
  std::int64_t row, col;
  double value;
  std::int64_t line;
};
static_assert(sizeof(Entry) == 32, "entries are sent as bytes, 32 each");

/// Rank 0 of the matrix's grid reads; every rank keeps the elements of its own blocks in `blocks`.
/// Rank 0 gathers up to `chunk_entries` elements of other ranks (storing its own at once), then
/// tells every rank that it goes on and sends each its part (MPI_Scatterv); at the end of the file
/// or at an error it tells them so. Beyond its own blocks rank 0 holds one chunk.
class RootScatter {
 public:
  RootScatter(const DistMatrix& m, LocalBlocks& blocks, std::size_t chunk_entries);

  /// Collective. Rank 0 runs `read`, which gives every element to put(); the other ranks receive
  /// theirs until rank 0 is done. What `read` throws on rank 0 is thrown on every rank.
  template <class F>
  void run(F&& read) {
    if (root_) {
      const Outcome outcome = attempt(read);
      finish(outcome);
    } else {
      receive_all();
    }
  }

  /// Rank 0, inside `read`: an element of the matrix. Collective when a chunk is full.
  void put(const Entry& e) {
    const int i = blocks_.row_block(e.row), j = blocks_.col_block(e.col);
    const int owner = m_.distribution().owner(i, j);
    if (owner == 0) {
      blocks_.store(i, j, e.row, e.col, e.value, e.line);
      return;
    }
    outgoing_[static_cast<std::size_t>(owner)].push_back(e);
    if (++pending_ == chunk_) send(0);
  }

 private:
  void send(std::int64_t last);  // rank 0: tells every rank it goes on (last 0) or ends (1), and scatters
  void finish(const Outcome& outcome);
  void receive_all();
  void scatter();

  const DistMatrix& m_;
  LocalBlocks& blocks_;
  MPI_Comm comm_;
  int ranks_;
  bool root_;
  std::size_t chunk_;
  std::size_t pending_ = 0;
  std::vector<std::vector<Entry>> outgoing_;  // rank 0: by owner
  std::vector<Entry> buffer_;                 // rank 0: the chunk in rank order; others: theirs
  std::vector<int> counts_, displs_;          // bytes
};

}  // namespace plexus::detail
