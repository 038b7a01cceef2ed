#pragma once
// The schedule of the rma25d strategy, who computes what, as plain data and pure functions: the
// layer counts, the geometry of the groups and k-groups, every rank's directory of pieces and the
// fetches of a panel. No MPI here (the transport is in rma25d_windows.hpp); the algorithm is
// explained at the top of rma25d.cpp.
#include <cstdint>
#include <string>
#include <vector>

namespace plexus_rma25d {

/// Layer counts the paper allows on a PR x PC grid (1 always).
std::vector<int> valid_layers(int PR, int PC);

std::string list_of(const std::vector<int>& v);

// Who computes what, as plain data: the same object schedules a run and predicts one.
struct Geometry {
  int PR = 1, PC = 1, pr = 0, pc = 0;
  int L = 1, sr = 1, sc = 1;  // group of sr x sc processes, L = sr * sc
  int V = 1, G = 1, T = 1;    // virtual grid, k-groups, ticks
  int r0 = 0, c0 = 0, ell = 0, shift = 0;
  std::vector<int> kgroup;  // block column of A -> k-group; group g lies in A's process column g mod PC
  int group_of_tick(int t) const { return ell + L * ((t + shift) % T); }
  int rank(int r, int c) const { return r * PC + c; }
  bool b_double_buffered() const { return sr == 1 || sc == 1; }
  int b_sets() const { return b_double_buffered() ? 2 : 1; }
  int a_buffers() const { return 2; }
};

Geometry make_geometry(int PR, int PC, int pr, int pc, int L, const std::vector<int>& a_col_dist);

// Where one piece of a panel lies in its owner's window: index words and values.
struct Piece {
  std::int64_t idx_off = 0, idx_words = 0, data_off = 0, data_vals = 0;
  bool empty() const { return data_vals == 0; }
};
constexpr int kPieceWords = 4;

// Every rank's directory: its A and B pieces per k-group (G entries each).
struct Directory {
  int G = 0;
  std::vector<std::int64_t> words;  // rank-major: [rank][A: G*4][B: G*4]
  Piece at(int rank, bool a, int g) const {
    const std::int64_t* w = words.data() + (static_cast<std::int64_t>(rank) * 2 * G + (a ? 0 : G) + g) * kPieceWords;
    return Piece{w[0], w[1], w[2], w[3]};
  }
};

// The pieces one fetch gathers: A(r, g) from one owner, B(g, c) from every owner in column c.
struct Fetch {
  int owner;
  Piece piece;
};

std::vector<Fetch> a_fetches(const Geometry& geo, const Directory& dir, int r, int g);
std::vector<Fetch> b_fetches(const Geometry& geo, const Directory& dir, int g, int c);

std::int64_t words_of(const std::vector<Fetch>& f);
std::int64_t values_of(const std::vector<Fetch>& f);

}  // namespace plexus_rma25d
