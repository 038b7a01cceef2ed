#pragma once
// What the operating system charges on this machine, for plexus-bench's record: a system call,
// a switch between two processes on one core, and the first touch of fresh memory. Guests differ
// by an order of magnitude here (docs/performance.md, "What this guest charges for the operating
// system": 1.0 us a system call, 4.7 us a switch, 13.9 us a fresh 4 KB page on a paravirtualised
// guest), and these costs decide how much a job with more ranks than cores, or a library that
// allocates fresh memory every multiply, loses.
//
// measure_os_costs() forks a child that yields the core back and forth with its parent: call it
// before MPI_Init (MPI does not promise that fork works once it has started).
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>

#include "yardsticks.hpp"

namespace plexus::bench {

struct OsCosts {
  double syscall_us = NAN;           ///< getppid through syscall(2), best of 3
  double process_switch_us = NAN;    ///< two processes on one core handing it over by sched_yield, best of 3
  double fresh_page_us = NAN;        ///< first write to a fresh 4 KB page (huge pages refused), best of 3
  double fresh_huge_gb_per_s = NAN;  ///< first write to fresh memory that may take transparent huge pages
};

namespace os_costs_detail {

using yardsticks::Clock;
using yardsticks::seconds_since;

inline double syscall_seconds(int n) {
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) ::syscall(SYS_getppid);
  return seconds_since(t0) / n;
}

// Both processes on the first core this one may run on; each yields `n` times, so the core
// changes hands about 2n times. NaN where the child cannot be made or pinned.
inline double switch_seconds(int n) {
  cpu_set_t mine;
  if (::sched_getaffinity(0, sizeof mine, &mine) != 0) return NAN;
  int cpu = 0;
  while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &mine)) ++cpu;
  if (cpu == CPU_SETSIZE) return NAN;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (::sched_setaffinity(0, sizeof one, &one) != 0) return NAN;
  int ready[2];
  if (::pipe(ready) != 0) {
    ::sched_setaffinity(0, sizeof mine, &mine);
    return NAN;
  }
  const pid_t child = ::fork();
  if (child == 0) {  // inherits the one-core mask
    const char go = 1;
    if (::write(ready[1], &go, 1) != 1) ::_exit(1);
    for (int i = 0; i < n; ++i) ::sched_yield();
    ::_exit(0);
  }
  double seconds = NAN;
  if (child > 0) {
    char go = 0;
    if (::read(ready[0], &go, 1) == 1) {
      const auto t0 = Clock::now();
      for (int i = 0; i < n; ++i) ::sched_yield();
      int status = 0;
      ::waitpid(child, &status, 0);
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) seconds = seconds_since(t0) / (2.0 * n);
    } else {
      ::waitpid(child, nullptr, 0);
    }
  }
  ::close(ready[0]);
  ::close(ready[1]);
  ::sched_setaffinity(0, sizeof mine, &mine);
  return seconds;
}

// Seconds to write one byte into each 4 KB page of `bytes` of fresh memory; NaN if not mapped.
inline double first_touch_seconds(std::size_t bytes, bool huge) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NAN;
#ifdef MADV_HUGEPAGE
  ::madvise(p, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
#else
  (void)huge;
#endif
  volatile char* c = static_cast<char*>(p);
  const auto t0 = Clock::now();
  for (std::size_t i = 0; i < bytes; i += 4096) c[i] = 1;
  const double s = seconds_since(t0);
  ::munmap(p, bytes);
  return s;
}

}  // namespace os_costs_detail

/// About 0.3 s on a slow guest. Call before MPI_Init.
inline OsCosts measure_os_costs() {
  namespace d = os_costs_detail;
  constexpr std::size_t kSmall = std::size_t{8} << 20, kHuge = std::size_t{32} << 20;
  OsCosts o;
  double sys = INFINITY, sw = INFINITY, page = INFINITY, huge = INFINITY;
  for (int r = 0; r < 3; ++r) {
    sys = std::min(sys, d::syscall_seconds(10000));
    const double s = d::switch_seconds(5000);
    if (!std::isnan(s)) sw = std::min(sw, s);
    page = std::min(page, d::first_touch_seconds(kSmall, false) / static_cast<double>(kSmall / 4096));
    huge = std::min(huge, d::first_touch_seconds(kHuge, true));
  }
  o.syscall_us = sys * 1e6;
  o.process_switch_us = std::isinf(sw) ? NAN : sw * 1e6;
  o.fresh_page_us = std::isinf(page) ? NAN : page * 1e6;
  o.fresh_huge_gb_per_s = std::isinf(huge) ? NAN : static_cast<double>(kHuge) / huge / 1e9;
  return o;
}

}  // namespace plexus::bench
