#pragma once
// Deterministic random block-sparse matrices: the presence and values of block (i, j) depend
// only on the seed and (i, j), never on the number of ranks or the distribution.
#include <cstdint>
#include <memory>

#include "plexus/matrix.hpp"

namespace plexus {

struct GeneratorSpec {
  double occupancy = 0.1;   ///< probability that a block is present (inside the band, if any)
  bool symmetric = false;   ///< A = A^T (requires equal row and column layouts)
  bool force_diagonal = false;  ///< diagonal blocks always present
  std::uint64_t seed = 1;
  /// Locality: >= 0 keeps only blocks with |i - j| <= bandwidth (as in matrices of local
  /// interactions, where a product's blocks meet near the diagonal); -1: no locality.
  int bandwidth = -1;
};

/// Fills the local blocks of a new matrix. Values uniform in [-1, 1).
DistMatrix generate_random(const std::string& name, std::shared_ptr<const Distribution> dist, const BlockLayout& layout,
                           const GeneratorSpec& spec);

/// Presence and value of element (r, c) of block (i, j) as the generator defines them (for tests).
bool generator_block_present(const GeneratorSpec& spec, int i, int j);
double generator_value(const GeneratorSpec& spec, int i, int j, int r, int c, int rows_i, int cols_j);

}  // namespace plexus
