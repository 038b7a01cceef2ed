#include "plexus/collectives.hpp"

#include <climits>
#include <cstdio>
#include <numeric>
#include <string>
#include <utility>

#include "plexus/error.hpp"

namespace plexus {

// ---- requests -------------------------------------------------------------------------------

CollectiveRequest::Pending::~Pending() = default;

CollectiveRequest::CollectiveRequest(std::unique_ptr<Pending> pending) : pending_(std::move(pending)) {}
CollectiveRequest::CollectiveRequest(CollectiveRequest&&) noexcept = default;

CollectiveRequest& CollectiveRequest::operator=(CollectiveRequest&& o) noexcept {
  if (this != &o) {
    if (pending_) std::fprintf(stderr, "plexus: a pending collective request was overwritten without wait()\n");
    pending_ = std::move(o.pending_);
  }
  return *this;
}

CollectiveRequest::~CollectiveRequest() {
  // No MPI here (this may run while unwinding after another rank failed).
  if (pending_) std::fprintf(stderr, "plexus: a collective request was destroyed before wait()\n");
}

void CollectiveRequest::wait() {
  if (!pending_) return;
  std::unique_ptr<Pending> p = std::move(pending_);
  p->wait();
}

bool CollectiveRequest::test() {
  if (!pending_) return true;
  if (!pending_->test()) return false;
  pending_.reset();
  return true;
}

void wait_all(std::span<CollectiveRequest> requests) {
  for (auto& r : requests) r.wait();
}

MpiPending::MpiPending(std::vector<MPI_Request> requests, mpi::Traffic& traffic, mpi::Role role,
                       std::function<void()> on_complete)
    : requests_(std::move(requests)), traffic_(traffic), role_(role), on_complete_(std::move(on_complete)) {}

MpiPending::~MpiPending() = default;

void MpiPending::wait() {
  const double t0 = mpi::now();
  mpi::check(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  traffic_.add_wait(role_, mpi::now() - t0);
  if (on_complete_) on_complete_();
}

bool MpiPending::test() {
  int flag = 0;
  mpi::check(MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &flag, MPI_STATUSES_IGNORE),
             "MPI_Testall");
  if (flag && on_complete_) {
    on_complete_();
    on_complete_ = nullptr;
  }
  return flag != 0;
}

// ---- core's MPI collectives -----------------------------------------------------------------

namespace {

int as_count(std::size_t n, const char* op) {
  if (n > static_cast<std::size_t>(INT_MAX))
    throw Error(op, std::to_string(n) + " values exceed one MPI call's count (split the buffer)");
  return static_cast<int>(n);
}

void check_root(int root, MPI_Comm comm, const char* op) {
  const int p = mpi::size(comm);
  if (root < 0 || root >= p)
    throw Error(op, "root " + std::to_string(root) + " is not a rank of the communicator (0.." + std::to_string(p - 1) +
                        ")");
}

CollectiveRequest pending(MPI_Request r, mpi::Traffic& t, mpi::Role role, std::function<void()> done = {}) {
  return CollectiveRequest(std::make_unique<MpiPending>(std::vector<MPI_Request>{r}, t, role, std::move(done)));
}

}  // namespace

Collectives::~Collectives() = default;

CommPool& Collectives::pool() const {
  if (pool_ == nullptr)
    throw Error("collectives " + name(), "not bound to a communicator pool (Context binds its collectives; "
                                        "elsewhere call bind(pool) before use)");
  return *pool_;
}

Collectives::RingPosition Collectives::ring_position(MPI_Comm comm) { return {mpi::rank(comm), mpi::size(comm)}; }

void Collectives::reduce_across_rings(MPI_Comm, std::span<double>, mpi::Traffic&) {}

std::map<std::string, double> Collectives::model(const CollectiveSpec& s) const {
  if (s.ranks < 1 || s.rank < 0 || s.rank >= s.ranks || s.values < 0 || s.root < 0 || s.root >= s.ranks)
    throw Error("collectives " + name() + ": model", "rank " + std::to_string(s.rank) + ", root " +
                                                         std::to_string(s.root) + " and " + std::to_string(s.values) +
                                                         " values do not describe an operation on " +
                                                         std::to_string(s.ranks) + " ranks");
  const double bytes = 8.0 * static_cast<double>(s.values), others = s.ranks - 1;
  double sent = 0, received = 0, msgs_sent = 0, msgs_received = 0;
  const bool alone = s.ranks == 1;
  if (s.operation == "allreduce" || s.operation == "reduce_across_rings") {
    if (!alone) sent = received = bytes, msgs_sent = msgs_received = 1;
  } else if (s.operation == "bcast") {
    if (!alone && s.rank == s.root) sent = bytes, msgs_sent = 1;
    if (!alone && s.rank != s.root) received = bytes, msgs_received = 1;
  } else if (s.operation == "reduce") {
    if (s.rank == s.root) received = bytes * others, msgs_received = others;
    if (s.rank != s.root) sent = bytes, msgs_sent = 1;
  } else if (s.operation == "alltoall") {
    const double block = bytes / s.ranks;
    sent = received = block * others;
    msgs_sent = msgs_received = others;
  } else if (s.operation == "circulate") {
    sent = received = bytes * others;  // every buffer of the ring the same size
    msgs_sent = msgs_received = others;
  } else {
    throw Error("collectives " + name() + ": model", "no model of the operation '" + s.operation + "'");
  }
  return {{"bytes_sent", sent}, {"bytes_received", received}, {"messages_sent", msgs_sent},
          {"messages_received", msgs_received}};
}

void Collectives::circulate(MPI_Comm comm, std::span<const double> my_buffer, const ArrivalFn& on_arrival,
                            mpi::Traffic& traffic, int thread) {
  if (thread != 0)
    throw Error("collectives " + name() + ": circulate", "serves one thread; thread " + std::to_string(thread) +
                                                            " asked (use a component with threads, e.g. ring)");
  // Every rank gathers every buffer (sizes first), then visits them in the order a ring would
  // deliver them: its own, then rank me-1, me-2, ...
  const int p = mpi::size(comm), me = mpi::rank(comm);
  const int mine = as_count(my_buffer.size(), "circulate");
  std::vector<int> counts(static_cast<std::size_t>(p)), displs(static_cast<std::size_t>(p), 0);
  mpi::check(MPI_Allgather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, comm), "MPI_Allgather");
  for (int i = 1; i < p; ++i) displs[i] = displs[i - 1] + counts[i - 1];
  CommBuffer<double> all(static_cast<std::size_t>(displs[p - 1] + counts[p - 1]));
  const double t0 = mpi::now();
  mpi::check(MPI_Allgatherv(my_buffer.data(), mine, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE,
                            comm),
             "MPI_Allgatherv");
  traffic.add_wait(mpi::Role::Other, mpi::now() - t0);
  for (int i = 0; i < p; ++i) {
    if (i == me) continue;
    traffic.add_sent(mpi::Role::Other, mpi::Payload::Data, std::int64_t{mine} * 8, 1);
    traffic.add_received(mpi::Role::Other, mpi::Payload::Data, std::int64_t{counts[i]} * 8, 1);
  }
  for (int s = 0; s < p; ++s) {
    const int origin = (me - s + p) % p;
    if (origin == me)
      on_arrival(my_buffer, me);
    else
      on_arrival(std::span<const double>(all.data() + displs[origin], static_cast<std::size_t>(counts[origin])),
                 origin);
  }
}
MpiCollectives::~MpiCollectives() = default;


CollectiveRequest MpiCollectives::iallreduce(std::span<double> values, MPI_Comm comm, mpi::Traffic& traffic,
                                             mpi::Role role) {
  const int n = as_count(values.size(), "iallreduce");
  MPI_Request r = MPI_REQUEST_NULL;
  mpi::check(MPI_Iallreduce(MPI_IN_PLACE, values.data(), n, MPI_DOUBLE, MPI_SUM, comm, &r), "MPI_Iallreduce");
  if (mpi::size(comm) > 1) {
    traffic.add_sent(role, mpi::Payload::Data, 8 * std::int64_t{n}, 1);
    traffic.add_received(role, mpi::Payload::Data, 8 * std::int64_t{n}, 1);
  }
  return pending(r, traffic, role);
}

CollectiveRequest MpiCollectives::ibcast(std::span<double> values, int root, MPI_Comm comm, mpi::Traffic& traffic,
                                         mpi::Role role) {
  check_root(root, comm, "ibcast");
  const int n = as_count(values.size(), "ibcast");
  MPI_Request r = MPI_REQUEST_NULL;
  mpi::check(MPI_Ibcast(values.data(), n, MPI_DOUBLE, root, comm, &r), "MPI_Ibcast");
  if (mpi::size(comm) > 1) {
    if (mpi::rank(comm) == root)
      traffic.add_sent(role, mpi::Payload::Data, 8 * std::int64_t{n}, 1);
    else
      traffic.add_received(role, mpi::Payload::Data, 8 * std::int64_t{n}, 1);
  }
  return pending(r, traffic, role);
}

CollectiveRequest MpiCollectives::ireduce(std::span<const double> in, std::span<double> out, int root, MPI_Comm comm,
                                          mpi::Traffic& traffic, mpi::Role role) {
  check_root(root, comm, "ireduce");
  const int n = as_count(in.size(), "ireduce");
  const int p = mpi::size(comm), me = mpi::rank(comm);
  if (me == root && out.size() != in.size())
    throw Error("ireduce", "the root's output holds " + std::to_string(out.size()) + " values, the input " +
                               std::to_string(in.size()));
  MPI_Request r = MPI_REQUEST_NULL;
  mpi::check(MPI_Ireduce(in.data(), me == root ? out.data() : nullptr, n, MPI_DOUBLE, MPI_SUM, root, comm, &r),
             "MPI_Ireduce");
  if (me == root)
    traffic.add_received(role, mpi::Payload::Data, 8 * std::int64_t{n} * (p - 1), p - 1);
  else
    traffic.add_sent(role, mpi::Payload::Data, 8 * std::int64_t{n}, 1);
  return pending(r, traffic, role);
}

CollectiveRequest MpiCollectives::ialltoall(std::span<const double> send, std::span<double> recv, MPI_Comm comm,
                                            mpi::Traffic& traffic, mpi::Role role) {
  const int p = mpi::size(comm);
  if (send.size() % static_cast<std::size_t>(p) != 0 || recv.size() != send.size())
    throw Error("ialltoall", "send and receive buffers must both hold p equal blocks (send " +
                                 std::to_string(send.size()) + ", receive " + std::to_string(recv.size()) + ", p " +
                                 std::to_string(p) + ")");
  const int n = as_count(send.size() / static_cast<std::size_t>(p), "ialltoall");
  MPI_Request r = MPI_REQUEST_NULL;
  mpi::check(MPI_Ialltoall(send.data(), n, MPI_DOUBLE, recv.data(), n, MPI_DOUBLE, comm, &r), "MPI_Ialltoall");
  if (p > 1) {
    traffic.add_sent(role, mpi::Payload::Data, 8 * std::int64_t{n} * (p - 1), p - 1);
    traffic.add_received(role, mpi::Payload::Data, 8 * std::int64_t{n} * (p - 1), p - 1);
  }
  return pending(r, traffic, role);
}

CollectiveRequest MpiCollectives::ialltoallv(std::span<const double> send, std::span<const int> send_counts,
                                             std::span<double> recv, std::span<const int> recv_counts, MPI_Comm comm,
                                             mpi::Traffic& traffic, mpi::Role role) {
  const int p = mpi::size(comm), me = mpi::rank(comm);
  if (send_counts.size() != static_cast<std::size_t>(p) || recv_counts.size() != static_cast<std::size_t>(p))
    throw Error("ialltoallv", "one send and one receive count per rank are needed (" + std::to_string(p) + ")");
  // Counts and displacements must live until completion: the request keeps them.
  auto arrays = std::make_shared<std::vector<int>>(4 * static_cast<std::size_t>(p), 0);
  int* sc = arrays->data();
  int* sd = sc + p;
  int* rc = sd + p;
  int* rd = rc + p;
  std::int64_t st = 0, rt = 0, sent = 0, received = 0;
  int sent_msgs = 0, received_msgs = 0;
  for (int q = 0; q < p; ++q) {
    if (send_counts[q] < 0 || recv_counts[q] < 0) throw Error("ialltoallv", "negative count");
    sc[q] = send_counts[q];
    rc[q] = recv_counts[q];
    sd[q] = as_count(static_cast<std::size_t>(st), "ialltoallv");
    rd[q] = as_count(static_cast<std::size_t>(rt), "ialltoallv");
    st += sc[q];
    rt += rc[q];
    if (q != me) {
      sent += sc[q];
      received += rc[q];
      sent_msgs += sc[q] > 0 ? 1 : 0;
      received_msgs += rc[q] > 0 ? 1 : 0;
    }
  }
  if (st != static_cast<std::int64_t>(send.size()) || rt != static_cast<std::int64_t>(recv.size()))
    throw Error("ialltoallv", "the counts add up to " + std::to_string(st) + " sent and " + std::to_string(rt) +
                                  " received values, the buffers hold " + std::to_string(send.size()) + " and " +
                                  std::to_string(recv.size()));
  MPI_Request r = MPI_REQUEST_NULL;
  mpi::check(MPI_Ialltoallv(send.data(), sc, sd, MPI_DOUBLE, recv.data(), rc, rd, MPI_DOUBLE, comm, &r),
             "MPI_Ialltoallv");
  traffic.add_sent(role, mpi::Payload::Data, 8 * sent, sent_msgs);
  traffic.add_received(role, mpi::Payload::Data, 8 * received, received_msgs);
  return pending(r, traffic, role, [arrays] {});
}

}  // namespace plexus
