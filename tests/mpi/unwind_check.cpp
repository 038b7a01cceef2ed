// plexus-unwind-check: an error on one rank in the middle of an operation must reach that rank's
// handler, however the operation's objects are torn down on the way: no destructor may make a
// collective call while the stack unwinds (the other ranks are still inside the operation and
// never join it). Run under mpiexec on 2 or more ranks:
//
//   plexus-unwind-check --list                      the components it can check, one per line
//   plexus-unwind-check multiply NAME [POINT]       a multiply with strategy NAME (NAME:Key=Value:...
//                                                   with parameters)
//   plexus-unwind-check collectives NAME [POINT]    allreduce, bcast and circulate of NAME
//
// Every rank does the operation once, whole. Then the last rank arms the fault hook
// (progress::inject_fault) to throw at its POINT-th progress point (default 3) of the same
// operation done again by the same objects, owned by the scope that unwinds: the strategy
// (rma25d's windows), a grid with its own communicator pool, the matrices, the pending requests. Its handler prints
// "reached the handler" and ends the job with MPI_Abort (exit code 3). If a destructor made a
// collective call, the rank would wait in it forever and the test would time out instead.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "conformance_specs.hpp"
#include "plexus/algebra.hpp"
#include "plexus/context.hpp"
#include "plexus/error.hpp"
#include "plexus/generator.hpp"
#include "plexus/progress.hpp"
#include "plexus/registry.hpp"

namespace {

using namespace plexus;

// A strategy by spec: NAME, or NAME:Key=Value[:Key=Value...] with parameters (conformance_specs.hpp).
std::shared_ptr<MultiplyAlgorithm> algorithm(const std::string& spec) {
  const std::vector<test::Spec> parsed = test::parse_specs(spec.c_str());
  if (parsed.size() != 1) throw Error("plexus-unwind-check", "one strategy spec expected, got '" + spec + "'");
  ParameterList p(parsed.front().name);
  for (const auto& kv : parsed.front().params) apply_override(p, kv);
  return Registry::global().make_comm(parsed.front().name, p, "Communication/" + parsed.front().name);
}

std::shared_ptr<Kernel> reference_kernel() {
  ParameterList p("reference");
  return Registry::global().make_kernel("reference", p, "Kernel/reference");
}

// Two multiplies C = A * B on a grid with its own pool, everything owned by this scope; the
// fault is armed between them (arm() on the faulty rank).
void multiply_twice(const std::string& name, const std::function<void()>& arm) {
  auto algo = algorithm(name);
  auto kernel = reference_kernel();
  auto grid = Grid::create(MPI_COMM_WORLD);
  auto dist = [&](int r, int c) { return algo->distribution_for(Distribution::by_name("block-cyclic", grid, r, c, 17)); };
  const BlockLayout la{BlockSizes::cyclic(9, {3, 5}), BlockSizes::cyclic(11, {4, 2})};
  const BlockLayout lb{BlockSizes::cyclic(11, {4, 2}), BlockSizes::cyclic(8, {5, 3})};
  GeneratorSpec g;
  g.occupancy = 0.6;
  g.seed = 7;
  DistMatrix A = generate_random("A", dist(9, 11), la, g);
  g.seed = 8;
  DistMatrix B = generate_random("B", dist(11, 8), lb, g);
  DistMatrix C("C", dist(9, 8), BlockLayout{la.rows, lb.cols});
  multiply(*algo, *kernel, Trans::N, Trans::N, 1.0, A, B, 0.0, C, MultiplyOptions{});
  arm();  // windows, plans and communicators exist from here on
  multiply(*algo, *kernel, Trans::N, Trans::N, 1.0, A, B, 0.0, C, MultiplyOptions{});
}

// Allreduce, bcast and circulate through the collectives component, twice, with a context of this
// scope; the fault is armed between the two rounds.
void collectives_twice(const std::string& name, const std::function<void()>& arm) {
  ParameterList p(name);
  std::shared_ptr<Collectives> coll = Registry::global().make_collectives(name, p, "Communication/" + name);
  Context ctx(MPI_COMM_WORLD, algorithm("cannon"), reference_kernel());
  ctx.set_collectives(coll);
  std::vector<double> v(1000, 1.0);
  for (int round = 0; round < 2; ++round) {
    if (round == 1) arm();
    allreduce(ctx, v);
    bcast(ctx, v, 0);
    mpi::Traffic traffic;
    double arrived = 0;
    ctx.collectives().circulate(ctx.comm(), v, [&](std::span<const double> b, int) { arrived += b[0]; }, traffic);
  }
  // No release(): an unwinding scope never gets that far; the pool's destructor calls no MPI.
  if (!plexus::progress::unwinding()) ctx.release();
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Registry::global().load_default();
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "--list") {
    if (rank == 0) {
      for (const auto& n : Registry::global().names(ComponentKind::Comm)) std::printf("multiply %s\n", n.c_str());
      for (const auto& n : Registry::global().names(ComponentKind::Collectives))
        std::printf("collectives %s\n", n.c_str());
    }
    MPI_Finalize();
    return 0;
  }
  if ((mode != "multiply" && mode != "collectives") || argc < 3 || size < 2) {
    if (rank == 0)
      std::fprintf(stderr, "usage: mpiexec -n P plexus-unwind-check --list | multiply NAME [POINT] | "
                           "collectives NAME [POINT]   (P >= 2)\n");
    MPI_Finalize();
    return 2;
  }
  const std::string name = argv[2];
  const std::uint64_t point = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 3;
  auto arm = [&] {
    if (rank == size - 1) plexus::progress::inject_fault(point);
  };
  try {
    if (mode == "multiply")
      multiply_twice(name, arm);
    else
      collectives_twice(name, arm);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plexus-unwind-check: rank %d reached the handler: %s\n", rank, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  // Only the faulty rank's handler ends the job; a run where the fault never fired is a failure.
  if (rank == size - 1)
    std::fprintf(stderr, "plexus-unwind-check: rank %d finished without the injected fault firing\n", rank);
  MPI_Finalize();
  return 1;
}
