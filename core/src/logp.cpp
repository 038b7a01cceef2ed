// LogP/LogGP measurement (after Kielmann et al.'s logp-mpi) and the LogGP models of the
// collectives (docs/logp.md).
#include "plexus/logp.hpp"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plexus/error.hpp"
#include "plexus/mpi.hpp"
#include "plexus/progress.hpp"

namespace plexus::logp {
namespace {

constexpr std::int64_t kMinMaxBytes = 1024;                   // G is fit over sizes up to at least 1 KiB
constexpr std::int64_t kMaxMaxBytes = std::int64_t(1) << 30;  // one MPI_Send of MPI_BYTE (int count)
constexpr double kTrainBytes = 4.0 * 1024 * 1024;             // a train's shorter half carries about this
constexpr int kFitPoints = 3;                                 // G: slope over the largest sizes
constexpr int kWarmUpMessages = 64;  // ping-pongs and requested messages before anything is timed
// Tags on the duplicated communicator.
constexpr int kTagData = 1, kTagReply = 2, kTagGo = 3, kTagRtt = 4;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// A duplicate of the caller's communicator, freed at the end (not while an error unwinds: the
/// other rank may never join the collective MPI_Comm_free).
class DupComm {
 public:
  explicit DupComm(MPI_Comm comm) { mpi::check(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup"); }
  ~DupComm() {
    if (comm_ != MPI_COMM_NULL && !progress::unwinding()) MPI_Comm_free(&comm_);
  }
  DupComm(const DupComm&) = delete;
  DupComm& operator=(const DupComm&) = delete;
  MPI_Comm get() const { return comm_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

/// The measurement between ranks 0 and 1 (`me` is 0 or 1) of `comm`.
class PingPong {
 public:
  PingPong(MPI_Comm comm, int me, std::int64_t max_bytes)
      : comm_(comm), me_(me), peer_(1 - me), buffer_(static_cast<std::size_t>(max_bytes)) {}

  void send(std::int64_t k, int tag = kTagData) {
    mpi::check(MPI_Send(buffer_.data(), static_cast<int>(k), MPI_BYTE, peer_, tag, comm_), "MPI_Send");
  }
  void recv(std::int64_t k, int tag = kTagData) {
    mpi::check(MPI_Recv(buffer_.data(), static_cast<int>(k), MPI_BYTE, peer_, tag, comm_, MPI_STATUS_IGNORE),
               "MPI_Recv");
  }

  /// Round trip of k bytes each way, seen by rank 0.
  double rtt(std::int64_t k) {
    if (me_ == 0) {
      const double t0 = mpi::now();
      send(k);
      recv(k);
      return mpi::now() - t0;
    }
    recv(k);
    send(k);
    return 0;
  }

  /// The send call of k bytes on an idle network (rank 0), then an empty reply.
  double send_overhead(std::int64_t k) {
    if (me_ == 0) {
      const double t0 = mpi::now();
      const int rc = MPI_Send(buffer_.data(), static_cast<int>(k), MPI_BYTE, peer_, kTagData, comm_);
      const double t = mpi::now() - t0;
      mpi::check(rc, "MPI_Send");
      recv(0, kTagReply);
      return t;
    }
    recv(k);
    send(0, kTagReply);
    return 0;
  }

  /// The receive call of k bytes that have surely arrived (rank 1): rank 1 asks for the message,
  /// busy-waits `wait` seconds (MPI_Wtime, no sleep: the process stays on its core), then receives.
  double recv_overhead(std::int64_t k, double wait) {
    if (me_ == 0) {
      recv(0, kTagGo);
      send(k);
      return 0;
    }
    send(0, kTagGo);
    const double start = mpi::now();
    while (mpi::now() - start < wait) {
    }
    const double t0 = mpi::now();
    const int rc = MPI_Recv(buffer_.data(), static_cast<int>(k), MPI_BYTE, peer_, kTagData, comm_, MPI_STATUS_IGNORE);
    const double t = mpi::now() - t0;
    mpi::check(rc, "MPI_Recv");
    return t;
  }

  /// A train of n back-to-back sends of k bytes ended by an empty reply, timed on rank 0.
  double train(std::int64_t k, int n) {
    if (me_ == 0) {
      const double t0 = mpi::now();
      for (int i = 0; i < n; ++i) send(k);
      recv(0, kTagReply);
      return mpi::now() - t0;
    }
    for (int i = 0; i < n; ++i) recv(k);
    send(0, kTagReply);
    return 0;
  }

  /// Rank 0 tells rank 1 a number (the RTT that rank 1's wait is based on).
  double share(double v) {
    if (me_ == 0)
      mpi::check(MPI_Send(&v, 1, MPI_DOUBLE, peer_, kTagRtt, comm_), "MPI_Send");
    else
      mpi::check(MPI_Recv(&v, 1, MPI_DOUBLE, peer_, kTagRtt, comm_, MPI_STATUS_IGNORE), "MPI_Recv");
    return v;
  }

 private:
  MPI_Comm comm_;
  int me_, peer_;
  std::vector<char> buffer_;
};

int train_length(std::int64_t k, int train) {
  const double by_bytes = std::floor(kTrainBytes / static_cast<double>(k));
  return static_cast<int>(std::max(4.0, std::min(static_cast<double>(train), by_bytes)));
}

// Columns of the measured table, reduced over ranks (each value is measured by one rank).
enum Column { kRtt = 0, kOs, kOr, kG, kGFallback, kColumns };

std::string seconds_text(double s) { return fmt::format("{:.3g} us", s * 1e6); }

// ---- JSON -------------------------------------------------------------------------------------

double number_at(const nlohmann::json& j, const std::string& key, const std::string& path, const std::string& source) {
  const std::string where = "LogP parameters in '" + source + "': ";
  auto it = j.find(key);
  if (it == j.end()) throw InputError(source, where + "key '" + path + "' is missing");
  if (!it->is_number()) throw InputError(source, where + "'" + path + "' is not a number (" + it->dump() + ")");
  const double v = it->get<double>();
  if (!std::isfinite(v)) throw InputError(source, where + "'" + path + "' is not finite");
  if (v < 0) throw InputError(source, where + "'" + path + "' = " + it->dump() + " is negative");
  return v;
}

}  // namespace

std::vector<std::int64_t> message_sizes(std::int64_t max_bytes) {
  std::vector<std::int64_t> sizes;
  for (std::int64_t k = 1; k < max_bytes; k *= 4) sizes.push_back(k);
  if (max_bytes >= 1) sizes.push_back(max_bytes);
  return sizes;
}

Parameters measure(MPI_Comm comm, const MeasureOptions& options) {
  if (options.repetitions < 1)
    throw InputError("logp",
                     "LogP measurement: repetitions must be at least 1, got " + std::to_string(options.repetitions));
  if (options.max_bytes < kMinMaxBytes || options.max_bytes > kMaxMaxBytes)
    throw InputError("logp",
                     "LogP measurement: the largest message must be 1 KiB to 1 GiB (G is fit over the "
                     "large sizes), got " +
                         std::to_string(options.max_bytes) + " bytes");
  if (options.train < 1)
    throw InputError("logp",
                     "LogP measurement: the train length must be at least 1, got " + std::to_string(options.train));
  Parameters p;
  p.ranks = mpi::size(comm);
  p.source = "measured";
  if (p.ranks < 2) {
    p.notes.push_back("one rank: no messages to measure, every parameter is 0");
    return p;
  }
  progress::Operation op("logp measure");
  DupComm dup(comm);
  const int me = mpi::rank(dup.get());
  const auto sizes = message_sizes(options.max_bytes);
  const int n_sizes = static_cast<int>(sizes.size());
  std::vector<double> table(static_cast<std::size_t>(n_sizes) * kColumns, 0.0);
  auto at = [&](int i, Column c) -> double& { return table[static_cast<std::size_t>(i) * kColumns + c]; };

  if (me < 2) {
    PingPong pp(dup.get(), me, options.max_bytes);
    const int reps = options.repetitions;
    // Warm-up of the whole exchange: the first messages between two ranks take slower paths (Open
    // MPI's shared-memory transport gives a pair its fast boxes only after some messages), which
    // one warm-up round per size does not cover.
    for (int r = 0; r < kWarmUpMessages; ++r) {
      pp.rtt(1);
      pp.recv_overhead(1, 0);
    }
    for (int i = 0; i < n_sizes; ++i) {
      const std::int64_t k = sizes[i];
      std::vector<double> rtt, os, orr, t1, t2;
      for (int r = -1; r < reps; ++r) {  // r = -1: warm-up
        const double t = pp.rtt(k);
        if (r >= 0) rtt.push_back(t);
      }
      const double rtt_k = pp.share(median(rtt));
      for (int r = -1; r < reps; ++r) {
        const double t = pp.send_overhead(k);
        if (r >= 0) os.push_back(t);
      }
      for (int r = -1; r < reps; ++r) {
        const double t = pp.recv_overhead(k, 2 * rtt_k);
        if (r >= 0) orr.push_back(t);
      }
      const int n = train_length(k, options.train);
      for (int r = -1; r < reps; ++r) {
        const double a = pp.train(k, n), b = pp.train(k, 2 * n);
        if (r >= 0) {
          t1.push_back(a);
          t2.push_back(b);
        }
      }
      if (me == 0) {
        at(i, kRtt) = rtt_k;
        at(i, kOs) = median(os);
        const double tn = median(t1), t2n = median(t2);
        const double g = (t2n - tn) / n;
        if (g > 0) {
          at(i, kG) = g;
        } else {  // noise larger than n gaps: the mean over the longer train, start and reply included
          at(i, kG) = t2n / (2.0 * n);
          at(i, kGFallback) = 1;
        }
      } else {
        at(i, kOr) = median(orr);
      }
      if (me == 0 && options.on_progress) options.on_progress(i + 1, n_sizes);
    }
  }
  // Every entry was measured by rank 0 or 1 and is 0 elsewhere: the maximum gives every rank the
  // same table, from which each derives the same parameters.
  mpi::check(MPI_Allreduce(MPI_IN_PLACE, table.data(), static_cast<int>(table.size()), MPI_DOUBLE, MPI_MAX, dup.get()),
             "MPI_Allreduce");

  for (int i = 0; i < n_sizes; ++i) {
    Sample s;
    s.bytes = static_cast<double>(sizes[i]);
    s.rtt = at(i, kRtt);
    s.o_s = at(i, kOs);
    s.o_r = at(i, kOr);
    s.g = at(i, kG);
    p.samples.push_back(s);
    if (at(i, kGFallback) > 0)
      p.notes.push_back("g(" + std::to_string(sizes[i]) +
                        " B): the two trains did not differ (noise); the longer train's mean interval is used");
  }
  const Sample& one = p.samples.front();
  p.o_s = one.o_s;
  p.o_r = one.o_r;
  p.g = one.g;
  const double l = one.rtt / 2 - one.o_s - one.o_r;
  if (l >= 0) {
    p.L = l;
  } else {
    p.L = 0;
    p.notes.push_back("L: RTT(1)/2 - o_s - o_r = " + seconds_text(l) +
                      " is negative (the overheads include waiting, e.g. on oversubscribed cores); L set to 0");
  }
  // G: least-squares slope of g(k) over the largest sizes.
  const int first = std::max(0, n_sizes - kFitPoints);
  double mx = 0, my = 0;
  const int m = n_sizes - first;
  for (int i = first; i < n_sizes; ++i) {
    mx += p.samples[i].bytes / m;
    my += p.samples[i].g / m;
  }
  double sxy = 0, sxx = 0;
  for (int i = first; i < n_sizes; ++i) {
    sxy += (p.samples[i].bytes - mx) * (p.samples[i].g - my);
    sxx += (p.samples[i].bytes - mx) * (p.samples[i].bytes - mx);
  }
  const double slope = sxx > 0 ? sxy / sxx : 0;
  if (slope > 0) {
    p.G = slope;
  } else {
    const Sample& last = p.samples.back();
    p.G = last.g / last.bytes;
    p.notes.push_back("G: the slope of g(k) over the largest sizes is not positive (noise); G = g(k_max)/k_max");
  }
  return p;
}

// ---- models -----------------------------------------------------------------------------------

double message_seconds(const Parameters& p, double bytes) {
  return p.o_s + std::max(bytes - 1, 0.0) * p.G + p.L + p.o_r;
}

double pingpong_seconds(const Parameters& p, double bytes) { return 2 * message_seconds(p, bytes); }

int allreduce_rounds(int ranks) {
  if (ranks <= 1) return 0;
  int levels = 0;
  while ((std::int64_t(2) << levels) <= ranks) ++levels;  // floor(log2 P)
  const bool power_of_two = (ranks & (ranks - 1)) == 0;
  return levels + (power_of_two ? 0 : 2);
}

double allreduce_seconds(const Parameters& p, int ranks, double bytes) {
  return allreduce_rounds(ranks) * message_seconds(p, bytes);
}

double alltoall_seconds(const Parameters& p, int ranks, double bytes_per_pair) {
  if (ranks <= 1) return 0;
  const double network = p.g + std::max(bytes_per_pair - 1, 0.0) * p.G;
  const double processor = p.o_s + p.o_r;
  return (ranks - 2) * std::max(network, processor) + message_seconds(p, bytes_per_pair);
}

// ---- files ------------------------------------------------------------------------------------

nlohmann::json to_json(const Parameters& p) {
  nlohmann::json j;
  j["L"] = p.L;
  j["o_s"] = p.o_s;
  j["o_r"] = p.o_r;
  j["g"] = p.g;
  j["G"] = p.G;
  j["ranks"] = p.ranks;
  j["units"] = "seconds; G in seconds per byte";
  j["source"] = p.source;
  nlohmann::json samples = nlohmann::json::array();
  for (const auto& s : p.samples)
    samples.push_back({{"bytes", s.bytes}, {"rtt", s.rtt}, {"o_s", s.o_s}, {"o_r", s.o_r}, {"g", s.g}});
  j["samples"] = samples;
  j["notes"] = p.notes;
  return j;
}

Parameters from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object())
    throw InputError(source,
                     "LogP parameters in '" + source + "': expected a JSON object, got " + std::string(j.type_name()));
  Parameters p;
  p.source = source;
  p.L = number_at(j, "L", "L", source);
  p.o_s = number_at(j, "o_s", "o_s", source);
  p.o_r = number_at(j, "o_r", "o_r", source);
  p.g = number_at(j, "g", "g", source);
  p.G = number_at(j, "G", "G", source);
  if (j.contains("ranks")) {
    const auto& r = j["ranks"];
    if (!r.is_number_integer() || r.get<long long>() < 0 || r.get<long long>() > 1 << 30)
      throw InputError(source,
                       "LogP parameters in '" + source + "': 'ranks' must be a non-negative integer, got " + r.dump());
    p.ranks = r.get<int>();
  }
  if (j.contains("samples")) {
    const auto& arr = j["samples"];
    if (!arr.is_array()) throw InputError(source, "LogP parameters in '" + source + "': 'samples' must be an array");
    for (std::size_t i = 0; i < arr.size(); ++i) {
      const std::string path = "samples[" + std::to_string(i) + "].";
      if (!arr[i].is_object())
        throw InputError(
            source, "LogP parameters in '" + source + "': '" + path.substr(0, path.size() - 1) + "' must be an object");
      Sample s;
      s.bytes = number_at(arr[i], "bytes", path + "bytes", source);
      s.rtt = number_at(arr[i], "rtt", path + "rtt", source);
      s.o_s = number_at(arr[i], "o_s", path + "o_s", source);
      s.o_r = number_at(arr[i], "o_r", path + "o_r", source);
      s.g = number_at(arr[i], "g", path + "g", source);
      p.samples.push_back(s);
    }
  }
  if (j.contains("notes") && j["notes"].is_array())
    for (const auto& n : j["notes"])
      if (n.is_string()) p.notes.push_back(n.get<std::string>());
  return p;
}

Parameters read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InputError(path, "cannot read LogP parameters from '" + path + "': it is a directory");
  std::ifstream in(path);
  if (!in) throw InputError(path, "cannot read LogP parameters from '" + path + "': " + std::strerror(errno));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(path, "LogP parameters in '" + path + "' are not valid JSON: " + e.what());
  }
  return from_json(j, path);
}

}  // namespace plexus::logp
