#pragma once
// The nboverlap schedules' transport (internal to the plugin): a panel in flight cut into parts
// (Wire), the counted and timed nonblocking calls on the parts' communicators (Transport), the
// union-pattern reduction of partial panels, and point-to-point panels with a size header.
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "parts.hpp"
#include "plexus/layout.hpp"
#include "plexus/memory.hpp"
#include "plexus/mpi.hpp"
#include "plexus/panel.hpp"

namespace plexus::nboverlap {

using mpi::Payload;
using mpi::Role;
using mpi::Traffic;

// Tags of the point-to-point streams (+ element: 0 the index, 1 + c part c).
constexpr int kTagB = 7600, kTagReturn = 7700, kTagReturn2 = 7800, kTagTranspose = 7900, kTagHeader = 7590;

// A panel in flight: packed index words and values, cut into parts; element 0 is the index,
// element 1 + c part c of the values.
struct Wire {
  CommBuffer<std::int64_t> index;
  CommBuffer<double> values;
  int parts = 1;
  std::vector<MPI_Request> req;  // one per element
  Role role = Role::Other;

  void size(std::int64_t words, std::int64_t nvalues, const PartPlan& plan) {
    index.assign(static_cast<std::size_t>(words), 0);
    values.assign(static_cast<std::size_t>(nvalues), 0.0);
    parts = plan.parts(nvalues);
    req.assign(static_cast<std::size_t>(parts) + 1, MPI_REQUEST_NULL);
  }
  void fill(const Panel& p, const PartPlan& plan) {
    size(PanelView::packed_words(p.nrows(), p.nblocks()), p.data_size(), plan);
    p.pack_to(index.data());
    std::copy(p.data().begin(), p.data().end(), values.begin());
  }
  int elements() const { return parts + 1; }
  // Pointer, count, datatype and payload of element e.
  void* ptr(int e) { return e == 0 ? static_cast<void*>(index.data()) : values.data() + range(e).first; }
  const void* ptr(int e) const {
    return e == 0 ? static_cast<const void*>(index.data()) : values.data() + range(e).first;
  }
  int count(int e) const {
    if (e == 0) return static_cast<int>(index.size());
    const auto [b, x] = range(e);
    return static_cast<int>(x - b);
  }
  std::pair<std::int64_t, std::int64_t> range(int e) const {
    return part_range(static_cast<std::int64_t>(values.size()), parts, e - 1);
  }
  static MPI_Datatype type(int e) { return e == 0 ? MPI_INT64_T : MPI_DOUBLE; }
  static Payload payload(int e) { return e == 0 ? Payload::Index : Payload::Data; }
  PanelView view() const {
    return PanelView::from_packed(index.data(), static_cast<std::int64_t>(index.size()), values.data());
  }
};

// Huang and Chow's alpha-beta model of the data one rank moves: latency terms (times alpha) and
// bytes (times beta), summed over the schedule's data parts without overlap. Per part of n bytes
// among p ranks (L = ceil(log2 p)): Bcast L + p - 1 and 2 (p-1) n / p; Reduce (and Allreduce,
// Rabenseifner) 2 L and 2 (p-1) n / p; point to point 1 and n, on both ends. The index and the
// size headers are left out, as in the paper.
struct AlphaBeta {
  double latency_terms = 0, bandwidth_bytes = 0;
  static int log2_ceil(int p) {
    int l = 0;
    while ((1 << l) < p) ++l;
    return l;
  }
  void bcast(int p, std::int64_t bytes) {
    if (p < 2) return;
    latency_terms += log2_ceil(p) + p - 1;
    bandwidth_bytes += 2.0 * (p - 1) * static_cast<double>(bytes) / p;
  }
  void reduce(int p, std::int64_t bytes) {
    if (p < 2) return;
    latency_terms += 2 * log2_ceil(p);
    bandwidth_bytes += 2.0 * (p - 1) * static_cast<double>(bytes) / p;
  }
  void p2p(std::int64_t bytes) {
    latency_terms += 1;
    bandwidth_bytes += static_cast<double>(bytes);
  }
};

// The schedule's transport: every element counted per role, waits timed, data parts in the
// alpha-beta model.
class Transport {
 public:
  Transport(CommPool& pool, Traffic& traffic) : pool_(pool), t_(traffic) {}

  MPI_Comm part(MPI_Comm comm, int e) { return part_comm(pool_, comm, e == 0 ? 0 : e - 1); }
  const AlphaBeta& model() const { return ab_; }

  void bcast(Wire& w, int e, MPI_Comm comm, int root) {
    const int np = mpi::size(comm), me = mpi::rank(comm);
    mpi::check(
        MPI_Ibcast(w.ptr(e), w.count(e), Wire::type(e), root, part(comm, e), &w.req[static_cast<std::size_t>(e)]),
        "MPI_Ibcast");
    if (e > 0) ab_.bcast(np, 8 * std::int64_t{w.count(e)});
    if (np == 1) return;
    if (me == root)
      t_.add_sent(w.role, Wire::payload(e), 8 * std::int64_t{w.count(e)}, 1);
    else
      t_.add_received(w.role, Wire::payload(e), 8 * std::int64_t{w.count(e)}, 1);
  }
  void send(Wire& w, int e, int dest, MPI_Comm comm, int tag) {
    send_to(w, e, dest, comm, tag, &w.req[static_cast<std::size_t>(e)]);
  }
  // Element e of w to dest with the caller's request (a wire may go to several ranks at once).
  void send_to(const Wire& w, int e, int dest, MPI_Comm comm, int tag, MPI_Request* r) {
    mpi::check(MPI_Isend(w.ptr(e), w.count(e), Wire::type(e), dest, tag + e, part(comm, e), r), "MPI_Isend");
    if (e > 0) ab_.p2p(8 * std::int64_t{w.count(e)});
    t_.add_sent(w.role, Wire::payload(e), 8 * std::int64_t{w.count(e)}, 1);
  }
  void recv(Wire& w, int e, int src, MPI_Comm comm, int tag) {
    mpi::check(MPI_Irecv(w.ptr(e), w.count(e), Wire::type(e), src, tag + e, part(comm, e),
                         &w.req[static_cast<std::size_t>(e)]),
               "MPI_Irecv");
    if (e > 0) ab_.p2p(8 * std::int64_t{w.count(e)});
    t_.add_received(w.role, Wire::payload(e), 8 * std::int64_t{w.count(e)}, 1);
  }
  // Part e of `in` summed into part e of out's values on root, or on every rank with `root` < 0
  // (MPI_Iallreduce, counted as core counts it: n sent and n received); the index is not reduced.
  void reduce(const CommBuffer<double>& in, Wire& out, int e, MPI_Comm comm, int root) {
    const int np = mpi::size(comm), me = mpi::rank(comm);
    const auto [b, x] = out.range(e);
    MPI_Request* r = &out.req[static_cast<std::size_t>(e)];
    if (root < 0)
      mpi::check(MPI_Iallreduce(in.data() + b, out.values.data() + b, static_cast<int>(x - b), MPI_DOUBLE, MPI_SUM,
                                part(comm, e), r),
                 "MPI_Iallreduce");
    else
      mpi::check(MPI_Ireduce(in.data() + b, me == root ? out.values.data() + b : nullptr, static_cast<int>(x - b),
                             MPI_DOUBLE, MPI_SUM, root, part(comm, e), r),
                 "MPI_Ireduce");
    ab_.reduce(np, 8 * (x - b));
    if (np == 1) return;
    if (root < 0) {
      t_.add_sent(out.role, Payload::Data, 8 * (x - b), 1);
      t_.add_received(out.role, Payload::Data, 8 * (x - b), 1);
    } else if (me == root)
      t_.add_received(out.role, Payload::Data, 8 * (x - b) * (np - 1), np - 1);
    else
      t_.add_sent(out.role, Payload::Data, 8 * (x - b), 1);
  }
  void wait(Wire& w, int e) { wait(&w.req[static_cast<std::size_t>(e)], w.role); }
  void wait(MPI_Request* r, Role role) {
    const double t0 = mpi::now();
    mpi::check(MPI_Wait(r, MPI_STATUS_IGNORE), "MPI_Wait");
    t_.add_wait(role, mpi::now() - t0);
  }
  void wait_all(Wire& w) {
    for (int e = 0; e < w.elements(); ++e) wait(w, e);
  }
  // Sizes (index words, values) of a panel from root to the others of comm (blocking, small).
  std::pair<std::int64_t, std::int64_t> bcast_sizes(std::int64_t words, std::int64_t nvalues, MPI_Comm comm, int root,
                                                    Role role) {
    std::int64_t s[2] = {words, nvalues};
    const double t0 = mpi::now();
    mpi::check(MPI_Bcast(s, 2, MPI_INT64_T, root, part(comm, 0)), "MPI_Bcast");
    t_.add_wait(role, mpi::now() - t0);
    if (mpi::size(comm) > 1) {
      if (mpi::rank(comm) == root)
        t_.add_sent(role, Payload::Index, 16, 1);
      else
        t_.add_received(role, Payload::Index, 16, 1);
    }
    return {s[0], s[1]};
  }
  Traffic& traffic() { return t_; }

 private:
  CommPool& pool_;
  Traffic& t_;
  AlphaBeta ab_;
};

// C_{i,:,k} reduced over rrow: the union of the partial panels' patterns (gathered), the values
// laid out on it and summed in parts onto the root.
struct Reduction {
  Wire sum;                 // the union's index everywhere; the summed values on the root
  CommBuffer<double> mine;  // my partial panel on the union pattern
  int root = 0;
  std::int64_t header[2] = {0, 0};
  MPI_Request header_req = MPI_REQUEST_NULL;
};

/// Starts the reduction of `partial` (over `rows`, the same on every member of rrow) onto `root`
/// (root < 0: onto every member): the members' patterns gathered, their union laid out, every
/// part's MPI_Ireduce (MPI_Iallreduce) posted.
void start_reduction(Transport& tr, const Panel& partial, const BlockLayout& layout, const std::vector<int>& rows,
                     MPI_Comm rrow, int root, const PartPlan& plan, Reduction& red, Role role);

/// A panel from src to dest over `comm` (mesh ranks): a small header (sizes), then the index and
/// the parts. The sender posts everything it can; `ready(e)` is waited before part e is sent (the
/// pipeline's upstream); the receiver learns the sizes from the header.
void send_panel(Transport& tr, Wire& w, int dest, MPI_Comm comm, int tag, std::int64_t* header, MPI_Request* hreq,
                const std::function<void(int)>& ready);
void recv_panel(Transport& tr, Wire& w, int src, MPI_Comm comm, int tag, const PartPlan& plan);
void wait_header(MPI_Request* r);

/// One point-to-point panel with its own requests, so that one wire can go to several ranks at
/// once (post_panel), and be waited for (finish_panel). Kept at a stable address while in flight.
struct Outgoing {
  std::int64_t header[2] = {0, 0};
  MPI_Request hreq = MPI_REQUEST_NULL;
  std::vector<MPI_Request> req;
};
void post_panel(Transport& tr, const Wire& w, int dest, MPI_Comm comm, int tag, Outgoing& o,
                const std::function<void(int)>& ready = {});
void finish_panel(Transport& tr, const Wire& w, Outgoing& o);

}  // namespace plexus::nboverlap
