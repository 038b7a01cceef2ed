#include "root_scatter.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <limits>
#include <memory>
#include <thread>
#include <utility>

#include "plexus/distribution.hpp"
#include "plexus/input.hpp"
#include "plexus/mpi.hpp"

namespace plexus::detail {

namespace {

// Thrown in a reader's thread when the main thread has left read_files (an error elsewhere).
struct Stopped final : std::exception {
  const char* what() const noexcept override { return "reading stopped"; }
};

}  // namespace

void share(const Outcome& outcome, std::int64_t& flag, MPI_Comm comm, int root, bool nap) {
  std::int64_t head[4] = {outcome.kind, static_cast<std::int64_t>(outcome.where.size()),
                          static_cast<std::int64_t>(outcome.message.size()), flag};
  if (nap) {
    // MPI's own wait polls without a pause, taking a core from the reading threads.
    MPI_Request request = MPI_REQUEST_NULL;
    mpi::check(MPI_Ibcast(head, 4, MPI_INT64_T, root, comm, &request), "MPI_Ibcast");
    for (int done = 0;;) {
      mpi::check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (done != 0) break;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  } else {
    mpi::check(MPI_Bcast(head, 4, MPI_INT64_T, root, comm), "MPI_Bcast");
  }
  flag = head[3];
  if (head[0] == 0) return;
  std::string text = outcome.where + outcome.message;
  text.resize(static_cast<std::size_t>(head[1] + head[2]));
  mpi::check(MPI_Bcast(text.data(), static_cast<int>(text.size()), MPI_CHAR, root, comm), "MPI_Bcast");
  const std::string where = text.substr(0, static_cast<std::size_t>(head[1]));
  const std::string message = text.substr(static_cast<std::size_t>(head[1]));
  switch (head[0]) {
    case 1:
      throw InputError(where, message);
    case 2:
      throw Error(where, message);
    case 3:
      throw std::bad_alloc();
    default:
      throw Error("rank " + std::to_string(root), message);
  }
}

void share(const Outcome& outcome, MPI_Comm comm, int root) {
  std::int64_t flag = 0;
  share(outcome, flag, comm, root, false);
}

RootScatter::RootScatter(const DistMatrix& m, LocalBlocks& blocks, std::size_t chunk_entries, int root)
    : m_(m),
      blocks_(blocks),
      comm_(m.grid().comm()),
      ranks_(mpi::size(comm_)),
      rank_(mpi::rank(comm_)),
      root_(root),
      // A rank's part of a chunk, and the chunk, are counted in bytes by an int.
      chunk_(std::clamp<std::size_t>(chunk_entries, 1, std::numeric_limits<int>::max() / sizeof(Entry))),
      outgoing_(rank_ == root ? static_cast<std::size_t>(ranks_) : 0),
      counts_(static_cast<std::size_t>(ranks_), 0),
      displs_(static_cast<std::size_t>(ranks_), 0) {
  // Room for an even share of a chunk for each other rank (of a default chunk at most): a vector
  // that grows by doubling passes through blocks below the huge pages' size, each faulted in
  // afresh in a process's first read.
  if (rank_ != root_ || ranks_ < 2) return;
  const std::size_t share = std::min(chunk_, input::kReadChunkEntries) / static_cast<std::size_t>(ranks_ - 1) + 1;
  for (int r = 0; r < ranks_; ++r)
    if (r != root_) outgoing_[static_cast<std::size_t>(r)].reserve(share);
}

void RootScatter::hand_over(bool last, Outcome outcome) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return !full_ || stopped_.load(std::memory_order_relaxed); });
  if (stopped_.load(std::memory_order_relaxed)) {
    if (last) return;
    throw Stopped();
  }
  try {
    buffer_.clear();
    for (int r = 0; r < ranks_; ++r) {
      auto& o = outgoing_[static_cast<std::size_t>(r)];
      counts_[static_cast<std::size_t>(r)] = static_cast<int>(o.size() * sizeof(Entry));
      displs_[static_cast<std::size_t>(r)] = static_cast<int>(buffer_.size() * sizeof(Entry));
      buffer_.insert(buffer_.end(), o.begin(), o.end());
      o.clear();
    }
  } catch (const std::bad_alloc&) {
    if (!last) throw;  // the reader ends, and hands over its outcome
    // The end must be handed over whatever happens, or the main thread would wait for it.
    std::fill(counts_.begin(), counts_.end(), 0);
    std::fill(displs_.begin(), displs_.end(), 0);
    outcome = Outcome{3, "", ""};
  }
  pending_ = 0;
  last_ = last;
  outcome_ = std::move(outcome);
  full_ = true;
  lock.unlock();
  changed_.notify_all();
}

Outcome RootScatter::take(std::int64_t& last) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return full_; });
  last = last_ ? 1 : 0;
  return outcome_;
}

void RootScatter::sent() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    full_ = false;
  }
  changed_.notify_all();
}

void RootScatter::stop() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopped_.store(true, std::memory_order_relaxed);
  }
  changed_.notify_all();
}

void RootScatter::stop_reading() { throw Stopped(); }

void RootScatter::scatter() {
  if (ranks_ == 1) return;
  int bytes = 0;
  mpi::check(MPI_Scatter(counts_.data(), 1, MPI_INT, &bytes, 1, MPI_INT, root_, comm_), "MPI_Scatter");
  if (!root()) buffer_.resize(static_cast<std::size_t>(bytes) / sizeof(Entry));
  mpi::check(MPI_Scatterv(buffer_.data(), counts_.data(), displs_.data(), MPI_BYTE,
                          root() ? MPI_IN_PLACE : buffer_.data(), bytes, MPI_BYTE, root_, comm_),
             "MPI_Scatterv");
  if (!root())
    for (const Entry& e : buffer_) blocks_.store(e.row, e.col, e.value, e.line);
}

void read_files(std::vector<ScatteredFile>& files, std::size_t chunk_entries) {
  if (files.empty()) return;
  const MPI_Comm comm = files.front().matrix->grid().comm();
  const int ranks = mpi::size(comm);
  std::vector<std::unique_ptr<RootScatter>> scatters;
  scatters.reserve(files.size());  // no reallocation between a new scatter and its owner
  for (std::size_t f = 0; f < files.size(); ++f)
    scatters.emplace_back(new RootScatter(*files[f].matrix, *files[f].blocks, chunk_entries, reading_rank(f, ranks)));
  // This rank's readers, stopped and joined on the way out whatever happens (no MPI call here).
  struct Readers {
    std::vector<RootScatter*> scatters;
    std::vector<std::thread> threads;
    Readers() = default;
    Readers(const Readers&) = delete;
    Readers& operator=(const Readers&) = delete;
    ~Readers() {
      for (RootScatter* s : scatters) s->stop();
      for (std::thread& t : threads) t.join();
    }
  } readers;
  for (std::size_t f = 0; f < files.size(); ++f) {
    RootScatter& s = *scatters[f];
    if (!s.root()) continue;
    readers.scatters.push_back(&s);
    const std::function<void(RootScatter&)>& read = files[f].read;
    try {
      readers.threads.emplace_back([&s, &read] {
        Outcome outcome = attempt([&] { read(s); });
        s.hand_over(true, std::move(outcome));  // at the end it does not throw
      });
    } catch (const std::exception& e) {  // no thread: the file ends here, with the reason
      s.hand_over(true, Outcome{2, "read_files", std::string("cannot start a thread to read a file: ") + e.what()});
    }
  }
  // The files take turns, a chunk each, in the same order on every rank.
  std::vector<bool> done(files.size(), false);
  for (std::size_t left = files.size(); left > 0;) {
    for (std::size_t f = 0; f < files.size(); ++f) {
      if (done[f]) continue;
      RootScatter& s = *scatters[f];
      std::int64_t last = 0;
      Outcome outcome;
      if (s.root()) outcome = s.take(last);
      share(outcome, last, comm, s.root_, true);  // an error: thrown on every rank
      s.scatter();
      if (s.root()) s.sent();
      if (last != 0) {
        done[f] = true;
        --left;
      }
    }
  }
}

std::vector<DistMatrix> read_matrices(const std::vector<MatrixShape>& shapes, std::size_t chunk_entries,
                                      const std::function<void(std::size_t, RootScatter&)>& read,
                                      const std::function<void(std::size_t, std::int64_t)>& duplicate) {
  if (shapes.empty()) return {};
  const MPI_Comm comm = shapes.front().dist->grid().comm();
  for (const MatrixShape& s : shapes)  // the files take turns over one communicator
    if (s.dist->grid().comm() != comm)
      throw Error("read_matrices", "the matrices of files read at once must be distributed on one grid ('" + s.name +
                                       "' is on another than '" + shapes.front().name + "')");
  std::vector<DistMatrix> m;
  m.reserve(shapes.size());  // the files below point to them
  std::vector<std::unique_ptr<LocalBlocks>> blocks;
  std::vector<ScatteredFile> files;
  for (std::size_t f = 0; f < shapes.size(); ++f) {
    m.emplace_back(shapes[f].name, shapes[f].dist, shapes[f].layout);
    blocks.push_back(std::make_unique<LocalBlocks>(m.back()));
    files.push_back({&m.back(), blocks.back().get(), [&read, f](RootScatter& scatter) { read(f, scatter); }});
  }
  read_files(files, chunk_entries);
  for (std::size_t f = 0; f < shapes.size(); ++f) {
    const std::int64_t line = blocks[f]->first_duplicate_line(comm);
    if (line == 0) continue;
    const int root = reading_rank(f, mpi::size(comm));
    Outcome outcome;
    if (mpi::rank(comm) == root) {
      outcome = attempt([&] { duplicate(f, line); });
      if (outcome.kind == 0) outcome = {2, "read_matrices", "an entry is given twice, at line " + std::to_string(line)};
    }
    share(outcome, comm, root);  // throws on every rank
  }
  for (std::size_t f = 0; f < shapes.size(); ++f) blocks[f]->move_into(m[f]);
  return m;
}

}  // namespace plexus::detail
