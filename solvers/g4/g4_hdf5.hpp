#pragma once
// G4 in HDF5: one dataset "G4" of doubles with shape N x N x N x 2 (K1, K2, K3, re/im), the
// flattened G4 in row-major order, and the run's parameters as attributes of the root group.
// Written collectively through MPI-IO by every rank of a communicator (each its own contiguous
// range, ranks without data taking part with an empty selection), atomically (a temporary file
// renamed by rank 0 once every rank has closed it). Read serially by `plexus g4-diff` and tests.
// Needs a parallel HDF5 (Debian: libhdf5-openmpi-dev); hdf5.h stays out of this header.
#include <mpi.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "g4_model.hpp"

namespace plexus::g4 {

inline constexpr const char* kDatasetName = "G4";

/// Attributes written to the root group: integers and strings.
struct Attributes {
  std::vector<std::pair<std::string, std::int64_t>> ints;
  std::vector<std::pair<std::string, std::string>> strings;
};

/// Writes G4 to `path`. Collective over comm: `data` holds this rank's complex elements
/// [mine.begin, mine.end) (2 doubles each); the ranges of all ranks must cover G4 exactly once
/// (empty ranges are fine). Strings longer than kMaxAttributeBytes become 1-D char datasets of
/// the same name instead of attributes. Any failure (file cannot be created, write or rename
/// fails) throws on every rank, with the same message; the temporary file is removed.
void write_hdf5(MPI_Comm comm, const std::string& path, const Model& model, const double* data, Slice mine,
                const Attributes& attributes);
inline constexpr std::size_t kMaxAttributeBytes = 60000;

/// A G4 file opened for reading (serially, by one process). Errors are plexus::InputError naming
/// the file: missing file, not HDF5, no dataset "G4", a shape other than N x N x N x 2.
class G4File {
 public:
  explicit G4File(const std::string& path);
  ~G4File();
  G4File(const G4File&) = delete;
  G4File& operator=(const G4File&) = delete;

  const std::string& path() const { return path_; }
  int n() const { return n_; }
  std::int64_t elements() const { return std::int64_t{n_} * n_ * n_; }
  /// Reads complex elements [begin, begin + count) into out (2 * count doubles).
  void read(std::int64_t begin, std::int64_t count, double* out) const;
  std::vector<double> read_all() const;
  /// An attribute of the root group, if present (integer, or string; also a string dataset).
  std::optional<std::int64_t> int_attribute(const std::string& name) const;
  std::optional<std::string> string_attribute(const std::string& name) const;

 private:
  std::string path_;
  std::int64_t file_ = -1, dataset_ = -1;  // hid_t
  int n_ = 0;
};

/// The L1 and L2 relative errors of B against A (reference A), read in chunks of `chunk` complex
/// elements. Throws InputError when the files cannot be read or their shapes differ.
struct FileDiff {
  int n = 0;
  std::int64_t elements = 0;
  ErrorSums sums;
};
FileDiff diff_files(const std::string& a, const std::string& b, std::int64_t chunk = std::int64_t{1} << 21);

}  // namespace plexus::g4
