#pragma once
// Memory tracker: every large allocation (matrix data, communication buffers, solver arrays) goes
// through TrackedAllocator, so current and peak bytes per rank are counted, never estimated.
// Device backends count what they hold in device memory under the device categories
// (on_allocate / on_release next to their own device allocations); totals are per memory space.
#include <cstddef>
#include <cstdint>
#include <new>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace plexus {
/// Where data lives: host memory, or the memory of an accelerator.
enum class MemorySpace : int { Host = 0, Device = 1 };
const char* memory_space_name(MemorySpace space);
}  // namespace plexus

namespace plexus::memory {

enum class Category : int {
  Matrix = 0,        ///< host: values and index of matrices and panels
  CommBuffer = 1,    ///< host: communication buffers
  Solver = 2,        ///< host: solver arrays
  Other = 3,         ///< host: anything else
  DeviceMatrix = 4,  ///< device: C accumulators and other matrix data held by a device backend
  DeviceBuffer = 5,  ///< device: staged panels and other transfer buffers
};
inline constexpr int kCategories = 6;
const char* category_name(Category c);
inline constexpr int kSpaces = 2;
MemorySpace space_of(Category c) noexcept;

void on_allocate(Category c, std::size_t bytes) noexcept;
void on_release(Category c, std::size_t bytes) noexcept;

/// Allocates `bytes` (64-byte aligned) and counts them under `c`. Blocks of kPoolMinBytes or more
/// come from a pool of freed blocks when one fits (up to twice the size asked for), so repeated
/// operations reuse memory that is already mapped instead of faulting fresh pages in every time,
/// and the temporaries of one multiply after another do not fragment malloc's heap (freed
/// mid-size blocks between long-lived small ones made a rank's RSS grow without bound).
/// A block the pool has to make is rounded up to a size class (at most a quarter more), so that a
/// slightly larger request later still finds it. The counters count the bytes asked for; the
/// slack of a larger pooled block is not counted.
void* allocate(Category c, std::size_t bytes);
/// Releases a block from allocate(); pooled-size blocks go back to the pool (within its limit).
void release(Category c, void* p, std::size_t bytes) noexcept;
inline constexpr std::size_t kPoolMinBytes = std::size_t{32} << 10;
/// Bytes of freed blocks kept for reuse (not part of current()).
std::int64_t pooled_bytes() noexcept;
/// Largest number of bytes the pool keeps. Default: PLEXUS_MEMORY_POOL_MB if set (0 disables the
/// pool), else a quarter of the physical memory.
void set_pool_limit(std::int64_t bytes) noexcept;
std::int64_t pool_limit() noexcept;
/// Returns every pooled block to the system.
void trim() noexcept;

/// Blocks from this size on (the size of the block made, after its size class) start at a 2 MiB boundary and, while
/// huge_pages() is on, are marked for transparent huge pages (madvise MADV_HUGEPAGE) when first allocated: one TLB
/// entry per 2 MiB of a large matrix instead of 512 (dense 32x32 blocks in plexus-bench: 3-5 % faster on one core;
/// docs/performance.md). Only a hint: a kernel built without THP refuses it, and one with THP set to `never` ignores
/// it. The mark stays with the memory after it is freed.
inline constexpr std::size_t kHugePageMinBytes = std::size_t{4} << 20;
/// Whether new large blocks are marked for huge pages. Default: on, unless PLEXUS_HUGE_PAGES is 0
/// or off. Blocks already allocated (pooled ones too) keep what they were given.
bool huge_pages() noexcept;
void set_huge_pages(bool on) noexcept;
/// How many blocks have been marked for huge pages so far (the kernel accepted the mark).
std::int64_t huge_page_blocks() noexcept;

/// The share of the resident memory of the mapping that holds `address` that lies on huge pages
/// (transparent ones, anonymous or shared, and file-backed ones; Linux's /proc/self/smaps), between
/// 0 and 1; NaN where no mapping holds it, none of it is resident, or the system does not say
/// (not Linux). Reads /proc/self/smaps up to that mapping (each entry walks its mapping's page
/// tables): for a diagnosis now and then, not for a loop.
double huge_page_share(const void* address);
/// The same, from the text of an smaps file (for tests).
double huge_page_share(std::string_view smaps, std::uintptr_t address);

/// Bytes currently held in a category (or all categories of a memory space).
std::int64_t current(Category c) noexcept;
std::int64_t current_total(MemorySpace s = MemorySpace::Host) noexcept;
/// Peak bytes since the last reset_peak (per category, and of the sum over a space's categories).
std::int64_t peak(Category c) noexcept;
std::int64_t peak_total(MemorySpace s = MemorySpace::Host) noexcept;
/// Sets the peak of a category (or of a space's total) to the current value.
void reset_peak(Category c) noexcept;
void reset_peak_total(MemorySpace s = MemorySpace::Host) noexcept;

/// Allocator of the tracked vectors. Elements are default-initialised: `resize(n)` leaves doubles
/// unset (for buffers that are overwritten anyway); `resize(n, 0.0)` zeroes them.
template <class T, Category C>
struct TrackedAllocator {
  using value_type = T;
  TrackedAllocator() noexcept = default;
  template <class U>
  TrackedAllocator(const TrackedAllocator<U, C>&) noexcept {}
  template <class U>
  struct rebind {
    using other = TrackedAllocator<U, C>;
  };
  T* allocate(std::size_t n) { return static_cast<T*>(memory::allocate(C, n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { memory::release(C, p, n * sizeof(T)); }
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  friend bool operator==(const TrackedAllocator&, const TrackedAllocator&) { return true; }
  friend bool operator!=(const TrackedAllocator&, const TrackedAllocator&) { return false; }
};

template <class T, Category C>
using vector = std::vector<T, TrackedAllocator<T, C>>;

}  // namespace plexus::memory

namespace plexus {
/// Matrix data (values of blocks): counted under Category::Matrix.
using MatrixData = memory::vector<double, memory::Category::Matrix>;
/// Matrix index (block coordinates, offsets): counted under Category::Matrix.
using IndexArray = memory::vector<std::int64_t, memory::Category::Matrix>;
/// Communication buffers: counted under Category::CommBuffer.
template <class T>
using CommBuffer = memory::vector<T, memory::Category::CommBuffer>;
/// Solver arrays: counted under Category::Solver.
template <class T>
using SolverArray = memory::vector<T, memory::Category::Solver>;
}  // namespace plexus
