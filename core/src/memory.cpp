#include "plexus/memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <charconv>
#include <cstddef>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <unordered_map>

namespace plexus::memory {
namespace {

struct Counter {
  std::atomic<std::int64_t> current{0};
  std::atomic<std::int64_t> peak{0};
};

Counter g_counters[kCategories];
Counter g_total[kSpaces];

Counter& total_of(Category c) { return g_total[static_cast<int>(space_of(c))]; }

void raise_peak(std::atomic<std::int64_t>& peak, std::int64_t value) {
  std::int64_t old = peak.load(std::memory_order_relaxed);
  while (value > old && !peak.compare_exchange_weak(old, value, std::memory_order_relaxed)) {
  }
}

constexpr std::align_val_t kAlign{64};

// Blocks from kHugePageMinBytes on start at a huge-page boundary (the alignment follows from the
// size alone, so that release() frees with the alignment allocate() used).
constexpr std::size_t kHugePage = std::size_t{2} << 20;
std::align_val_t alignment_of(std::size_t bytes) {
  return bytes >= kHugePageMinBytes ? std::align_val_t{kHugePage} : kAlign;
}
void* new_block(std::size_t bytes) { return ::operator new(bytes, alignment_of(bytes)); }
void delete_block(void* block, std::size_t bytes) { ::operator delete(block, alignment_of(bytes)); }

static_assert(kHugePageMinBytes >= kPoolMinBytes, "release() frees blocks below kPoolMinBytes with kAlign");

// -1: not read from the environment yet; else 0 or 1.
std::atomic<int> g_huge_pages{-1};
std::atomic<std::int64_t> g_huge_page_blocks{0};

// Asks the kernel for transparent huge pages over a fresh large block (a hint: a kernel built
// without THP refuses it, and one with THP switched off keeps the mark unused).
void advise_huge_pages(void* block, std::size_t bytes) {
#ifdef MADV_HUGEPAGE
  if (bytes >= kHugePageMinBytes && huge_pages() && ::madvise(block, bytes, MADV_HUGEPAGE) == 0)
    g_huge_page_blocks.fetch_add(1, std::memory_order_relaxed);
#else
  (void)block;
  (void)bytes;
#endif
}

// The size a fresh pool block gets for a request of `bytes`: rounded up to a quarter of the power
// of two below it (so at most a quarter more; pages of the slack are not touched until a later
// request uses them). Sizes that drift up from one multiply to the next, as in an iteration whose
// matrices fill in (6.35, 6.50, 6.78, 6.93, 7.06 MB in a filtered sign solve), then find the block
// an earlier one left, where blocks of the exact sizes missed each other and each miss faulted
// fresh pages in. That solve (216 model molecules, blocks of 6, FilterEps 1e-6, 4 KB pages)
// faulted in 57,000 pages before and 43,000 after; a second solve finds its blocks in the pool
// either way.
// (allocate() has refused requests beyond PTRDIFF_MAX: the sum cannot wrap round.)
std::size_t size_class(std::size_t bytes) {
  const std::size_t quarter = std::bit_floor(bytes) / 4;
  return (bytes + quarter - 1) / quarter * quarter;
}

// Freed blocks (of kPoolMinBytes or more) by their real size, and the real size of every such block in use.
struct Pool {
  std::mutex mutex;
  std::multimap<std::size_t, void*> free_blocks;
  std::unordered_map<void*, std::size_t> real_size;
  std::size_t pooled = 0;
  std::int64_t limit = -1;  // -1: not read from the environment yet

  std::int64_t effective_limit() {
    if (limit < 0) {
      if (const char* env = std::getenv("PLEXUS_MEMORY_POOL_MB"); env != nullptr && *env != '\0') {
        limit = std::max<std::int64_t>(0, std::atoll(env)) << 20;
      } else {
        const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
        limit = pages > 0 && page > 0 ? static_cast<std::int64_t>(pages) * page / 4 : std::int64_t{1} << 30;
      }
    }
    return limit;
  }
  // Frees pooled blocks, largest first, until at most `keep` bytes stay. Caller holds the mutex.
  void shrink_to(std::size_t keep) {
    while (pooled > keep && !free_blocks.empty()) {
      auto it = std::prev(free_blocks.end());
      pooled -= it->first;
      delete_block(it->second, it->first);
      free_blocks.erase(it);
    }
  }
};

Pool& pool() {
  static Pool* p = new Pool();  // never destroyed: blocks may be released during static destruction
  return *p;
}

}  // namespace

void* allocate(Category c, std::size_t bytes) {
  // No object is larger (the size of a difference of pointers). Beyond it libstdc++ 12's aligned
  // operator new rounds the size up to the alignment past SIZE_MAX and returns a small block
  // instead of failing (2 MiB alignment, SIZE_MAX - 4096 bytes: a pointer, no std::bad_alloc).
  if (bytes > static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max())) throw std::bad_alloc();
  if (bytes >= kPoolMinBytes) {
    Pool& p = pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    void* block = nullptr;
    std::size_t size = bytes;
    if (auto it = p.free_blocks.lower_bound(bytes); it != p.free_blocks.end() && it->first <= 2 * bytes) {
      block = it->second;
      size = it->first;
      p.pooled -= size;
      p.free_blocks.erase(it);
    } else {
      size = size_class(bytes);
      block = new_block(size);
      advise_huge_pages(block, size);
    }
    p.real_size[block] = size;
    on_allocate(c, bytes);
    return block;
  }
  void* block = ::operator new(bytes, kAlign);
  on_allocate(c, bytes);
  return block;
}

void release(Category c, void* block, std::size_t bytes) noexcept {
  if (block == nullptr) return;
  on_release(c, bytes);
  if (bytes >= kPoolMinBytes) {
    Pool& p = pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    auto it = p.real_size.find(block);
    const std::size_t size = it != p.real_size.end() ? it->second : bytes;
    if (it != p.real_size.end()) p.real_size.erase(it);
    const auto limit = static_cast<std::size_t>(p.effective_limit());
    if (size > limit) {
      delete_block(block, size);
      return;
    }
    try {
      p.free_blocks.emplace(size, block);
      p.pooled += size;
      p.shrink_to(limit);
    } catch (...) {
      delete_block(block, size);
    }
    return;
  }
  ::operator delete(block, kAlign);
}

bool huge_pages() noexcept {
  int on = g_huge_pages.load(std::memory_order_relaxed);
  if (on < 0) {
    const char* env = std::getenv("PLEXUS_HUGE_PAGES");
    const int from_env = env != nullptr && (std::string_view(env) == "0" || std::string_view(env) == "off") ? 0 : 1;
    // A set_huge_pages() in the meantime wins over the environment.
    on = g_huge_pages.compare_exchange_strong(on, from_env, std::memory_order_relaxed) ? from_env : on;
  }
  return on == 1;
}

std::int64_t huge_page_blocks() noexcept { return g_huge_page_blocks.load(std::memory_order_relaxed); }

namespace {

// The smaps lines of the mapping that holds an address, fed one at a time: a mapping starts with
// "lo-hi perms ..." (hexadecimal addresses), and its fields follow as "Name:   value kB" lines
// until the next mapping.
class SmapsShare {
 public:
  explicit SmapsShare(std::uintptr_t address) : address_(address) {}
  // false once the mapping asked about has ended (no more lines are needed).
  bool feed(std::string_view line) {
    const std::size_t dash = line.find('-'), space = line.find(' ');
    std::uintptr_t lo = 0, hi = 0;
    if (dash != std::string_view::npos && space != std::string_view::npos && dash < space &&
        number(line.substr(0, dash), lo, 16) && number(line.substr(dash + 1, space - dash - 1), hi, 16)) {
      if (found_) return false;
      in_ = found_ = lo <= address_ && address_ < hi;
      return true;
    }
    const std::size_t colon = line.find(':');
    if (!in_ || colon == std::string_view::npos) return true;
    const std::string_view name = line.substr(0, colon);
    std::string_view rest = line.substr(colon + 1);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    rest = rest.substr(0, rest.find(' '));  // the number before " kB"
    std::int64_t kb = 0;
    if (!number(rest, kb, 10)) return true;
    // Hugetlb pages are not in Rss; they are all huge.
    if (name == "Rss" || name == "Shared_Hugetlb" || name == "Private_Hugetlb") resident_ += kb;
    if (name == "AnonHugePages" || name == "ShmemPmdMapped" || name == "FilePmdMapped" || name == "Shared_Hugetlb" ||
        name == "Private_Hugetlb")
      huge_ += kb;
    return true;
  }
  double share() const {
    if (!found_ || resident_ <= 0) return std::numeric_limits<double>::quiet_NaN();
    return std::min(1.0, static_cast<double>(huge_) / static_cast<double>(resident_));
  }

 private:
  template <class T>
  static bool number(std::string_view t, T& v, int base) {
    const auto r = std::from_chars(t.data(), t.data() + t.size(), v, base);
    return !t.empty() && r.ec == std::errc() && r.ptr == t.data() + t.size();
  }
  std::uintptr_t address_;
  bool in_ = false, found_ = false;
  std::int64_t resident_ = 0, huge_ = 0;
};

}  // namespace

double huge_page_share(std::string_view smaps, std::uintptr_t address) {
  SmapsShare scan(address);
  while (!smaps.empty()) {
    const std::size_t eol = smaps.find('\n');
    if (!scan.feed(smaps.substr(0, eol))) break;
    smaps = eol == std::string_view::npos ? std::string_view() : smaps.substr(eol + 1);
  }
  return scan.share();
}

double huge_page_share(const void* address) {
  // Line by line, up to the mapping's end: the kernel builds an entry only when it is read, and
  // each walks its mapping's page tables.
  std::ifstream in("/proc/self/smaps");
  SmapsShare scan(reinterpret_cast<std::uintptr_t>(address));
  for (std::string line; std::getline(in, line);)
    if (!scan.feed(line)) break;
  return scan.share();
}

void set_huge_pages(bool on) noexcept { g_huge_pages.store(on ? 1 : 0, std::memory_order_relaxed); }

std::int64_t pooled_bytes() noexcept {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  return static_cast<std::int64_t>(p.pooled);
}

void set_pool_limit(std::int64_t bytes) noexcept {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.limit = std::max<std::int64_t>(0, bytes);
  p.shrink_to(static_cast<std::size_t>(p.limit));
}

std::int64_t pool_limit() noexcept {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  return p.effective_limit();
}

void trim() noexcept {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.shrink_to(0);
}

const char* category_name(Category c) {
  switch (c) {
    case Category::Matrix: return "matrix";
    case Category::CommBuffer: return "comm-buffer";
    case Category::Solver: return "solver";
    case Category::Other: return "other";
    case Category::DeviceMatrix: return "device-matrix";
    case Category::DeviceBuffer: return "device-buffer";
  }
  return "?";
}

MemorySpace space_of(Category c) noexcept {
  return c == Category::DeviceMatrix || c == Category::DeviceBuffer ? MemorySpace::Device : MemorySpace::Host;
}

void on_allocate(Category c, std::size_t bytes) noexcept {
  auto& k = g_counters[static_cast<int>(c)];
  const auto b = static_cast<std::int64_t>(bytes);
  raise_peak(k.peak, k.current.fetch_add(b, std::memory_order_relaxed) + b);
  Counter& total = total_of(c);
  raise_peak(total.peak, total.current.fetch_add(b, std::memory_order_relaxed) + b);
}

void on_release(Category c, std::size_t bytes) noexcept {
  const auto b = static_cast<std::int64_t>(bytes);
  g_counters[static_cast<int>(c)].current.fetch_sub(b, std::memory_order_relaxed);
  total_of(c).current.fetch_sub(b, std::memory_order_relaxed);
}

std::int64_t current(Category c) noexcept { return g_counters[static_cast<int>(c)].current.load(); }
std::int64_t current_total(MemorySpace s) noexcept { return g_total[static_cast<int>(s)].current.load(); }
std::int64_t peak(Category c) noexcept { return g_counters[static_cast<int>(c)].peak.load(); }
std::int64_t peak_total(MemorySpace s) noexcept { return g_total[static_cast<int>(s)].peak.load(); }
void reset_peak(Category c) noexcept {
  auto& k = g_counters[static_cast<int>(c)];
  k.peak.store(k.current.load());
}
void reset_peak_total(MemorySpace s) noexcept {
  Counter& total = g_total[static_cast<int>(s)];
  total.peak.store(total.current.load());
}

}  // namespace plexus::memory

namespace plexus {
const char* memory_space_name(MemorySpace space) { return space == MemorySpace::Host ? "host" : "device"; }
}  // namespace plexus
