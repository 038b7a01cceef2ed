#pragma once
// Cannon's schedule (cannon.cpp): the virtual grid, the k-groups and the slots of the images, and
// what the images of one ring come to.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "plexus/mpi.hpp"

namespace plexus::cannon {

// Where the images are: the virtual grid, the k-groups, and the slots.
struct Plan {
  int pr = 0, pc = 0, PR = 1, PC = 1;
  int V = 1, a = 1, b = 1;
  std::vector<int> kgroup;                   // block column of A (row of B) -> k-group
  std::vector<std::vector<int>> group_rows;  // k-group -> its k indices (rows of a B image)
  // The neighbours a shift sends to and receives from: A goes left (receives from the right), B
  // up (receives from below).
  int left() const { return (pc + PC - 1) % PC; }
  int right() const { return (pc + 1) % PC; }
  int up() const { return (pr + PR - 1) % PR; }
  int down() const { return (pr + 1) % PR; }
  int group_of_a_slot(int j) const { return (pc * a + j + pr * b) % V; }
  int group_of_b_slot(int j) const { return (pr * b + j + pc * a) % V; }
  // The process (along the ring of A, or of B) and slot that hold k-group g at tick 0.
  int a_home(int g, int& slot) const { return home(g, pr * b, a, slot); }
  int b_home(int g, int& slot) const { return home(g, pc * a, b, slot); }
  int home(int g, int offset, int per, int& slot) const {
    const int pos = ((g - offset) % V + V) % V;
    slot = pos % per;
    return pos / per;
  }
};

inline Plan make_grid_plan(int PR, int PC, int pr, int pc) {
  Plan p;
  p.pr = pr;
  p.pc = pc;
  p.PR = PR;
  p.PC = PC;
  p.V = std::lcm(PR, PC);
  p.a = p.V / PC;
  p.b = p.V / PR;
  return p;
}

// What the images of one ring come to (ring_sizes below): the values this rank receives in the
// ticks, and the largest image's index words and values on the ring.
struct RingSizes {
  std::int64_t shift_values = 0, words = 0, values = 0;
};

// What the images of one ring (my process row for A, column for B) come to: the values this rank
// receives in the ticks, the fronts of its right (A) or lower (B) neighbour, g = (q*per +
// offset + t) mod V for t < V-1; and the largest image's index words and values, the capacity
// of this rank's buffers (every image that reaches it travels along this ring). One
// MPI_Allgather along the ring of every image's (values, words).
// `mine`: each image's (values, index words), from image_sizes.
inline RingSizes ring_sizes(const std::vector<std::int64_t>& mine, const Plan& plan, bool is_a, MPI_Comm ring) {
  const int n = is_a ? plan.PC : plan.PR, per = is_a ? plan.a : plan.b;
  RingSizes r;
  if (n == 1 || mine.empty()) return r;  // the operand does not move
  std::vector<std::int64_t> all(2 * static_cast<std::size_t>(n * per));
  mpi::check(MPI_Allgather(mine.data(), 2 * per, MPI_INT64_T, all.data(), 2 * per, MPI_INT64_T, ring), "MPI_Allgather");
  const int offset = is_a ? plan.pr * plan.b : plan.pc * plan.a;
  std::vector<std::int64_t> size_of(static_cast<std::size_t>(plan.V), 0);
  for (int q = 0; q < n; ++q)
    for (int j = 0; j < per; ++j) {
      const auto at = 2 * static_cast<std::size_t>(q * per + j);
      size_of[static_cast<std::size_t>((q * per + j + offset) % plan.V)] = all[at];
      r.values = std::max(r.values, all[at]);
      r.words = std::max(r.words, all[at + 1]);
    }
  const int next = ((is_a ? plan.pc : plan.pr) + 1) % n;
  for (int t = 0; t + 1 < plan.V; ++t)
    r.shift_values += size_of[static_cast<std::size_t>((next * per + offset + t) % plan.V)];
  return r;
}

}  // namespace plexus::cannon
