#include "rma25d_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

namespace plexus_rma25d {

std::vector<int> valid_layers(int PR, int PC) {
  std::vector<int> v{1};
  if (PR == PC) {
    for (int s = 2; s <= PR; ++s)
      if (PR % s == 0) v.push_back(s * s);
  } else {
    const int mn = std::min(PR, PC), mx = std::max(PR, PC);
    if (mx % mn == 0 && mx <= mn * mn) v.push_back(mx / mn);
  }
  return v;
}

std::string list_of(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return s;
}

Geometry make_geometry(int PR, int PC, int pr, int pc, int L, const std::vector<int>& a_col_dist) {
  Geometry g;
  g.PR = PR;
  g.PC = PC;
  g.pr = pr;
  g.pc = pc;
  g.L = L;
  if (L > 1) {
    if (PR == PC) {
      g.sr = g.sc = static_cast<int>(std::lround(std::sqrt(static_cast<double>(L))));
    } else if (PC > PR) {
      g.sc = L;
    } else {
      g.sr = L;
    }
  }
  g.V = std::lcm(PR, PC);
  g.G = std::lcm(g.V, L);
  g.T = g.G / L;
  g.r0 = pr - pr % g.sr;
  g.c0 = pc - pc % g.sc;
  g.ell = (pr % g.sr) * g.sc + (pc % g.sc);
  g.shift = (pr + pc) % g.T;  // members of different groups start on different owners
  const int per_col = g.G / PC;
  std::vector<int> seen(static_cast<std::size_t>(PC), 0);
  g.kgroup.resize(a_col_dist.size());
  for (std::size_t k = 0; k < a_col_dist.size(); ++k) {
    const int c = a_col_dist[k];
    g.kgroup[k] = c + PC * (seen[static_cast<std::size_t>(c)]++ % per_col);
  }
  return g;
}

std::vector<Fetch> a_fetches(const Geometry& geo, const Directory& dir, int r, int g) {
  const int owner = geo.rank(r, g % geo.PC);
  const Piece p = dir.at(owner, true, g);
  if (p.empty()) return {};
  return {Fetch{owner, p}};
}

std::vector<Fetch> b_fetches(const Geometry& geo, const Directory& dir, int g, int c) {
  std::vector<Fetch> out;
  for (int r = 0; r < geo.PR; ++r) {
    const int owner = geo.rank(r, c);
    const Piece p = dir.at(owner, false, g);
    if (!p.empty()) out.push_back(Fetch{owner, p});
  }
  return out;
}

std::int64_t words_of(const std::vector<Fetch>& f) {
  std::int64_t s = 0;
  for (const auto& x : f) s += x.piece.idx_words;
  return s;
}
std::int64_t values_of(const std::vector<Fetch>& f) {
  std::int64_t s = 0;
  for (const auto& x : f) s += x.piece.data_vals;
  return s;
}

}  // namespace plexus_rma25d
