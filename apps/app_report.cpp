// Run summaries reduced over ranks, and output helpers of the `plexus` program.
#include <spdlog/fmt/fmt.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "app.hpp"
#include "build_info.hpp"

namespace plexus::app {

TimeStats time_stats(std::vector<double> seconds) {
  TimeStats t;
  if (seconds.empty()) return t;
  std::sort(seconds.begin(), seconds.end());
  const std::size_t n = seconds.size();
  t.min = seconds.front();
  t.max = seconds.back();
  t.median = n % 2 ? seconds[n / 2] : 0.5 * (seconds[n / 2 - 1] + seconds[n / 2]);
  double sum = 0;
  for (double v : seconds) sum += v;
  t.mean = sum / static_cast<double>(n);
  return t;
}

namespace {
// The keys of rank 0's map, on every rank (ranks may name figures the others do not have).
template <class Map>
std::vector<std::string> names_of_rank0(const Map& map, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string names;
  if (rank == 0)
    for (const auto& entry : map) names += std::string(entry.first) + "\n";
  int len = static_cast<int>(names.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, comm);
  names.resize(static_cast<std::size_t>(len));
  MPI_Bcast(names.data(), len, MPI_CHAR, 0, comm);
  std::vector<std::string> keys;
  for (std::size_t start = 0, nl; (nl = names.find('\n', start)) != std::string::npos; start = nl + 1)
    keys.push_back(names.substr(start, nl - start));
  return keys;
}
}  // namespace

Summary summarize(const std::vector<MultiplyReport>& reports, MPI_Comm comm) {
  StepTotals steps;
  for (const auto& r : reports) steps.add(r);
  return summarize(steps, comm);
}

Summary summarize(const StepTotals& steps, MPI_Comm comm) {
  Summary s;
  MPI_Comm_size(comm, &s.ranks);
  s.multiplies = static_cast<int>(steps.count());
  // Each multiply's time is that of its slowest rank; min, median and mean are taken over those.
  s.times.assign(steps.count(), 0.0);
  std::vector<double> beyond_max(steps.count(), 0.0);
  if (!steps.empty()) {
    MPI_Allreduce(steps.seconds.data(), s.times.data(), s.multiplies, MPI_DOUBLE, MPI_MAX, comm);
    MPI_Allreduce(steps.beyond.data(), beyond_max.data(), s.multiplies, MPI_DOUBLE, MPI_MAX, comm);
  }
  s.beyond_kernel_wait_median = time_stats(beyond_max).median;
  const TimeStats stats = time_stats(s.times);
  s.seconds_min = stats.min;
  s.seconds_median = stats.median;
  s.seconds = stats.mean;
  s.seconds_max = stats.max;
  // Per rank: averages per multiply, peaks over multiplies.
  const MultiplyReport& r = steps.sum;
  double volume = 0, network = 0;
  for (const auto& t : r.traffic) {
    volume += static_cast<double>(t.bytes_received);
    network += static_cast<double>(t.bytes_received + t.index_bytes_received - t.local_bytes_received);
  }
  const auto predicted = r.extra.find("predicted_bytes_received");
  const double model = predicted != r.extra.end() ? predicted->second : -1.0;
  const double n = steps.empty() ? 1.0 : static_cast<double>(steps.count());
  const double bytes = static_cast<double>(r.bytes_sent()), messages = static_cast<double>(r.messages_sent());
  double maxes[11] = {r.flops / n,
                      bytes / n,
                      messages / n,
                      r.wait_seconds() / n,
                      r.kernel_seconds / n,
                      static_cast<double>(r.peak_buffer_bytes),
                      static_cast<double>(r.peak_memory_bytes),
                      volume / n,
                      model < 0 ? -1.0 : model / n,
                      static_cast<double>(r.peak_device_bytes),
                      static_cast<double>(r.ticks)};
  double sums[9] = {r.flops / n,
                    bytes / n,
                    messages / n,
                    volume / n,
                    network / n,
                    static_cast<double>(r.ticks_with_products),
                    static_cast<double>(r.replayed_ticks),
                    static_cast<double>(r.dense_ticks),
                    static_cast<double>(r.plans_not_kept)};
  double gmax[11], gsum[9];
  MPI_Allreduce(maxes, gmax, 11, MPI_DOUBLE, MPI_MAX, comm);
  MPI_Allreduce(sums, gsum, 9, MPI_DOUBLE, MPI_SUM, comm);
  s.product_ticks = gsum[5];
  s.replayed_ticks = gsum[6];
  s.dense_ticks = gsum[7];
  s.plans_not_kept = gsum[8];
  s.network_avg = gsum[4] / s.ranks;
  s.volume_max = gmax[7];
  s.model_max = gmax[8];
  s.volume_avg = gsum[3] / s.ranks;
  s.bytes_max = gmax[1];
  s.messages_max = gmax[2];
  s.wait_max = gmax[3];
  s.kernel_seconds = gmax[4];
  s.peak_buffer_max = gmax[5];
  s.peak_memory_max = gmax[6];
  s.peak_device_max = gmax[9];
  s.ticks_max = gmax[10];
  s.flops = gsum[0];
  s.flops_max = gmax[0];
  s.bytes_avg = gsum[1] / s.ranks;
  s.messages_avg = gsum[2] / s.ranks;
  s.gflops = s.seconds_median > 0 ? s.flops / s.seconds_median * 1e-9 : 0.0;

  // Strategy-specific figures: the names rank 0 knows, averaged per rank, max over ranks.
  Figures local_extra;
  for (const auto& [k, v] : r.extra) local_extra[k] = v / n;
  const std::vector<std::string> keys = names_of_rank0(local_extra, comm);
  if (!keys.empty()) {
    std::vector<double> mine(keys.size(), 0.0), all(keys.size(), 0.0);
    for (std::size_t i = 0; i < keys.size(); ++i)
      if (auto it = local_extra.find(keys[i]); it != local_extra.end()) mine[i] = it->second;
    MPI_Allreduce(mine.data(), all.data(), static_cast<int>(keys.size()), MPI_DOUBLE, MPI_MAX, comm);
    for (std::size_t i = 0; i < keys.size(); ++i) s.extra[keys[i]] = all[i];
  }
  return s;
}

std::map<std::string, OperationSummary> summarize_operations(const std::vector<OperationReport>& ops, int runs,
                                                             MPI_Comm comm) {
  const double per_run = 1.0 / std::max(1, runs);
  std::map<std::string, OperationSummary> local;
  for (const auto& op : ops) {
    OperationSummary& o = local[op.operation + "/" + op.component];
    o.count += static_cast<double>(op.count) * per_run;
    o.seconds += op.seconds * per_run;
    for (const auto& t : op.traffic) o.bytes_received += static_cast<double>(t.bytes_received) * per_run;
    if (auto it = op.predicted.find("bytes_received"); it != op.predicted.end())
      o.predicted_bytes_received = std::max(o.predicted_bytes_received, 0.0) + it->second * per_run;
  }
  const std::vector<std::string> keys = names_of_rank0(local, comm);
  std::vector<double> mine(4 * keys.size(), -1.0), all(mine.size(), 0.0);
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (auto it = local.find(keys[i]); it != local.end()) {
      const OperationSummary& o = it->second;
      std::copy_n(std::array<double, 4>{o.count, o.seconds, o.bytes_received, o.predicted_bytes_received}.begin(), 4,
                  mine.begin() + static_cast<std::ptrdiff_t>(4 * i));
    }
  if (!keys.empty()) MPI_Allreduce(mine.data(), all.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_MAX, comm);
  std::map<std::string, OperationSummary> out;
  for (std::size_t i = 0; i < keys.size(); ++i)
    out[keys[i]] = OperationSummary{all[4 * i], all[4 * i + 1], all[4 * i + 2], all[4 * i + 3]};
  return out;
}

std::string format_table(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& cells,
                         bool rule) {
  std::vector<std::size_t> width(head.size());
  for (std::size_t j = 0; j < head.size(); ++j) {
    width[j] = head[j].size();
    for (const auto& c : cells) width[j] = std::max(width[j], c[j].size());
  }
  std::ostringstream os;
  auto line = [&](const std::vector<std::string>& v) {
    for (std::size_t j = 0; j < v.size(); ++j) {
      if (j) os << "  ";
      if (j < 2)
        os << v[j] << std::string(width[j] - v[j].size(), ' ');
      else
        os << std::string(width[j] - v[j].size(), ' ') << v[j];
    }
    os << "\n";
  };
  line(head);
  if (rule) {
    std::size_t total = 0;
    for (auto w : width) total += w + 2;
    os << std::string(total - 2, '-') << "\n";
  }
  for (const auto& c : cells) line(c);
  return os.str();
}

std::string format_bytes(double bytes) {
  static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} {}", bytes, units[u]) : fmt::format("{:.2f} {}", bytes, units[u]);
}

nlohmann::json json_number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

// ---- metadata ---------------------------------------------------------------------------------

namespace {
std::vector<std::string>& command_line_words() {
  static std::vector<std::string> words;
  return words;
}

void flatten(const nlohmann::json& j, const std::string& prefix, std::string& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "/" + k, out);
    return;
  }
  std::string value =
      j.is_string() ? j.get<std::string>() : j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  for (char& ch : value)
    if (ch == '\n' || ch == '\r') ch = ' ';
  out += "# " + prefix + ": " + value + "\n";
}
}  // namespace

void set_command_line(int argc, char** argv) {
  auto& words = command_line_words();
  words.assign(argv, argv + argc);
}

nlohmann::json metadata_json(const RunMetadata& m) {
  nlohmann::json j;
  j["plexus"] = build_info_json();
  j["command"] = m.command;
  j["command_line"] = command_line_words();
  j["date_utc"] = utc_now();
  j["host"] = host_name();
  j["mpi_library"] = mpi_library();
  j["ranks"] = m.ranks;
  j["grid"] = m.grid.empty() ? nlohmann::json(nullptr) : nlohmann::json(m.grid);
  j["threads_per_rank"] = m.threads_per_rank > 0 ? nlohmann::json(m.threads_per_rank) : nlohmann::json(nullptr);
  if (m.warm_up >= 0) {
    j["timing"] = {{"warm_up", m.warm_up}, {"rounds", m.rounds}};
    if (!m.order.empty()) j["timing"]["order"] = m.order;
  }
  j["parameters_file"] = m.parameters_file.empty() ? nlohmann::json(nullptr) : nlohmann::json(m.parameters_file);
  j["parameters"] = m.parameters != nullptr ? parameters_object(*m.parameters) : nlohmann::json(nullptr);
  return j;
}

nlohmann::json phases_json(const std::vector<timers::Stat>& stats) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& t : stats)
    out.push_back({{"name", t.name},
                   {"calls", json_number(t.calls)},
                   {"min", json_number(t.min)},
                   {"mean", json_number(t.mean)},
                   {"max", json_number(t.max)},
                   {"calls_at_min", json_number(t.calls_at_min)},
                   {"calls_at_max", json_number(t.calls_at_max)}});
  return out;
}

std::string csv_preamble(const nlohmann::json& metadata) {
  // The build and the job first, the long parameter list last (JSON objects sort their keys).
  static const std::vector<std::string> order = {
      "plexus", "command",          "command_line", "date_utc",        "host",      "mpi_library", "ranks",
      "grid",   "threads_per_rank", "timing",       "parameters_file", "parameters"};
  std::string out;
  for (const auto& key : order)
    if (metadata.contains(key)) flatten(metadata[key], key, out);
  for (const auto& [key, value] : metadata.items())
    if (std::find(order.begin(), order.end(), key) == order.end()) flatten(value, key, out);
  return out;
}

nlohmann::json json_figures(const std::map<std::string, double>& figures) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [k, v] : figures) out[k] = json_number(v);
  return out;
}

std::string run_json(const RunRecord& r) {
  nlohmann::json j;
  j["solver"] = r.solver;
  j["strategy"] = r.strategy;
  j["kernel"] = r.kernel;
  j["ranks"] = r.ranks;
  j["grid"] = r.grid;
  j["run_seconds"] = r.run_seconds;
  j["metadata"] = r.metadata;
  if (!r.phases.is_null()) j["phases"] = r.phases;
  if (r.result) {
    j["figures"] = json_figures(r.result->figures);
    nlohmann::json history = nlohmann::json::array();
    for (const auto& row : r.result->history) history.push_back(json_figures(row));
    j["history"] = std::move(history);
    if (!r.result->series.empty()) {
      nlohmann::json series = nlohmann::json::object();
      for (const auto& [name, values] : r.result->series) {
        nlohmann::json list = nlohmann::json::array();
        for (double v : values) list.push_back(json_number(v));
        series[name] = std::move(list);
      }
      j["series"] = std::move(series);
    }
  }
  if (r.summary) {
    const Summary& s = *r.summary;
    j["summary"] = {
        {"multiplies", s.multiplies},
        {"repetition_seconds", s.times},
        {"seconds_per_multiply_min", s.seconds_min},
        {"seconds_per_multiply_median", s.seconds_median},
        {"seconds_per_multiply_mean", s.seconds},
        {"seconds_per_multiply_max", s.seconds_max},
        {"multiply_seconds_total", std::accumulate(s.times.begin(), s.times.end(), 0.0)},
        {"flops_per_multiply", s.flops},
        {"gflops", s.gflops},
        {"flops_per_rank_max", s.flops_max},
        {"work_balance", s.work_balance()},
        {"volume_per_rank_max", s.volume_max},
        {"volume_per_rank_avg", s.volume_avg},
        {"model_volume_per_rank_max", s.model_max < 0 ? nlohmann::json(nullptr) : nlohmann::json(s.model_max)},
        {"network_bytes_per_rank_avg", s.network_avg},
        {"wait_seconds_max", s.wait_max},
        {"kernel_seconds_max", s.kernel_seconds},
        {"ticks_max", s.ticks_max},
        {"product_ticks", s.product_ticks},
        {"replayed_ticks", s.replayed_ticks},
        {"plans_not_kept", s.plans_not_kept},
        {"dense_ticks", s.dense_ticks},
        {"beyond_kernel_wait_seconds_median", s.beyond_kernel_wait_median},
        {"peak_memory_bytes_max", s.peak_memory_max}};
  }
  if (r.operations) {
    nlohmann::json ops = nlohmann::json::object();
    for (const auto& [name, o] : *r.operations)
      ops[name] = {{"count", o.count},
                   {"seconds", o.seconds},
                   {"bytes_received", o.bytes_received},
                   {"predicted_bytes_received",
                    o.predicted_bytes_received < 0 ? nlohmann::json(nullptr) : nlohmann::json(o.predicted_bytes_received)}};
    j["operations"] = std::move(ops);
  }
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace plexus::app
