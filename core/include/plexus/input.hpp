#pragma once
// Checks of untrusted input: what a path names, short printable excerpts of file contents for
// messages, sizes multiplied without overflow, and memory estimates against what this process
// can still get.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace plexus::input {

/// `s` without leading and trailing white space.
std::string trim(const std::string& s);
/// `s` in lower case (ASCII).
std::string lower(std::string s);

/// `text` as it may appear in a message: at most `max_chars` characters of it, every byte that is
/// not printable ASCII written as \xNN (\t, \n, \r as such), "..." appended when cut. A file of
/// binary garbage never reaches the terminal raw.
std::string excerpt(std::string_view text, std::size_t max_chars = 60);

/// excerpt(text) in single quotes, as the readers' messages show what they found.
std::string quoted_excerpt(std::string_view text);

/// Throws InputError (where: the path) unless `path` names something that can be read as a file:
/// it must exist and not be a directory. `what` names it in the message ("parameter file",
/// "Matrix Market file").
void check_input_file(const std::string& path, const std::string& what);

/// Entries of a matrix file that rank 0 gathers before it sends them to the ranks owning their
/// blocks (32 bytes each, 8 MiB): what rank 0 holds of the matrix beyond its own blocks while it
/// reads a Matrix Market or CP2K CSR file.
inline constexpr std::size_t kReadChunkEntries = std::size_t{1} << 18;

/// a * b and a + b of non-negative sizes, or nothing when the result does not fit in int64.
std::optional<std::int64_t> checked_mul(std::int64_t a, std::int64_t b);
std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b);

/// What this process can still allocate, and what says so.
struct Available {
  std::uint64_t bytes = 0;
  std::string source;  ///< e.g. "MemAvailable in /proc/meminfo", "the address-space limit (ulimit -v)"
};
/// What one of `sharing` processes on this node can still get: the least of MemAvailable in
/// /proc/meminfo (else the physical memory) and the room left under a cgroup memory limit (v2
/// memory.max or v1 memory.limit_in_bytes), both divided among the `sharing` processes, and the
/// room left under this process's address-space limit (RLIMIT_AS, `ulimit -v`: the limit less
/// the process's current size). Local, no communication.
Available available_memory(int sharing = 1);

/// "1.50 GiB", "512 B".
std::string format_size(double bytes);

}  // namespace plexus::input
