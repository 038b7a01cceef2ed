#pragma once
// Files read by one rank each (its root, in a thread of its own), their entries sent to the ranks
// owning their blocks, chunk by chunk; a root's errors thrown on every rank alike. Private to core:
// the Matrix Market and CP2K CSR readers share it.
#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "local_blocks.hpp"
#include "plexus/error.hpp"
#include "plexus/matrix.hpp"
#include "plexus/memory.hpp"

namespace plexus::detail {

/// What a root met in a step only it runs: nothing (kind 0), an InputError (1), another plexus
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

/// The outcome of `root`, and its `flag`, on every rank: each throws the error the root met (the
/// same type and message), so that all leave together. The throw comes after the broadcast: no
/// rank is left waiting in a collective, none unwinds through one. `nap`: the ranks wait for the
/// broadcast in naps of 50 us instead of MPI's polling, which would keep a core from threads
/// that read. Collective over `comm`.
void share(const Outcome& outcome, std::int64_t& flag, MPI_Comm comm, int root = 0, bool nap = false);
void share(const Outcome& outcome, MPI_Comm comm, int root = 0);

/// One element of a matrix (0-based) and the line of the file that gave it.
struct Entry {
  std::int64_t row, col;
  double value;
  std::int64_t line;
};
static_assert(sizeof(Entry) == 32, "entries are sent as bytes, 32 each");

class RootScatter;

/// One file of read_files(): its matrix, the blocks this rank keeps of it, and what reads it on its
/// root (giving every element to RootScatter::put).
struct ScatteredFile {
  const DistMatrix* matrix;
  LocalBlocks* blocks;
  std::function<void(RootScatter&)> read;
};

/// The rank of the matrix's grid that reads file `f` of read_files() (of `ranks`): f mod ranks.
inline int reading_rank(std::size_t f, int ranks) { return static_cast<int>(f % static_cast<std::size_t>(ranks)); }

/// Reads the files at once, each into its own blocks: file f by rank reading_rank(f) of the grid
/// (all files share the matrices' grid), in a thread of its own, while the rank's main thread
/// sends what the readers gathered. Each reader gathers up to `chunk_entries` elements of other
/// ranks (storing its own rank's at once) and hands them over; the files take turns, one chunk
/// each: the root tells every rank whether it goes on and sends each its part (MPI_Scatterv). At the
/// end of a file or at an error the root tells them so, and an error is thrown on every rank (the
/// first file's in the turn, where several fail). Beyond its own blocks a root holds two chunks of
/// each file it reads. The readers make no MPI call. Collective over the grid's communicator.
void read_files(std::vector<ScatteredFile>& files, std::size_t chunk_entries);

/// A matrix read_matrices() makes: its name, distribution and block sizes.
struct MatrixShape {
  std::string name;
  std::shared_ptr<const Distribution> dist;
  BlockLayout layout;
};

/// The matrices of several files read at once (read_files), one per shape (their distributions on
/// one grid): read(f, scatter) reads file f on its reading rank, giving its elements to `scatter`;
/// where a file gave an entry twice (the rank holding it saw it), duplicate(f, line) runs on file
/// f's reading rank with the line that gave it again and throws the file's message, which every
/// rank then throws. Collective over the grid.
std::vector<DistMatrix> read_matrices(const std::vector<MatrixShape>& shapes, std::size_t chunk_entries,
                                      const std::function<void(std::size_t, RootScatter&)>& read,
                                      const std::function<void(std::size_t, std::int64_t)>& duplicate);

/// A file read by one rank (its root): the elements it gives go to the ranks owning their blocks,
/// chunk by chunk (read_files).
class RootScatter {
 public:
  /// Root's reader, in its thread: an element of the matrix.
  void put(const Entry& e) {
    // A reader whose elements all stay on its rank hands nothing over until the end: it looks
    // every 64 K elements whether the main thread has left.
    if ((++given_ & 0xFFFF) == 0 && stopped_.load(std::memory_order_relaxed)) stop_reading();
    const int i = blocks_.row_block(e.row), j = blocks_.col_block(e.col);
    const int owner = m_.distribution().owner(i, j);
    if (owner == root_) {
      blocks_.store(i, j, e.row, e.col, e.value, e.line);
      return;
    }
    outgoing_[static_cast<std::size_t>(owner)].push_back(e);
    if (++pending_ == chunk_) hand_over(false, Outcome{});
  }

 private:
  friend void read_files(std::vector<ScatteredFile>& files, std::size_t chunk_entries);
  RootScatter(const DistMatrix& m, LocalBlocks& blocks, std::size_t chunk_entries, int root);
  // Root's reader: waits until the main thread has sent the chunk before, then hands over what it
  // gathered (last: and that the file ends, with `outcome`). Throws Stopped when the main thread
  // leaves.
  void hand_over(bool last, Outcome outcome);
  // Root's main thread: waits for the reader's next chunk; its outcome and whether it is the last.
  Outcome take(std::int64_t& last);
  void sent();                              // root's main thread: the chunk is sent, the reader may hand over the next
  void stop();                              // root's main thread, leaving: the reader throws Stopped at its next look
  [[noreturn]] static void stop_reading();  // throws Stopped
  void scatter();
  bool root() const { return rank_ == root_; }

  const DistMatrix& m_;
  LocalBlocks& blocks_;
  MPI_Comm comm_;
  int ranks_, rank_, root_;
  std::size_t chunk_;
  std::size_t pending_ = 0;
  std::uint64_t given_ = 0;                   // root's reader: the elements put so far
  // Pooled and default-initialised (plexus/memory.hpp): a chunk's megabytes would otherwise be
  // cleared before they are written, and fault in fresh 4 KB pages on every read (on a guest that
  // charges 11-14 us a page, most of a two-rank read of h2o-32's H and S; docs/performance.md).
  using Entries = memory::vector<Entry, memory::Category::Other>;
  std::vector<Entries> outgoing_;             // root's reader: by owner
  Entries buffer_;                            // the chunk in rank order (root), or this rank's part of it
  std::vector<int> counts_, displs_;          // bytes
  // Between root's reader and main thread: a chunk in buffer_ waits to be sent (full), the file ends
  // with it (last, outcome), the main thread left (stopped).
  std::mutex mutex_;
  std::condition_variable changed_;
  bool full_ = false, last_ = false;
  std::atomic<bool> stopped_{false};
  Outcome outcome_;
};

}  // namespace plexus::detail
