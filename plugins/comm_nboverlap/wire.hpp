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

// The schedule's transport: every element counted per role, waits timed.
class Transport {
 public:
  Transport(CommPool& pool, Traffic& traffic) : pool_(pool), t_(traffic) {}

  MPI_Comm part(MPI_Comm comm, int e) { return part_comm(pool_, comm, e == 0 ? 0 : e - 1); }

  void bcast(Wire& w, int e, MPI_Comm comm, int root) {
    const int np = mpi::size(comm), me = mpi::rank(comm);
    mpi::check(MPI_Ibcast(w.ptr(e), w.count(e), Wire::type(e), root, part(comm, e), &w.req[static_cast<std::size_t>(e)]),
               "MPI_Ibcast");
    if (np == 1) return;
    if (me == root)
      t_.add_sent(w.role, Wire::payload(e), 8 * std::int64_t{w.count(e)}, 1);
    else
      t_.add_received(w.role, Wire::payload(e), 8 * std::int64_t{w.count(e)}, 1);
  }
  void send(Wire& w, int e, int dest, MPI_Comm comm, int tag) {
    mpi::check(MPI_Isend(w.ptr(e), w.count(e), Wire::type(e), dest, tag + e, part(comm, e),
                         &w.req[static_cast<std::size_t>(e)]),
               "MPI_Isend");
    t_.add_sent(w.role, Wire::payload(e), 8 * std::int64_t{w.count(e)}, 1);
  }
  void recv(Wire& w, int e, int src, MPI_Comm comm, int tag) {
    mpi::check(MPI_Irecv(w.ptr(e), w.count(e), Wire::type(e), src, tag + e, part(comm, e),
                         &w.req[static_cast<std::size_t>(e)]),
               "MPI_Irecv");
    t_.add_received(w.role, Wire::payload(e), 8 * std::int64_t{w.count(e)}, 1);
  }
  // Part e of `in` summed into part e of out's values on root (the index is not reduced).
  void reduce(const CommBuffer<double>& in, Wire& out, int e, MPI_Comm comm, int root) {
    const int np = mpi::size(comm), me = mpi::rank(comm);
    const auto [b, x] = out.range(e);
    mpi::check(MPI_Ireduce(in.data() + b, me == root ? out.values.data() + b : nullptr, static_cast<int>(x - b),
                           MPI_DOUBLE, MPI_SUM, root, part(comm, e), &out.req[static_cast<std::size_t>(e)]),
               "MPI_Ireduce");
    if (me == root)
      t_.add_received(out.role, Payload::Data, 8 * (x - b) * (np - 1), np - 1);
    else
      t_.add_sent(out.role, Payload::Data, 8 * (x - b), 1);
  }
  void wait(Wire& w, int e) {
    const double t0 = mpi::now();
    mpi::check(MPI_Wait(&w.req[static_cast<std::size_t>(e)], MPI_STATUS_IGNORE), "MPI_Wait");
    t_.add_wait(w.role, mpi::now() - t0);
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

/// Starts the reduction of `partial` (over `rows`, the same on every member of rrow) onto `root`:
/// the members' patterns gathered, their union laid out, every part's MPI_Ireduce posted.
void start_reduction(Transport& tr, const Panel& partial, const BlockLayout& layout, const std::vector<int>& rows,
                     MPI_Comm rrow, int root, const PartPlan& plan, Reduction& red, Role role);

/// A panel from src to dest over `comm` (mesh ranks): a small header (sizes), then the index and
/// the parts. The sender posts everything it can; `ready(e)` is waited before part e is sent (the
/// pipeline's upstream); the receiver learns the sizes from the header.
void send_panel(Transport& tr, Wire& w, int dest, MPI_Comm comm, int tag, std::int64_t* header, MPI_Request* hreq,
                const std::function<void(int)>& ready);
void recv_panel(Transport& tr, Wire& w, int src, MPI_Comm comm, int tag, const PartPlan& plan);
void wait_header(MPI_Request* r);

}  // namespace plexus::nboverlap
