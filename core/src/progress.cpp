#include "plexus/progress.hpp"

#include <mpi.h>
#include <spdlog/fmt/fmt.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string_view>

#include "plexus/error.hpp"

namespace plexus::progress {
namespace {

std::atomic<std::uint64_t> g_points{0};
std::atomic<const char*> g_last_point{nullptr};

std::mutex g_operation_mutex;
std::string g_operation;  // guarded by g_operation_mutex

// The fault-injection hook, read once MPI can tell this process's rank.
struct Fault {
  std::atomic<bool> armed{false};
  std::uint64_t at = 0;  // the N-th matching point fails
  std::string where;     // "" matches every point
  bool stop = false;     // SIGSTOP itself instead of throwing (a rank hung as by kill -STOP)
  std::atomic<std::uint64_t> seen{0};
  std::atomic<bool> fired{false};
};

Fault& fault() {
  static Fault f;
  static std::once_flag once;
  static std::atomic<bool> read{false};
  if (read.load(std::memory_order_acquire)) return f;
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return f;  // not armed outside MPI's lifetime (no rank)
  std::call_once(once, [] {
    const char* env = std::getenv("PLEXUS_TEST_FAULT");
    if (!env || !*env) return;
    const std::string spec = env;
    // R:N[:WHERE[:ACTION]], R and N decimal, ACTION throw (default) or stop.
    const auto c1 = spec.find(':');
    const auto c2 = c1 == std::string::npos ? std::string::npos : spec.find(':', c1 + 1);
    const auto c3 = c2 == std::string::npos ? std::string::npos : spec.find(':', c2 + 1);
    const std::string action = c3 == std::string::npos ? "throw" : spec.substr(c3 + 1);
    auto number = [](const std::string& s, std::uint64_t& out) {
      if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos) return false;
      out = std::stoull(s);
      return true;
    };
    std::uint64_t r = 0, n = 0;
    if (c1 == std::string::npos || !number(spec.substr(0, c1), r) ||
        !number(spec.substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1), n) || n == 0 ||
        (action != "throw" && action != "stop")) {
      std::fprintf(stderr,
                   "plexus: PLEXUS_TEST_FAULT='%s' is not R:N[:WHERE[:throw|stop]] (rank, N >= 1); no fault "
                   "injected\n",
                   env);
      return;
    }
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (static_cast<std::uint64_t>(rank) != r) return;
    f.at = n;
    f.where = c2 == std::string::npos ? std::string() : spec.substr(c2 + 1, c3 == std::string::npos ? c3 : c3 - c2 - 1);
    f.stop = action == "stop";
    f.armed = true;
  });
  read.store(true, std::memory_order_release);
  return f;
}

}  // namespace

void point(const char* where) {
  g_points.fetch_add(1, std::memory_order_relaxed);
  g_last_point.store(where, std::memory_order_relaxed);
  Fault& f = fault();
  if (!f.armed || f.fired.load(std::memory_order_relaxed)) return;
  if (!f.where.empty() && std::string_view(where).find(f.where) == std::string_view::npos) return;
  if (f.seen.fetch_add(1) + 1 != f.at || f.fired.exchange(true)) return;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (f.stop) {
    std::raise(SIGSTOP);  // every thread of the process stops, the watchdog's too
    return;
  }
  const std::string op = current_operation();
  throw Error("PLEXUS_TEST_FAULT",
              fmt::format("fault injected by PLEXUS_TEST_FAULT on rank {} at its progress point {}{} ({}){}", rank, f.at,
                          f.where.empty() ? "" : " named *" + f.where + "*", where, op.empty() ? "" : " in " + op));
}

void inject_fault(std::uint64_t at, const std::string& where) {
  Fault& f = fault();
  f.armed = false;
  f.where = where;
  f.at = at;
  f.stop = false;
  f.seen = 0;
  f.fired = false;
  f.armed = at > 0;
}

std::uint64_t count() { return g_points.load(std::memory_order_relaxed); }

std::string current_operation() {
  std::lock_guard lock(g_operation_mutex);
  return g_operation;
}

Operation::Operation(std::string what) {
  std::lock_guard lock(g_operation_mutex);
  previous_ = g_operation;
  g_operation = previous_.empty() ? std::move(what) : previous_ + " > " + what;
}

Operation::~Operation() {
  std::lock_guard lock(g_operation_mutex);
  g_operation = std::move(previous_);
}

Watchdog::Watchdog(double timeout_seconds, std::function<void(const std::string&)> on_stall)
    : timeout_(timeout_seconds), on_stall_(std::move(on_stall)) {
  if (timeout_ > 0) thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::watch() {
  using clock = std::chrono::steady_clock;
  const auto timeout = std::chrono::duration<double>(timeout_);
  // Look four times per timeout (at least every second): a stall is told within 1.25 timeouts.
  const auto period = std::min<std::chrono::duration<double>>(timeout / 4, std::chrono::seconds(1));
  std::uint64_t seen = count();
  auto since = clock::now();
  std::unique_lock lock(mutex_);
  while (!stop_cv_.wait_for(lock, period, [this] { return stop_; })) {
    const std::uint64_t now_count = count();
    if (now_count != seen) {
      seen = now_count;
      since = clock::now();
      continue;
    }
    if (clock::now() - since < timeout) continue;
    const std::string op = current_operation();
    const char* last = g_last_point.load(std::memory_order_relaxed);
    on_stall_(fmt::format("no progress for {:g} s (Output/TimeoutSeconds) {}; last progress point: {} (point {})",
                          timeout_, op.empty() ? "outside any operation" : "in " + op, last ? last : "none", seen));
    return;  // on_stall ends the process; if it returned, watch no more
  }
}

// ---- the progress line ------------------------------------------------------------------------

namespace {

constexpr double kDelaySeconds = 2;      // nothing before
constexpr double kTerminalPeriod = 0.2;  // a bar redrawn at most this often
constexpr double kPlainPeriod = 5;       // a plain line at most this often

struct Line {
  std::mutex mutex;
  bool enabled = false;
  bool terminal = false;
  bool test = false;  // PLEXUS_TEST_PROGRESS=1: every update, plain lines
  std::vector<StageState> stages;
  std::chrono::steady_clock::time_point start;
  double last = -1;    // seconds after start of the last line; -1: none yet
  bool shown = false;  // a bar is on the terminal
};

Line& the_line() {
  static auto* l = new Line;  // never destroyed: stages may end in destructors of statics
  return *l;
}

std::string duration_text(double s) {
  const auto t = static_cast<long long>(std::llround(std::max(0.0, s)));
  if (t < 60) return fmt::format("{} s", t);
  if (t < 3600) return fmt::format("{} min {:02} s", t / 60, t % 60);
  return fmt::format("{} h {:02} min", t / 3600, t % 3600 / 60);
}

void erase_bar(Line& l) {
  if (!l.shown) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  l.shown = false;
}

void draw(Line& l) {
  if (!l.enabled || l.stages.empty()) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - l.start).count();
  if (!l.test && !line_due(elapsed, l.last < 0 ? -1 : elapsed - l.last, l.terminal)) return;
  l.last = elapsed;
  const std::string text = line_text(l.stages, elapsed);
  if (l.terminal && !l.test) {
    const double f = fraction_done(l.stages);
    const int filled = f < 0 ? 0 : static_cast<int>(f * 20);
    std::fprintf(stderr, "\r[%s%s] %s\033[K", std::string(static_cast<std::size_t>(filled), '#').c_str(),
                 std::string(static_cast<std::size_t>(20 - filled), '.').c_str(), text.c_str());
  } else {
    std::fprintf(stderr, "[plexus] progress: %s\n", text.c_str());
  }
  std::fflush(stderr);
  l.shown = l.terminal && !l.test;
}

}  // namespace

void set_line_enabled(bool enabled) {
  Line& l = the_line();
  std::lock_guard lock(l.mutex);
  l.enabled = enabled;
  l.terminal = ::isatty(::fileno(stderr)) != 0;
  const char* test = std::getenv("PLEXUS_TEST_PROGRESS");
  l.test = test != nullptr && std::string_view(test) == "1";
  if (!enabled) erase_bar(l);
}

Stage::Stage(std::string what, int total) {
  Line& l = the_line();
  std::lock_guard lock(l.mutex);
  if (l.stages.empty()) {
    l.start = std::chrono::steady_clock::now();
    l.last = -1;
  }
  level_ = l.stages.size();
  l.stages.push_back(StageState{std::move(what), std::max(0, total), 0});
}

Stage::~Stage() {
  Line& l = the_line();
  std::lock_guard lock(l.mutex);
  if (level_ < l.stages.size()) l.stages.resize(level_);
  if (l.stages.empty()) erase_bar(l);
}

void Stage::done(int steps) {
  Line& l = the_line();
  std::lock_guard lock(l.mutex);
  if (level_ >= l.stages.size()) return;
  l.stages.resize(level_ + 1);  // the steps' inner stages are over
  l.stages[level_].done = std::max(0, steps);
  draw(l);
}

double fraction_done(const std::vector<StageState>& stages) {
  double inner = 0;
  for (std::size_t i = stages.size(); i-- > 0;) {
    const StageState& s = stages[i];
    if (s.total <= 0) {
      if (i == 0) return -1;
      inner = 0;
      continue;
    }
    inner = std::min(1.0, (std::min(s.done, s.total) + inner) / s.total);
  }
  return stages.empty() ? -1 : inner;
}

std::string line_text(const std::vector<StageState>& stages, double elapsed_seconds) {
  std::string text;
  for (const auto& s : stages) {
    if (!text.empty()) text += " > ";
    text += s.total > 0 ? fmt::format("{} {}/{}", s.what, std::min(s.done + 1, s.total), s.total)
                        : fmt::format("{} {}", s.what, s.done + 1);
  }
  const double f = fraction_done(stages);
  text += ": ";
  if (f >= 0) text += fmt::format("{}%, ", static_cast<int>(f * 100));
  text += duration_text(elapsed_seconds) + " elapsed";
  if (f > 0 && f < 1) text += ", about " + duration_text(elapsed_seconds * (1 - f) / f) + " left";
  return text;
}

bool line_due(double since_start, double since_last, bool terminal) {
  if (since_start < kDelaySeconds) return false;
  if (since_last < 0) return true;
  return since_last >= (terminal ? kTerminalPeriod : kPlainPeriod);
}

void clear_line() {
  Line& l = the_line();
  std::lock_guard lock(l.mutex);
  erase_bar(l);
}

bool unwinding() { return std::uncaught_exceptions() > 0; }

}  // namespace plexus::progress
