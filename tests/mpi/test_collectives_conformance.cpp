// The collectives conformance suite (Ginkgo's pattern): every collectives component the registry
// finds (core's "mpi" and whatever the plugins add, plus PLEXUS_CONFORMANCE_EXTRA; PLEXUS_CONFORMANCE_ONLY limits the
// list) runs every operation against plain blocking MPI on the same data: sizes 0, 1 and 1000,
// every root, the whole communicator and a split one, completion by wait() and by test()
// polling, several requests in flight completed in reverse order, the counted volume against
// the logical volume collectives.hpp documents, and the component's model against what it counts.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "collectives_components.hpp"
#include "plexus/collectives.hpp"
#include "plexus/error.hpp"
#include "plexus/parameters.hpp"
#include "plexus/registry.hpp"

using namespace plexus;

namespace {

// Deterministic values of rank r: v[i] = r * 1000 + i + 0.5 (exactly representable sums).
std::vector<double> values_of(int r, std::size_t n) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = r * 1000.0 + static_cast<double>(i) + 0.5;
  return v;
}

// The communicators every case runs on: the world and the halves of a split (even/odd ranks).
struct Comms {
  MPI_Comm split = MPI_COMM_NULL;
  Comms() { MPI_Comm_split(MPI_COMM_WORLD, mpi::rank(MPI_COMM_WORLD) % 2, 0, &split); }
  ~Comms() { MPI_Comm_free(&split); }
  std::vector<MPI_Comm> all() const { return {MPI_COMM_WORLD, split}; }
};

const std::size_t kSizes[] = {0, 1, 1000};

TEST(CollectivesConformance, ComponentsAreFound) {
  const auto names = test::collectives_specs();
  ASSERT_FALSE(names.empty());
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n.text;
    std::printf("collectives under test: %s\n", list.c_str());
  }
}

TEST(CollectivesConformance, AllreduceMatchesMpi) {
  Comms comms;
  test::for_each_collectives_component([&](Collectives& c) {
    const std::string name = c.name();
    for (MPI_Comm comm : comms.all())
      for (std::size_t n : kSizes)
        for (bool poll : {false, true}) {
          SCOPED_TRACE(name + ", n " + std::to_string(n) + (poll ? ", test()" : ", wait()"));
          const int p = mpi::size(comm), me = mpi::rank(comm);
          std::vector<double> mine = values_of(me, n), expect(n);
          MPI_Allreduce(mine.data(), expect.data(), static_cast<int>(n), MPI_DOUBLE, MPI_SUM, comm);
          mpi::Traffic t;
          CollectiveRequest r = c.iallreduce(mine, comm, t);
          if (poll)
            while (!r.test()) {
            }
          else
            r.wait();
          EXPECT_TRUE(r.done());
          EXPECT_EQ(mine, expect);
          const auto& k = t.counts(mpi::Role::Other);
          EXPECT_EQ(k.bytes_sent, p > 1 ? 8 * static_cast<std::int64_t>(n) : 0);
          EXPECT_EQ(k.bytes_received, p > 1 ? 8 * static_cast<std::int64_t>(n) : 0);
        }
  });
}

TEST(CollectivesConformance, BcastAndReduceMatchMpiForEveryRoot) {
  Comms comms;
  test::for_each_collectives_component([&](Collectives& c) {
    const std::string name = c.name();
    for (MPI_Comm comm : comms.all()) {
      const int p = mpi::size(comm), me = mpi::rank(comm);
      for (int root = 0; root < p; ++root)
        for (std::size_t n : kSizes) {
          SCOPED_TRACE(name + ", root " + std::to_string(root) + ", n " + std::to_string(n));
          // bcast
          std::vector<double> buf = me == root ? values_of(root, n) : std::vector<double>(n, -1.0);
          mpi::Traffic tb;
          c.bcast(buf, root, comm, tb, mpi::Role::A);
          EXPECT_EQ(buf, values_of(root, n));
          const auto& kb = tb.counts(mpi::Role::A);
          EXPECT_EQ(kb.bytes_sent, p > 1 && me == root ? 8 * static_cast<std::int64_t>(n) : 0);
          EXPECT_EQ(kb.bytes_received, p > 1 && me != root ? 8 * static_cast<std::int64_t>(n) : 0);
          // reduce
          const std::vector<double> in = values_of(me, n);
          std::vector<double> out(me == root ? n : 0), expect(me == root ? n : 0);
          MPI_Reduce(in.data(), me == root ? expect.data() : nullptr, static_cast<int>(n), MPI_DOUBLE, MPI_SUM, root,
                     comm);
          mpi::Traffic tr;
          c.reduce(in, out, root, comm, tr, mpi::Role::C);
          if (me == root) {
            EXPECT_EQ(out, expect);
          }
          const auto& kr = tr.counts(mpi::Role::C);
          EXPECT_EQ(kr.bytes_sent, me != root ? 8 * static_cast<std::int64_t>(n) : 0);
          EXPECT_EQ(kr.bytes_received, me == root ? 8 * static_cast<std::int64_t>(n) * (p - 1) : 0);
        }
    }
  });
}

TEST(CollectivesConformance, AlltoallAndAlltoallvMatchMpi) {
  Comms comms;
  test::for_each_collectives_component([&](Collectives& c) {
    const std::string name = c.name();
    for (MPI_Comm comm : comms.all()) {
      const int p = mpi::size(comm), me = mpi::rank(comm);
      SCOPED_TRACE(name + " on " + std::to_string(p) + " ranks");
      // alltoall: 3 values per rank pair
      const std::vector<double> send = values_of(me, 3 * static_cast<std::size_t>(p));
      std::vector<double> recv(send.size()), expect(send.size());
      MPI_Alltoall(send.data(), 3, MPI_DOUBLE, expect.data(), 3, MPI_DOUBLE, comm);
      mpi::Traffic t;
      c.alltoall(send, recv, comm, t);
      EXPECT_EQ(recv, expect);
      EXPECT_EQ(t.counts(mpi::Role::Other).bytes_sent, 8 * 3 * std::int64_t{p - 1});
      // alltoallv: rank me sends (me + q) % 3 values to rank q (zero counts included)
      std::vector<int> sc(static_cast<std::size_t>(p)), rc(static_cast<std::size_t>(p)), sd(sc.size()), rd(rc.size());
      for (int q = 0; q < p; ++q) {
        sc[static_cast<std::size_t>(q)] = (me + q) % 3;
        rc[static_cast<std::size_t>(q)] = (q + me) % 3;
      }
      std::exclusive_scan(sc.begin(), sc.end(), sd.begin(), 0);
      std::exclusive_scan(rc.begin(), rc.end(), rd.begin(), 0);
      const auto ns = static_cast<std::size_t>(std::accumulate(sc.begin(), sc.end(), 0));
      const auto nr = static_cast<std::size_t>(std::accumulate(rc.begin(), rc.end(), 0));
      const std::vector<double> sv = values_of(me, ns);
      std::vector<double> rv(nr), ev(nr);
      MPI_Alltoallv(sv.data(), sc.data(), sd.data(), MPI_DOUBLE, ev.data(), rc.data(), rd.data(), MPI_DOUBLE, comm);
      mpi::Traffic tv;
      c.ialltoallv(sv, sc, rv, rc, comm, tv).wait();
      EXPECT_EQ(rv, ev);
      std::int64_t out_others = 0, in_others = 0;
      for (int q = 0; q < p; ++q)
        if (q != me) {
          out_others += sc[static_cast<std::size_t>(q)];
          in_others += rc[static_cast<std::size_t>(q)];
        }
      EXPECT_EQ(tv.counts(mpi::Role::Other).bytes_sent, 8 * out_others);
      EXPECT_EQ(tv.counts(mpi::Role::Other).bytes_received, 8 * in_others);
    }
  });
}

TEST(CollectivesConformance, SeveralInFlightCompleteInAnyOrder) {
  test::for_each_collectives_component([&](Collectives& c) {
    const int p = mpi::size(MPI_COMM_WORLD), me = mpi::rank(MPI_COMM_WORLD);
    std::vector<std::vector<double>> bufs;
    for (int k = 0; k < 4; ++k) bufs.push_back(values_of(me + k, 257));
    std::vector<double> root_buf = me == p - 1 ? values_of(42, 100) : std::vector<double>(100, 0.0);
    mpi::Traffic t;
    std::vector<CollectiveRequest> reqs;
    for (auto& b : bufs) reqs.push_back(c.iallreduce(b, MPI_COMM_WORLD, t));
    reqs.push_back(c.ibcast(root_buf, p - 1, MPI_COMM_WORLD, t));
    for (auto it = reqs.rbegin(); it != reqs.rend(); ++it) it->wait();
    for (int k = 0; k < 4; ++k) {
      std::vector<double> expect = values_of(me + k, 257);
      MPI_Allreduce(MPI_IN_PLACE, expect.data(), 257, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      EXPECT_EQ(bufs[static_cast<std::size_t>(k)], expect);
    }
    EXPECT_EQ(root_buf, values_of(42, 100));
  });
}

// The component's model predicts exactly the volume it counts, operation by operation.
void expect_model(const Collectives& c, const CollectiveSpec& spec, const mpi::Traffic& t) {
  SCOPED_TRACE(spec.operation + " of " + std::to_string(spec.values) + " values on " + std::to_string(spec.ranks) +
               " ranks, rank " + std::to_string(spec.rank) + ", root " + std::to_string(spec.root));
  const auto m = c.model(spec);
  const auto& k = t.counts(mpi::Role::Other);
  EXPECT_EQ(m.at("bytes_sent"), static_cast<double>(k.bytes_sent));
  EXPECT_EQ(m.at("bytes_received"), static_cast<double>(k.bytes_received));
  EXPECT_EQ(m.at("messages_sent"), static_cast<double>(k.messages_sent));
  EXPECT_EQ(m.at("messages_received"), static_cast<double>(k.messages_received));
}

TEST(CollectivesConformance, ModelPredictsTheCountedVolume) {
  Comms comms;
  test::for_each_collectives_component([&](Collectives& c) {
    for (MPI_Comm comm : comms.all()) {
      const int p = mpi::size(comm), me = mpi::rank(comm);
      for (std::size_t n : kSizes) {
        const auto values = static_cast<std::int64_t>(n);
        {
          std::vector<double> v = values_of(me, n);
          mpi::Traffic t;
          c.allreduce(v, comm, t);
          expect_model(c, {"allreduce", values, p, me, 0}, t);
        }
        for (int root = 0; root < p; ++root) {
          std::vector<double> v = values_of(me, n), out(n);
          mpi::Traffic tb, tr;
          c.bcast(v, root, comm, tb);
          expect_model(c, {"bcast", values, p, me, root}, tb);
          c.reduce(v, out, root, comm, tr);
          expect_model(c, {"reduce", values, p, me, root}, tr);
        }
        {
          std::vector<double> send = values_of(me, n * static_cast<std::size_t>(p)), recv(send.size());
          mpi::Traffic t;
          c.alltoall(send, recv, comm, t);
          expect_model(c, {"alltoall", static_cast<std::int64_t>(send.size()), p, me, 0}, t);
        }
      }
    }
    // circulate on the component's ring and the reduction across its rings (of MPI_COMM_WORLD).
    const auto ring = c.ring_position(MPI_COMM_WORLD);
    const int rings = mpi::size(MPI_COMM_WORLD) / ring.size, ring_id = mpi::rank(MPI_COMM_WORLD) / ring.size;
    for (std::size_t n : kSizes) {
      std::vector<double> v = values_of(mpi::rank(MPI_COMM_WORLD), n);
      mpi::Traffic tc, tr;
      c.circulate(
          MPI_COMM_WORLD, v, [](std::span<const double>, int) {}, tc);
      expect_model(c, {"circulate", static_cast<std::int64_t>(n), ring.size, ring.position, 0}, tc);
      c.reduce_across_rings(MPI_COMM_WORLD, v, tr);
      expect_model(c, {"reduce_across_rings", static_cast<std::int64_t>(n), rings, ring_id, 0}, tr);
    }
    EXPECT_THROW(c.model({"gather", 4, 1, 0, 0}), Error) << "an unknown operation has no model";
    EXPECT_THROW(c.model({"allreduce", 4, 2, 2, 0}), Error) << "rank outside the ranks";
  });
}

TEST(CollectivesConformance, BadArgumentsAreRefusedBeforeAnyMessage) {
  test::for_each_collectives_component([&](Collectives& c) {
    const int p = mpi::size(MPI_COMM_WORLD);
    std::vector<double> v(4, 1.0), w(5, 0.0);
    mpi::Traffic t;
    EXPECT_THROW(c.ibcast(v, p, MPI_COMM_WORLD, t), Error);
    EXPECT_THROW(c.ibcast(v, -1, MPI_COMM_WORLD, t), Error);
    EXPECT_THROW(c.ialltoall(std::vector<double>(static_cast<std::size_t>(p) + 1, 0.0), w, MPI_COMM_WORLD, t), Error);
    const std::vector<int> counts(static_cast<std::size_t>(p) + 1, 0);
    EXPECT_THROW(c.ialltoallv(v, counts, w, counts, MPI_COMM_WORLD, t), Error);
    EXPECT_EQ(t.counts(mpi::Role::Other).messages_sent, 0);
  });
}

}  // namespace
