#pragma once
// Logging through spdlog: rank 0 logs at info, every rank at debug when asked.
#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace plexus {
/// The plexus logger (created on first use; configure_logging sets levels per rank).
spdlog::logger& log();
/// level: "error", "warn", "info", "debug". Non-zero ranks log only warnings and errors unless
/// level is "debug".
void configure_logging(int rank, const std::string& level);
}  // namespace plexus
