#include "plexus/comm_strategy.hpp"

#include <string>

#include "plexus/error.hpp"
#include "plexus/registry.hpp"

namespace plexus {

std::string operation_name(Operation op) {
  switch (op) {
    case OpMultiply: return "multiply";
    case OpCirculate: return "circulate";
    case OpAllreduceSum: return "allreduce_sum";
  }
  return "?";
}

CommStrategy::~CommStrategy() = default;

void CommStrategy::missing_operation(Operation op) const {
  std::string list;
  for (const auto& n : Registry::global().providers(op)) list += (list.empty() ? "" : ", ") + n;
  throw InputError("Communication/Strategy", "strategy '" + name() + "' does not provide the operation '" +
                                                 operation_name(op) + "'" +
                                                 (list.empty() ? std::string(" (no loaded strategy does)")
                                                               : "; strategies that do: " + list));
}

MultiplyReport CommStrategy::multiply(double alpha, const DistMatrix& a, const DistMatrix& b, double beta,
                                      DistMatrix& c, Kernel& kernel, const MultiplyOptions& options) {
  return plexus::multiply(*this, kernel, Trans::N, Trans::N, alpha, a, b, beta, c, options);
}

Panel CommStrategy::run(MultiplyTask&) { missing_operation(OpMultiply); }

CommStrategy::RingPosition CommStrategy::ring_position(MPI_Comm comm) { return {mpi::rank(comm), mpi::size(comm)}; }

void CommStrategy::reduce_across_rings(MPI_Comm, std::vector<double>&, mpi::Traffic&) {}

void CommStrategy::circulate(MPI_Comm comm, std::vector<double>& my_buffer, const ArrivalFn& on_arrival,
                             mpi::Traffic& traffic, int thread) {
  if (thread != 0)
    throw Error("CommStrategy::circulate", "the core default circulate serves one thread; thread " +
                                               std::to_string(thread) + " asked (use a strategy with Threads, e.g. ring)");
  // Core default: every rank gathers every buffer (sizes first), then visits them in the order a
  // ring would deliver them: its own, then rank me-1, me-2, ...
  const int p = mpi::size(comm), me = mpi::rank(comm);
  int mine = static_cast<int>(my_buffer.size());
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
  std::vector<double> buf;
  for (int s = 0; s < p; ++s) {
    const int origin = (me - s + p) % p;  // the order a ring delivers them in
    if (origin == me) {
      on_arrival(my_buffer, me);
      continue;
    }
    buf.assign(all.data() + displs[origin], all.data() + displs[origin] + counts[origin]);
    on_arrival(buf, origin);
  }
}

void CommStrategy::allreduce_sum(MPI_Comm comm, std::vector<double>& values, mpi::Traffic& traffic) {
  const double t0 = mpi::now();
  mpi::check(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_DOUBLE, MPI_SUM, comm),
             "MPI_Allreduce");
  traffic.add_wait(mpi::Role::Other, mpi::now() - t0);
  if (mpi::size(comm) > 1) {
    traffic.add_sent(mpi::Role::Other, mpi::Payload::Data, static_cast<std::int64_t>(values.size()) * 8, 1);
    traffic.add_received(mpi::Role::Other, mpi::Payload::Data, static_cast<std::int64_t>(values.size()) * 8, 1);
  }
}

}  // namespace plexus
