#include "plexus/timers.hpp"

#include <omp.h>
#include <spdlog/fmt/fmt.h>

#include <Teuchos_DefaultMpiComm.hpp>
#include <Teuchos_Time.hpp>
#include <Teuchos_TimeMonitor.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <thread>
#include <unordered_map>

#include "plexus/error.hpp"
#include "plexus/mpi.hpp"

namespace plexus::timers {

namespace detail {
struct Entry {
  Teuchos::RCP<Teuchos::Time> time;
  int depth = 0;  // scopes of this name running (only the outermost runs the Teuchos timer)
};
}  // namespace detail

namespace {

// The thread that loaded libplexus_core: the program's main thread (the library is linked, not
// opened later from another thread).
const std::thread::id main_thread = std::this_thread::get_id();

// Written by the main thread only (see usable()); `on` is also read by others (enabled()).
struct State {
  std::unordered_map<std::string, detail::Entry> entries;  // references stay valid on rehash
  std::vector<std::string> labels;
  std::string prefix;  // the labels joined, each followed by ": "
  std::string full_name;  // Scoped's buffer for the prefix and its name
  std::atomic<bool> on{true};
  unsigned long epoch = 0;  // reset() count
};

State& state() {
  static State s;
  return s;
}

bool usable() { return std::this_thread::get_id() == main_thread && !omp_in_parallel(); }

void rebuild_prefix(State& s) {
  s.prefix.clear();
  for (const auto& l : s.labels) s.prefix += l + ": ";
}

}  // namespace

// A scope's own clock: steady wall-clock seconds on any thread, before MPI_Init too (Teuchos'
// wallTime is process CPU time without MPI, and MPI_Wtime may not be called from other threads
// under MPI_THREAD_FUNNELED). The Teuchos timers keep their own clock for their totals.
static double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// ---- Scoped ----------------------------------------------------------------------------------

Scoped::Scoped(std::string_view name, double* add_seconds_to) : sink_(add_seconds_to) {
  if (usable()) {
    State& s = state();
    if (s.on) {
      // The full name is put together in a buffer kept for that: no allocation once it has room.
      std::string& full = s.full_name;
      full.assign(s.prefix);
      full += name;
      auto it = s.entries.find(full);
      if (it == s.entries.end()) {
        detail::Entry e;
        e.time = Teuchos::TimeMonitor::getNewCounter(full);
        it = s.entries.emplace(full, std::move(e)).first;
      }
      detail::Entry& e = it->second;
      if (e.depth++ == 0 && e.time->isEnabled() && !e.time->isRunning()) {
        entry_ = &e;
        epoch_ = s.epoch;
        total_before_ = e.time->totalElapsedTime();
        e.time->incrementNumCalls();
        start_ = steady_seconds();
        e.time->start();
        return;
      }
      // Nested in a running scope of the same name (or a timer someone else runs or disabled):
      // only depth counts, so that the outermost scope stops it.
      depth_only_ = &e;
    }
  }
  start_ = steady_seconds();
}

double Scoped::stop() {
  if (stopped_) return seconds_;
  stopped_ = true;
  if (entry_) {
    Teuchos::Time& t = *entry_->time;
    t.stop();
    const double now = steady_seconds();
    --entry_->depth;
    // The interval Teuchos added; across a reset(), the scope's whole life (Teuchos counts the part
    // after the reset only).
    seconds_ = epoch_ == state().epoch ? t.totalElapsedTime() - total_before_ : now - start_;
    entry_ = nullptr;
  } else {
    seconds_ = steady_seconds() - start_;
    if (depth_only_) {
      --depth_only_->depth;
      depth_only_ = nullptr;
    }
  }
  if (sink_) *sink_ += seconds_;
  return seconds_;
}

Scoped::~Scoped() {
  try {
    stop();
  } catch (...) {  // a destructor must not throw; Teuchos' stop() does not in practice
  }
}

double Scoped::elapsed() const { return stopped_ ? seconds_ : steady_seconds() - start_; }

// ---- Label -----------------------------------------------------------------------------------

Label::Label(std::string_view label) {
  if (!usable() || label.empty()) return;
  State& s = state();
  depth_ = static_cast<long>(s.labels.size());
  s.labels.emplace_back(label);
  rebuild_prefix(s);
}

Label::~Label() {
  if (depth_ < 0) return;
  State& s = state();
  if (s.labels.size() > static_cast<std::size_t>(depth_)) s.labels.resize(static_cast<std::size_t>(depth_));
  rebuild_prefix(s);
}

std::string current_prefix() { return usable() ? state().prefix : std::string(); }

// ---- switches --------------------------------------------------------------------------------

void enabled(bool on) {
  if (usable()) state().on = on;
}

bool enabled() { return state().on; }

void reset() {
  if (!usable()) return;
  State& s = state();
  // TimeMonitor::zeroOutTimers() wants no timer running: stop ours, zero all, start ours again.
  std::vector<detail::Entry*> running;
  for (auto& [name, e] : s.entries)
    if (e.time->isRunning()) {
      e.time->stop();
      running.push_back(&e);
    }
  Teuchos::TimeMonitor::zeroOutTimers();
  ++s.epoch;
  for (auto* e : running) {
    e->time->incrementNumCalls();
    e->time->start();
  }
}

// ---- statistics ------------------------------------------------------------------------------

std::vector<Stat> statistics(MPI_Comm comm) {
  const std::string where = "timers::statistics";
  if (!usable()) throw Error(where, "called on a thread other than the main one or inside an OpenMP parallel region");
  MPI_Comm dup = MPI_COMM_NULL;
  mpi::check(MPI_Comm_dup(comm, &dup), "MPI_Comm_dup");
  Teuchos::stat_map_type data;
  std::vector<std::string> names;
  try {
    // A fixed tag: the default one comes from a counter of the process, which differs between
    // ranks that built different numbers of Teuchos communicators (their statistics would then
    // wait for each other forever). The duplicate is private, so any tag is safe.
    const Teuchos::MpiComm<int> tcomm(Teuchos::opaqueWrapper(dup), 1);
    Teuchos::TimeMonitor::computeGlobalTimerStatistics(data, names, Teuchos::ptrFromRef(tcomm), Teuchos::Union);
  } catch (const std::exception& e) {
    // The duplicate is left as it is: the job ends on this error.
    throw Error(where, std::string("Teuchos::TimeMonitor::computeGlobalTimerStatistics failed: ") + e.what());
  }
  mpi::check(MPI_Comm_free(&dup), "MPI_Comm_free");
  auto column = [&](const char* stat) -> std::size_t {
    const auto it = std::find(names.begin(), names.end(), stat);
    if (it == names.end()) throw Error(where, std::string("Teuchos gave no '") + stat + "' statistic");
    return static_cast<std::size_t>(it - names.begin());
  };
  const std::size_t cmin = column("MinOverProcs"), cmean = column("MeanOverProcs"), cmax = column("MaxOverProcs");
  std::vector<Stat> out;
  out.reserve(data.size());
  for (const auto& [name, v] : data) {  // a std::map: ordered by name
    if (v.size() != names.size()) throw Error(where, "Teuchos gave timer '" + name + "' a short list of statistics");
    Stat s;
    s.name = name;
    s.calls = v[cmean].second;
    s.min = v[cmin].first;
    s.mean = v[cmean].first;
    s.max = v[cmax].first;
    s.calls_at_min = v[cmin].second;
    s.calls_at_max = v[cmax].second;
    if (s.calls > 0) out.push_back(std::move(s));
  }
  return out;
}

// ---- table -----------------------------------------------------------------------------------

namespace {
constexpr int kNameWidth = 52;  // + 2 + calls 8 + 3 x (2 + 10) = 98 columns

// `name` in at most `width` columns: its start and its end around "..." when longer.
std::string fit(const std::string& name, int width) {
  if (static_cast<int>(name.size()) <= width) return name;
  const int head = (width - 3) / 3;
  const int tail = width - 3 - head;
  return name.substr(0, static_cast<std::size_t>(head)) + "..." +
         name.substr(name.size() - static_cast<std::size_t>(tail));
}

std::string calls_text(double c) {
  return c == std::floor(c) && c < 1e8 ? fmt::format("{:.0f}", c) : fmt::format("{:.4g}", c);
}
}  // namespace

std::string table(const std::vector<Stat>& stats) {
  if (stats.empty()) return {};
  int width = 5;  // "timer"
  for (const auto& s : stats) width = std::max(width, static_cast<int>(s.name.size()));
  width = std::min(width, kNameWidth);
  std::string out;
  out += fmt::format("{:<{}}  {:>8}  {:>10}  {:>10}  {:>10}\n", "timer", width, "calls", "min s", "mean s", "max s");
  for (const auto& s : stats)
    out += fmt::format("{:<{}}  {:>8}  {:>10.4g}  {:>10.4g}  {:>10.4g}\n", fit(s.name, width), width,
                       calls_text(s.calls), s.min, s.mean, s.max);
  return out;
}

}  // namespace plexus::timers
