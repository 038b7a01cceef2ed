#include "plexus/kernel.hpp"

#include <cmath>

namespace plexus {

Kernel::~Kernel() = default;

void Kernel::scale(double* y, std::int64_t n, double alpha) {
  for (std::int64_t i = 0; i < n; ++i) y[i] *= alpha;
}

void Kernel::axpy(double* y, const double* x, std::int64_t n, double alpha) {
  for (std::int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

double Kernel::block_norm(const double* x, std::int64_t n) {
  double s = 0;
  for (std::int64_t i = 0; i < n; ++i) s += x[i] * x[i];
  return std::sqrt(s);
}

ReferenceKernel::~ReferenceKernel() = default;

void ReferenceKernel::process(const StackEntry* stack, std::int64_t n, const double* a, const double* b, double* c) {
  for (std::int64_t s = 0; s < n; ++s) {
    const StackEntry& e = stack[s];
    const double* A = a + e.a;  // m x k, column-major
    const double* B = b + e.b;  // k x n
    double* C = c + e.c;        // m x n
    for (int j = 0; j < e.n; ++j)
      for (int l = 0; l < e.k; ++l) {
        const double blj = B[l + std::int64_t{j} * e.k];
        for (int i = 0; i < e.m; ++i) C[i + std::int64_t{j} * e.m] += A[i + std::int64_t{l} * e.m] * blj;
      }
  }
}

}  // namespace plexus
