#include "collectives.hpp"

#include <climits>
#include <memory>
#include <vector>

#include "plexus/error.hpp"

namespace plexus::nboverlap {

namespace {

int as_count(std::int64_t n, const char* op) {
  if (n > INT_MAX)
    throw Error(std::string("nboverlap ") + op,
                std::to_string(n) + " values in one part exceed one MPI call's count (raise NDup)");
  return static_cast<int>(n);
}

void check_root(int root, MPI_Comm comm, const char* op) {
  const int p = mpi::size(comm);
  if (root < 0 || root >= p)
    throw Error(std::string("nboverlap ") + op, "root " + std::to_string(root) +
                                                    " is not a rank of the communicator (0.." +
                                                    std::to_string(p - 1) + ")");
}

// One request for the parts, completed together; `keep` lives until then (counts, displacements).
// The part communicators of comm, made before any part is posted (a duplicate is collective).
void prepare(CommPool& pool, MPI_Comm comm, int k) {
  for (int c = 1; c < k; ++c) part_comm(pool, comm, c);
}

CollectiveRequest pending(std::vector<MPI_Request> r, mpi::Traffic& t, mpi::Role role,
                          std::shared_ptr<void> keep = nullptr) {
  std::function<void()> done;
  if (keep) done = [keep] {};
  return CollectiveRequest(std::make_unique<MpiPending>(std::move(r), t, role, std::move(done)));
}

}  // namespace

CollectiveRequest NbOverlapCollectives::iallreduce(std::span<double> values, MPI_Comm comm, mpi::Traffic& traffic,
                                                   mpi::Role role) {
  const auto n = static_cast<std::int64_t>(values.size());
  const int k = plan_.parts(n), p = mpi::size(comm);
  as_count(part_range(n, k, 0).second, "iallreduce");
  prepare(pool(), comm, k);
  std::vector<MPI_Request> reqs(static_cast<std::size_t>(k), MPI_REQUEST_NULL);
  for (int c = 0; c < k; ++c) {
    const auto [b, e] = part_range(n, k, c);
    mpi::check(MPI_Iallreduce(MPI_IN_PLACE, values.data() + b, static_cast<int>(e - b), MPI_DOUBLE, MPI_SUM,
                              part_comm(pool(), comm, c), &reqs[static_cast<std::size_t>(c)]),
               "MPI_Iallreduce");
    if (p > 1) {
      traffic.add_sent(role, mpi::Payload::Data, 8 * (e - b), 1);
      traffic.add_received(role, mpi::Payload::Data, 8 * (e - b), 1);
    }
  }
  return pending(std::move(reqs), traffic, role);
}

CollectiveRequest NbOverlapCollectives::ibcast(std::span<double> values, int root, MPI_Comm comm,
                                               mpi::Traffic& traffic, mpi::Role role) {
  check_root(root, comm, "ibcast");
  const auto n = static_cast<std::int64_t>(values.size());
  const int k = plan_.parts(n), p = mpi::size(comm), me = mpi::rank(comm);
  as_count(part_range(n, k, 0).second, "ibcast");
  prepare(pool(), comm, k);
  std::vector<MPI_Request> reqs(static_cast<std::size_t>(k), MPI_REQUEST_NULL);
  for (int c = 0; c < k; ++c) {
    const auto [b, e] = part_range(n, k, c);
    mpi::check(MPI_Ibcast(values.data() + b, static_cast<int>(e - b), MPI_DOUBLE, root, part_comm(pool(), comm, c),
                          &reqs[static_cast<std::size_t>(c)]),
               "MPI_Ibcast");
    if (p > 1) {
      if (me == root)
        traffic.add_sent(role, mpi::Payload::Data, 8 * (e - b), 1);
      else
        traffic.add_received(role, mpi::Payload::Data, 8 * (e - b), 1);
    }
  }
  return pending(std::move(reqs), traffic, role);
}

CollectiveRequest NbOverlapCollectives::ireduce(std::span<const double> in, std::span<double> out, int root,
                                                MPI_Comm comm, mpi::Traffic& traffic, mpi::Role role) {
  check_root(root, comm, "ireduce");
  const auto n = static_cast<std::int64_t>(in.size());
  const int k = plan_.parts(n), p = mpi::size(comm), me = mpi::rank(comm);
  if (me == root && out.size() != in.size())
    throw Error("nboverlap ireduce", "the root's output holds " + std::to_string(out.size()) + " values, the input " +
                                         std::to_string(in.size()));
  as_count(part_range(n, k, 0).second, "ireduce");
  prepare(pool(), comm, k);
  std::vector<MPI_Request> reqs(static_cast<std::size_t>(k), MPI_REQUEST_NULL);
  for (int c = 0; c < k; ++c) {
    const auto [b, e] = part_range(n, k, c);
    mpi::check(MPI_Ireduce(in.data() + b, me == root ? out.data() + b : nullptr, static_cast<int>(e - b), MPI_DOUBLE,
                           MPI_SUM, root, part_comm(pool(), comm, c), &reqs[static_cast<std::size_t>(c)]),
               "MPI_Ireduce");
    if (me == root)
      traffic.add_received(role, mpi::Payload::Data, 8 * (e - b) * (p - 1), p - 1);
    else
      traffic.add_sent(role, mpi::Payload::Data, 8 * (e - b), 1);
  }
  return pending(std::move(reqs), traffic, role);
}

CollectiveRequest NbOverlapCollectives::ialltoall(std::span<const double> send, std::span<double> recv,
                                                  MPI_Comm comm, mpi::Traffic& traffic, mpi::Role role) {
  const int p = mpi::size(comm);
  if (send.size() % static_cast<std::size_t>(p) != 0 || recv.size() != send.size())
    throw Error("nboverlap ialltoall", "send and receive buffers must both hold p equal blocks (send " +
                                           std::to_string(send.size()) + ", receive " + std::to_string(recv.size()) +
                                           ", p " + std::to_string(p) + ")");
  const auto n = static_cast<std::int64_t>(send.size()) / p;  // per rank pair
  const int k = plan_.parts(n);
  as_count(static_cast<std::int64_t>(send.size()), "ialltoall");
  // Part c of every rank pair's block: an alltoallv with the blocks' slices.
  auto arrays = std::make_shared<std::vector<int>>(2 * static_cast<std::size_t>(k) * p, 0);
  prepare(pool(), comm, k);
  std::vector<MPI_Request> reqs(static_cast<std::size_t>(k), MPI_REQUEST_NULL);
  for (int c = 0; c < k; ++c) {
    const auto [b, e] = part_range(n, k, c);
    int* counts = arrays->data() + 2 * static_cast<std::size_t>(c) * p;
    int* displs = counts + p;
    for (int q = 0; q < p; ++q) {
      counts[q] = static_cast<int>(e - b);
      displs[q] = static_cast<int>(q * n + b);
    }
    mpi::check(MPI_Ialltoallv(send.data(), counts, displs, MPI_DOUBLE, recv.data(), counts, displs, MPI_DOUBLE,
                              part_comm(pool(), comm, c), &reqs[static_cast<std::size_t>(c)]),
               "MPI_Ialltoallv");
    if (p > 1) {
      traffic.add_sent(role, mpi::Payload::Data, 8 * (e - b) * (p - 1), p - 1);
      traffic.add_received(role, mpi::Payload::Data, 8 * (e - b) * (p - 1), p - 1);
    }
  }
  return pending(std::move(reqs), traffic, role, arrays);
}

CollectiveRequest NbOverlapCollectives::ialltoallv(std::span<const double> send, std::span<const int> send_counts,
                                                   std::span<double> recv, std::span<const int> recv_counts,
                                                   MPI_Comm comm, mpi::Traffic& traffic, mpi::Role role) {
  const int p = mpi::size(comm), me = mpi::rank(comm), k = plan_.ndup;
  if (send_counts.size() != static_cast<std::size_t>(p) || recv_counts.size() != static_cast<std::size_t>(p))
    throw Error("nboverlap ialltoallv",
                "one send and one receive count per rank are needed (" + std::to_string(p) + ")");
  std::int64_t st = 0, rt = 0;
  for (int q = 0; q < p; ++q) {
    if (send_counts[q] < 0 || recv_counts[q] < 0) throw Error("nboverlap ialltoallv", "negative count");
    st += send_counts[q];
    rt += recv_counts[q];
  }
  if (st != static_cast<std::int64_t>(send.size()) || rt != static_cast<std::int64_t>(recv.size()))
    throw Error("nboverlap ialltoallv", "the counts add up to " + std::to_string(st) + " sent and " +
                                            std::to_string(rt) + " received values, the buffers hold " +
                                            std::to_string(send.size()) + " and " + std::to_string(recv.size()));
  as_count(std::max(st, rt), "ialltoallv");
  // Per part: send counts, send displacements, receive counts, receive displacements.
  auto arrays = std::make_shared<std::vector<int>>(4 * static_cast<std::size_t>(k) * p, 0);
  prepare(pool(), comm, k);
  std::vector<MPI_Request> reqs(static_cast<std::size_t>(k), MPI_REQUEST_NULL);
  // A pair's part c: the part rule on its own count (parts beyond its count are empty).
  auto slice = [&](int count, int c) -> std::pair<int, int> {
    const int kc = plan_.parts(count);
    if (c >= kc) return {count, 0};
    const auto [b, e] = part_range(count, kc, c);
    return {static_cast<int>(b), static_cast<int>(e - b)};
  };
  std::int64_t sent = 0, received = 0, sent_msgs = 0, received_msgs = 0;
  for (int c = 0; c < k; ++c) {
    int* sc = arrays->data() + 4 * static_cast<std::size_t>(c) * p;
    int *sd = sc + p, *rc = sd + p, *rd = rc + p;
    int so = 0, ro = 0;
    for (int q = 0; q < p; ++q) {
      const auto [sb, sn] = slice(send_counts[q], c);
      const auto [rb, rn] = slice(recv_counts[q], c);
      sc[q] = sn;
      sd[q] = so + sb;
      rc[q] = rn;
      rd[q] = ro + rb;
      so += send_counts[q];
      ro += recv_counts[q];
      if (q != me) {
        sent += sn;
        received += rn;
        sent_msgs += sn > 0 ? 1 : 0;
        received_msgs += rn > 0 ? 1 : 0;
      }
    }
    mpi::check(MPI_Ialltoallv(send.data(), sc, sd, MPI_DOUBLE, recv.data(), rc, rd, MPI_DOUBLE,
                              part_comm(pool(), comm, c), &reqs[static_cast<std::size_t>(c)]),
               "MPI_Ialltoallv");
  }
  traffic.add_sent(role, mpi::Payload::Data, 8 * sent, sent_msgs);
  traffic.add_received(role, mpi::Payload::Data, 8 * received, received_msgs);
  return pending(std::move(reqs), traffic, role, arrays);
}

void NbOverlapCollectives::circulate(MPI_Comm comm, std::span<const double> my_buffer, const ArrivalFn& on_arrival,
                                     mpi::Traffic& traffic, int thread) {
  if (thread != 0)
    throw Error("nboverlap circulate", "serves one thread; thread " + std::to_string(thread) +
                                           " asked (use a component with threads, e.g. ring)");
  const int p = mpi::size(comm), me = mpi::rank(comm);
  const int mine = as_count(static_cast<std::int64_t>(my_buffer.size()), "circulate");
  std::vector<int> counts(static_cast<std::size_t>(p)), displs(static_cast<std::size_t>(p), 0);
  mpi::check(MPI_Allgather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, comm), "MPI_Allgather");
  std::int64_t total = counts[0];
  int largest = counts[0];
  for (int i = 1; i < p; ++i) {
    displs[static_cast<std::size_t>(i)] = displs[static_cast<std::size_t>(i - 1)] + counts[static_cast<std::size_t>(i - 1)];
    total += counts[static_cast<std::size_t>(i)];
    largest = std::max(largest, counts[static_cast<std::size_t>(i)]);
  }
  as_count(total, "circulate");
  // Parts of the largest buffer (the same on every rank); origin q's part c lands in place, so
  // each origin's buffer is whole and contiguous when all parts are in.
  const int k = plan_.parts(largest);
  CommBuffer<double> all(static_cast<std::size_t>(total));
  std::vector<int> pc(static_cast<std::size_t>(k) * p), pd(pc.size());
  prepare(pool(), comm, k);
  std::vector<MPI_Request> reqs(static_cast<std::size_t>(k), MPI_REQUEST_NULL);
  for (int c = 0; c < k; ++c) {
    int* cnt = pc.data() + static_cast<std::size_t>(c) * p;
    int* dsp = pd.data() + static_cast<std::size_t>(c) * p;
    for (int q = 0; q < p; ++q) {
      const auto [b, e] = part_range(counts[static_cast<std::size_t>(q)], k, c);
      cnt[q] = static_cast<int>(e - b);
      dsp[q] = displs[static_cast<std::size_t>(q)] + static_cast<int>(b);
    }
    mpi::check(MPI_Iallgatherv(my_buffer.data() + (dsp[me] - displs[static_cast<std::size_t>(me)]), cnt[me],
                               MPI_DOUBLE, all.data(), cnt, dsp, MPI_DOUBLE, part_comm(pool(), comm, c),
                               &reqs[static_cast<std::size_t>(c)]),
               "MPI_Iallgatherv");
  }
  const double t0 = mpi::now();
  mpi::check(MPI_Waitall(k, reqs.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  traffic.add_wait(mpi::Role::Other, mpi::now() - t0);
  for (int q = 0; q < p; ++q) {
    if (q == me) continue;
    traffic.add_sent(mpi::Role::Other, mpi::Payload::Data, std::int64_t{mine} * 8, k);
    traffic.add_received(mpi::Role::Other, mpi::Payload::Data, std::int64_t{counts[static_cast<std::size_t>(q)]} * 8,
                         k);
  }
  for (int s = 0; s < p; ++s) {
    const int origin = (me - s + p) % p;
    if (origin == me)
      on_arrival(my_buffer, me);
    else
      on_arrival(std::span<const double>(all.data() + displs[static_cast<std::size_t>(origin)],
                                         static_cast<std::size_t>(counts[static_cast<std::size_t>(origin)])),
                 origin);
  }
}

std::map<std::string, double> NbOverlapCollectives::model(const CollectiveSpec& spec) const {
  std::map<std::string, double> m = Collectives::model(spec);  // validates the spec
  // Messages: one per part of the operation.
  std::int64_t per_part = spec.values;
  if (spec.operation == "alltoall") per_part = spec.values / spec.ranks;
  const double k = plan_.parts(per_part);
  m["messages_sent"] *= k;
  m["messages_received"] *= k;
  return m;
}

}  // namespace plexus::nboverlap
