// The pipelined ring of DCA++ (Wei et al., PASC'21, Algorithm 1): every rank's buffer visits
// every rank of its (sub-)ring. left = (r-1+S) mod S, right = (r+1) mod S; the caller's buffer is
// swapped (not copied) into the send buffer; S-1 steps of MPI_Irecv from the left and MPI_Isend
// to the right, wait for the receive, act on the arrival, wait for the send, swap. Exactly two
// buffers per ring.
//
// - Sub-rings (SubRingSize S): consecutive ranks of the communicator form rings of S ranks
//   (MPI_Comm_split, made once per communicator); nothing crosses sub-rings while circulating,
//   and reduce_across_rings sums over the ranks at the same position of the other sub-rings.
// - Threaded rings (Threads k): k threads of a rank circulate at once, thread i exchanging only
//   with thread i of its neighbours (tags offset by i); needs MPI_THREAD_MULTIPLE.
//   Bidirectional: odd threads circulate the other way.
// - multiply: a 1D ring multiply. A, B and C are distributed by block rows over a P x 1 grid; the
//   row panels of B travel around the ring, and each rank multiplies the columns of its A rows
//   that match the panel in hand into its C rows. Its steps overlap: the panel in hand goes on to
//   the right, and the next one comes from the left, while the products run (still two buffers).
#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "plexus/error.hpp"
#include "plexus/local_multiply.hpp"
#include "plexus/memory.hpp"
#include "plexus/mpi.hpp"
#include "plexus/multiply.hpp"
#include "plexus/plugin.hpp"
#include "plexus/timers.hpp"

namespace {

using plexus::CommBuffer;
using plexus::DistMatrix;
using plexus::Error;
using plexus::Panel;
using plexus::PanelView;
using plexus::mpi::Payload;
using plexus::mpi::Role;
using plexus::mpi::Traffic;

constexpr int kTagCirculate = 7300;  // + thread
constexpr int kTagPanel = 7400;  // + part: the panel's index words 7400, its values 7401

// One part of a ring message: a contiguous array.
struct Part {
  void* ptr;
  std::int64_t count;  // elements to send, or capacity to receive
  MPI_Datatype type;
  int elem_bytes;
  Payload payload;
};

// The ring engine: `steps` steps of receive-from-left / send-to-right; after each receive,
// arrive(recv, step); then send and receive buffers swap. parts(buf, sending) lists a buffer's
// parts (what to send, or the capacity to receive into).
template <class Buffer, class Parts, class Arrive>
void ring_steps(int steps, MPI_Comm comm, int left, int right, int tag, Buffer& send, Buffer& recv, Parts parts,
                Arrive arrive, Traffic& traffic, Role role) {
  for (int s = 1; s <= steps; ++s) {
    const std::vector<Part> out = parts(send, true), in = parts(recv, false);
    std::vector<MPI_Request> rreq(in.size()), sreq(out.size());
    for (std::size_t i = 0; i < in.size(); ++i)
      plexus::mpi::check(MPI_Irecv(in[i].ptr, static_cast<int>(in[i].count), in[i].type, left, tag + static_cast<int>(i),
                                   comm, &rreq[i]),
                         "MPI_Irecv");
    for (std::size_t i = 0; i < out.size(); ++i) {
      plexus::mpi::check(MPI_Isend(out[i].ptr, static_cast<int>(out[i].count), out[i].type, right,
                                   tag + static_cast<int>(i), comm, &sreq[i]),
                         "MPI_Isend");
      traffic.add_sent(role, out[i].payload, out[i].count * out[i].elem_bytes, 1);
    }
    std::vector<MPI_Status> st(in.size());
    double t0 = MPI_Wtime();
    plexus::mpi::check(MPI_Waitall(static_cast<int>(rreq.size()), rreq.data(), st.data()), "MPI_Waitall");
    traffic.add_wait(role, MPI_Wtime() - t0);
    for (std::size_t i = 0; i < in.size(); ++i) {
      int bytes = 0;
      plexus::mpi::check(MPI_Get_count(&st[i], MPI_BYTE, &bytes), "MPI_Get_count");
      traffic.add_received(role, in[i].payload, bytes, 1);
    }
    arrive(recv, s);
    t0 = MPI_Wtime();
    plexus::mpi::check(MPI_Waitall(static_cast<int>(sreq.size()), sreq.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
    traffic.add_wait(role, MPI_Wtime() - t0);
    std::swap(send, recv);
  }
}

// The sub-rings of a communicator: consecutive ranks, S per ring, and the "cross" communicator
// of the ranks at the same position in every ring.
struct SubRings {
  MPI_Comm ring = MPI_COMM_NULL, cross = MPI_COMM_NULL;
  int size = 1, position = 0, base = 0;  // base: rank in comm of ring position 0
};

// A B row panel in a ring buffer: packed index words and values, fixed capacities.
using PanelBuffer = plexus::PackedPanel;

// circulate on (sub-)rings, threaded and bidirectional; the other collectives are plain MPI.
// Its sub-ring communicators come from the pool it is bound to (the context's).
class RingCollectives final : public plexus::MpiCollectives {
 public:
  RingCollectives(int subring, int threads, bool bidirectional)
      : subring_(subring), threads_(threads), bidirectional_(bidirectional) {
    if (threads_ > 1) {
      int provided = MPI_THREAD_SINGLE;
      MPI_Query_thread(&provided);
      if (provided < MPI_THREAD_MULTIPLE)
        throw plexus::InputError("Communication/ring/Threads",
                                 "ring: Threads=" + std::to_string(threads_) +
                                     " needs MPI_THREAD_MULTIPLE, but the MPI library provides only level " +
                                     std::to_string(provided) +
                                     " (initialise MPI with MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...); "
                                     "the plexus program does)");
    }
  }

  std::string name() const override { return "ring"; }
  int circulate_threads() const override { return threads_; }

  RingPosition ring_position(MPI_Comm comm) override {
    const SubRings& s = subrings(comm);
    return {s.position, s.size};
  }

  void reduce_across_rings(MPI_Comm comm, std::span<double> values, Traffic& traffic) override {
    const SubRings& s = subrings(comm);
    if (plexus::mpi::size(s.cross) == 1) return;
    allreduce(values, s.cross, traffic);
  }

  void circulate(MPI_Comm comm, std::span<const double> my_buffer, const ArrivalFn& on_arrival, Traffic& traffic,
                 int thread) override {
    if (thread < 0 || thread >= threads_)
      throw Error("ring", "circulate on thread " + std::to_string(thread) + ", but the ring has Threads=" +
                              std::to_string(threads_));
    const SubRings& s = subrings(comm);
    const int S = s.size, r = s.position;
    // Odd threads of a bidirectional ring go the other way.
    const int dir = bidirectional_ && thread % 2 == 1 ? -1 : 1;
    const int left = (r - dir + S) % S, right = (r + dir + S) % S;
    on_arrival(my_buffer, s.base + r);
    if (S == 1) return;
    CommBuffer<double> send(my_buffer.begin(), my_buffer.end()), recv(my_buffer.size());
    const std::int64_t n = static_cast<std::int64_t>(send.size());
    auto parts = [n](CommBuffer<double>& b, bool) {
      return std::vector<Part>{{b.data(), n, MPI_DOUBLE, 8, Payload::Data}};
    };
    auto arrive = [&](const CommBuffer<double>& b, int step) {
      on_arrival(std::span<const double>(b.data(), b.size()), s.base + ((r - dir * step) % S + S) % S);
    };
    ring_steps(S - 1, s.ring, left, right, kTagCirculate + thread, send, recv, parts, arrive, traffic, Role::Other);
  }

 private:
  // The sub-rings of comm, made once per pool epoch (collective the first time; one thread of a
  // rank makes them). Keyed by the handle, which cannot be reused while the pool that holds the
  // sub-rings holds them (comm is the run's communicator or one of the pool's).
  const SubRings& subrings(MPI_Comm comm) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (pool().epoch() != epoch_) {  // another pool, or this one released: the rings are gone
      rings_.clear();
      epoch_ = pool().epoch();
    }
    auto it = rings_.find(comm);
    if (it != rings_.end()) return it->second;
    const int p = plexus::mpi::size(comm), rank = plexus::mpi::rank(comm);
    const int S = subring_ == 0 ? p : subring_;
    if (p % S != 0)
      throw plexus::InputError("Communication/ring/SubRingSize",
                               "SubRingSize=" + std::to_string(S) + " does not divide the " + std::to_string(p) +
                                   " ranks of the communicator (valid: the divisors of " + std::to_string(p) +
                                   ", or 0 for one ring)");
    SubRings s;
    s.size = S;
    s.position = rank % S;
    s.base = rank - s.position;
    s.ring = pool().split(comm, rank / S, s.position, "ring of " + std::to_string(S));
    s.cross = pool().split(comm, s.position, rank / S, "across rings of " + std::to_string(S));
    return rings_.emplace(comm, s).first->second;
  }

  int subring_, threads_;
  bool bidirectional_;
  std::mutex mutex_;
  std::map<MPI_Comm, SubRings> rings_;
  std::uint64_t epoch_ = 0;  // the pool epoch rings_ belongs to
};

class Ring final : public plexus::CommStrategy {
 public:
  // Its collectives make their sub-rings in the pool they are bound to: the context binds its
  // own; used without a context, bind one (collectives().bind(pool)) before circulating.
  Ring(int subring, int threads, bool bidirectional) : collectives_(subring, threads, bidirectional) {}

  std::string name() const override { return "ring"; }
  plexus::Collectives& collectives() override { return collectives_; }

  // A 1D block-row distribution over a P x 1 grid of the proposal's ranks.
  std::shared_ptr<const plexus::Distribution> distribution_for(
      std::shared_ptr<const plexus::Distribution> proposal) const override {
    const auto& g = proposal->grid();
    if (g.npcols() == 1 && proposal->kind() == "rows-1d") return proposal;
    // The grid's ranks as one column; its communicators come from the grid's pool (the
    // context's), made once per shape: asking again is a local look-up on every rank alike.
    const std::shared_ptr<const plexus::Grid> line = g.reshaped(g.size(), 1);
    return plexus::Distribution::rows_1d(line, proposal->nblkrows(), proposal->nblkcols());
  }

  void check_operands(const DistMatrix& A, const DistMatrix& B, const DistMatrix&) const override {
    if (A.grid().npcols() != 1 || B.distribution().col_dist() != std::vector<int>(B.distribution().nblkcols(), 0))
      throw Error("ring", "the ring multiply needs A, B and C distributed by block rows over a P x 1 grid (got a " +
                              A.grid().describe() + " grid); build them with distribution_for() or redistribute");
  }

  // B's row panels travel round one ring of all ranks; each panel meets the blocks of A whose k
  // it holds while it travels on to the right and the next one arrives from the left. (The
  // engine of circulate, ring_steps, keeps DCA++'s order: the arrival first, then the work on it.
  // Here that left every step waiting for its transfer: 22 ms of h2o's 62 on two ranks.)
  Panel run(plexus::MultiplyTask& task) override {
    const DistMatrix &A = task.a(), &B = task.b();
    const MPI_Comm comm = A.grid().comm();
    const int P = A.grid().size(), me = A.grid().rank();

    // A's blocks by the rank that owns their k (B's row distribution): index-only views into A's values.
    const std::vector<Panel> a_by_owner = split_by_owner(A, B.distribution().row_dist(), P);
    // B's panel, packed into ring buffers of the largest panel's capacity (one MPI_Allreduce).
    const Panel& b = B.local();
    std::int64_t cap[2] = {PanelView::packed_words(b.nrows(), b.nblocks()), b.data_size()};
    std::vector<std::int64_t> b_values(static_cast<std::size_t>(P));
    const std::int64_t mine_values = b.data_size();
    plexus::mpi::check(MPI_Allgather(&mine_values, 1, MPI_INT64_T, b_values.data(), 1, MPI_INT64_T, comm),
                       "MPI_Allgather");
    plexus::mpi::check(MPI_Allreduce(MPI_IN_PLACE, cap, 2, MPI_INT64_T, MPI_MAX, comm), "MPI_Allreduce");
    PanelBuffer send, recv;
    send.reserve(cap[0], cap[1]);
    recv.reserve(cap[0], cap[1]);
    send.pack(b);

    plexus::LocalProduct& product = task.c_accumulator();
    auto multiply_with = [&](const PanelView& bp, int owner) {
      PanelView av = a_by_owner[static_cast<std::size_t>(owner)].view();
      av.data = A.local().data().data();  // the offsets index A's whole value area
      av.data_size = A.local().data_size();
      product.multiply(av, A.layout(), bp, B.layout());
    };
    // Step s multiplies the panel of rank me-s (my own first) while it goes on to the right and
    // the panel of rank me-s-1 comes from the left; the transfers progress between the stacks.
    Traffic traffic;
    const plexus::ProgressScope progress({&product}, [&traffic] { traffic.test(Role::B); });
    const int left = (me - 1 + P) % P, right = (me + 1) % P;
    PanelBuffer *hand = &send, *next = &recv;
    for (int s = 0; s < P; ++s) {
      const bool pass = s + 1 < P;
      if (pass) {
        traffic.irecv(next->index.data(), static_cast<std::int64_t>(next->index.size()), MPI_INT64_T, left,
                      kTagPanel, comm, Role::B, Payload::Index);
        traffic.irecv(next->data.data(), static_cast<std::int64_t>(next->data.size()), MPI_DOUBLE, left,
                      kTagPanel + 1, comm, Role::B, Payload::Data);
        traffic.isend(hand->index.data(), hand->words(), MPI_INT64_T, right, kTagPanel, comm, Role::B,
                      Payload::Index);
        traffic.isend(hand->data.data(), hand->values(), MPI_DOUBLE, right, kTagPanel + 1, comm, Role::B,
                      Payload::Data);
      }
      multiply_with(hand->view(), (me - s + P) % P);  // reads the panel MPI is sending: allowed
      if (!pass) break;
      const plexus::timers::Scoped wait_timer("ring: wait");
      traffic.waitall(Role::B);
      std::swap(hand, next);
    }
    task.traffic().absorb(traffic);
    task.report().ticks = P;
    // The volume model: each rank receives the P-1 other B panels (values), from the sizes.
    std::int64_t predicted = 0;
    for (int q = 0; q < P; ++q)
      if (q != me) predicted += 8 * b_values[static_cast<std::size_t>(q)];
    task.report().extra["predicted_bytes_received"] = static_cast<double>(predicted);
    return product.finish();
  }

  // Dry run: P = PR*PC ranks in one ring, every B row panel of bytes_b.
  std::optional<plexus::ModelPrediction> model(const plexus::ModelSpec& spec, int, int) const override {
    const std::int64_t P = std::int64_t{spec.nprows} * spec.npcols;
    plexus::ModelPrediction m;
    m.ticks = static_cast<int>(P);
    m.bytes_b = (P - 1) * spec.bytes_b;
    m.buffer_bytes = 2 * spec.bytes_b;
    m.note = "P=" + std::to_string(P);
    return m;
  }

 private:
  // Index-only panels of A's blocks per owner of k: offsets point into A's values.
  static std::vector<Panel> split_by_owner(const DistMatrix& A, const std::vector<int>& b_row_owner, int P) {
    const PanelView v = A.local().view();
    std::vector<std::vector<std::int64_t>> rows(static_cast<std::size_t>(P)), ptr(static_cast<std::size_t>(P)),
        cols(static_cast<std::size_t>(P)), offs(static_cast<std::size_t>(P));
    for (int q = 0; q < P; ++q) ptr[static_cast<std::size_t>(q)].push_back(0);
    for (int r = 0; r < v.nrows; ++r) {
      for (std::int64_t b = v.row_ptr[r]; b < v.row_ptr[r + 1]; ++b) {
        const auto q = static_cast<std::size_t>(b_row_owner[static_cast<std::size_t>(v.cols[b])]);
        if (rows[q].empty() || rows[q].back() != v.row_ids[r]) {
          rows[q].push_back(v.row_ids[r]);
          ptr[q].push_back(ptr[q].back());
        }
        cols[q].push_back(v.cols[b]);
        offs[q].push_back(v.offsets[b]);
        ++ptr[q].back();
      }
    }
    std::vector<Panel> out;
    out.reserve(static_cast<std::size_t>(P));
    for (std::size_t q = 0; q < static_cast<std::size_t>(P); ++q)
      out.push_back(Panel::adopt(plexus::IndexArray(rows[q].begin(), rows[q].end()),
                                 plexus::IndexArray(ptr[q].begin(), ptr[q].end()),
                                 plexus::IndexArray(cols[q].begin(), cols[q].end()),
                                 plexus::IndexArray(offs[q].begin(), offs[q].end()), plexus::MatrixData()));
    return out;
  }

  RingCollectives collectives_;
};

plexus::ParameterListPtr ring_parameters() {
  auto p = Teuchos::rcp(new plexus::ParameterList("ring"));
  plexus::declare_int(*p, "SubRingSize", 0,
                      "S: consecutive ranks form rings of S ranks for circulate (must divide the number of ranks; "
                      "0: one ring of all ranks). The multiply always uses one ring of all ranks",
                      0, 1 << 20);
  plexus::declare_int(*p, "Threads", 1,
                      "k independent rings per rank: k threads circulate at once, thread i talking only to thread i "
                      "of its neighbours (needs MPI_THREAD_MULTIPLE)",
                      1, 1024);
  plexus::declare_bool(*p, "Bidirectional", false, "odd threads circulate the other way round the ring");
  return p;
}

const plexus::PluginDescriptor& describe() {
  static const plexus::PluginDescriptor d = [] {
    plexus::PluginDescriptor p;
    p.name = "comm_ring";
    p.version = "1.0.0";
    plexus::ComponentDescriptor c;
    c.kind = plexus::ComponentKind::Comm;
    c.name = "ring";
    c.summary =
        "DCA++'s pipelined ring (PASC'21): buffers circulate around (sub-)rings with Isend right / Irecv left, "
        "update on arrival, swap; threaded and bidirectional rings; a 1D ring multiply (B's row panels circulate).";
    c.valid_parameters = ring_parameters;
    c.make_comm = [](const plexus::ParameterList& params) {
      return std::make_unique<Ring>(params.get<int>("SubRingSize"), params.get<int>("Threads"),
                                    params.get<bool>("Bidirectional"));
    };
    p.components.push_back(std::move(c));
    plexus::ComponentDescriptor k;
    k.kind = plexus::ComponentKind::Collectives;
    k.name = "ring";
    k.summary =
        "DCA++'s pipelined ring as collectives: circulate on (sub-)rings, threaded and bidirectional, and the "
        "sum across sub-rings; allreduce, bcast, reduce and alltoall(v) are plain MPI.";
    k.valid_parameters = ring_parameters;
    k.make_collectives = [](const plexus::ParameterList& params) {
      return std::make_unique<RingCollectives>(params.get<int>("SubRingSize"), params.get<int>("Threads"),
                                               params.get<bool>("Bidirectional"));
    };
    p.components.push_back(std::move(k));
    return p;
  }();
  return d;
}

}  // namespace

PLEXUS_PLUGIN(describe)
