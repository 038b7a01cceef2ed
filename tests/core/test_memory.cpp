#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <new>
#include <sstream>
#include <string>

#include "plexus/memory.hpp"

using namespace plexus;

TEST(Memory, TracksCurrentAndPeakPerCategory) {
  using memory::Category;
  const auto base = memory::current(Category::Solver);
  memory::reset_peak(Category::Solver);
  {
    SolverArray<double> a(1000);
    EXPECT_EQ(memory::current(Category::Solver), base + 8000);
    {
      SolverArray<double> b(500);
      EXPECT_EQ(memory::current(Category::Solver), base + 12000);
    }
    EXPECT_EQ(memory::current(Category::Solver), base + 8000);
  }
  EXPECT_EQ(memory::current(Category::Solver), base);
  EXPECT_EQ(memory::peak(Category::Solver), base + 12000);
  memory::reset_peak(Category::Solver);
  EXPECT_EQ(memory::peak(Category::Solver), base);
}

TEST(Memory, DeviceCategoriesCountInTheDeviceSpaceOnly) {
  using memory::Category;
  EXPECT_EQ(memory::space_of(Category::DeviceMatrix), MemorySpace::Device);
  EXPECT_EQ(memory::space_of(Category::DeviceBuffer), MemorySpace::Device);
  for (Category c : {Category::Matrix, Category::CommBuffer, Category::Solver, Category::Other})
    EXPECT_EQ(memory::space_of(c), MemorySpace::Host) << memory::category_name(c);
  const auto host = memory::current_total(), device = memory::current_total(MemorySpace::Device);
  memory::reset_peak_total(MemorySpace::Device);
  memory::on_allocate(Category::DeviceMatrix, 4096);  // as a device backend counts its cudaMalloc
  memory::on_allocate(Category::DeviceBuffer, 1024);
  EXPECT_EQ(memory::current_total(MemorySpace::Device), device + 5120);
  EXPECT_EQ(memory::current_total(), host) << "device bytes are not host bytes";
  memory::on_release(Category::DeviceBuffer, 1024);
  memory::on_release(Category::DeviceMatrix, 4096);
  EXPECT_EQ(memory::current_total(MemorySpace::Device), device);
  EXPECT_EQ(memory::peak_total(MemorySpace::Device), device + 5120);
  EXPECT_EQ(memory::peak(Category::DeviceMatrix) >= 4096, true);
  EXPECT_STREQ(memory::category_name(Category::DeviceMatrix), "device-matrix");
  EXPECT_STREQ(memory_space_name(MemorySpace::Device), "device");
}

TEST(Memory, PoolReusesLargeBlocksAndRespectsItsLimit) {
  using memory::Category;
  memory::trim();
  const auto limit = memory::pool_limit();
  memory::set_pool_limit(std::int64_t{64} << 20);
  const std::size_t big = std::size_t{3} << 20;
  const double* first = nullptr;
  {
    CommBuffer<double> a(big / sizeof(double));
    first = a.data();
  }
  EXPECT_EQ(memory::pooled_bytes(), static_cast<std::int64_t>(big));
  {
    // A slightly smaller request is served by the pooled block; the pool is then empty.
    CommBuffer<double> b(big / sizeof(double) - 1000);
    EXPECT_EQ(b.data(), first);
    EXPECT_EQ(memory::pooled_bytes(), 0);
    EXPECT_EQ(memory::current(Category::CommBuffer), static_cast<std::int64_t>(big - 8000));
  }
  // A block more than twice the request is not used for it.
  {
    CommBuffer<double> c((big / 2 - 8) / sizeof(double));
    EXPECT_NE(c.data(), first);
  }
  memory::set_pool_limit(std::int64_t{2} << 20);  // below the pooled block: it is freed
  EXPECT_LE(memory::pooled_bytes(), std::int64_t{2} << 20);
  memory::trim();
  EXPECT_EQ(memory::pooled_bytes(), 0);
  memory::set_pool_limit(limit);
}

// A block the pool makes is rounded up to a size class (a quarter of the power of two below the
// request), so that requests that grow a little from one use to the next (an iteration whose
// matrices fill in) get the block an earlier one left instead of fresh pages.
TEST(Memory, PoolBlocksAreMadeInSizeClassesSoThatSlightlyLargerRequestsReuseThem) {
  using memory::Category;
  memory::trim();
  const auto limit = memory::pool_limit();
  memory::set_pool_limit(std::int64_t{64} << 20);
  const std::size_t asked = 6350976;  // as in a filtered sign solve; its class: 7 MiB
  const std::size_t cls = std::size_t{7} << 20;
  const double* first = nullptr;
  {
    CommBuffer<double> a(asked / sizeof(double));
    first = a.data();
    EXPECT_EQ(memory::current(Category::CommBuffer), static_cast<std::int64_t>(asked));  // the bytes asked for
  }
  EXPECT_EQ(memory::pooled_bytes(), static_cast<std::int64_t>(cls));
  for (const std::size_t next : {std::size_t{6932736}, cls}) {  // larger requests, up to the class
    CommBuffer<double> b(next / sizeof(double));
    EXPECT_EQ(b.data(), first) << next;
    EXPECT_EQ(memory::pooled_bytes(), 0);
  }
  {
    CommBuffer<double> c(cls / sizeof(double) + 1);  // beyond it: another block
    EXPECT_NE(c.data(), first);
  }
  // A size a class holds exactly (a power of two, or a quarter step above one) is not rounded.
  memory::trim();
  for (const std::size_t exact : {std::size_t{1} << 20, std::size_t{5} << 20, std::size_t{160} << 10}) {
    { CommBuffer<char> d(exact); }
    EXPECT_EQ(memory::pooled_bytes(), static_cast<std::int64_t>(exact)) << exact;
    memory::trim();
  }
  memory::set_pool_limit(limit);
}

// A request larger than any object fails with std::bad_alloc. libstdc++ 12's operator new with the
// 2 MiB alignment of large blocks returned a small block for SIZE_MAX - 4096 bytes (its rounding
// to the alignment wrapped round), and rounding up to a size class would wrap round too.
TEST(Memory, ARequestLargerThanAnyObjectThrowsBadAlloc) {
  const std::int64_t before = memory::current(memory::Category::Other);
  for (const std::size_t huge : {std::numeric_limits<std::size_t>::max() - 4096,
                                 static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max()) + 1})
    EXPECT_THROW(memory::allocate(memory::Category::Other, huge), std::bad_alloc) << huge;
  EXPECT_EQ(memory::current(memory::Category::Other), before);
}

// Mid-size blocks (from kPoolMinBytes on) are pooled too: a multiply's temporaries of a few
// hundred KiB, freed and asked for again by the next multiply, come back from the pool instead of
// fragmenting malloc's heap. The counters count the bytes asked for, never a pooled block's slack,
// so current and peak still mean live bytes.
TEST(Memory, PoolServesMidSizeBlocksAndCountsOnlyTheBytesAskedFor) {
  using memory::Category;
  memory::trim();
  const auto limit = memory::pool_limit();
  memory::set_pool_limit(std::int64_t{64} << 20);
  const std::size_t mid = std::size_t{160} << 10;  // a stack buffer of the local multiply
  ASSERT_GE(mid, memory::kPoolMinBytes);
  ASSERT_LT(mid, std::size_t{1} << 20);
  const std::int64_t base = memory::current(Category::Other);
  const void* first = nullptr;
  {
    memory::vector<char, Category::Other> a(mid);
    first = a.data();
  }
  EXPECT_EQ(memory::pooled_bytes(), static_cast<std::int64_t>(mid));
  EXPECT_EQ(memory::current(Category::Other), base);
  memory::reset_peak(Category::Other);
  {
    // A smaller request within a factor two gets the pooled block; only its own bytes count.
    memory::vector<char, Category::Other> b(mid - 4096);
    EXPECT_EQ(static_cast<const void*>(b.data()), first);
    EXPECT_EQ(memory::pooled_bytes(), 0);
    EXPECT_EQ(memory::current(Category::Other), base + static_cast<std::int64_t>(mid - 4096));
  }
  EXPECT_EQ(memory::peak(Category::Other), base + static_cast<std::int64_t>(mid - 4096));
  // The block keeps its real size in the pool: the full size is reusable again.
  EXPECT_EQ(memory::pooled_bytes(), static_cast<std::int64_t>(mid));
  {
    memory::vector<char, Category::Other> c(mid);
    EXPECT_EQ(static_cast<const void*>(c.data()), first);
  }
  // Below kPoolMinBytes malloc serves and takes back the block: the pool does not change.
  {
    memory::vector<char, Category::Other> small(memory::kPoolMinBytes - 64);
    EXPECT_EQ(memory::pooled_bytes(), static_cast<std::int64_t>(mid));
  }
  EXPECT_EQ(memory::pooled_bytes(), static_cast<std::int64_t>(mid));
  EXPECT_EQ(memory::current(Category::Other), base);
  memory::trim();
  EXPECT_EQ(memory::pooled_bytes(), 0);
  memory::set_pool_limit(limit);
}

namespace {
// The VmFlags line of the mapping that holds `p` in /proc/self/smaps ("" if none is found).
std::string vm_flags_of(const void* p) {
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= at && at < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line + " ";
    }
  }
  return "";
}
}  // namespace

// Large blocks start on a 2 MiB boundary and, while huge_pages() is on, are marked for huge pages
// (the kernel's "hg" flag of their mapping in /proc/self/smaps); blocks below kHugePageMinBytes
// and blocks allocated with huge pages off are not marked (counted by huge_page_blocks(): the
// mapping's flag would not tell, since the mark stays with memory that malloc may hand out again).
TEST(Memory, LargeBlocksAskForHugePagesWhileSwitchedOn) {
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  if (!thp) GTEST_SKIP() << "this kernel has no transparent huge pages";
  {  // a sandbox may refuse the call itself
    const std::size_t probe = std::size_t{4} << 20;
    void* p = ::mmap(nullptr, probe, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    const int refused = ::madvise(p, probe, MADV_HUGEPAGE);
    ::munmap(p, probe);
    if (refused != 0) GTEST_SKIP() << "madvise(MADV_HUGEPAGE) is refused here";
  }
  const bool was = memory::huge_pages();
  memory::trim();
  const std::size_t big = memory::kHugePageMinBytes + (std::size_t{1} << 20);
  memory::set_huge_pages(true);
  {
    const std::int64_t marked = memory::huge_page_blocks();
    MatrixData on(big / sizeof(double));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(on.data()) % (std::uintptr_t{2} << 20), 0u);
    EXPECT_EQ(memory::huge_page_blocks(), marked + 1);
    const std::string flags = vm_flags_of(on.data());
    if (!flags.empty()) {  // smaps with VmFlags: the mapping carries the mark
      EXPECT_NE(flags.find(" hg "), std::string::npos) << flags;
    }
    // 3.5 MiB (its own size class: one just below 4 MiB would be made a 4 MiB block, and marked).
    MatrixData below((memory::kHugePageMinBytes - (std::size_t{512} << 10)) / sizeof(double));
    EXPECT_EQ(memory::huge_page_blocks(), marked + 1);
  }
  memory::trim();  // the next block is a fresh one
  memory::set_huge_pages(false);
  {
    const std::int64_t marked = memory::huge_page_blocks();
    MatrixData off(big / sizeof(double));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(off.data()) % (std::uintptr_t{2} << 20), 0u);
    EXPECT_EQ(memory::huge_page_blocks(), marked);
  }
  memory::trim();
  memory::set_huge_pages(was);
}

TEST(Memory, HugePageShareOfTheMappingThatHoldsAnAddress) {
  // Three mappings as /proc/self/smaps shows them (fields abridged): 4 KB pages, a shared mapping
  // on a huge-page tmpfs, a hugetlbfs one.
  const std::string smaps =
      "55d0a0000000-55d0a0100000 rw-p 00000000 00:00 0 [heap]\n"
      "Size:               1024 kB\n"
      "Rss:                 512 kB\n"
      "AnonHugePages:         0 kB\n"
      "ShmemPmdMapped:        0 kB\n"
      "VmFlags: rd wr mr mw me ac\n"
      "7f0000000000-7f0000f70000 rw-s 00000000 00:27 3 /mnt/hshm/osc_sm.vm.1 (deleted)\n"
      "Size:              15808 kB\n"
      "Rss:               15808 kB\n"
      "AnonHugePages:         0 kB\n"
      "ShmemPmdMapped:    14336 kB\n"
      "FilePmdMapped:         0 kB\n"
      "7f1000000000-7f1000400000 rw-s 00000000 00:30 9 /dev/hugepages/x\n"
      "Size:               4096 kB\n"
      "Rss:                   0 kB\n"
      "Shared_Hugetlb:     4096 kB\n"
      "Private_Hugetlb:       0 kB\n"
      "7f2000000000-7f2000001000 r--p 00000000 00:00 0\n"
      "Size:                  4 kB\n"
      "Rss:                   0 kB\n";
  EXPECT_EQ(memory::huge_page_share(smaps, 0x55d0a0000000u), 0.0);
  EXPECT_DOUBLE_EQ(memory::huge_page_share(smaps, 0x7f0000000000u + 4096), 14336.0 / 15808.0);
  EXPECT_EQ(memory::huge_page_share(smaps, 0x7f1000000000u), 1.0);
  // The end is not part of a mapping; an address outside every mapping, or in one with nothing
  // resident, has no share.
  EXPECT_TRUE(std::isnan(memory::huge_page_share(smaps, 0x55d0a0100000u)));
  EXPECT_TRUE(std::isnan(memory::huge_page_share(smaps, 0x1000u)));
  EXPECT_TRUE(std::isnan(memory::huge_page_share(smaps, 0x7f2000000000u)));
  EXPECT_TRUE(std::isnan(memory::huge_page_share("", 0x1000u)));
  // This process's own stack is resident: a share the system tells, where it tells one.
  const double here = memory::huge_page_share(&smaps);
  if (std::ifstream("/proc/self/smaps").good()) {
    EXPECT_GE(here, 0.0);
    EXPECT_LE(here, 1.0);
  } else {
    EXPECT_TRUE(std::isnan(here));
  }
}
