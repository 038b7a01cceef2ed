#include "plexus/generator.hpp"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "plexus/error.hpp"
#include "random_hash.hpp"

namespace plexus {

using detail::hash;
using detail::unit;

bool generator_block_present(const GeneratorSpec& spec, int i, int j) {
  if (spec.symmetric && i > j) std::swap(i, j);
  if (spec.force_diagonal && i == j) return true;
  if (spec.bandwidth >= 0 && std::abs(i - j) > spec.bandwidth) return false;
  if (spec.occupancy >= 1.0) return true;
  return unit(hash(spec.seed, static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(j), 0x0CC0ULL)) < spec.occupancy;
}

double generator_value(const GeneratorSpec& spec, int i, int j, int r, int c, int rows_i, int cols_j) {
  // Symmetric: element (r, c) of block (i, j) equals element (c, r) of block (j, i).
  if (spec.symmetric && (i > j || (i == j && r > c))) {
    std::swap(i, j);
    std::swap(r, c);
    std::swap(rows_i, cols_j);
  }
  const std::uint64_t element = static_cast<std::uint64_t>(r) + static_cast<std::uint64_t>(c) * static_cast<std::uint64_t>(rows_i);
  return 2.0 * unit(hash(spec.seed, static_cast<std::uint64_t>(i) << 1 | 1, static_cast<std::uint64_t>(j), element)) - 1.0;
}

DistMatrix generate_random(const std::string& name, std::shared_ptr<const Distribution> dist, const BlockLayout& layout,
                           const GeneratorSpec& spec) {
  if (spec.occupancy < 0 || spec.occupancy > 1)
    throw InputError("generator", "occupancy must be in [0, 1], got " + std::to_string(spec.occupancy));
  if (spec.symmetric && !(layout.rows == layout.cols))
    throw InputError("generator", "a symmetric matrix needs equal row and column block sizes");
  DistMatrix m(name, dist, layout);
  const auto& rows = dist->local_rows();
  const auto& cols = dist->local_cols();
  Panel panel(rows);
  for (int r = 0; r < static_cast<int>(rows.size()); ++r) {
    const int i = rows[r], mi = layout.rows.size(i);
    for (int j : cols) {
      if (!generator_block_present(spec, i, j)) continue;
      const int nj = layout.cols.size(j);
      double* x = panel.append_block(r, j, mi * nj);
      for (int c = 0; c < nj; ++c)
        for (int q = 0; q < mi; ++q) x[q + std::int64_t{c} * mi] = generator_value(spec, i, j, q, c, mi, nj);
    }
  }
  m.set_local(std::move(panel));
  return m;
}

}  // namespace plexus
