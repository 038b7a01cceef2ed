// Logging through spdlog: messages up to info go to stdout, warnings and errors to stderr.
#include "plexus/log.hpp"

#include <mpi.h>
#include <spdlog/sinks/base_sink.h>

#include <cstdio>
#include <mutex>
#include <string>

#include "plexus/error.hpp"
#include "plexus/progress.hpp"

namespace plexus {

namespace {

// One sink, two streams: the run's output on stdout, problems on stderr.
class SplitSink final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    progress::clear_line();  // a progress bar on the terminal gives way to the line
    std::FILE* out = msg.level >= spdlog::level::warn ? stderr : stdout;
    std::fwrite(formatted.data(), 1, formatted.size(), out);
    std::fflush(out);
  }
  void flush_() override {
    std::fflush(stdout);
    std::fflush(stderr);
  }
};

int world_rank_if_known() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return 0;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

void set_pattern(spdlog::logger& l, int rank) {
  if (rank == 0)
    l.set_pattern("[plexus] %v");
  else
    l.set_pattern("[plexus r" + std::to_string(rank) + "] %v");
}

std::shared_ptr<spdlog::logger> make_logger() {
  auto logger = std::make_shared<spdlog::logger>("plexus", std::make_shared<SplitSink>());
  const int rank = world_rank_if_known();
  set_pattern(*logger, rank);
  logger->set_level(rank == 0 ? spdlog::level::info : spdlog::level::warn);
  logger->flush_on(spdlog::level::info);
  return logger;
}

}  // namespace

spdlog::logger& log() {
  // Never destroyed: objects may log from destructors of statics.
  static auto* logger = new std::shared_ptr<spdlog::logger>(make_logger());
  return **logger;
}

void configure_logging(int rank, const std::string& level) {
  spdlog::level::level_enum lvl;
  if (level == "error")
    lvl = spdlog::level::err;
  else if (level == "warn" || level == "warning")
    lvl = spdlog::level::warn;
  else if (level == "info")
    lvl = spdlog::level::info;
  else if (level == "debug")
    lvl = spdlog::level::debug;
  else
    throw InputError("log level", "unknown log level '" + level + "' (valid: error, warn, info, debug)");
  auto& l = log();
  set_pattern(l, rank);
  if (rank != 0 && lvl != spdlog::level::debug && lvl < spdlog::level::warn) lvl = spdlog::level::warn;
  l.set_level(lvl);
}

}  // namespace plexus
