// Cannon's own figures on every rank count, square and non-square grids (both orientations): the
// counted traffic against the volume the schedule implies, recomputed here from the global
// block lists, the ticks, the buffers, and the dry-run model. Correctness against the dense
// product (alpha/beta, filtering, aliasing, transposes, odd sizes, ...) is the multiply
// conformance suite's, which runs Cannon like every other algorithm.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string>

#include "dense_reference.hpp"
#include "plexus/distribution.hpp"
#include "plexus/error.hpp"
#include "plexus/generator.hpp"
#include "plexus/registry.hpp"
#include "multiply_fixtures.hpp"

using namespace plexus;

namespace {

using test::Case;
using test::Operands;
using test::blocks_of;
using test::grids;
using test::make_operands;

std::unique_ptr<CommStrategy> cannon() { return test::strategy("cannon"); }
std::unique_ptr<Kernel> kernel(const std::string& name) { return test::kernel(name); }

}  // namespace

TEST(Cannon, TrafficEqualsTheScheduleVolume) {
  for (const double occupancy : {1.0, 0.3}) {
    for (const auto& grid : grids()) {
      SCOPED_TRACE("grid " + grid->describe() + " occupancy " + std::to_string(occupancy));
      const int nb = 12;  // divisible by every V = lcm(PR, PC) of the tested grids
      Case k{"volume", nb, nb, nb, {4}, occupancy, 1.0, 0.0, "block-cyclic", "reference"};
      Operands o = make_operands(k, grid);
      auto strategy = cannon();
      auto kern = kernel("reference");
      const MultiplyReport rep = strategy->multiply(1.0, o.a, o.b, 0.0, o.c, *kern, MultiplyOptions{});

      // The schedule, recomputed: k-groups from A's column distribution, image sizes from the
      // gathered block lists, fronts g(pr, pc, t) = (pc*a + pr*b + t) mod V.
      const int PR = grid->nprows(), PC = grid->npcols(), pr = grid->myprow(), pc = grid->mypcol();
      const int V = std::lcm(PR, PC), a = V / PC, b = V / PR;
      const auto& cA = o.a.distribution().col_dist();
      const auto& rA = o.a.distribution().row_dist();
      const auto& cB = o.b.distribution().col_dist();
      std::vector<int> kg(cA.size()), seen(static_cast<std::size_t>(PC), 0);
      for (std::size_t q = 0; q < cA.size(); ++q) kg[q] = cA[q] + PC * (seen[static_cast<std::size_t>(cA[q])]++ % a);
      std::vector<std::int64_t> sizeA(static_cast<std::size_t>(PR * V), 0), sizeB(static_cast<std::size_t>(V * PC), 0);
      std::int64_t pre_sent_a = 0, pre_recv_a = 0, flops_expected = 0;
      auto A = blocks_of(o.a), B = blocks_of(o.b);
      for (const auto& [ik, v] : A) {
        const int g = kg[static_cast<std::size_t>(ik.second)], row = rA[static_cast<std::size_t>(ik.first)];
        sizeA[static_cast<std::size_t>(row * V + g)] += static_cast<std::int64_t>(v.size()) * 8;
        const int dest = (((g - row * b) % V + V) % V) / a;
        const int from = cA[static_cast<std::size_t>(ik.second)];
        if (row == pr && from == pc && dest != pc) pre_sent_a += static_cast<std::int64_t>(v.size()) * 8;
        if (row == pr && from != pc && dest == pc) pre_recv_a += static_cast<std::int64_t>(v.size()) * 8;
      }
      for (const auto& [kj, v] : B)
        sizeB[static_cast<std::size_t>(kg[static_cast<std::size_t>(kj.first)] * PC + cB[static_cast<std::size_t>(kj.second)])] +=
            static_cast<std::int64_t>(v.size()) * 8;
      for (const auto& [ik, av] : A)
        for (int j = 0; j < nb; ++j)
          if (B.count({ik.second, j})) flops_expected += 2 * 4 * 4 * 4;
      std::int64_t shift_a = 0, shift_b = 0, recv_a = 0;
      for (int t = 0; t + 1 < V; ++t) {
        const int g = (pc * a + pr * b + t) % V;
        if (PC > 1) {
          shift_a += sizeA[static_cast<std::size_t>(pr * V + g)];
          recv_a += sizeA[static_cast<std::size_t>(pr * V + ((pc + 1) % PC * a + pr * b + t) % V)];
        }
        if (PR > 1) shift_b += sizeB[static_cast<std::size_t>(g * PC + pc)];
      }
      EXPECT_EQ(rep.ticks, V);
      EXPECT_EQ(rep.extra.at("shift_bytes_a"), static_cast<double>(shift_a));
      EXPECT_EQ(rep.extra.at("shift_bytes_b"), static_cast<double>(shift_b));
      EXPECT_EQ(rep.extra.at("preshift_bytes_a"), static_cast<double>(pre_sent_a));
      EXPECT_EQ(rep.traffic[0].bytes_received, recv_a + pre_recv_a);
      EXPECT_EQ(rep.traffic[0].bytes_sent, shift_a + pre_sent_a);
      const std::int64_t shift_msgs = PC > 1 ? 2 * (V - 1) : 0;
      EXPECT_GE(rep.traffic[0].messages_sent, shift_msgs);
      EXPECT_EQ(rep.traffic[2].bytes_sent, 0);  // Cannon never moves C
      // The run's own prediction, from its schedule before any data moved.
      EXPECT_EQ(rep.extra.at("predicted_bytes_received"),
                static_cast<double>(rep.traffic[0].bytes_received + rep.traffic[1].bytes_received));
      if (occupancy == 1.0 && PC > 1) {
        // The published model: V-1 shifts of one A panel of (N/PR) x (N/V) values each.
        const std::int64_t N = nb * 4;
        EXPECT_EQ(shift_a, (V - 1) * (N / PR) * (N / V) * 8);
      }
      if (occupancy == 1.0) {
        // The dry-run model predicts the counted bytes received from the panel sizes alone.
        const std::int64_t S = std::int64_t{nb / PR * 4} * (nb / PC * 4) * 8;
        const auto m = strategy->model(ModelSpec{PR, PC, S, S, S}, pr, pc);
        ASSERT_TRUE(m.has_value());
        EXPECT_EQ(m->bytes_a, rep.traffic[0].bytes_received);
        EXPECT_EQ(m->bytes_b, rep.traffic[1].bytes_received);
        EXPECT_EQ(m->ticks, V);
      }
      double flops = rep.flops;
      MPI_Allreduce(MPI_IN_PLACE, &flops, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      EXPECT_EQ(flops, static_cast<double>(flops_expected));
      // Buffers: a+1 for A and b+1 for B, each holding the largest image's values (and index) of
      // the ring it is on (my process row for A, my column for B: the images that pass through
      // it); an operand whose ring is one process long does not move and holds none (its local
      // panel is multiplied in place), so a 1x1 grid holds no buffer at all.
      std::int64_t ring_a = 0, ring_b = 0;
      for (int g = 0; g < V; ++g) {
        ring_a = std::max(ring_a, sizeA[static_cast<std::size_t>(pr * V + g)]);
        ring_b = std::max(ring_b, sizeB[static_cast<std::size_t>(g * PC + pc)]);
      }
      const std::int64_t values = (PC > 1 ? (a + 1) * ring_a : 0) + (PR > 1 ? (b + 1) * ring_b : 0);
      if (values == 0) {
        EXPECT_EQ(rep.peak_buffer_bytes, 0);
      } else {
        EXPECT_GE(rep.peak_buffer_bytes, values);
      }
    }
  }
}
