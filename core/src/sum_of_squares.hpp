#pragma once
// Sums of products and of squares in four partial sums, for norms (panel.cpp's block norms and
// filter, DistMatrix's Frobenius norm) and DistMatrix's dot.
#include <cstdint>

namespace plexus {

// Four partial sums: one running sum waits for each addition before the next (the compiler may
// not reorder it). 1.4x as fast for blocks of 6, 3.3x for blocks of 23, with the data in cache;
// where the norms read a C that has left the caches (the filter's, after a multiply) the reads
// bound it either way. Summed in pairs, no less accurate. sum_i x[i] y[i]:
[[gnu::always_inline]] inline double sum_of_products(const double* x, const double* y, std::int64_t n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  std::int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += x[i] * y[i];
    s1 += x[i + 1] * y[i + 1];
    s2 += x[i + 2] * y[i + 2];
    s3 += x[i + 3] * y[i + 3];
  }
  for (; i < n; ++i) s0 += x[i] * y[i];
  return (s0 + s1) + (s2 + s3);
}

// sum_i x[i]^2, the same sums.
[[gnu::always_inline]] inline double sum_of_squares(const double* x, std::int64_t n) {
  return sum_of_products(x, x, n);
}

}  // namespace plexus
