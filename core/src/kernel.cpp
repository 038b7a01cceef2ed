#include "plexus/kernel.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "host_session.hpp"
#include "plexus/error.hpp"

namespace plexus {

KernelSession::~KernelSession() = default;
bool KernelSession::norms(const BlockLayout&, const BlockLayout&, double*, double*) { return false; }
Kernel::~Kernel() = default;
HostKernel::~HostKernel() = default;
ReferenceKernel::~ReferenceKernel() = default;

std::unique_ptr<KernelSession> HostKernel::begin(MatrixData c, int slots) {
  if (slots < 1) throw Error("Kernel::begin", "needs at least one thread slot, got " + std::to_string(slots));
  return std::make_unique<HostSession>(*this, std::move(c), slots);
}

double HostKernel::block_norm(const double* x, std::int64_t n) {
  double s = 0;
  for (std::int64_t i = 0; i < n; ++i) s += x[i] * x[i];
  return std::sqrt(s);
}

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
