#pragma once
// Counter-based random numbers: a value is a function of a seed and a few indices (splitmix64's
// finaliser), so that every rank computes the same value of any element without a shared
// stream. Private to core: the random and model generators use it.
#include <cstdint>

namespace plexus::detail {

inline std::uint64_t mix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

inline std::uint64_t hash(std::uint64_t seed, std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  return mix(mix(mix(mix(seed) ^ a) ^ b) ^ c);
}

/// [0, 1) from the top 53 bits.
inline double unit(std::uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }

}  // namespace plexus::detail
