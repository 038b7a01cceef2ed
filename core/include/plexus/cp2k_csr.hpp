#pragma once
// CP2K's CSR text output (KS_CSR_WRITE, S_CSR_WRITE in DFT/PRINT): one matrix element a line,
// `row col value`, indices from 1, plain or gzip-compressed (told by the gzip magic bytes).
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "plexus/input.hpp"
#include "plexus/matrix.hpp"

namespace plexus {

/// What a scan of the whole file finds.
struct Cp2kCsrHeader {
  std::int64_t dimension = 0;  ///< the largest row or column index: H and S always have their diagonal
  std::int64_t entries = 0;    ///< lines with an entry
  /// The file gives one triangle only (CP2K's UPPER_TRIANGULAR, or only the lower one): it is
  /// mirrored. With entries on both sides of the diagonal every entry is taken as given.
  bool mirrored = false;
};

/// Reads the whole file once and checks every line: three fields, indices whole numbers >= 1,
/// values finite. Blank lines are skipped. Throws InputError "CP2K CSR file <path>, line <n>: ..."
/// for the first bad line (a file without entries too). Local, no communication.
Cp2kCsrHeader read_cp2k_csr_header(const std::string& path);

/// The same, the scan made by rank 0 of `comm` alone and broadcast: every rank returns the same
/// header or throws the same error. Collective.
Cp2kCsrHeader read_cp2k_csr_header(const std::string& path, MPI_Comm comm);

/// The headers of several files at once: file f scanned by rank f mod P of `comm` (P its ranks;
/// a rank with several files scans each in a thread of its own) and broadcast. Every rank returns
/// the same headers, or throws the error of the first file that has one. Collective.
std::vector<Cp2kCsrHeader> read_cp2k_csr_headers(const std::vector<std::string>& paths, MPI_Comm comm);

/// Reads the matrix (square, `header.dimension` = the layout's totals, `header` as
/// read_cp2k_csr_header gave it for this file) into a DistMatrix: rank 0 of the distribution's
/// grid reads the file (in a thread of its own) and sends the entries to the ranks owning their
/// blocks, `chunk_entries` at a time (as read_matrix_market does); a block is present when the
/// file gives an entry in it (or, mirrored, in its transpose). A malformed line, or an entry given
/// twice (both lines named), is an InputError on every rank alike. Collective over the
/// distribution's grid.
DistMatrix read_cp2k_csr(const std::string& path, const std::string& name, std::shared_ptr<const Distribution> dist,
                         const BlockLayout& layout, const Cp2kCsrHeader& header,
                         std::size_t chunk_entries = input::kReadChunkEntries);

/// Several files at once, each into a matrix of its own (names[f] for paths[f], headers[f] its
/// header) with the same distribution and block sizes: file f is read by rank f mod P of the grid
/// (P its ranks), in a thread of its own, as read_matrix_market_files does. Collective.
std::vector<DistMatrix> read_cp2k_csr_files(const std::vector<std::string>& paths,
                                            const std::vector<std::string>& names,
                                            std::shared_ptr<const Distribution> dist, const BlockLayout& layout,
                                            const std::vector<Cp2kCsrHeader>& headers,
                                            std::size_t chunk_entries = input::kReadChunkEntries);

}  // namespace plexus
