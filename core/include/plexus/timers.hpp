#pragma once
// Named phase timers on Teuchos::TimeMonitor, and their summary over ranks (min, mean and max of
// every phase), the table Trilinos users know from TimeMonitor::summarize().
//
//   plexus::timers::Label combo("cannon/cpu");               // prefixes the names below
//   {
//     plexus::timers::Scoped t("multiply: run", &seconds);   // "cannon/cpu: multiply: run"
//     ...                                                    // `seconds` += this scope's time
//   }
//   auto stats = plexus::timers::statistics(MPI_COMM_WORLD); // collective
//   if (rank == 0) std::fputs(plexus::timers::table(stats).c_str(), stdout);
//
// Every timer is a Teuchos::Time registered with TimeMonitor (TimeMonitor::getNewCounter), so the
// statistics are Teuchos' own (TimeMonitor::computeGlobalTimerStatistics) and a program that also
// uses TimeMonitor directly sees plexus's timers in its TimeMonitor::summarize(). Plugins use this
// header, never TimeMonitor itself: a plugin built with hidden visibility would get a counter map
// of its own, which no statistics would see. No Teuchos type appears here.
//
// Threads. Teuchos timers are not thread-safe: only the thread that loaded libplexus_core (the
// program's main thread) times phases, and never inside an active OpenMP parallel region. A
// Scoped or Label made elsewhere (another thread, any thread of a parallel region) records
// nothing in Teuchos and changes no label; a Scoped there still measures its own seconds for its
// `add_seconds_to` and stop(), so per-thread figures can use it. Time the phase that encloses a
// parallel region on the main thread, outside the region.
//
// Times are wall-clock seconds (a scope's own seconds from std::chrono::steady_clock, on any thread
// and before MPI_Init too; the table's totals from the Teuchos timers, MPI_Wtime) and inclusive: a
// phase that contains other phases counts their time too. Each timed scope costs a map look-up of
// its (label-prefixed) name and a few clock readings, about a microsecond.
#include <mpi.h>

#include <string>
#include <string_view>
#include <vector>

namespace plexus::timers {

namespace detail {
struct Entry;  // one named Teuchos timer and how deep its scopes nest (timers.cpp)
}

/// Times the phase `name` (prefixed by the labels alive, see Label) from construction until
/// stop() or destruction. Counts one call. A Scoped of a name that is already running (recursion,
/// or a nested phase of the same name) adds no call and no time to that timer: only the outermost
/// scope of a name counts (Teuchos' Time::start would restart the running timer, and a nested
/// TimeMonitor would count a second call). With `add_seconds_to`, the scope's seconds are added
/// to *add_seconds_to when it stops (also when timers are disabled or the scope records nothing in
/// Teuchos); for the outermost scope they are the very interval Teuchos accumulates (across a
/// reset(), the scope's whole life, of which Teuchos keeps the part after the reset).
class Scoped {
 public:
  explicit Scoped(std::string_view name, double* add_seconds_to = nullptr);
  ~Scoped();
  Scoped(const Scoped&) = delete;
  Scoped& operator=(const Scoped&) = delete;
  /// Ends the phase now (the destructor then does nothing) and returns its seconds, which are also
  /// added to add_seconds_to. A second call returns the same seconds and adds nothing.
  double stop();
  /// Seconds since the phase began, or its seconds once stopped.
  double elapsed() const;

 private:
  detail::Entry* entry_ = nullptr;       // the timer this scope runs; null: it records nothing in Teuchos
  detail::Entry* depth_only_ = nullptr;  // a timer an outer scope runs: this one only counts its depth
  double* sink_ = nullptr;
  double start_ = 0;         // wall time at the start
  double total_before_ = 0;  // the Teuchos timer's total before this scope started it
  unsigned long epoch_ = 0;  // reset() count at the start: a reset in between voids total_before_
  double seconds_ = 0;
  bool stopped_ = false;
};

/// Prefixes the name of every timer started while it lives, on the main thread: Label("cannon/cpu")
/// makes Scoped("multiply: run") the timer "cannon/cpu: multiply: run". Labels nest (outer first,
/// joined by ": "); destroy them in reverse order of construction (as scopes do). An empty label
/// adds nothing. Elsewhere than on the main thread outside a parallel region, it does nothing.
class Label {
 public:
  explicit Label(std::string_view label);
  ~Label();
  Label(const Label&) = delete;
  Label& operator=(const Label&) = delete;

 private:
  long depth_ = -1;  // the label stack's size before this label; -1: it pushed nothing
};

/// The prefix the labels alive give a timer name now ("" without labels; else "a: b: ").
std::string current_prefix();

/// Switches timing on or off for the whole process (on by default). Off, a Scoped records nothing
/// in Teuchos (it still feeds add_seconds_to); scopes already running finish as they began.
void enabled(bool on);
/// Whether timing is on.
bool enabled();

/// Zeroes the time and call count of every TimeMonitor timer (the program calls it after its
/// warm-up runs). Local, no MPI. A phase running across the reset counts from the reset on, as one
/// call. Call it on the main thread outside a parallel region; elsewhere it does nothing.
void reset();

/// One timer over the ranks of a communicator: seconds are each rank's total over all its calls.
struct Stat {
  std::string name;
  double calls = 0;         ///< calls per rank, mean over ranks (a rank without the timer: 0)
  double min = 0;           ///< seconds, the least over ranks (0 if some rank never ran it)
  double mean = 0;          ///< seconds, the sum over ranks / ranks
  double max = 0;           ///< seconds, the most over ranks
  double calls_at_min = 0;  ///< calls of the rank with the least seconds (the lowest such rank)
  double calls_at_max = 0;  ///< calls of the rank with the most seconds (the lowest such rank)
};

/// Collective over `comm`: every timer that exists on ANY rank of comm (Teuchos' Union), with its
/// min/mean/max over ranks (TimeMonitor::computeGlobalTimerStatistics over a Teuchos::MpiComm on a
/// duplicate of comm, freed before return), ordered by name, identical on every rank. Timers with
/// no call on any rank since the last reset() are left out. A running timer contributes its
/// finished calls' time only: call it when no phase runs.
///
/// Every rank of comm must call it, on its main thread, outside parallel regions, all in the same
/// order as their other collectives on comm. Never call it during unwinding or from a destructor:
/// an error on one rank must end the job with a message (MPI_Abort at the program's top), and a
/// rank that reached this collective while another one unwinds would wait forever. Throws
/// plexus::Error (on this rank) if MPI or Teuchos fails.
std::vector<Stat> statistics(MPI_Comm comm);

/// The statistics as a table, one line per timer: name, calls, min, mean and max seconds, under a
/// header line; every line at most 100 columns (a longer name keeps its start and its end with
/// "..." between). Empty statistics give an empty string. Local.
std::string table(const std::vector<Stat>& stats);

/// The widest line table() writes.
inline constexpr int kTableWidth = 100;

}  // namespace plexus::timers
