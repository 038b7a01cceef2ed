#include "plexus/memory.hpp"

#include <atomic>

namespace plexus::memory {
namespace {

struct Counter {
  std::atomic<std::int64_t> current{0};
  std::atomic<std::int64_t> peak{0};
};

Counter g_counters[kCategories];
Counter g_total;

void raise_peak(std::atomic<std::int64_t>& peak, std::int64_t value) {
  std::int64_t old = peak.load(std::memory_order_relaxed);
  while (value > old && !peak.compare_exchange_weak(old, value, std::memory_order_relaxed)) {
  }
}

}  // namespace

const char* category_name(Category c) {
  switch (c) {
    case Category::Matrix: return "matrix";
    case Category::CommBuffer: return "comm-buffer";
    case Category::Solver: return "solver";
    case Category::Other: return "other";
  }
  return "?";
}

void on_allocate(Category c, std::size_t bytes) noexcept {
  auto& k = g_counters[static_cast<int>(c)];
  const auto b = static_cast<std::int64_t>(bytes);
  raise_peak(k.peak, k.current.fetch_add(b, std::memory_order_relaxed) + b);
  raise_peak(g_total.peak, g_total.current.fetch_add(b, std::memory_order_relaxed) + b);
}

void on_release(Category c, std::size_t bytes) noexcept {
  const auto b = static_cast<std::int64_t>(bytes);
  g_counters[static_cast<int>(c)].current.fetch_sub(b, std::memory_order_relaxed);
  g_total.current.fetch_sub(b, std::memory_order_relaxed);
}

std::int64_t current(Category c) noexcept { return g_counters[static_cast<int>(c)].current.load(); }
std::int64_t current_total() noexcept { return g_total.current.load(); }
std::int64_t peak(Category c) noexcept { return g_counters[static_cast<int>(c)].peak.load(); }
std::int64_t peak_total() noexcept { return g_total.peak.load(); }
void reset_peak(Category c) noexcept {
  auto& k = g_counters[static_cast<int>(c)];
  k.peak.store(k.current.load());
}
void reset_peak_total() noexcept { g_total.peak.store(g_total.current.load()); }

}  // namespace plexus::memory
