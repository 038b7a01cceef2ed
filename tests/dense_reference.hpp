#pragma once
// Dense column-major helpers for tests: the independent side of every comparison.
#include <cmath>
#include <cstdint>
#include <vector>

namespace plexus::test {

/// C = alpha * A(m x k) * B(k x n) + beta * C, all column-major.
inline void dense_gemm(std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const std::vector<double>& a,
                       const std::vector<double>& b, double beta, std::vector<double>& c) {
  if (c.empty()) c.assign(static_cast<std::size_t>(m * n), 0.0);
  for (auto& x : c) x *= beta;
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t l = 0; l < k; ++l) {
      const double blj = alpha * b[static_cast<std::size_t>(l + j * k)];
      if (blj == 0.0) continue;
      for (std::int64_t i = 0; i < m; ++i) c[static_cast<std::size_t>(i + j * m)] += a[static_cast<std::size_t>(i + l * m)] * blj;
    }
}

/// ||x - y||_F / ||y||_F (or ||x||_F when y is zero).
inline double relative_error(const std::vector<double>& x, const std::vector<double>& y) {
  double d = 0, n = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    d += (x[i] - y[i]) * (x[i] - y[i]);
    n += y[i] * y[i];
  }
  return n > 0 ? std::sqrt(d / n) : std::sqrt(d);
}

}  // namespace plexus::test
