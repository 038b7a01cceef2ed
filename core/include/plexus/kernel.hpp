#pragma once
// Local work on blocks: the local backend. Core turns panels into stacks of small products; a
// backend processes them, and owns C's values while it does (DBCSR's dbcsr_mm_sched and its
// accelerator driver, Ginkgo's executor-owned arrays are the models):
//
//   session = kernel.begin(C)            C's starting values (host) become the backend's
//   per tick:  session.stage(A, B)       the tick's panels (host) are made readable to it
//              session.norms(...)        with filtering: the panels' block norms (optional)
//              session.grow(n)           C's area grows by the blocks this tick creates (zeroed,
//                                        or left unset by a backend whose first products write;
//                                        a host backend's session may be grown several times a
//                                        tick, between its process() calls)
//              session.process(stack)    C[c] += A[a] * B[b] (or = for an entry marked first, on
//                                        such a backend), from several threads at once
//              session.unstage()         the host panels are not read any more
//   C = session.finish()                 C's values back in host memory
//
// A host backend (HostKernel) works on the panels where they are and on C in place: it only
// supplies process() on host pointers. A device backend keeps C resident in device memory
// across ticks, copies each tick's panels once (its products may still run on its copies after
// unstage(), overlapping the next tick's communication and copies), computes block norms where
// the panels are, and counts what it holds under the device categories of the memory tracker.
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include "plexus/memory.hpp"
#include "plexus/panel.hpp"

namespace plexus {

/// One small product C[c] += A[a] * B[b]; all blocks column-major, A is m x k, B k x n, C m x n.
/// Offsets are in doubles from the start of the respective data area (the staged panels' values
/// and C's value area).
///
/// `first` != 0 marks the first product into a C block that the accumulation created (the
/// block's values came from grow(), and no earlier entry of any stack went to it). Core marks
/// every such product, for every backend. A backend whose Kernel::first_product_writes() is true
/// must then write, C[c] = A[a] * B[b], whatever the block held; its sessions leave grown values
/// unset, so nothing zeroes blocks that their first product overwrites anyway. Any other backend
/// ignores the mark (its grown values are zero, and += into zero is the same product).
struct StackEntry {
  int m, n, k;
  int first;  // in what would be the padding before `a`: an entry stays 40 bytes
  std::int64_t a, b, c;
};
// Trivial, so that a stack buffer is allocated without a pass over it (an aggregate initialiser
// that leaves `first` out sets it to 0).
static_assert(sizeof(StackEntry) == 40 && std::is_trivial_v<StackEntry>,
              "a stack entry is 40 trivial bytes (stack buffers, plans and device copies count on it)");

/// One accumulation of C on a backend, from Kernel::begin to finish. The calls come in the order
/// of the header comment above; every method but process() is called from one thread.
class KernelSession {
 public:
  /// Waits for outstanding work (it may run while an error unwinds, after an unstage() that
  /// was not called; no MPI here).
  virtual ~KernelSession();  // key function, defined in libplexus_core
  /// C's value area grows to `values` doubles (never shrinks); the new values are zero, or unset
  /// when the kernel's first_product_writes() is true (the first product into each new block
  /// comes marked `first` and overwrites it). A host backend grows within the capacity of the
  /// MatrixData begin() was given before it moves C (LocalProduct reserves what it expects C to
  /// need).
  virtual void grow(std::int64_t values) = 0;
  /// Makes one tick's panels readable to process(): stack offsets a and b index a.data and
  /// b.data (a.data_size and b.data_size values). The host memory stays valid until unstage().
  virtual void stage(const PanelView& a, const PanelView& b) = 0;
  /// C[e.c] += A[e.a] * B[e.b] for every entry (= for an entry marked `first`, when the kernel's
  /// first_product_writes() is true). Called concurrently from thread slots
  /// 0 .. slots-1 (one call at a time per slot), each slot on C blocks no other slot touches.
  /// A backend may return before the work is done; finish() waits for it.
  virtual void process(const StackEntry* stack, std::int64_t n, int slot) = 0;
  /// The Frobenius norm of every block of the staged panels, in block order (a_norms[a.nblocks],
  /// b_norms[b.nblocks]; block sizes from the layouts), computed where the backend keeps the
  /// panels, for on-the-fly filtering. Called at most once per tick, after stage() and before
  /// process(). false: the backend leaves them to core, which computes them on the host.
  virtual bool norms(const BlockLayout& a_layout, const BlockLayout& b_layout, double* a_norms, double* b_norms);
  /// Ends the tick: afterwards the host memory of the staged panels is not read again (a device
  /// backend may still compute with its own copies; finish() waits for that). Core calls it also
  /// when the tick fails after stage() (then its errors are dropped).
  virtual void unstage() = 0;
  /// C's values (the whole area, in host memory). The session is over afterwards.
  virtual MatrixData finish() = 0;
};

/// A local backend.
class Kernel {
 public:
  virtual ~Kernel();  // key function, defined in libplexus_core
  virtual std::string name() const = 0;
  /// Threads the core should use to build stacks (each owning whole C block rows); the session
  /// gets one slot per thread.
  virtual int threads() const { return 1; }
  /// Where the backend keeps C and the panels while it works on them.
  virtual MemorySpace memory_space() const { return MemorySpace::Host; }
  /// true: process() writes (C[c] = A[a] * B[b]) for a stack entry marked `first`, and the
  /// sessions leave C's grown values unset instead of zeroing them. false (the default): the
  /// mark is ignored and grown values are zero. The answer must not change over the kernel's life.
  virtual bool first_product_writes() const { return false; }
  /// Starts an accumulation whose C value area starts as `c` (host values, the caller's
  /// scaling already applied), processed from `slots` thread slots.
  virtual std::unique_ptr<KernelSession> begin(MatrixData c, int slots) = 0;
};

/// The mean block sizes of a dense tick, in values (HostKernel::dense_min_size): rows (M over A's
/// block rows), columns (N over B's block columns) and inner size (K over the k blocks).
struct DenseBlocks {
  double rows = 0, cols = 0, inner = 0;
};

/// A backend on host memory: panels are read where they are, C is accumulated in place (no
/// copy). It supplies only the product of a stack on host pointers. Its sessions zero C's grown
/// values unless first_product_writes() says that process() writes the marked first products.
class HostKernel : public Kernel {
 public:
  ~HostKernel() override;
  std::unique_ptr<KernelSession> begin(MatrixData c, int slots) override;
  /// C[e.c] += A[e.a] * B[e.b] for every entry of the stack (= for an entry marked `first` when
  /// first_product_writes() is true). Called concurrently, each caller on C blocks of its own.
  virtual void process(const StackEntry* stack, std::int64_t n, const double* a, const double* b, double* c) = 0;
  /// Frobenius norm of a block of n values.
  virtual double block_norm(const double* x, std::int64_t n);
  /// From what size core computes a dense tick (every A row has blocks in the same columns, every
  /// B row among them blocks in the same columns; no filtering) as a few large products instead
  /// of one per block: where the harmonic mean 3 / (1/m + 1/N + 1/K) of a thread's rows m (the
  /// tick's rows M over the product's threads, or over A's block rows where those are fewer), the
  /// tick's columns N and inner size K is at least this. Core then copies the panels into dense
  /// column-major scratch, calls process() with one entry per strip of C columns (m a thread's
  /// rows, n the strip's columns, k the whole inner size; a, b and c into its scratch, marked
  /// `first`, the scratch C zeroed unless first_product_writes()), and adds the strips into C's
  /// blocks (DBCSR's dense mode does the same). Large products then run at a large GEMM's rate
  /// rather than a small block's, for copies of (M + N) K + 2 M N values: how large a tick must be
  /// for that to pay depends on how far the backend's block products fall short of a GEMM, so on
  /// the tick's blocks, whose mean sizes `blocks` gives (M over A's block rows, N over B's block
  /// columns, K over the k blocks).
  /// 0 (the default): never; 1: every dense tick. The same blocks must get the same answer over
  /// the kernel's life.
  virtual std::int64_t dense_min_size(const DenseBlocks& blocks) const {
    (void)blocks;
    return 0;
  }
};

/// The oracle: plain loops, one thread, obviously correct. Always available in core. It adds every
/// product (first_product_writes() is false), so its sessions zero C's growth.
class ReferenceKernel final : public HostKernel {
 public:
  ~ReferenceKernel() override;
  std::string name() const override { return "reference"; }
  void process(const StackEntry* stack, std::int64_t n, const double* a, const double* b, double* c) override;
};

}  // namespace plexus
