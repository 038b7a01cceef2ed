#pragma once
// Progress of this rank, for a watchdog that ends a job whose ranks stopped making progress, and
// the test hook that injects a fault mid-operation.
//
// A progress point is passed at every checked MPI call (mpi::check) and at every batch of local
// products; an Operation names what the rank is doing (e.g. "multiply cannon/cpu"). Both are
// cheap: a relaxed atomic increment, and a short locked string copy per operation.
//
// Fault injection (tests only): PLEXUS_TEST_FAULT=R:N[:WHERE[:ACTION]] makes MPI_COMM_WORLD rank R
// throw plexus::Error at its N-th progress point (counting only points whose name contains WHERE,
// when not empty), e.g. PLEXUS_TEST_FAULT=1:40:MPI_Rget fails the 40th MPI_Rget of rank 1 (after
// the call). ACTION `stop` makes the rank stop itself there instead (SIGSTOP, as kill -STOP does):
// the watchdog of the other ranks must then end the job.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace plexus::progress {

/// Passes a progress point named `where` (a string literal or other static text).
void point(const char* where);

/// Test hook, as PLEXUS_TEST_FAULT but for the calling process only and armed now: the `at`-th
/// progress point from now (counting only points whose name contains `where`, when not empty)
/// throws plexus::Error. at = 0 disarms it.
void inject_fault(std::uint64_t at, const std::string& where = "");

/// Points passed so far by this process (all threads).
std::uint64_t count();

/// What this rank is doing now, for the watchdog's message ("" when outside any operation).
std::string current_operation();

/// Names the operation this rank is in while it lives; operations nest (the innermost is told,
/// with its enclosing ones).
class Operation {
 public:
  explicit Operation(std::string what);
  ~Operation();
  Operation(const Operation&) = delete;
  Operation& operator=(const Operation&) = delete;

 private:
  std::string previous_;
};

/// Watches this rank's progress from a thread of its own: when no progress point has been passed
/// for `timeout_seconds`, it calls `on_stall` with a message naming the operation and the last
/// point (on_stall must end the process, e.g. MPI_Abort). Stopping it (destructor) joins the
/// thread; it calls no MPI function itself. A timeout of 0 or less watches nothing.
class Watchdog {
 public:
  Watchdog(double timeout_seconds, std::function<void(const std::string&)> on_stall);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  void watch();

  double timeout_;
  std::function<void(const std::string&)> on_stall_;
  std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread thread_;
};

/// True while the calling thread is unwinding the stack for an exception. Destructors that would
/// make a collective call (MPI_Win_free, MPI_Comm_free, a parallel H5Fclose) check it and leave
/// the resource to the end of the process instead: the other ranks may never join that call, and
/// the error must reach the code that ends the job.
bool unwinding();

}  // namespace plexus::progress
