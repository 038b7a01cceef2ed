#include "plexus/kernel.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "plexus/error.hpp"

namespace plexus {

KernelSession::~KernelSession() = default;
bool KernelSession::norms(const BlockLayout&, const BlockLayout&, double*, double*) { return false; }
Kernel::~Kernel() = default;
HostKernel::~HostKernel() = default;
ReferenceKernel::~ReferenceKernel() = default;

namespace {

// A host backend's accumulation: C stays in the area it was handed, the panels are read in place.
class HostSession final : public KernelSession {
 public:
  HostSession(HostKernel& kernel, MatrixData c, int slots)
      : kernel_(kernel), c_(std::move(c)), slots_(slots), writes_first_(kernel.first_product_writes()) {}

  void grow(std::int64_t values) override {
    const auto old = static_cast<std::int64_t>(c_.size());
    if (values <= old) return;
    // Room for later ticks too: a tick rarely creates the last blocks of C.
    if (values > static_cast<std::int64_t>(c_.capacity()))
      c_.reserve(std::max(static_cast<std::size_t>(values), c_.capacity() * 3 / 2));
    c_.resize(static_cast<std::size_t>(values));  // tracked vectors leave new doubles unset
    // A kernel whose first products write gets them unset: each new block's first product
    // overwrites it (StackEntry::first), so zeroing would only be a pass over memory.
    if (writes_first_) return;
    double* fresh = c_.data() + old;
    const std::int64_t n = values - old;
#pragma omp parallel for num_threads(slots_) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) fresh[i] = 0.0;
  }

  void stage(const PanelView& a, const PanelView& b) override {
    a_ = a.data;
    b_ = b.data;
  }

  void process(const StackEntry* stack, std::int64_t n, int) override {
    if (n > 0) kernel_.process(stack, n, a_, b_, c_.data());
  }

  void unstage() override { a_ = b_ = nullptr; }

  MatrixData finish() override { return std::move(c_); }

 private:
  HostKernel& kernel_;
  MatrixData c_;
  int slots_;
  bool writes_first_;
  const double* a_ = nullptr;
  const double* b_ = nullptr;
};

}  // namespace

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
