#pragma once
// Pieces of the multiply that core's driver (multiply.hpp) and algorithms share: DBCSR's
// filtering thresholds, the thread weights of C rows, and adding partial results.
#include <cstdint>
#include <string>
#include <vector>

#include "plexus/kernel.hpp"
#include "plexus/local_multiply.hpp"
#include "plexus/matrix.hpp"
#include "plexus/panel.hpp"

namespace plexus {

/// DBCSR's on-the-fly filtering threshold per global block row i: eps / (blocks in row i of A).
/// Collective over A's grid (one MPI_Allreduce). Empty when eps <= 0.
std::vector<double> global_row_thresholds(const DistMatrix& A, double eps);
/// The thresholds of the CSR rows `rows` (global ids) from global_row_thresholds (empty stays empty).
std::vector<double> thresholds_of_rows(const std::vector<double>& global, const std::vector<int>& rows);

/// Work weight of each local C row: its blocks in A, plus its kept blocks of C (none if beta = 0).
std::vector<std::int64_t> row_weights(const DistMatrix& A, const DistMatrix& C, double beta);

/// a1 * P1 + a2 * P2 over the union of their block patterns (same row set), in a fresh panel
/// whose blocks lie in index order; its rows shared by `threads` threads.
Panel add_panels(const PanelView& p1, double a1, const PanelView& p2, double a2, const BlockLayout& layout,
                 int threads = 1);

}  // namespace plexus
