#pragma once
// Matrix Market I/O (coordinate or array; real, integer or pattern; general or symmetric). Files
// are read plain or gzip-compressed (told by their first bytes, the gzip magic 1f 8b, not by the
// name).
#include <mpi.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "plexus/input.hpp"
#include "plexus/matrix.hpp"

namespace plexus {

struct MatrixMarketHeader {
  std::string format;    ///< "coordinate" or "array"
  std::string field;     ///< "real", "integer" or "pattern" (coordinate only: every entry given is 1)
  std::string symmetry;  ///< "general" or "symmetric"
  std::int64_t rows = 0, cols = 0, entries = 0;
};

/// Reads the header only (errors name file and line; corrupt or truncated gzip data too).
MatrixMarketHeader read_matrix_market_header(const std::string& path);

/// The same, read by rank 0 of `comm` alone and broadcast: every rank returns the same header, or
/// throws the same error (InputError naming file and line). Collective.
MatrixMarketHeader read_matrix_market_header(const std::string& path, MPI_Comm comm);

/// Reads a matrix into a DistMatrix with the given block sizes (their totals must equal the
/// file's dimensions). A block is present when the file gives any entry in it. Rank 0 of the
/// distribution's grid reads the file, streaming it (in a thread of its own), and sends the
/// entries to the ranks owning their blocks, `chunk_entries` at a time; no other rank opens the
/// file. Collective. Malformed files: plexus::InputError naming file and line, thrown on every
/// rank alike (rank 0 tells the others before each chunk whether it met one).
DistMatrix read_matrix_market(const std::string& path, const std::string& name,
                              std::shared_ptr<const Distribution> dist, const BlockLayout& layout,
                              std::size_t chunk_entries = input::kReadChunkEntries);
/// Several files at once, each into a matrix of its own (names[f] for paths[f]) with the same
/// distribution and block sizes: file f is read by rank f mod P of the grid (P its ranks), in a
/// thread of its own, so that on several ranks the files are parsed side by side (a Kohn-Sham
/// matrix and its overlap: read_hamiltonian). The files' chunks are sent in turns. An error in any
/// file is thrown on every rank (the first file's, where several fail in the same turn), as
/// read_matrix_market throws it. Collective.
std::vector<DistMatrix> read_matrix_market_files(const std::vector<std::string>& paths,
                                                 const std::vector<std::string>& names,
                                                 std::shared_ptr<const Distribution> dist, const BlockLayout& layout,
                                                 std::size_t chunk_entries = input::kReadChunkEntries);
/// A matrix of read_matrix_market_files: its file, its name, its distribution and block sizes.
struct MatrixFile {
  std::string path, name;
  std::shared_ptr<const Distribution> dist;
  BlockLayout layout;
};
/// The same, each file with a distribution and block sizes of its own (all on one grid: A, B and
/// C of a multiply). plexus::Error where the distributions' grids differ. Collective.
std::vector<DistMatrix> read_matrix_market_files(const std::vector<MatrixFile>& files,
                                                 std::size_t chunk_entries = input::kReadChunkEntries);

/// Writes all elements of present blocks as "coordinate real general". Rank 0 writes as
/// output.hpp says: a regular file through a temporary renamed into place, a device or pipe
/// directly, "-" to standard output. Collective; every rank throws if rank 0 failed.
void write_matrix_market(const DistMatrix& m, const std::string& path);

}  // namespace plexus
