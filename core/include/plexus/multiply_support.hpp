#pragma once
// Steps every multiply strategy shares: operand checks, DBCSR's filtering thresholds, the
// thread weights of C rows, preparing C for beta, and adding partial results.
#include <cstdint>
#include <string>
#include <vector>

#include "plexus/comm_strategy.hpp"
#include "plexus/kernel.hpp"
#include "plexus/local_multiply.hpp"
#include "plexus/matrix.hpp"
#include "plexus/panel.hpp"

namespace plexus {

/// Throws plexus::Error (at `where`) unless A, B, C are on the same grid, A's columns match B's
/// rows, and C is distributed like A's rows and B's columns.
void check_multiply_operands(const DistMatrix& A, const DistMatrix& B, const DistMatrix& C, const std::string& where);

/// DBCSR's on-the-fly filtering threshold per global block row i: eps / (blocks in row i of A).
/// Collective over A's grid (one MPI_Allreduce). Empty when eps <= 0.
std::vector<double> global_row_thresholds(const DistMatrix& A, double eps);
/// The thresholds of the CSR rows `rows` (global ids) from global_row_thresholds (empty stays empty).
std::vector<double> thresholds_of_rows(const std::vector<double>& global, const std::vector<int>& rows);

/// Work weight of each local C row: its blocks in A, plus its kept blocks of C (none if beta = 0).
std::vector<std::int64_t> row_weights(const DistMatrix& A, const DistMatrix& C, double beta);

/// beta = 0 drops C's blocks, otherwise C is scaled by beta.
void prepare_c(DistMatrix& C, double beta);

/// The start of a multiply: resets the peaks of the communication buffers and of all tracked
/// memory, and returns the start time for finish_multiply_report.
double start_multiply();
/// Fills what every strategy reports alike: the strategy and kernel names, the local product's
/// flops, products, skipped products and times, the counted memory peaks since start_multiply,
/// and the seconds since t_start.
void finish_multiply_report(MultiplyReport& report, const std::string& strategy, const Kernel& kernel,
                            const LocalMultiplyStats& stats, double t_start);

/// a1 * P1 + a2 * P2 over the union of their block patterns (same row set).
Panel add_panels(const PanelView& p1, double a1, const PanelView& p2, double a2, const BlockLayout& layout);

}  // namespace plexus
