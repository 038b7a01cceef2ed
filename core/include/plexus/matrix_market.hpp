#pragma once
// Matrix Market I/O (coordinate or array, real or integer, general or symmetric). Files are read
// plain or gzip-compressed (told by their first bytes, the gzip magic 1f 8b, not by the name).
#include <memory>
#include <string>

#include "plexus/matrix.hpp"

namespace plexus {

struct MatrixMarketHeader {
  std::string format;    ///< "coordinate" or "array"
  std::string field;     ///< "real" or "integer"
  std::string symmetry;  ///< "general" or "symmetric"
  std::int64_t rows = 0, cols = 0, entries = 0;
};

/// Reads the header only (errors name file and line; corrupt or truncated gzip data too).
MatrixMarketHeader read_matrix_market_header(const std::string& path);

/// Reads a matrix into a DistMatrix with the given block sizes (their totals must equal the
/// file's dimensions). A block is present when the file gives any entry in it. Every rank reads
/// the file and keeps its own blocks. Collective. Malformed files: plexus::InputError with the line.
DistMatrix read_matrix_market(const std::string& path, const std::string& name,
                              std::shared_ptr<const Distribution> dist, const BlockLayout& layout);

/// Writes all elements of present blocks as "coordinate real general". Rank 0 writes as
/// output.hpp says: a regular file through a temporary renamed into place, a device or pipe
/// directly, "-" to standard output. Collective; every rank throws if rank 0 failed.
void write_matrix_market(const DistMatrix& m, const std::string& path);

}  // namespace plexus
