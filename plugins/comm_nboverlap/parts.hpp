#pragma once
// Huang and Chow's "nonblocking overlap": data cut into parts, part c travelling on the c-th of
// NDup communicators, all parts posted back to back so that they are in flight together.
//
// The rule for the number of parts of n values (the same on every rank for the same n):
//   n = 0: one part; else min(NDup, n, floor(8n / MinPartBytes)), at least 1
// (MinPartBytes = 0: no minimum). Part c of n values in k parts is [begin, end) with the first
// n mod k parts one value longer. Part 0 travels on the caller's communicator itself, part c > 0
// on a duplicate of it made once in the context's pool: NDup = 1 is the plain nonblocking call.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "plexus/comm_pool.hpp"

namespace plexus::nboverlap {

struct PartPlan {
  int ndup = 4;
  std::int64_t min_part_bytes = 16 * 1024;

  /// Parts for n values (doubles, or any 8-byte words).
  int parts(std::int64_t n) const {
    if (n <= 0) return 1;
    std::int64_t k = std::min<std::int64_t>(ndup, n);
    if (min_part_bytes > 0) k = std::min<std::int64_t>(k, 8 * n / min_part_bytes);
    return static_cast<int>(std::max<std::int64_t>(k, 1));
  }
};

/// [begin, end) of part c of n values in k parts.
inline std::pair<std::int64_t, std::int64_t> part_range(std::int64_t n, int k, int c) {
  const std::int64_t q = n / k, r = n % k;
  const std::int64_t begin = c * q + std::min<std::int64_t>(c, r);
  return {begin, begin + q + (c < r ? 1 : 0)};
}

/// The communicator part c travels on: comm itself for c = 0, else its c-th duplicate in `pool`
/// (collective over comm the first time; every rank asks for the same c in the same order).
inline MPI_Comm part_comm(CommPool& pool, MPI_Comm comm, int c) {
  return c == 0 ? comm : pool.dup(comm, "nboverlap part " + std::to_string(c));
}

}  // namespace plexus::nboverlap
