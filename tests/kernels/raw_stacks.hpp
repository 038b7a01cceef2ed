#pragma once
// Shared by the kernel tests: random stacks of small products and the relative error of results.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "plexus/kernel.hpp"

namespace plexus::test {

/// ||x - ref|| / ||ref|| (absolute when ref is zero); the sizes must agree.
inline double rel_error(const std::vector<double>& x, const std::vector<double>& ref) {
  EXPECT_EQ(x.size(), ref.size());
  double d = 0, r = 0;
  for (std::size_t i = 0; i < std::min(x.size(), ref.size()); ++i) {
    d += (x[i] - ref[i]) * (x[i] - ref[i]);
    r += ref[i] * ref[i];
  }
  return r > 0 ? std::sqrt(d / r) : std::sqrt(d);
}

struct RawProblem {
  std::vector<plexus::StackEntry> stack;
  std::vector<double> a, b, c;
};

/// `count` products with m, n, k drawn from `sizes`; C blocks of equal shape are shared by
/// several products so that accumulation into one block is exercised. `c_slots_per_shape` C
/// blocks per (m, n).
inline RawProblem random_stack(int count, const std::vector<int>& sizes, std::uint64_t seed,
                               int c_slots_per_shape = 3) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> val(-1.0, 1.0);
  std::uniform_int_distribution<std::size_t> pick(0, sizes.size() - 1);
  RawProblem p;
  std::map<std::pair<int, int>, std::vector<std::int64_t>> c_slots;
  for (int s = 0; s < count; ++s) {
    plexus::StackEntry e{
        .m = sizes[pick(rng)], .n = sizes[pick(rng)], .k = sizes[pick(rng)], .first = 0, .a = 0, .b = 0, .c = 0};
    e.a = static_cast<std::int64_t>(p.a.size());
    p.a.resize(p.a.size() + std::size_t(e.m) * e.k);
    e.b = static_cast<std::int64_t>(p.b.size());
    p.b.resize(p.b.size() + std::size_t(e.k) * e.n);
    auto& slots = c_slots[{e.m, e.n}];
    if (static_cast<int>(slots.size()) < c_slots_per_shape) {
      slots.push_back(static_cast<std::int64_t>(p.c.size()));
      p.c.resize(p.c.size() + std::size_t(e.m) * e.n);
    }
    e.c = slots[std::uniform_int_distribution<std::size_t>(0, slots.size() - 1)(rng)];
    p.stack.push_back(e);
  }
  for (double& x : p.a) x = val(rng);
  for (double& x : p.b) x = val(rng);
  for (double& x : p.c) x = val(rng);
  return p;
}

/// A stack ordered as core orders its stacks within a C row: runs of products that share their A
/// block (m x k), one per B block of the run (k x n, n drawn per product), into C blocks m x n.
/// `runs` runs of 1 to `max_run` products; m, n, k drawn from `sizes`. C blocks are reused across
/// runs, and now and then the same C block takes two products in a row.
inline RawProblem shared_a_stack(int runs, int max_run, const std::vector<int>& sizes, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> val(-1.0, 1.0);
  std::uniform_int_distribution<std::size_t> pick(0, sizes.size() - 1);
  std::uniform_int_distribution<int> run_length(1, max_run), coin(0, 7);
  RawProblem p;
  std::map<std::pair<int, int>, std::vector<std::int64_t>> c_blocks;  // by (m, n)
  for (int r = 0; r < runs; ++r) {
    const int m = sizes[pick(rng)], k = sizes[pick(rng)];
    const auto a = static_cast<std::int64_t>(p.a.size());
    p.a.resize(p.a.size() + std::size_t(m) * k);
    for (int q = 0, len = run_length(rng); q < len; ++q) {
      const int n = sizes[pick(rng)];
      plexus::StackEntry e{.m = m, .n = n, .k = k, .first = 0, .a = a, .b = 0, .c = 0};
      e.b = static_cast<std::int64_t>(p.b.size());
      p.b.resize(p.b.size() + std::size_t(k) * n);
      auto& blocks = c_blocks[{m, n}];
      if (blocks.size() < 4 || coin(rng) == 0) {
        blocks.push_back(static_cast<std::int64_t>(p.c.size()));
        p.c.resize(p.c.size() + std::size_t(m) * n);
      }
      const bool again = !p.stack.empty() && p.stack.back().m == m && p.stack.back().n == n && coin(rng) == 0;
      e.c = again ? p.stack.back().c : blocks[std::uniform_int_distribution<std::size_t>(0, blocks.size() - 1)(rng)];
      p.stack.push_back(e);
    }
  }
  for (double& x : p.a) x = val(rng);
  for (double& x : p.b) x = val(rng);
  for (double& x : p.c) x = val(rng);
  return p;
}

/// Marks the first entry into each C block (StackEntry::first), as core marks a new block's first
/// product.
inline void mark_first_products(std::vector<StackEntry>& stack) {
  std::set<std::int64_t> seen;
  for (StackEntry& e : stack) e.first = seen.insert(e.c).second ? 1 : 0;
}

/// A view of raw values as a staged panel (stage() reads data and data_size).
inline plexus::PanelView raw_view(const std::vector<double>& values) {
  plexus::PanelView v;
  v.data = values.data();
  v.data_size = static_cast<std::int64_t>(values.size());
  return v;
}

/// C += the stack with plain loops (the oracle of the raw cases).
inline std::vector<double> dense_stack(const RawProblem& p) {
  std::vector<double> c = p.c;
  for (const StackEntry& e : p.stack)
    for (int j = 0; j < e.n; ++j)
      for (int l = 0; l < e.k; ++l)
        for (int i = 0; i < e.m; ++i)
          c[std::size_t(e.c + i + j * e.m)] +=
              p.a[std::size_t(e.a + i + l * e.m)] * p.b[std::size_t(e.b + l + j * e.k)];
  return c;
}

}  // namespace plexus::test
