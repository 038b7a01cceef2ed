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

/// The entries a scan kept (cp2k_csr.cpp): read_cp2k_csr_files takes them instead of reading the
/// file a second time.
struct Cp2kCsrEntries;

/// At most this many bytes of entries (32 bytes each: 8 Mi entries) are kept by a header's scan.
/// A larger file is read again by read_cp2k_csr_files, with no more than its chunks in memory.
inline constexpr std::size_t kCp2kKeepBytes = std::size_t{256} << 20;

/// What a scan of the whole file finds.
struct Cp2kCsrHeader {
  std::int64_t dimension = 0;  ///< the largest row or column index: H and S always have their diagonal
  std::int64_t entries = 0;    ///< lines with an entry
  /// The file gives one triangle only (CP2K's UPPER_TRIANGULAR, or only the lower one): it is
  /// mirrored. With entries on both sides of the diagonal every entry is taken as given.
  bool mirrored = false;
  /// The file's entries as the scan found them, on the rank that scanned it, where they took at
  /// most the scan's keep_bytes (null otherwise, and on every other rank). Dropping the header
  /// (every copy of it) frees them.
  std::shared_ptr<const Cp2kCsrEntries> kept;
};

/// Reads the whole file once and checks every line: three fields, indices whole numbers >= 1,
/// values finite. Blank lines are skipped. Throws InputError "CP2K CSR file <path>, line <n>: ..."
/// for the first bad line (a file without entries too). Keeps the entries (Cp2kCsrHeader::kept)
/// while they take at most kCp2kKeepBytes. Local, no communication.
Cp2kCsrHeader read_cp2k_csr_header(const std::string& path);

/// The same, the scan made by rank 0 of `comm` alone and broadcast: every rank returns the same
/// header or throws the same error (the entries, while they take at most `keep_bytes`, are kept
/// on rank 0 only; 0 keeps none). Collective.
Cp2kCsrHeader read_cp2k_csr_header(const std::string& path, MPI_Comm comm, std::size_t keep_bytes = kCp2kKeepBytes);

/// The headers of several files at once: file f scanned by rank f mod P of `comm` (P its ranks;
/// a rank with several files scans each in a thread of its own) and broadcast. Every rank returns
/// the same headers, or throws the error of the first file that has one; file f's entries are kept
/// on its scanning rank, where read_cp2k_csr_files reads it when the distribution's grid numbers
/// its ranks as `comm` does. Collective.
std::vector<Cp2kCsrHeader> read_cp2k_csr_headers(const std::vector<std::string>& paths, MPI_Comm comm,
                                                 std::size_t keep_bytes = kCp2kKeepBytes);

/// Reads the matrix (square, `header.dimension` = the layout's totals, `header` as
/// read_cp2k_csr_header gave it for this file) into a DistMatrix: rank 0 of the distribution's
/// grid reads the file (in a thread of its own; the entries the header kept there instead of the
/// file, when it kept them) and sends the entries to the ranks owning their
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
