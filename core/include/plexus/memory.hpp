#pragma once
// Memory tracker: every large allocation (matrix data, communication buffers, solver arrays) goes
// through TrackedAllocator, so current and peak bytes per rank are counted, never estimated.
#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace plexus::memory {

enum class Category : int { Matrix = 0, CommBuffer = 1, Solver = 2, Other = 3 };
inline constexpr int kCategories = 4;
const char* category_name(Category c);

void on_allocate(Category c, std::size_t bytes) noexcept;
void on_release(Category c, std::size_t bytes) noexcept;

/// Bytes currently held in a category (or all categories).
std::int64_t current(Category c) noexcept;
std::int64_t current_total() noexcept;
/// Peak bytes since the last reset_peak (per category, and of the sum over categories).
std::int64_t peak(Category c) noexcept;
std::int64_t peak_total() noexcept;
/// Sets the peak of a category (and the total peak) to the current value.
void reset_peak(Category c) noexcept;
void reset_peak_total() noexcept;

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
  T* allocate(std::size_t n) {
    auto* p = static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{64}));
    on_allocate(C, n * sizeof(T));
    return p;
  }
  void deallocate(T* p, std::size_t n) noexcept {
    on_release(C, n * sizeof(T));
    ::operator delete(p, std::align_val_t{64});
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
/// Communication buffers: counted under Category::CommBuffer.
template <class T>
using CommBuffer = memory::vector<T, memory::Category::CommBuffer>;
/// Solver arrays: counted under Category::Solver.
template <class T>
using SolverArray = memory::vector<T, memory::Category::Solver>;
}  // namespace plexus
