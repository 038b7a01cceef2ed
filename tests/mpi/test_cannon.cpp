// Cannon's own figures on every rank count, square and non-square grids (both orientations): the
// counted traffic against the volume the schedule implies, recomputed here from the global
// block lists, the ticks, the buffers, and the dry-run model. Correctness against the dense
// product (alpha/beta, filtering, aliasing, transposes, odd sizes, ...) is the multiply
// conformance suite's, which runs Cannon like every other algorithm.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dense_reference.hpp"
#include "multiply_fixtures.hpp"
#include "plexus/distribution.hpp"
#include "plexus/error.hpp"
#include "plexus/generator.hpp"
#include "plexus/registry.hpp"

using namespace plexus;

namespace {

using test::blocks_of;
using test::Case;
using test::grids;
using test::make_operands;
using test::Operands;

std::unique_ptr<CommStrategy> cannon() { return test::strategy("cannon"); }
std::unique_ptr<Kernel> kernel(const std::string& name) { return test::kernel(name); }

// Whether fused ticks on `ring` can go through a shared window: two processes on one node, and MPI
// able to make a shared window there (Open MPI with only its UCX one-sided component cannot).
// Asked of MPI here, apart from the strategy; collective over the ring.
bool window_possible(MPI_Comm ring) {
  int n = 0;
  MPI_Comm_size(ring, &n);
  if (n != 2) return false;
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(ring, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &n);
  MPI_Comm_free(&node);
  if (n != 2) return false;
  MPI_Errhandler was = MPI_ERRHANDLER_NULL;
  MPI_Comm_get_errhandler(ring, &was);
  MPI_Comm_set_errhandler(ring, MPI_ERRORS_RETURN);
  MPI_Win win = MPI_WIN_NULL;
  double* mine = nullptr;
  int made = MPI_Win_allocate_shared(sizeof(double), sizeof(double), MPI_INFO_NULL, ring, &mine, &win) == MPI_SUCCESS;
  MPI_Comm_set_errhandler(ring, was);
  MPI_Errhandler_free(&was);
  MPI_Allreduce(MPI_IN_PLACE, &made, 1, MPI_INT, MPI_MIN, ring);
  if (made != 0) MPI_Win_free(&win);
  return made != 0;
}

}  // namespace

// With the two ticks of a V = 2 grid fused into one pass (FuseTicks=always) or not (never), fused
// by messages or through shared windows (where MPI can make them: window_possible): the same
// volume, other buffers.
TEST(Cannon, TrafficEqualsTheScheduleVolume) {
  struct Variant {
    bool fuse, shared;
    double occupancy;
  };
  for (const auto& [fuse, shared, occupancy] : std::vector<Variant>{{false, false, 1.0},
                                                                    {false, false, 0.3},
                                                                    {true, false, 1.0},
                                                                    {true, false, 0.3},
                                                                    {true, true, 1.0},
                                                                    {true, true, 0.3}}) {
    for (const auto& grid : grids()) {
      SCOPED_TRACE("grid " + grid->describe() + " occupancy " + std::to_string(occupancy) +
                   (fuse ? shared ? " fused, shared window" : " fused, messages" : ""));
      const int nb = 12;  // divisible by every V = lcm(PR, PC) of the tested grids
      Case k{"volume", nb, nb, nb, {4}, occupancy, 1.0, 0.0, "block-cyclic", "reference"};
      Operands o = make_operands(k, grid);
      // Whether A's ring (B's) goes through a window.
      const bool a_win = fuse && shared && grid->npcols() == 2 && std::lcm(grid->nprows(), grid->npcols()) == 2 &&
                         window_possible(grid->row_comm());
      const bool b_win = fuse && shared && grid->nprows() == 2 && std::lcm(grid->nprows(), grid->npcols()) == 2 &&
                         window_possible(grid->col_comm());
      auto strategy =
          fuse ? test::strategy("cannon", {"FuseTicks=always", shared ? "SharedWindow=true" : "SharedWindow=false"})
               : test::strategy("cannon", {"FuseTicks=never"});
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
        sizeB[static_cast<std::size_t>(kg[static_cast<std::size_t>(kj.first)] * PC +
                                       cB[static_cast<std::size_t>(kj.second)])] +=
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
      // Fused ticks have no pre-shift: each rank's local panel is its tick-0 image, sent to its
      // peer on the ring of two (A's process row, B's process column).
      const bool fused = fuse && V == 2;
      const auto& rB = o.b.distribution().row_dist();
      std::map<std::pair<int, int>, std::int64_t> localA, localB;  // (prow, pcol) -> local panel bytes
      for (const auto& [ik, v] : A)
        localA[{rA[static_cast<std::size_t>(ik.first)], cA[static_cast<std::size_t>(ik.second)]}] +=
            static_cast<std::int64_t>(v.size()) * 8;
      for (const auto& [kj, v] : B)
        localB[{rB[static_cast<std::size_t>(kj.first)], cB[static_cast<std::size_t>(kj.second)]}] +=
            static_cast<std::int64_t>(v.size()) * 8;
      if (fused) {
        pre_sent_a = pre_recv_a = 0;
        shift_a = PC > 1 ? localA[{pr, pc}] : 0;
        recv_a = PC > 1 ? localA[{pr, 1 - pc}] : 0;
        shift_b = PR > 1 ? localB[{pr, pc}] : 0;
      }
      EXPECT_EQ(rep.ticks, V);
      EXPECT_EQ(rep.extra.at("fused_ticks"), fuse && V == 2 ? 1.0 : 0.0);
      EXPECT_EQ(rep.extra.at("shared_window"), a_win || b_win ? 1.0 : 0.0);
      // Where a window served, the share of it on small pages (Linux says: 1 on a tmpfs without
      // huge pages, such as /dev/shm by default, down to 0 on one with them); no figure where none
      // did. (No ASSERT: a rank that left the test early would leave its peer in a collective.)
      const auto small = rep.extra.find("window_small_pages");
      if (!(a_win || b_win)) {
        EXPECT_EQ(small, rep.extra.end());
      } else if (std::ifstream("/proc/self/smaps").good()) {
        EXPECT_NE(small, rep.extra.end());
        if (small != rep.extra.end()) {
          EXPECT_GE(small->second, 0.0);
          EXPECT_LE(small->second, 1.0);
        }
      }
      EXPECT_EQ(rep.extra.at("shift_bytes_a"), static_cast<double>(shift_a));
      EXPECT_EQ(rep.extra.at("shift_bytes_b"), static_cast<double>(shift_b));
      EXPECT_EQ(rep.extra.at("preshift_bytes_a"), static_cast<double>(pre_sent_a));
      EXPECT_EQ(rep.traffic[0].bytes_received, recv_a + pre_recv_a);
      EXPECT_EQ(rep.traffic[0].bytes_sent, shift_a + pre_sent_a);
      // Through a shared window only the index is a message (the values are read where they are).
      const std::int64_t shift_msgs = PC > 1 ? (a_win ? 1 : 2) * (V - 1) : 0;
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
      std::optional<ModelPrediction> m;
      if (occupancy == 1.0) {
        // The dry-run model predicts the counted bytes received from the panel sizes alone.
        const std::int64_t S = std::int64_t{nb / PR * 4} * (nb / PC * 4) * 8;
        m = strategy->model(ModelSpec{PR, PC, S, S, S}, pr, pc);
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
      // panel is multiplied in place), so a 1x1 grid holds no buffer at all. An operand whose
      // only image is its local panel (one slot, every k at its tick-0 home already: B on PR x 1,
      // A on 1 x PC and in process row 0 of 2 x 2) is sent from the panel: it needs only receive
      // buffers, one when it shifts once (V = 2). Fused ticks by messages hold two local panels in
      // one area (a copy of this rank's and the one received), through a shared window one.
      std::int64_t ring_a = 0, ring_b = 0;
      for (int g = 0; g < V; ++g) {
        ring_a = std::max(ring_a, sizeA[static_cast<std::size_t>(pr * V + g)]);
        ring_b = std::max(ring_b, sizeB[static_cast<std::size_t>(g * PC + pc)]);
      }
      bool a_home = a == 1, b_home = b == 1;
      for (std::size_t q = 0; q < kg.size(); ++q) {
        a_home = a_home && ((kg[q] - pr * b) % V + V) % V / a == cA[q];
        b_home = b_home && ((kg[q] - pc * a) % V + V) % V / b == rB[q];
      }
      const std::int64_t a_buffers = a_home && V == 2 ? 1 : a + 1, b_buffers = b_home && V == 2 ? 1 : b + 1;
      std::int64_t bytes = (PC > 1 ? a_buffers * ring_a : 0) + (PR > 1 ? b_buffers * ring_b : 0);
      if (fused) {  // the ring's largest local panel; by messages also a copy of this rank's own
        const std::int64_t max_a = std::max(localA[{pr, 0}], localA[{pr, PC - 1}]);
        const std::int64_t max_b = std::max(localB[{0, pc}], localB[{PR - 1, pc}]);
        bytes = (PC > 1 ? max_a + (a_win ? 0 : localA[{pr, pc}]) : 0) +
                (PR > 1 ? max_b + (b_win ? 0 : localB[{pr, pc}]) : 0);
      }
      if (bytes == 0) {
        EXPECT_EQ(rep.peak_buffer_bytes, 0);
      } else {
        EXPECT_GE(rep.peak_buffer_bytes, bytes);
      }
      // On a one-dimensional grid nothing else holds buffers (no block changes rank in the
      // pre-shift), so a copy of the panel as an image buffer would show here.
      if ((PR == 1 && PC > 1 && a_home) || (PC == 1 && PR > 1 && b_home)) {
        EXPECT_LT(rep.peak_buffer_bytes, bytes + (PC > 1 ? ring_a : ring_b));
      }
      // The dry-run model counts the same buffers (its images are the panels' even shares); of fused
      // ticks, those by messages.
      if (m && !(a_win || b_win)) {
        EXPECT_EQ(m->buffer_bytes, bytes);
      }
    }
  }
}

// FuseTicks=auto fuses the two ticks of every 2 x 2 grid, and of a 2 x 1 or 1 x 2 grid where the
// image that moves reaches 1 MiB (by messages: the model cannot know where the ranks run); no
// other grid's. `never` never fuses, `always` every V = 2 grid. Read from the dry-run model, which
// takes the run's rule on images of even size, and which counts two images of buffers for each
// moving operand of a fused schedule.
TEST(Cannon, AutoFusesTwoByTwoGridsAndImagesOfOneMiB) {
  const std::int64_t MiB = std::int64_t{1} << 20;
  struct Grid2 {
    int PR, PC;
  };
  for (const auto [PR, PC] : {Grid2{2, 1}, Grid2{1, 2}, Grid2{2, 2}, Grid2{3, 1}, Grid2{2, 4}}) {
    const int V = std::lcm(PR, PC);
    for (const std::int64_t panel : {MiB / 2, MiB, 2 * MiB}) {
      SCOPED_TRACE(std::to_string(PR) + "x" + std::to_string(PC) + " panel " + std::to_string(panel));
      // An image is the panel's share of one k-group: PC/V of A's panel, PR/V of B's.
      const bool large = (PC == 1 || panel * PC / V >= MiB) && (PR == 1 || panel * PR / V >= MiB);
      for (const std::string mode : {"auto", "always", "never"}) {
        const auto m =
            test::strategy("cannon", {"FuseTicks=" + mode})->model(ModelSpec{PR, PC, panel, panel, panel}, 0, 0);
        ASSERT_TRUE(m.has_value());
        const bool fused = V == 2 && (mode == "always" || (mode == "auto" && (large || (PR == 2 && PC == 2))));
        EXPECT_EQ(m->note.find("fused") != std::string::npos, fused) << mode << ": " << m->note;
        if (fused) {
          EXPECT_EQ(m->buffer_bytes, (PC > 1 ? 2 * panel * PC / V : 0) + (PR > 1 ? 2 * panel * PR / V : 0));
        }
      }
    }
  }
}

// FuseTicks=auto in a run, with images far below 1 MiB: every 2 x 2 grid fuses, and a 2 x 1 or
// 1 x 2 grid where its moving ring is two processes on one node that can share a window and
// SharedWindow is on (the ticks then go through the window). C against the dense product.
TEST(Cannon, AutoFusesSmallImagesOnTwoByTwoGridsAndThroughSharedWindows) {
  for (const bool window : {true, false})
    for (const auto& grid : grids()) {
      SCOPED_TRACE("grid " + grid->describe() + (window ? ", SharedWindow=true" : ", SharedWindow=false"));
      const int PR = grid->nprows(), PC = grid->npcols();
      const bool a_shares = PC == 2 && window_possible(grid->row_comm());
      const bool b_shares = PR == 2 && window_possible(grid->col_comm());
      const bool square = PR == 2 && PC == 2;
      const bool fused =
          std::lcm(PR, PC) == 2 && (square || (window && (PC == 1 || a_shares) && (PR == 1 || b_shares)));
      Case k{"auto", 12, 10, 14, {3, 5}, 0.4, 1.0, 0.0, "block-cyclic", "reference"};
      Operands o = make_operands(k, grid);
      auto strategy = test::strategy("cannon", {window ? "SharedWindow=true" : "SharedWindow=false"});
      auto kern = kernel("reference");
      const MultiplyReport rep = strategy->multiply(1.0, o.a, o.b, 0.0, o.c, *kern, MultiplyOptions{});
      EXPECT_EQ(rep.extra.at("fused_ticks"), fused ? 1.0 : 0.0);
      EXPECT_EQ(rep.extra.at("shared_window"), fused && window && (a_shares || b_shares) ? 1.0 : 0.0);
      std::vector<double> ref(static_cast<std::size_t>(o.a.layout().rows.total() * o.b.layout().cols.total()), 0.0);
      test::dense_gemm(o.a.nrows(), o.b.ncols(), o.a.ncols(), 1.0, o.a.to_dense(), o.b.to_dense(), 0.0, ref);
      EXPECT_LE(test::relative_error(o.c.to_dense(), ref), 1e-13);
    }
}

// Fused ticks: each C block sums its products in ascending k, as a one-rank multiply does, so C
// equals the one-rank product to the last bit (the same kernel); on grids with V > 2 nothing is
// fused. By messages and through shared windows, one strategy for a run of multiplies (a window
// serves again, grows, and changes rings), with blocks that change rank in the pre-shift (random
// distribution) and blocks that do not.
TEST(Cannon, FusedTicksGiveTheOneRankProductToTheLastBit) {
  const auto self = Grid::create(MPI_COMM_SELF);
  auto kern = kernel("cpu");
  for (const bool shared : {true, false}) {
    auto fused = test::strategy("cannon", {"FuseTicks=always", shared ? "SharedWindow=true" : "SharedWindow=false"});
    for (const std::string dist : {"block-cyclic", "random"})
      for (const auto& grid : grids()) {
        const int V = std::lcm(grid->nprows(), grid->npcols());
        for (const int blocks : {10, 14, 10}) {
          SCOPED_TRACE("grid " + grid->describe() + " " + dist + " " + std::to_string(blocks) + " blocks" +
                       (shared ? ", shared window" : ", messages"));
          const double beta = blocks == 14 ? 0.5 : 0.0;
          Case k{"fused", blocks, blocks + 4, 9, {3, 7, 2}, 0.5, 1.0, beta, dist, "cpu"};
          Operands o = make_operands(k, grid), one = make_operands(k, self);
          ASSERT_EQ(blocks_of(o.a), blocks_of(one.a));
          ASSERT_EQ(blocks_of(o.b), blocks_of(one.b));
          const MultiplyReport rep = fused->multiply(1.0, o.a, o.b, beta, o.c, *kern, MultiplyOptions{});
          cannon()->multiply(1.0, one.a, one.b, beta, one.c, *kern, MultiplyOptions{});
          EXPECT_EQ(rep.extra.at("fused_ticks"), V == 2 ? 1.0 : 0.0);
          const bool a_win = shared && V == 2 && grid->npcols() == 2 && window_possible(grid->row_comm());
          const bool b_win = shared && V == 2 && grid->nprows() == 2 && window_possible(grid->col_comm());
          EXPECT_EQ(rep.extra.at("shared_window"), a_win || b_win ? 1.0 : 0.0);
          if (V == 2) {
            EXPECT_EQ(blocks_of(o.c), blocks_of(one.c));
          }
        }
      }
  }
}

namespace {

// The local panel with its blocks' values stored in reverse order: the same index, other offsets.
Panel reversed_storage(const PanelView& v, const BlockLayout& l) {
  IndexArray row_ids(v.row_ids, v.row_ids + v.nrows), row_ptr(v.row_ptr, v.row_ptr + v.nrows + 1),
      cols(v.cols, v.cols + v.nblocks), offsets(static_cast<std::size_t>(v.nblocks));
  MatrixData data(static_cast<std::size_t>(v.data_size));
  std::int64_t at = 0;
  for (int r = v.nrows - 1; r >= 0; --r) {
    const int m = l.rows.size(static_cast<int>(v.row_ids[r]));
    for (std::int64_t b = v.row_ptr[r + 1] - 1; b >= v.row_ptr[r]; --b) {
      const std::int64_t n = std::int64_t{m} * l.cols.size(static_cast<int>(v.cols[b]));
      std::copy(v.data + v.offsets[b], v.data + v.offsets[b] + n, data.data() + at);
      offsets[static_cast<std::size_t>(b)] = at;
      at += n;
    }
  }
  return Panel::adopt(std::move(row_ids), std::move(row_ptr), std::move(cols), std::move(offsets), std::move(data));
}

// The local panel with a gap of unused values after each block: the same index, and a value area
// larger than its blocks (so that it cannot be sent as it is).
Panel gapped_storage(const PanelView& v, const BlockLayout& l) {
  IndexArray row_ids(v.row_ids, v.row_ids + v.nrows), row_ptr(v.row_ptr, v.row_ptr + v.nrows + 1),
      cols(v.cols, v.cols + v.nblocks), offsets(static_cast<std::size_t>(v.nblocks));
  constexpr std::int64_t kGap = 3;
  MatrixData data(static_cast<std::size_t>(v.data_size + kGap * v.nblocks), -1.0);
  std::int64_t at = 0;
  for (int r = 0; r < v.nrows; ++r) {
    const int m = l.rows.size(static_cast<int>(v.row_ids[r]));
    for (std::int64_t b = v.row_ptr[r]; b < v.row_ptr[r + 1]; ++b) {
      const std::int64_t n = std::int64_t{m} * l.cols.size(static_cast<int>(v.cols[b]));
      std::copy(v.data + v.offsets[b], v.data + v.offsets[b] + n, data.data() + at);
      offsets[static_cast<std::size_t>(b)] = at;
      at += n + kGap;
    }
  }
  return Panel::adopt(std::move(row_ids), std::move(row_ptr), std::move(cols), std::move(offsets), std::move(data));
}

// The local panel without its first block (a pattern that differs on this rank only).
Panel without_first_block(const PanelView& v, const BlockLayout& l) {
  std::vector<int> rows(v.row_ids, v.row_ids + v.nrows);
  Panel p(rows);
  bool dropped = false;
  for (int r = 0; r < v.nrows; ++r)
    for (std::int64_t b = v.row_ptr[r]; b < v.row_ptr[r + 1]; ++b) {
      if (!dropped) {
        dropped = true;
        continue;
      }
      const int n = l.rows.size(static_cast<int>(v.row_ids[r])) * l.cols.size(static_cast<int>(v.cols[b]));
      p.append_block(r, static_cast<int>(v.cols[b]), v.data + v.offsets[b], n);
    }
  return p;
}

}  // namespace

// Routes: a multiply whose operands every rank finds as in an earlier one replays that one's
// pre-shift (only values move); one rank's change of pattern makes every rank exchange in full.
// C against the dense product every time, and a replayed C is the same to the last bit as the
// recorded one's. On every grid, with blocks that change rank in the pre-shift (random
// distribution) and without (block-cyclic: on PR x 1 and 1 x PC grids B, or A, stays home), with
// the two ticks of a V = 2 grid fused or not.
TEST(Cannon, RepeatedMultipliesReplayTheRoutesOnlyWhereEveryRankFindsItsOperandsAsBefore) {
  // Fused ticks through shared windows where the ranks share a node, and by messages.
  for (const std::string fuse : {"never", "always", "always:SharedWindow=false"})
    for (const std::string dist : {"random", "block-cyclic"})
      for (const auto& grid : grids()) {
        SCOPED_TRACE("grid " + grid->describe() + ", distribution " + dist + ", FuseTicks=" + fuse);
        const int V = std::lcm(grid->nprows(), grid->npcols());
        Case k{"routes", 13, 11, 12, {3, 5}, 0.4, 1.0, 0.0, dist, "reference"};
        Operands o = make_operands(k, grid);
        auto strategy = fuse == "always:SharedWindow=false"
                            ? test::strategy("cannon", {"FuseTicks=always", "SharedWindow=false"})
                            : test::strategy("cannon", {"FuseTicks=" + fuse});
        auto kern = kernel("reference");
        const bool fused = fuse != "never" && V == 2;
        // `same`: every rank's moving operands show the index objects of the last multiply of the
        // entry replayed, or equal ones, so that fused ticks send no index (indices_known).
        auto run = [&](const char* what, double replayed, bool same) {
          SCOPED_TRACE(what);
          const MultiplyReport rep = strategy->multiply(1.0, o.a, o.b, 0.0, o.c, *kern, MultiplyOptions{});
          if (V > 1) {
            EXPECT_EQ(rep.extra.at("routes_replayed"), replayed);
            EXPECT_EQ(rep.extra.at("indices_known"), fused && replayed == 1.0 && same ? 1.0 : 0.0);
            // Known indices travel not at all; otherwise a fused multiply receives its peer's.
            std::int64_t index_bytes = 0;
            for (const auto& t : rep.traffic) index_bytes += t.index_bytes_received;
            if (rep.extra.at("indices_known") == 1.0) {
              EXPECT_EQ(index_bytes, 0);
            } else if (fused) {
              EXPECT_GT(index_bytes, 0);
            }
          }
          std::vector<double> ref(static_cast<std::size_t>(o.a.layout().rows.total() * o.b.layout().cols.total()), 0.0);
          test::dense_gemm(o.a.nrows(), o.b.ncols(), o.a.ncols(), 1.0, o.a.to_dense(), o.b.to_dense(), 0.0, ref);
          EXPECT_LE(test::relative_error(o.c.to_dense(), ref), 1e-13);
          return blocks_of(o.c);
        };
        const bool a_moves = grid->npcols() > 1, b_moves = grid->nprows() > 1;
        const auto first = run("first multiply", 0.0, false);
        EXPECT_EQ(run("the same operands", 1.0, true), first) << "a replayed pre-shift gives C to the last bit";
        int rank = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        // A's values stored elsewhere on rank 0 only (the same index, other offsets): replayed, and
        // every rank sends its indices again, although only rank 0's changed; then known again.
        if (rank == 0) o.a.set_local(reversed_storage(o.a.local().view(), o.a.layout()));
        EXPECT_EQ(run("A stored elsewhere on rank 0", 1.0, !a_moves), first);
        EXPECT_EQ(run("the same again", 1.0, true), first);
        // The same index stored elsewhere on every rank: replayed, the values read where they are
        // now, and the indices sent again (their offsets differ).
        o.a.set_local(reversed_storage(o.a.local().view(), o.a.layout()));
        o.b.set_local(reversed_storage(o.b.local().view(), o.b.layout()));
        EXPECT_EQ(run("the same index, values stored elsewhere", 1.0, false), first);
        // The same index with gaps between the values: replayed too, although a panel that stays
        // home can then no longer be sent as its own image (cannon copies it into one). Not so
        // where the ticks are fused and the operand moves: its panel's whole value area travels,
        // and the ring's buffers were sized for the one without gaps.
        o.a.set_local(gapped_storage(o.a.local().view(), o.a.layout()));
        EXPECT_EQ(run("A with gaps", fused && a_moves ? 0.0 : 1.0, !a_moves), first);
        o.b.set_local(gapped_storage(o.b.local().view(), o.b.layout()));
        EXPECT_EQ(run("the same index, values with gaps", fused && b_moves ? 0.0 : 1.0, !b_moves), first);
        // New values, same patterns: replayed, and the indices known (scaling keeps the index object).
        o.a.scale(2.0);
        const auto scaled = run("other values", 1.0, true);
        const Panel a_before = Panel::copy_of(o.a.local().view());
        // One block fewer on rank 0 only: no rank replays (where the operand moves at all: A does
        // not on a PR x 1 grid, B not on 1 x PC), and the next multiply replays again.
        auto drop_on_rank0 = [&](DistMatrix& m) {
          int changed = rank == 0 && m.local().nblocks() > 0;
          if (changed) m.set_local(without_first_block(m.local().view(), m.layout()));
          MPI_Bcast(&changed, 1, MPI_INT, 0, MPI_COMM_WORLD);
          return changed != 0;
        };
        const bool a_changed = drop_on_rank0(o.a);
        run("A's pattern changed on rank 0", a_changed && a_moves ? 0.0 : 1.0, !a_moves);
        run("the changed operands again", 1.0, true);
        // Back to the earlier A: its multiply's routes are still kept (products an iteration
        // alternates between each replay their own), with A as a new panel object whose index
        // packs to the kept words (the same blocks at the same offsets): known, nothing sent.
        o.a.set_local(Panel::copy_of(a_before.view()));
        EXPECT_EQ(run("the earlier operands again", 1.0, true), scaled);
        const bool b_changed = drop_on_rank0(o.b);
        run("B's pattern changed on rank 0", b_changed && b_moves ? 0.0 : 1.0, !b_moves);
      }
}

// Dense B through a shared window: from the second multiply of the same operands (both indices
// known) the two ranks of B's ring write their B panels into the window as one dense matrix, which
// each rank's dense tick multiplies where it lies (no copy of B of its own). Every rank must agree
// first: where one rank's A is not dense, no rank writes B densely. C is the same to the last bit
// as where B travels by messages (the same dense tick on a B of its own), and equals the dense
// product; with a filter that drops products, a rank copies B's blocks back out of the dense
// matrix, and C is the same to the last bit as by messages and equals the filtered definition.
TEST(Cannon, DenseBThroughTheSharedWindowAgreedByEveryRank) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (const auto& grid : grids()) {
    if (std::lcm(grid->nprows(), grid->npcols()) != 2) continue;  // fused ticks only
    SCOPED_TRACE("grid " + grid->describe());
    const bool b_window = grid->nprows() == 2 && window_possible(grid->col_comm());
    Case k{"dense_b", 12, 10, 14, {3, 5}, 1.0, 1.0, 0.0, "block-cyclic", "cpu:DenseMinSize=1"};
    Operands o = make_operands(k, grid);
    auto window = test::strategy("cannon", {"FuseTicks=always"});
    auto messages = test::strategy("cannon", {"FuseTicks=always", "SharedWindow=false"});
    auto kern = kernel(k.kernel);
    auto multiply = [&](CommStrategy& s, double eps) {
      DistMatrix c("C", o.c.distribution_ptr(), o.c.layout());
      const MultiplyReport rep = s.multiply(1.0, o.a, o.b, 0.0, c, *kern, MultiplyOptions{eps, false});
      return std::make_pair(rep, std::move(c));
    };
    std::vector<double> ref(static_cast<std::size_t>(o.a.layout().rows.total() * o.b.layout().cols.total()), 0.0);
    test::dense_gemm(o.a.nrows(), o.b.ncols(), o.a.ncols(), 1.0, o.a.to_dense(), o.b.to_dense(), 0.0, ref);
    const auto by_messages = multiply(*messages, 0).second.to_dense();
    EXPECT_LE(test::relative_error(by_messages, ref), 1e-13);
    for (const double expect_dense : {0.0, b_window ? 1.0 : 0.0, b_window ? 1.0 : 0.0}) {
      const auto [rep, c] = multiply(*window, 0);
      EXPECT_EQ(rep.extra.at("dense_b_window"), expect_dense);
      EXPECT_GT(rep.dense_ticks, 0);
      EXPECT_EQ(c.to_dense(), by_messages) << "dense_b_window " << expect_dense;
    }
    // Operands made anew with the same blocks at the same offsets (an iteration's next matrices):
    // their indices are known all the same, and B goes densely into the window again.
    o.a.set_local(Panel::copy_of(o.a.local().view()));
    o.b.set_local(Panel::copy_of(o.b.local().view()));
    {
      const auto [rep, c] = multiply(*window, 0);
      EXPECT_EQ(rep.extra.at("indices_known"), 1.0);
      EXPECT_EQ(rep.extra.at("dense_b_window"), b_window ? 1.0 : 0.0);
      EXPECT_EQ(c.to_dense(), by_messages);
    }
    // A filter that keeps every product: the dense tick takes the window's B; one that drops some
    // (half of the products' norms below it): B's blocks copied out, the products filtered.
    double median = 0;
    {
      std::vector<double> norms;
      const auto A = test::blocks_of(o.a), B = test::blocks_of(o.b);
      for (const auto& [ik, av] : A)
        for (int j = 0; j < k.cols; ++j) norms.push_back(test::norm(av) * test::norm(B.at({ik.second, j})));
      std::nth_element(norms.begin(), norms.begin() + static_cast<long>(norms.size() / 2), norms.end());
      median = norms[norms.size() / 2];
    }
    for (const double eps : {1e-12, median * k.inner}) {
      SCOPED_TRACE("filter " + std::to_string(eps));
      const auto expect = multiply(*messages, eps).second.to_dense();
      const auto [rep, c] = multiply(*window, eps);
      EXPECT_EQ(rep.extra.at("dense_b_window"), b_window ? 1.0 : 0.0);
      EXPECT_EQ(c.to_dense(), expect);
      Case fk = k;
      fk.filter_eps = eps;
      EXPECT_LE(test::relative_error(c.to_dense(), test::filtered_reference(fk, o)), 1e-12);
      std::int64_t skipped = rep.skipped_products;
      MPI_Allreduce(MPI_IN_PLACE, &skipped, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
      EXPECT_EQ(skipped > 0, eps > 1e-12);
    }
    // One block fewer in A on rank 0 only: its tick would not be dense, so no rank writes B densely
    // (where A moves, its index is then no longer known either).
    if (rank == 0 && o.a.local().nblocks() > 0) o.a.set_local(without_first_block(o.a.local().view(), o.a.layout()));
    std::vector<double> ref2(ref.size(), 0.0);
    test::dense_gemm(o.a.nrows(), o.b.ncols(), o.a.ncols(), 1.0, o.a.to_dense(), o.b.to_dense(), 0.0, ref2);
    for (int again = 0; again < 2; ++again) {
      const auto [rep, c] = multiply(*window, 0);
      EXPECT_EQ(rep.extra.at("dense_b_window"), 0.0);
      EXPECT_LE(test::relative_error(c.to_dense(), ref2), 1e-13);
    }
  }
}
