#include "root_scatter.hpp"

#include <algorithm>
#include <limits>

#include "plexus/distribution.hpp"
#include "plexus/mpi.hpp"

namespace plexus::detail {

void share(const Outcome& outcome, std::int64_t& flag, MPI_Comm comm) {
  std::int64_t head[4] = {outcome.kind, static_cast<std::int64_t>(outcome.where.size()),
                          static_cast<std::int64_t>(outcome.message.size()), flag};
  mpi::check(MPI_Bcast(head, 4, MPI_INT64_T, 0, comm), "MPI_Bcast");
  flag = head[3];
  if (head[0] == 0) return;
  std::string text = outcome.where + outcome.message;
  text.resize(static_cast<std::size_t>(head[1] + head[2]));
  mpi::check(MPI_Bcast(text.data(), static_cast<int>(text.size()), MPI_CHAR, 0, comm), "MPI_Bcast");
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
      throw Error("rank 0", message);
  }
}

void share(const Outcome& outcome, MPI_Comm comm) {
  std::int64_t flag = 0;
  share(outcome, flag, comm);
}

RootScatter::RootScatter(const DistMatrix& m, LocalBlocks& blocks, std::size_t chunk_entries)
    : m_(m),
      blocks_(blocks),
      comm_(m.grid().comm()),
      ranks_(mpi::size(comm_)),
      root_(mpi::rank(comm_) == 0),
      // A rank's part of a chunk, and the chunk, are counted in bytes by an int.
      chunk_(std::clamp<std::size_t>(chunk_entries, 1, std::numeric_limits<int>::max() / sizeof(Entry))),
      outgoing_(root_ ? static_cast<std::size_t>(ranks_) : 0),
      counts_(static_cast<std::size_t>(ranks_), 0),
      displs_(static_cast<std::size_t>(ranks_), 0) {}

void RootScatter::send(std::int64_t last) {
  buffer_.clear();
  for (int r = 0; r < ranks_; ++r) {
    auto& o = outgoing_[static_cast<std::size_t>(r)];
    counts_[static_cast<std::size_t>(r)] = static_cast<int>(o.size() * sizeof(Entry));
    displs_[static_cast<std::size_t>(r)] = static_cast<int>(buffer_.size() * sizeof(Entry));
    buffer_.insert(buffer_.end(), o.begin(), o.end());
    o.clear();
  }
  pending_ = 0;
  share(Outcome{}, last, comm_);
  scatter();
}

void RootScatter::finish(const Outcome& outcome) {
  if (outcome.kind != 0) {
    std::int64_t last = 1;
    share(outcome, last, comm_);  // throws on every rank
  }
  send(1);
}

void RootScatter::receive_all() {
  for (std::int64_t last = 0; last == 0;) {
    share(Outcome{}, last, comm_);
    scatter();
  }
}

void RootScatter::scatter() {
  if (ranks_ == 1) return;
  int bytes = 0;
  mpi::check(MPI_Scatter(counts_.data(), 1, MPI_INT, &bytes, 1, MPI_INT, 0, comm_), "MPI_Scatter");
  if (!root_) buffer_.resize(static_cast<std::size_t>(bytes) / sizeof(Entry));
  mpi::check(MPI_Scatterv(buffer_.data(), counts_.data(), displs_.data(), MPI_BYTE,
                          root_ ? MPI_IN_PLACE : buffer_.data(), bytes, MPI_BYTE, 0, comm_),
             "MPI_Scatterv");
  if (!root_)
    for (const Entry& e : buffer_) blocks_.store(e.row, e.col, e.value, e.line);
}

}  // namespace plexus::detail
