#pragma once
// Local work on blocks. Core turns panels into stacks of small products; a kernel processes them.
#include <cstdint>
#include <memory>
#include <string>

namespace plexus {

/// One small product C[c] += A[a] * B[b]; all blocks column-major, A is m x k, B k x n, C m x n.
/// Offsets are in doubles from the start of the respective data area.
struct StackEntry {
  int m, n, k;
  std::int64_t a, b, c;
};

/// A local kernel. process() may be called concurrently from several threads, each on a stack
/// whose C blocks no other thread touches at the same time.
class Kernel {
 public:
  virtual ~Kernel();  // key function, defined in libplexus_core
  virtual std::string name() const = 0;
  /// Threads the core should use to build and process stacks (each owning whole C block rows).
  virtual int threads() const { return 1; }
  /// C[e.c] += A[e.a] * B[e.b] for every entry of the stack.
  virtual void process(const StackEntry* stack, std::int64_t n, const double* a, const double* b, double* c) = 0;
  /// y[0..n) *= alpha (where placement matters a kernel overrides it).
  virtual void scale(double* y, std::int64_t n, double alpha);
  /// y[0..n) += alpha * x[0..n).
  virtual void axpy(double* y, const double* x, std::int64_t n, double alpha);
  /// Frobenius norm of a block of n values.
  virtual double block_norm(const double* x, std::int64_t n);
};

/// The oracle: plain loops, one thread, obviously correct. Always available in core.
class ReferenceKernel final : public Kernel {
 public:
  ~ReferenceKernel() override;
  std::string name() const override { return "reference"; }
  void process(const StackEntry* stack, std::int64_t n, const double* a, const double* b, double* c) override;
};

}  // namespace plexus
