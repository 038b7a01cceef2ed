// The `cpu` kernel plugin: stacks of small block products processed with register kernels for
// blocks of up to 8 (small_blocks.hpp: AVX-512F or AVX2, whichever is the widest the CPU has),
// libxsmm's JIT-generated kernels (one dispatch per (m, n, k), cached per thread) for other small
// shapes, and BLAS dgemm beyond those (and for Backend=blas). Backend=libxsmm leaves the register
// kernels out; Backend=avx512 or avx2 picks their instruction set.
//
// Dense ticks (DenseMinSize; by default from a size that depends on the tick's blocks, and on how
// fast dgemm runs against the block products, measured once where it matters: DgemmShare): where a
// tick's panels are dense and large, core hands process() one large product per strip of C
// columns on packed copies (HostKernel::dense_min_size), which goes to dgemm. The kernel then
// sets OpenBLAS to one thread per caller (openblas_set_num_threads(1), where the BLAS is
// OpenBLAS): the kernel's threads, and the ranks beside it, are the parallelism, and an OpenBLAS
// that started its own threads on top of them would oversubscribe the cores (its default is one
// thread per core, unless OMP_NUM_THREADS or OPENBLAS_NUM_THREADS says fewer).
//
// A host backend (plexus::HostKernel): C and the panels stay where core keeps them. Its first
// products write (Kernel::first_product_writes): a stack entry marked `first` runs a kernel with
// beta = 0 (the register kernels start from zero instead of C), so C's new blocks are never
// zeroed beforehand.
//
// Threading: core's LocalProduct opens the OpenMP region and gives each thread a stack whose
// C blocks no other thread touches; process() is therefore called concurrently and opens no
// parallel region of its own. threads() tells core how many threads to use.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dense_rule.hpp"
#include "dgemm_share.hpp"
#include "plexus/error.hpp"
#include "plexus/kernel.hpp"
#include "plexus/log.hpp"
#include "plexus/parameters.hpp"
#include "plexus/plugin.hpp"
#include "small_blocks.hpp"

#if PLEXUS_HAVE_LIBXSMM
#include <libxsmm.h>
#endif

// OpenBLAS's thread count, where the BLAS linked is OpenBLAS (a weak reference: null elsewhere).
extern "C" void openblas_set_num_threads(int) __attribute__((weak));
// The kernels OpenBLAS chose for this CPU ("Haswell", "SkylakeX", ...), likewise.
extern "C" char* openblas_get_corename() __attribute__((weak));

namespace plexus_kernels_cpu {

using plexus::StackEntry;

enum class Backend { Auto, Avx512, Avx2, Libxsmm, Blas };

constexpr bool kHaveLibxsmm = PLEXUS_HAVE_LIBXSMM != 0;
/// Products with m*n*k above this go to dgemm: libxsmm's generated code is tuned for small shapes
/// and BLAS is as fast or faster beyond (libxsmm's own default threshold is 64^3).
constexpr std::int64_t kMaxXsmmVolume = 64 * 64 * 64;

/// An entry without products: nothing to do, unless it is a marked first product with k = 0 (C = A * B
/// is then zero). Block sizes are positive in every layout; this only keeps the contract whole.
inline bool empty_product(const StackEntry& e, double* c) {
  if (e.m > 0 && e.n > 0 && e.k > 0) return false;
  if (e.first != 0 && e.m > 0 && e.n > 0) std::fill_n(c + e.c, std::int64_t{e.m} * e.n, 0.0);
  return true;
}

/// Where the run of entries of stack[i]'s shape ends (the next entry of another shape, or n).
inline std::int64_t run_end(const StackEntry* stack, std::int64_t i, std::int64_t n) {
  const int m = stack[i].m, nn = stack[i].n, k = stack[i].k;
  std::int64_t end = i + 1;
  while (end < n && stack[end].m == m && stack[end].n == nn && stack[end].k == k) ++end;
  return end;
}

inline void blas_gemm(const StackEntry& e, const double* a, const double* b, double* c) {
  const double beta = e.first != 0 ? 0.0 : 1.0;  // a marked first product writes C's new block
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, e.m, e.n, e.k, 1.0, a + e.a, e.m, b + e.b, e.k, beta, c + e.c,
              e.m);
}

#if PLEXUS_HAVE_LIBXSMM
using XsmmFn = libxsmm_dmmfunction;

void init_libxsmm() {
  static std::once_flag once;
  std::call_once(once, [] { libxsmm_init(); });
}

/// Per-thread cache (m, n, k, beta) -> libxsmm kernel (nullptr: use dgemm); beta is 1 (add) or
/// 0 (write: a stack entry marked first). A last-hit fast path per beta serves the common case of
/// runs of equal shapes; an open-addressed table serves mixed shapes without locks. libxsmm's own
/// registry is thread-safe, so a miss simply asks it.
class DispatchCache {
 public:
  /// m, n, k >= 1 with m*n*k <= kMaxXsmmVolume (so each fits the 21 bits of the key).
  XsmmFn get(int m, int n, int k, bool write) {
    const std::uint64_t key = pack(m, n, k, write);
    if (key == last_key_[write]) return last_fn_[write];
    std::uint64_t h = (key * 0x9E3779B97F4A7C15ull) >> (64 - kBits);
    for (int probe = 0; probe < kSlots; ++probe, h = (h + 1) & (kSlots - 1)) {
      Slot& s = slots_[h];
      if (s.key == key) return remember(key, write, s.fn);
      if (s.key == 0) {
        s.key = key;
        s.fn = dispatch(m, n, k, write);
        return remember(key, write, s.fn);
      }
    }
    return remember(key, write, dispatch(m, n, k, write));  // table full: libxsmm's registry still caches
  }

 private:
  static constexpr int kBits = 9;
  static constexpr int kSlots = 1 << kBits;
  struct Slot {
    std::uint64_t key = 0;  // 0: empty (m, n, k >= 1, so no real key is 0)
    XsmmFn fn = nullptr;
  };
  static std::uint64_t pack(int m, int n, int k, bool write) {
    return (static_cast<std::uint64_t>(write) << 63) | (static_cast<std::uint64_t>(m) << 42) |
           (static_cast<std::uint64_t>(n) << 21) | static_cast<std::uint64_t>(k);
  }
  static XsmmFn dispatch(int m, int n, int k, bool write) {
    const double alpha = 1.0, beta = write ? 0.0 : 1.0;
    // Kernels that take the next product's operands and prefetch them (libxsmm picks the
    // strategy for the target); process() passes the next stack entry's blocks.
    const int prefetch = LIBXSMM_PREFETCH_AUTO;
    return libxsmm_dmmdispatch(m, n, k, nullptr, nullptr, nullptr, &alpha, &beta, nullptr, &prefetch);
  }
  XsmmFn remember(std::uint64_t key, bool write, XsmmFn fn) {
    last_key_[write] = key;
    last_fn_[write] = fn;
    return fn;
  }

  std::uint64_t last_key_[2] = {0, 0};
  XsmmFn last_fn_[2] = {nullptr, nullptr};
  std::array<Slot, kSlots> slots_{};
};

/// Small blocks (S-E-like, 6x6) are scattered and each is used for few flops, so the product
/// is latency-bound: their cache lines are requested a few products ahead. Larger blocks are
/// left to libxsmm's own prefetch of the next operands and to the hardware prefetcher. The
/// helpers are always_inline: merely inline, GCC kept them out of line, found them free of side
/// effects (as __builtin_prefetch counts) and deleted the calls.
constexpr std::int64_t kPrefetchDistance = 8;
constexpr std::int64_t kPrefetchMaxValues = 128;  // 16 cache lines

[[gnu::always_inline]] inline void prefetch_block(const double* p, std::int64_t values, bool write) {
  if (values > kPrefetchMaxValues) return;
  for (std::int64_t v = 0; v < values; v += 8) {
    if (write)
      __builtin_prefetch(p + v, 1);
    else
      __builtin_prefetch(p + v, 0);
  }
}

[[gnu::always_inline]] inline void prefetch_small(const StackEntry& e, const double* a, const double* b,
                                                  const double* c) {
  prefetch_block(a + e.a, std::int64_t{e.m} * e.k, false);
  prefetch_block(b + e.b, std::int64_t{e.k} * e.n, false);
  prefetch_block(c + e.c, std::int64_t{e.m} * e.n, true);
}

DispatchCache& thread_cache() {
  static thread_local DispatchCache cache;
  return cache;
}

/// A stack through libxsmm. The thread's cache comes in as a parameter, found once per stack:
/// inlined into the loop, its thread-local address was looked up again for every entry (a call
/// of __tls_get_addr per product, about 2 % of an S-E-like multiply). Entries come in runs of one
/// shape (all of them where the blocks are uniform): a run's two kernels (writing a new C block,
/// adding to one) are looked up once, and its entries are neither checked for an empty product
/// nor looked up again (S-E-like blocks of 6 in plexus-bench: about 3 % more kernel GFLOP/s).
[[gnu::noinline]] void xsmm_stack(DispatchCache& cache, const StackEntry* stack, std::int64_t n, const double* a,
                                  const double* b, double* c) {
  std::int64_t i = 0;
  while (i < n) {
    const StackEntry& first = stack[i];
    if (empty_product(first, c)) {
      ++i;
      continue;
    }
    const int m = first.m, nn = first.n, k = first.k;
    const bool small = std::int64_t{m} * nn * k <= kMaxXsmmVolume;
    const XsmmFn write = small ? cache.get(m, nn, k, true) : nullptr;
    const XsmmFn add = small ? cache.get(m, nn, k, false) : nullptr;
    for (; i < n; ++i) {
      const StackEntry& e = stack[i];
      if (e.m != m || e.n != nn || e.k != k) break;  // the next run (or an empty product)
      if (i + kPrefetchDistance < n) prefetch_small(stack[i + kPrefetchDistance], a, b, c);
      const StackEntry& nx = stack[i + 1 < n ? i + 1 : i];
      if (const XsmmFn fn = e.first != 0 ? write : add)
        fn(a + e.a, b + e.b, c + e.c, a + nx.a, b + nx.b, c + nx.c);
      else
        blas_gemm(e, a, b, c);
    }
  }
  // libxsmm's kernels return with the vector registers' upper halves in use: cleared here, once a
  // stack, or all of core's SSE code after them runs slower (reading h2o-32's files after a
  // two-thread solve: 1.8 times as long).
  clear_upper_vector_state();
}
#endif

// DenseMinSize: -1 means by the tick's blocks and the instruction set (dense_rule.hpp).
constexpr std::int64_t kDenseAuto = -1;
// DgemmShare: -1 means measured (dgemm_share.hpp) the first time a tick's blocks could go dense.
constexpr double kShareMeasured = -1;

class CpuKernel final : public plexus::HostKernel {
 public:
  CpuKernel(int threads, Backend backend, std::int64_t dense_min_size, double dgemm_share)
      : libxsmm_(backend == Backend::Libxsmm || (backend != Backend::Blas && kHaveLibxsmm)),
        dense_min_size_(dense_min_size),
        dgemm_share_(dgemm_share) {
    if (threads < 0) throw plexus::InputError("Kernel/cpu/Threads", "must be >= 0, got " + std::to_string(threads));
    if (dgemm_share != kShareMeasured && !(dgemm_share > 0 && std::isfinite(dgemm_share)))
      throw plexus::InputError("Kernel/cpu/DgemmShare",
                               "must be -1 (measured) or a positive share, got " + std::to_string(dgemm_share));
    if (dense_min_size < kDenseAuto)
      throw plexus::InputError("Kernel/cpu/DenseMinSize",
                               "must be -1 (by the blocks' size), 0 (never) or a size >= 1, got " +
                                   std::to_string(dense_min_size));
    if (backend == Backend::Libxsmm && !kHaveLibxsmm)
      throw plexus::InputError("Kernel/cpu/Backend",
                               "Backend=libxsmm was requested but this build of the cpu kernel has no libxsmm "
                               "(configure with PLEXUS_ENABLE_LIBXSMM=ON and libxsmm installed, or use "
                               "Backend=auto or Backend=blas)");
    if (backend == Backend::Avx512 || backend == Backend::Avx2) {
      const SmallIsa isa = backend == Backend::Avx512 ? SmallIsa::Avx512 : SmallIsa::Avx2;
      const std::string asked = std::string("Backend=") + (isa == SmallIsa::Avx512 ? "avx512" : "avx2");
      // UnavailableError: the parameters are right, this machine (or build) cannot run them; test
      // suites skip such a kernel with the message.
      if (!small_kernels_built())
        throw plexus::UnavailableError("Kernel/cpu/Backend",
                                       asked +
                                           ": this build of the cpu kernel has no register kernels "
                                           "(x86-64 with GCC or Clang only); use Backend=auto");
      if (!cpu_has(isa))
        throw plexus::UnavailableError(
            "Kernel/cpu/Backend",
            asked + " needs a CPU with " + isa_name(isa) + ", which this one lacks (Backend=auto picks what it has)");
      registers_ = isa;
    } else if (backend == Backend::Auto) {
      registers_ = widest_small_isa();
    }
    rule_isa_ = registers_ ? registers_ : widest_small_isa();
#if PLEXUS_HAVE_LIBXSMM
    if (libxsmm_) init_libxsmm();
#endif
    threads_ = threads > 0 ? threads : omp_get_max_threads();
    if (threads_ < 1) threads_ = 1;
    if (dense_min_size_ != 0 && openblas_set_num_threads != nullptr) openblas_set_num_threads(1);
  }
  ~CpuKernel() override = default;

  std::string name() const override { return "cpu"; }
  int threads() const override { return threads_; }
  bool first_product_writes() const override { return true; }
  // By the blocks (DenseMinSize = -1): the rule of the instruction set that runs the block products,
  // and where the kernel computes them itself, dgemm's rate against them (dense_rule.hpp; the
  // crossovers are measured in docs/performance.md). The share is measured at most once, here, so
  // the same blocks get the same answer for the kernel's life.
  std::int64_t dense_min_size(const plexus::DenseBlocks& b) const override {
    if (dense_min_size_ != kDenseAuto) return dense_min_size_;
    const std::int64_t by_blocks = dense_size_by_blocks(b, rule_isa_);
    if (by_blocks == 0 || !own_products(b)) return by_blocks;
    return dense_size_for(b, rule_isa_, dgemm_share(), true);
  }
  void process(const StackEntry* stack, std::int64_t n, const double* a, const double* b, double* c) override {
    const Library lib = library();
    if (!registers_) return lib.stack(stack, n, a, b, c);
    // Runs of one shape: the register kernels take the small ones, the library the rest.
    std::int64_t i = 0;
    while (i < n) {
      if (const SmallRunFn fn = small_run_kernel(*registers_, stack[i].m, stack[i].n, stack[i].k)) {
        i += fn(stack + i, n - i, a, b, c);
      } else {
        const std::int64_t end = run_end(stack, i, n);
        lib.stack(stack + i, end - i, a, b, c);
        i = end;
      }
    }
  }

  double block_norm(const double* x, std::int64_t n) override {
    double s = 0.0;
#pragma omp simd reduction(+ : s)
    for (std::int64_t i = 0; i < n; ++i) s += x[i] * x[i];
    return std::sqrt(s);
  }

 private:
  // What takes the products the register kernels do not, with the calling thread's libxsmm cache
  // found once per process() (a thread-local lookup per run would cost on stacks of mixed shapes).
  struct Library {
#if PLEXUS_HAVE_LIBXSMM
    DispatchCache* cache = nullptr;  // libxsmm; null: dgemm
#endif
    void stack(const StackEntry* s, std::int64_t n, const double* a, const double* b, double* c) const {
#if PLEXUS_HAVE_LIBXSMM
      if (cache != nullptr) return xsmm_stack(*cache, s, n, a, b, c);
#endif
      for (std::int64_t i = 0; i < n; ++i) {
        const StackEntry& e = s[i];
        if (empty_product(e, c)) continue;
        blas_gemm(e, a, b, c);
      }
    }
  };
  Library library() const {
    Library lib;
#if PLEXUS_HAVE_LIBXSMM
    if (libxsmm_) lib.cache = &thread_cache();
#endif
    return lib;
  }

  // Whether the kernel computes products of blocks of these mean sizes itself (the register kernels,
  // libxsmm) rather than dgemm.
  bool own_products(const plexus::DenseBlocks& b) const {
    const auto small = static_cast<double>(kSmallMax);
    if (registers_ && b.rows <= small && b.cols <= small && b.inner <= small) return true;
    return libxsmm_ && b.rows * b.cols * b.inner <= static_cast<double>(kMaxXsmmVolume);
  }
  // DgemmShare as given, or measured on the first call (on the calling thread: core asks from one).
  double dgemm_share() const {
    std::call_once(share_once_, [this] {
      if (dgemm_share_ != kShareMeasured) {
        share_ = dgemm_share_;
        return;
      }
      // process() leaves the kernel as it was: measuring it changes nothing the caller can see.
      share_ = measure_dgemm_share(*const_cast<CpuKernel*>(this));
      const char* core = openblas_get_corename != nullptr ? openblas_get_corename() : nullptr;
      const std::string blas = core != nullptr ? std::string("OpenBLAS's ") + core + " kernels" : "the BLAS";
      plexus::log().debug("cpu kernel: dgemm ({}) runs at {:.2f} of the block products' rate (DgemmShare)", blas,
                          share_);
      if (share_ < kSlowDgemmShare)
        plexus::log().info(
            "cpu kernel: dgemm ({}) runs at {:.2f} of the block products' rate: dense ticks only for small blocks "
            "(Kernel/cpu/DgemmShare; docs/user-guide.md, \"dgemm slower than the block products\")",
            blas, share_);
    });
    return share_;
  }

  bool libxsmm_;                       // libxsmm (else dgemm) takes the products the register kernels do not
  std::int64_t dense_min_size_;        // dense ticks from this size on go dense (0: none; -1: by the blocks)
  double dgemm_share_;                 // DgemmShare: given (> 0), or -1: measured when first needed
  mutable std::once_flag share_once_;  // dgemm_share(): share_ set
  mutable double share_ = 1;
  std::optional<SmallIsa> registers_;  // register kernels for blocks of up to kSmallMax, in this set (none: off)
  std::optional<SmallIsa> rule_isa_;   // whose rule DenseMinSize = -1 follows (none: AVX-512F's)
  int threads_ = 1;
};

Backend parse_backend(const std::string& s) {
  if (s == "auto") return Backend::Auto;
  if (s == "avx512") return Backend::Avx512;
  if (s == "avx2") return Backend::Avx2;
  if (s == "libxsmm") return Backend::Libxsmm;
  if (s == "blas") return Backend::Blas;
  throw plexus::InputError("Kernel/cpu/Backend",
                           "unknown backend '" + s + "' (valid: auto, avx512, avx2, libxsmm, blas)");
}

plexus::ParameterListPtr valid_parameters() {
  auto valid = Teuchos::rcp(new plexus::ParameterList("cpu"));
  plexus::declare_int(*valid, "Threads", 0, "OpenMP threads that own whole C block rows (0: omp_get_max_threads())", 0,
                      4096);
  // The same text on every machine (parameter files echo it); the kernel's summary says what this
  // one runs.
  const std::string rest = kHaveLibxsmm ? "libxsmm (built in) for other shapes up to 64^3, dgemm beyond"
                                        : "dgemm for other shapes (libxsmm not built in)";
  plexus::declare_choice(
      *valid, "Backend", "auto", {"auto", "avx512", "avx2", "libxsmm", "blas"},
      "how small products are computed. auto: register kernels for blocks of up to 8 x 8 x 8 in the widest of "
      "AVX-512F and AVX2 the CPU has (none on other CPUs), " +
          rest + "; avx512, avx2: the register kernels in that set (refused on a CPU without it), " + rest +
          "; libxsmm: libxsmm JIT kernels up to 64^3, dgemm beyond; blas: dgemm for every product");
  plexus::declare_int(
      *valid, "DenseMinSize", static_cast<int>(kDenseAuto),
      "a tick whose panels are dense (every A row has blocks in the same columns, every B row among them blocks in the "
      "same columns; with filtering, only where it would drop none of the tick's products) whose rows per thread m "
      "(its rows M over the product's threads, or over its block rows where fewer), columns N and inner size K have "
      "a harmonic mean 3/(1/m+1/N+1/K) of at least this is computed as one dgemm per strip of about 512 C columns on "
      "dense copies of the panels, instead of one "
      "small product per block (the report's dense_ticks counts them). -1 (the default): by the tick's blocks and the "
      "instruction set of the block products (Backend's, else the CPU's widest): under AVX-512F, 36 times the "
      "blocks' mean size (harmonic mean of their mean rows, columns and inner size) where their mean rows are a "
      "whole multiple of 8, 30 times otherwise (blocks of 32 from 1152, of 23 from 690, of 6 from 180); under AVX2, "
      "36 times where the mean rows are a whole multiple of 4 above 8, otherwise from 144 (blocks of 32 from 1152, "
      "of 23 and of 6 from 144); where dgemm is slow (DgemmShare below 0.6), blocks whose products the kernel runs "
      "itself never from a mean size of 20, and with mean rows a whole multiple of 8 from 320 times it (blocks of 8 "
      "from 2560). Below, the copies cost more than dgemm gains (docs/performance.md). 0: never (and "
      "OpenBLAS's threads are left alone; otherwise OpenBLAS is set to one thread per caller: the kernel's threads "
      "are its parallelism); 1: every dense tick; a size: from that size on, whatever the blocks",
      static_cast<int>(kDenseAuto), 1 << 30);
  plexus::declare_double(
      *valid, "DgemmShare", kShareMeasured,
      "how fast the BLAS's dgemm runs against the kernel's own block products, for DenseMinSize = -1: dgemm's rate "
      "over theirs. -1 (the default): measured once, the first time a tick's blocks could go dense (dgemm of 256^3 "
      "against 4 x 4 by 4 x 4 blocks of 32 in cache, a few milliseconds; about 1 on the machines the rule was "
      "measured on, 0.4 to 0.5 where OpenBLAS runs AVX2 kernels on an AVX-512 CPU whose AVX-512 is full speed). "
      "Below 0.6 dense ticks are kept to small blocks. A positive value is taken as given: every run then follows "
      "the same rule, which a measurement on a busy machine may not",
      kShareMeasured, 1e6);
  return valid;
}

std::unique_ptr<plexus::Kernel> make_kernel(const plexus::ParameterList& p) {
  const int threads = p.isParameter("Threads") ? p.get<int>("Threads") : 0;
  const std::string backend = p.isParameter("Backend") ? p.get<std::string>("Backend") : std::string("auto");
  const int dense_min = p.isParameter("DenseMinSize") ? p.get<int>("DenseMinSize") : static_cast<int>(kDenseAuto);
  const double share = p.isParameter("DgemmShare") ? p.get<double>("DgemmShare") : kShareMeasured;
  return std::make_unique<CpuKernel>(threads, parse_backend(backend), dense_min, share);
}

const plexus::PluginDescriptor& describe() {
  static const plexus::PluginDescriptor descriptor = [] {
    plexus::PluginDescriptor d;
    d.name = "kernels_cpu";
    d.version = "0.1.0";
    plexus::ComponentDescriptor k;
    k.kind = plexus::ComponentKind::Kernel;
    k.name = "cpu";
    const std::optional<SmallIsa> widest = widest_small_isa();
    k.summary = std::string("CPU stacks of small products: ") +
                (widest ? std::string("register kernels (") + isa_name(*widest) + ") for blocks up to 8, " : "") +
                (kHaveLibxsmm ? "libxsmm JIT kernels, BLAS dgemm fallback" : "BLAS dgemm") +
                "; dense ticks as dgemm; OpenMP threads own whole C block rows";
    k.valid_parameters = valid_parameters;
    k.make_kernel = make_kernel;
    d.components.push_back(std::move(k));
    return d;
  }();
  return descriptor;
}

}  // namespace plexus_kernels_cpu

PLEXUS_PLUGIN(plexus_kernels_cpu::describe)
