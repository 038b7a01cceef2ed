// Cannon's ticks (cannon.cpp): the V ticks that multiply the front images while they travel, and
// the one pass of fused ticks, by messages or through a shared window.
#include "ticks.hpp"

#include <functional>
#include <vector>

#include "plexus/timers.hpp"

namespace plexus::cannon {

namespace {

using mpi::Payload;
using mpi::Role;
using mpi::Traffic;

constexpr int kTagIndex = 7101, kTagData = 7102;

// One shift: the image `send` (its packed index `words`, its values) goes to `to`, and an image
// from `from` is received into `recv_index` and up to `capacity` values at `recv_values`.
void post(const std::int64_t* words, std::int64_t nwords, const PanelView& send, CommBuffer<std::int64_t>& recv_index,
          double* recv_values, std::int64_t capacity, int to, int from, MPI_Comm comm, Role role, Traffic& traffic) {
  traffic.irecv(recv_index.data(), static_cast<std::int64_t>(recv_index.size()), MPI_INT64_T, from, kTagIndex, comm,
                role, Payload::Index);
  traffic.irecv(recv_values, capacity, MPI_DOUBLE, from, kTagData, comm, role, Payload::Data);
  traffic.isend(words, nwords, MPI_INT64_T, to, kTagIndex, comm, role, Payload::Index);
  traffic.isend(send.data, send.data_size, MPI_DOUBLE, to, kTagData, comm, role, Payload::Data);
}

// The front goes to `to` (index words, then values), and the spare receives from `from`.
void post_shift(OperandQueue& q, int to, int from, MPI_Comm comm, Role role, Traffic& traffic) {
  ImageBuffer& recv = q.buf[static_cast<std::size_t>(q.spare)];
  if (q.queue.front() == kLocalPanel) {
    post(q.local_index.data(), static_cast<std::int64_t>(q.local_index.size()), q.local, recv.index, recv.data.data(),
         static_cast<std::int64_t>(recv.data.size()), to, from, comm, role, traffic);
    return;
  }
  const ImageBuffer& send = q.buf[static_cast<std::size_t>(q.queue.front())];
  post(send.index.data(), send.words(), send.view(), recv.index, recv.data.data(),
       static_cast<std::int64_t>(recv.data.size()), to, from, comm, role, traffic);
}

}  // namespace

// Both ticks in one pass. By messages, the one shift travels while a local panel is copied next
// to where the received image lands. Through a shared window, each rank copies its image into its
// segment and sends the index, which tells the peer the segment is written (or, with B dense and
// agreed so (cannon.cpp), writes its B blocks into the window's one dense matrix). Then one local product
// takes both images of each moving operand. Where both packed indices are known already (replayed
// routes whose panels show the kept index objects on every rank: FusedOperand::known), no index
// travels: by messages only the values, through a window an empty message.
//
// Writing into the segment needs the peer's previous product, which read it, to be over. The
// caller's routes agreement guarantees that: an MPI_Allreduce over the grid (ticks.hpp), whose
// result needs every rank's contribution, so no rank leaves it before its peers have entered it,
// after their previous multiply. (A zero-byte message from the peer had said the same again, at
// the price of one more point per ring and multiply where a rank waits for its peer.)
void run_fused(const Plan& plan, const DistMatrix& A, const DistMatrix& B, FusedOperand& a_f, FusedOperand& b_f,
               LocalProduct& product, Traffic& traffic) {
  struct Ring {
    FusedOperand* f;
    MPI_Comm comm;
    int to, from;  // the neighbours; in a ring of two both are the peer
    Role role;
  };
  std::vector<Ring> rings;
  if (plan.PC > 1) rings.push_back({&a_f, A.grid().row_comm(), plan.left(), plan.right(), Role::A});
  if (plan.PR > 1) rings.push_back({&b_f, A.grid().col_comm(), plan.up(), plan.down(), Role::B});
  const std::function<void()> poll = [&traffic] {
    traffic.test(Role::A);
    traffic.test(Role::B);
  };
  timers::Scoped copy_timer("cannon: fused copy");
  for (const Ring& r : rings) {
    if (r.f->shared == nullptr) continue;
    r.f->copy_front([] {});
    mpi::check(MPI_Win_sync(r.f->shared->win()), "MPI_Win_sync");
  }
  for (const Ring& r : rings) {
    FusedOperand& f = *r.f;
    if (f.shared == nullptr && f.known) {  // only the values travel
      traffic.irecv(f.recv_values(), f.recv_capacity(), MPI_DOUBLE, r.from, kTagData, r.comm, r.role, Payload::Data);
      traffic.isend(f.front.data, f.front.data_size, MPI_DOUBLE, r.to, kTagData, r.comm, r.role, Payload::Data);
      continue;
    }
    if (f.shared == nullptr) {
      post(f.front_words, f.front_count, f.front, f.recv_index, f.recv_values(), f.recv_capacity(), r.to, r.from,
           r.comm, r.role, traffic);
      continue;
    }
    // Through the window: the index, or an empty message where both are known, says the segment is written.
    if (f.known) {
      traffic.irecv(&f.signal, 0, MPI_INT64_T, r.from, kTagIndex, r.comm, r.role, Payload::Index);
      traffic.isend(&f.signal, 0, MPI_INT64_T, r.to, kTagIndex, r.comm, r.role, Payload::Index);
    } else {
      traffic.irecv(f.recv_index.data(), static_cast<std::int64_t>(f.recv_index.size()), MPI_INT64_T, r.from,
                    kTagIndex, r.comm, r.role, Payload::Index);
      traffic.isend(f.front_words, f.front_count, MPI_INT64_T, r.to, kTagIndex, r.comm, r.role, Payload::Index);
    }
    traffic.add_sent(r.role, Payload::Data, 8 * f.front.data_size, 0);  // what the peer reads from the segment
  }
  for (const Ring& r : rings) r.f->copy_front(poll);  // by messages: the local panel, while it travels
  copy_timer.stop();
  {
    const timers::Scoped wait_timer("cannon: shift wait");
    traffic.waitall(Role::A);
    traffic.waitall(Role::B);
  }
  for (const Ring& r : rings) {
    if (r.f->shared == nullptr) continue;
    mpi::check(MPI_Win_sync(r.f->shared->win()), "MPI_Win_sync");
    traffic.add_received(r.role, Payload::Data, 8 * r.f->recv_values_count(), 0);
  }
  const PanelView a_view = plan.PC > 1 ? a_f.both() : A.local().view();
  if (plan.PR > 1 && b_f.dense)  // B's images as one dense matrix in the window
    product.multiply(a_view, A.layout(), b_f.both(), B.layout(), b_f.shared->base(), *b_f.dense);
  else
    product.multiply(a_view, A.layout(), plan.PR > 1 ? b_f.both() : B.local().view(), B.layout());
}

// V ticks: multiply the front images while the fronts travel to the neighbours.
void run_ticks(const Plan& plan, const DistMatrix& A, const DistMatrix& B, OperandQueue& a_q, OperandQueue& b_q,
               LocalProduct& product, Traffic& traffic) {
  const MPI_Comm row = A.grid().row_comm(), col = A.grid().col_comm();
  const bool a_moves = plan.PC > 1, b_moves = plan.PR > 1;  // else no buffers: the local panel
  // The shifts progress while the products run (a large message moves only inside MPI calls);
  // the waits below are then mostly for the slower neighbour, not for the transfer.
  const ProgressScope progress({&product}, [&traffic] {
    traffic.test(Role::A);
    traffic.test(Role::B);
  });
  for (int t = 0; t < plan.V; ++t) {
    const bool shift = t + 1 < plan.V;
    if (a_moves && shift) post_shift(a_q, plan.left(), plan.right(), row, Role::A, traffic);
    if (b_moves && shift) post_shift(b_q, plan.up(), plan.down(), col, Role::B, traffic);
    const PanelView a_view = a_moves ? a_q.front() : A.local().view();
    const PanelView b_view = b_moves ? b_q.front() : B.local().view();
    product.multiply(a_view, A.layout(), b_view, B.layout());
    if (!shift) break;
    const timers::Scoped wait_timer("cannon: shift wait");
    traffic.waitall(Role::A);
    traffic.waitall(Role::B);
    const bool more_shifts = t + 2 < plan.V;
    if (a_moves) a_q.rotate(more_shifts);
    if (b_moves) b_q.rotate(more_shifts);
  }
}

}  // namespace plexus::cannon
