#pragma once
// DBCSR's benchmark input format (the `.perf` files of its performance driver, dbcsr_perf): a
// reader, and its translation into a plexus parameter list for the `multiply` solver.
//
// A file is a sequence of values, one a line, in a fixed order; a line whose first non-blank
// character is '#' is a comment, and blank lines are skipped. The values, in order:
//   npcols (0: the grid is chosen by MPI); optionally the MPI-RMA flag (T/F); the operation
//   (dbcsr_multiply); M, N, K; the sparsities of A, B, C (fraction of zero blocks); the
//   transposes of A, B (N, T, C); the symmetries of A, B, C (N, S, A, H, K); the data type (1, 3,
//   5, 7); alpha (real, imaginary); beta (real, imaginary); the limits (first and last row,
//   column and k; 0 means the full size); retain sparsity (T/F); the repetitions; the number of
//   (multiplicity, size) pairs of the m, n and k blocks; those pairs; the checksum line (check
//   T/F, threshold, reference, positional reference).
// Reals may be written as Fortran writes them (0.2d0, 1.0E-10, 0.); logicals as T, F, .TRUE.,
// .false. and the like.
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "plexus/parameters.hpp"

namespace plexus::perf {

/// A value of the file and the line it was read from (1-based).
template <class T>
struct Value {
  T value{};
  int line = 0;
};

/// (multiplicity, block size) pairs of one dimension, each with its line.
struct BlockPair {
  Value<std::int64_t> multiplicity, size;
};

/// Everything a .perf file says, as written (checked for form, not yet for what plexus supports).
struct PerfFile {
  std::string name;  ///< the file's path (for messages)
  Value<std::int64_t> npcols;
  bool has_rma = false;  ///< whether the optional MPI-RMA line is there
  Value<bool> use_rma;
  Value<std::string> operation;
  std::array<Value<std::int64_t>, 3> sizes;   ///< M, N, K
  std::array<Value<double>, 3> sparsities;    ///< A, B, C: fraction of zero blocks
  std::array<Value<char>, 2> transposes;      ///< A, B: 'N', 'T' or 'C'
  std::array<Value<char>, 3> symmetries;      ///< A, B, C: 'N', 'S', 'A', 'H' or 'K'
  Value<std::int64_t> data_type;              ///< 1 real single, 3 real double, 5 and 7 complex
  std::array<Value<double>, 2> alpha, beta;   ///< real, imaginary
  std::array<Value<std::int64_t>, 6> limits;  ///< first/last row, column, k (0: full size)
  Value<bool> retain_sparsity;
  Value<std::int64_t> repetitions;
  std::array<std::vector<BlockPair>, 3> blocks;  ///< m, n, k
  Value<bool> checksum_check;
  Value<double> checksum_threshold, checksum_reference, checksum_reference_pos;
};

/// Reads `text` (the contents of file `name`). Throws InputError "NAME, line L: ..." naming the
/// line and what was expected there (or, at the end of the file, what is missing).
PerfFile parse_perf(const std::string& text, const std::string& name);
/// Reads the file at `path` (at most 1 MiB; a .perf file is a few hundred bytes).
PerfFile read_perf_file(const std::string& path);

/// The file as a plexus run: the parameter list for the `multiply` solver, and what became of
/// every field.
struct PerfRun {
  ParameterListPtr parameters;     ///< Solver, Problem, multiply (not yet validated)
  std::string default_strategy;    ///< cannon, or rma25d when the file asks for MPI-RMA
  std::vector<std::string> notes;  ///< one line per field: "line L  field = value -> what plexus does"
};

/// The largest matrix (elements) for which the checksum line's check becomes multiply/Check
/// (the multiply solver's dense check gathers each matrix on rank 0; the same bound).
constexpr std::int64_t kDenseCheckMaxElements = std::int64_t{1} << 22;

/// Translates a file for a job of `ranks` ranks. Throws InputError naming the line of anything
/// plexus cannot do as the file says (complex or single-precision data, limits other than the
/// full matrices, symmetries other than none or symmetric A and B, a zero occupancy, npcols that
/// does not divide the ranks).
PerfRun translate(const PerfFile& file, int ranks);

}  // namespace plexus::perf
