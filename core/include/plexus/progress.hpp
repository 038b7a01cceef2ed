#pragma once
// Progress of this rank, for a watchdog that ends a job whose ranks stopped making progress, the
// test hook that injects a fault mid-operation, and the progress line a user sees on long runs.
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
#include <vector>

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

// ---- the progress line of long runs ------------------------------------------------------------
//
// What a long job is doing, for its user: "round 2/3 > multiply 4/10: 45%, 12 s elapsed, about
// 15 s left", by rank 0 of MPI_COMM_WORLD only. Stages nest (the program's rounds, a solver's
// repetitions or iterations inside); each says how many steps it has and how many are done, and
// the fraction done is that of the outermost stage, refined by the inner ones. Nothing is shown
// for the first 2 s; then, on standard error: when it is a terminal, a bar redrawn in place (\r,
// at most 5 times a second) that log lines clear before they are written and that is gone when
// the outermost stage ends (before a table); otherwise a plain line at most every 5 s. (Open
// MPI's mpiexec gives a rank's standard error a pipe, so under it the lines are plain; its
// standard output is a pseudo-terminal even when mpiexec's own is a file, so it cannot tell.) Shown only when
// set_line_enabled(true) (the program: unless
// --no-progress or a log level above info). PLEXUS_TEST_PROGRESS=1 (tests): no delay and no
// interval, plain lines.

/// Turns the line on or off for this process (off by default).
void set_line_enabled(bool enabled);

/// One stage of the progress line while it lives. `total` steps (0 or less: unknown, e.g. an
/// iteration that ends when it converges: "sign iteration 12"); `what` names a step.
class Stage {
 public:
  Stage(std::string what, int total);
  ~Stage();
  Stage(const Stage&) = delete;
  Stage& operator=(const Stage&) = delete;
  /// `steps` steps of this stage are finished (the line may be redrawn now).
  void done(int steps);

 private:
  std::size_t level_;
};

/// A stage's state, for line_text.
struct StageState {
  std::string what;
  int total = 0;  ///< 0: unknown
  int done = 0;
};
/// The fraction of the work done, in [0, 1]: the outermost stage's, refined by the inner ones (an
/// inner stage of unknown total adds nothing); -1 when the outermost total is unknown.
double fraction_done(const std::vector<StageState>& stages);
/// The text of the line (without bar): "round 2/3 > multiply 4/10: 45%, 12 s elapsed, about 15 s
/// left"; the rest is estimated as elapsed x (1 - f) / f once a fraction f > 0 is done.
std::string line_text(const std::vector<StageState>& stages, double elapsed_seconds);
/// Whether a line is due: `since_start` seconds after the first stage began, `since_last` after
/// the last line (negative: none yet), on a terminal or not.
bool line_due(double since_start, double since_last, bool terminal);

/// Clears the bar from the terminal if one is shown (the log calls it before writing a line).
void clear_line();

/// True while the calling thread is unwinding the stack for an exception. Destructors that would
/// make a collective call (MPI_Win_free, MPI_Comm_free, a parallel H5Fclose) check it and leave
/// the resource to the end of the process instead: the other ranks may never join that call, and
/// the error must reach the code that ends the job.
bool unwinding();

}  // namespace plexus::progress
