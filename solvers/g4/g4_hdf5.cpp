// G4 in HDF5: the collective MPI-IO writer and the serial reader (see g4_hdf5.hpp).
#include "g4_hdf5.hpp"

#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>

#include "plexus/error.hpp"
#include "plexus/progress.hpp"

namespace plexus::g4 {
namespace {

static_assert(sizeof(hid_t) == sizeof(std::int64_t), "hid_t is stored as int64");

// HDF5 prints its error stack on failures unless told not to: silenced while plexus calls it
// (plexus reports errors itself, with the innermost HDF5 message).
class Silence {
 public:
  Silence() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~Silence() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  Silence(const Silence&) = delete;
  Silence& operator=(const Silence&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// The most specific message of the current HDF5 error stack ("" when empty). Call right after the
// failing call: the next HDF5 call clears the stack.
std::string h5_error() {
  std::string text;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned, const H5E_error2_t* e, void* out) -> herr_t {
        auto* s = static_cast<std::string*>(out);
        if (s->empty() && e->desc && *e->desc) *s = e->desc;
        return 0;
      },
      &text);
  return text;
}

// An HDF5 identifier closed by the matching function.
class Handle {
 public:
  Handle() = default;
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Handle() { reset(); }
  Handle(Handle&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = -1; }
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_;
      close_ = o.close_;
      o.id_ = -1;
    }
    return *this;
  }
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }
  /// Closes now; false (with the HDF5 message in `error`) when closing fails.
  bool close(std::string* error = nullptr) {
    if (id_ < 0) return true;
    const herr_t rc = close_(id_);
    id_ = -1;
    if (rc < 0 && error) *error = h5_error();
    return rc >= 0;
  }
  /// Forgets the identifier without closing it (a collective close other ranks will not join).
  void abandon() { id_ = -1; }
  /// Closes, except while the stack unwinds: closing a file opened for MPI-IO is collective, and
  /// the other ranks may never join it (the identifier is left to the end of the process).
  void reset() {
    if (id_ >= 0 && !plexus::progress::unwinding()) close_(id_);
    id_ = -1;
  }

 private:
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
};

std::string with_detail(const std::string& what, const std::string& detail) {
  return detail.empty() ? what : what + ": " + detail;
}

// Every rank learns whether any failed; the message of the lowest failing rank is thrown on all.
// Returns the number of failed ranks (0: go on).
struct Verdict {
  int failed = 0;
  std::string message;
};
Verdict agree(MPI_Comm comm, bool ok, const std::string& message) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int first = ok ? INT_MAX : rank, failed = ok ? 0 : 1;
  int count = 0, lowest = INT_MAX;
  MPI_Allreduce(&failed, &count, 1, MPI_INT, MPI_SUM, comm);
  if (count == 0) return {};
  MPI_Allreduce(&first, &lowest, 1, MPI_INT, MPI_MIN, comm);
  int len = rank == lowest ? static_cast<int>(message.size()) : 0;
  MPI_Bcast(&len, 1, MPI_INT, lowest, comm);
  std::string text = rank == lowest ? message : std::string(static_cast<std::size_t>(len), ' ');
  MPI_Bcast(text.data(), len, MPI_CHAR, lowest, comm);
  if (count > 1 && count < size) text += " (on " + std::to_string(count) + " of " + std::to_string(size) + " ranks)";
  return {count, text};
}

// The boxes (start, count per dimension) whose union is the row-major range [lo, hi) of an array
// of shape `dims`: at most 2 * rank - 1 boxes, in row-major order.
struct Box {
  std::vector<hsize_t> start, count;
};
void boxes_of(std::uint64_t lo, std::uint64_t hi, const std::vector<hsize_t>& dims, std::size_t d,
              std::vector<hsize_t>& prefix, std::vector<Box>& out) {
  if (lo >= hi) return;
  const std::size_t rank = dims.size();
  auto emit = [&](hsize_t start, hsize_t count, bool full_rest) {
    Box b;
    b.start = prefix;
    b.count.assign(prefix.size(), 1);
    b.start.push_back(start);
    b.count.push_back(count);
    for (std::size_t j = d + 1; j < rank && full_rest; ++j) {
      b.start.push_back(0);
      b.count.push_back(dims[j]);
    }
    out.push_back(std::move(b));
  };
  if (d + 1 == rank) {
    emit(lo, hi - lo, false);
    return;
  }
  std::uint64_t inner = 1;
  for (std::size_t j = d + 1; j < rank; ++j) inner *= dims[j];
  std::uint64_t a = lo / inner;
  const std::uint64_t b = hi / inner;
  auto partial = [&](std::uint64_t slab, std::uint64_t from, std::uint64_t to) {
    prefix.push_back(slab);
    boxes_of(from, to, dims, d + 1, prefix, out);
    prefix.pop_back();
  };
  if (a == b) {
    partial(a, lo - a * inner, hi - a * inner);
    return;
  }
  if (lo % inner != 0) {
    partial(a, lo % inner, inner);
    ++a;
  }
  if (b > a) emit(a, b - a, true);
  if (hi % inner != 0) partial(b, 0, hi % inner);
}

std::vector<hsize_t> dims_of(const Model& model) {
  const auto n = static_cast<hsize_t>(model.n());
  return {n, n, n, 2};
}

// Selects the doubles [lo, hi) of the row-major dataset in `space` (nothing when empty).
bool select_range(hid_t space, std::uint64_t lo, std::uint64_t hi, const std::vector<hsize_t>& dims) {
  if (lo >= hi) return H5Sselect_none(space) >= 0;
  std::vector<Box> boxes;
  std::vector<hsize_t> prefix;
  boxes_of(lo, hi, dims, 0, prefix, boxes);
  bool first = true;
  for (const Box& b : boxes) {
    if (H5Sselect_hyperslab(space, first ? H5S_SELECT_SET : H5S_SELECT_OR, b.start.data(), nullptr, b.count.data(),
                            nullptr) < 0)
      return false;
    first = false;
  }
  return true;
}

// A string attribute (or, when long, a 1-D char dataset) of `loc`. Collective in parallel HDF5:
// every rank passes the same text; for the dataset only rank 0 writes the bytes.
bool write_string(hid_t loc, const std::string& name, const std::string& text, hid_t dxpl, bool writer) {
  if (text.size() <= kMaxAttributeBytes) {
    Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
    if (!type.ok() || H5Tset_size(type.get(), std::max<std::size_t>(text.size(), 1)) < 0) return false;
    Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    Handle attr(H5Acreate2(loc, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    if (!attr.ok()) return false;
    std::string padded = text.empty() ? std::string(1, '\0') : text;
    return H5Awrite(attr.get(), type.get(), padded.data()) >= 0;
  }
  const hsize_t len = text.size();
  Handle space(H5Screate_simple(1, &len, nullptr), H5Sclose);
  Handle dset(H5Dcreate2(loc, name.c_str(), H5T_NATIVE_CHAR, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
              H5Dclose);
  if (!dset.ok()) return false;
  const hsize_t one = 1;
  Handle mem(H5Screate_simple(1, writer ? &len : &one, nullptr), H5Sclose);
  if (!writer && (H5Sselect_none(mem.get()) < 0 || H5Sselect_none(space.get()) < 0)) return false;
  char dummy = 0;
  return H5Dwrite(dset.get(), H5T_NATIVE_CHAR, mem.get(), space.get(), dxpl, writer ? text.data() : &dummy) >= 0;
}

}  // namespace

// ---- writer -----------------------------------------------------------------------------------

void write_hdf5(MPI_Comm comm, const std::string& path, const Model& model, const double* data, Slice mine,
                const Attributes& attributes) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const std::string where = "g4/OutputFile";
  if (path.empty()) throw InputError(where, "g4: empty output file name");
  // One temporary name for all ranks (rank 0's process id), renamed into place at the end.
  long long pid = rank == 0 ? static_cast<long long>(::getpid()) : 0;
  MPI_Bcast(&pid, 1, MPI_LONG_LONG, 0, comm);
  const std::string tmp = path + ".tmp" + std::to_string(pid);
  Silence silence;
  const std::vector<hsize_t> dims = dims_of(model);

  auto remove_tmp = [&] {
    if (rank == 0) std::remove(tmp.c_str());
  };
  // Throws the agreed error on every rank; the file is closed (collectively) when every rank
  // failed alike, abandoned otherwise (a collective close that some ranks would not join).
  Handle file;
  auto fail_if = [&](bool ok, const std::string& message, bool input_error) {
    Verdict v = agree(comm, ok, message);
    if (v.failed == 0) return;
    int size = 1;
    MPI_Comm_size(comm, &size);
    if (v.failed == size)
      file.reset();
    else
      file.abandon();
    remove_tmp();
    if (input_error) throw InputError(where, v.message);
    throw Error(where, v.message);
  };

  {
    Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    bool ok = fapl.ok() && H5Pset_fapl_mpio(fapl.get(), comm, MPI_INFO_NULL) >= 0;
    std::string detail;
    if (ok) {
      file = Handle(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), H5Fclose);
      if (!file.ok()) detail = h5_error();
      ok = file.ok();
    }
    fail_if(ok, with_detail("g4: cannot create the HDF5 file '" + tmp + "' (written for '" + path + "')", detail),
            true);
  }

  Handle dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
  bool ok = dxpl.ok() && H5Pset_dxpl_mpio(dxpl.get(), H5FD_MPIO_COLLECTIVE) >= 0;
  fail_if(ok, "g4: cannot set up collective MPI-IO transfers", false);

  // Attributes of the root group (collective: every rank passes the same values).
  {
    std::string detail, failed_name;
    Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    ok = space.ok();
    for (const auto& [name, value] : attributes.ints) {
      if (!ok) break;
      Handle attr(H5Acreate2(file.get(), name.c_str(), H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
      const std::int64_t v = value;
      ok = attr.ok() && H5Awrite(attr.get(), H5T_NATIVE_INT64, &v) >= 0;
      if (!ok) failed_name = name, detail = h5_error();
    }
    for (const auto& [name, text] : attributes.strings) {
      if (!ok) break;
      ok = write_string(file.get(), name, text, dxpl.get(), rank == 0);
      if (!ok) failed_name = name, detail = h5_error();
    }
    fail_if(ok, with_detail("g4: cannot write the attribute '" + failed_name + "' to '" + tmp + "'", detail), false);
  }

  // The dataset, written in rounds of at most kRound doubles per rank (large transfers split).
  {
    Handle space(H5Screate_simple(4, dims.data(), nullptr), H5Sclose);
    Handle dset;
    std::string detail;
    if (space.ok()) {
      dset = Handle(
          H5Dcreate2(file.get(), kDatasetName, H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
          H5Dclose);
      if (!dset.ok()) detail = h5_error();
    }
    fail_if(space.ok() && dset.ok(), with_detail("g4: cannot create the dataset 'G4' in '" + tmp + "'", detail), false);

    constexpr std::uint64_t kRound = std::uint64_t{1} << 27;  // 1 GiB of doubles
    const std::uint64_t lo = 2 * static_cast<std::uint64_t>(mine.begin), hi = 2 * static_cast<std::uint64_t>(mine.end);
    std::uint64_t my_rounds = (hi - lo + kRound - 1) / kRound, rounds = 0;
    MPI_Allreduce(&my_rounds, &rounds, 1, MPI_UINT64_T, MPI_MAX, comm);
    for (std::uint64_t r = 0; r < rounds; ++r) {
      plexus::progress::point("g4.write");
      const std::uint64_t a = std::min(hi, lo + r * kRound), b = std::min(hi, a + kRound);
      const hsize_t count = b > a ? b - a : 1;
      Handle mem(H5Screate_simple(1, &count, nullptr), H5Sclose);
      Handle fspace(H5Dget_space(dset.get()), H5Sclose);
      ok = mem.ok() && fspace.ok() && select_range(fspace.get(), a, b, dims) &&
           (b > a || H5Sselect_none(mem.get()) >= 0);
      const double dummy = 0;
      ok = ok && H5Dwrite(dset.get(), H5T_NATIVE_DOUBLE, mem.get(), fspace.get(), dxpl.get(),
                          b > a ? data + (a - lo) : &dummy) >= 0;
      fail_if(ok, with_detail("g4: cannot write G4 to '" + tmp + "'", ok ? std::string() : h5_error()), false);
    }
    std::string close_error;
    ok = dset.close(&close_error);
    fail_if(ok, with_detail("g4: cannot close the dataset in '" + tmp + "'", close_error), false);
  }
  dxpl.reset();
  {
    std::string close_error;
    ok = file.close(&close_error);
    // The file handle is gone on every rank that closed it; a failed close leaves nothing to close.
    Verdict v = agree(comm, ok, with_detail("g4: cannot close '" + tmp + "'", close_error));
    if (v.failed) {
      remove_tmp();
      throw Error(where, v.message);
    }
  }
  // Every rank has closed the file: rank 0 renames it into place.
  std::string message;
  ok = true;
  if (rank == 0 && std::rename(tmp.c_str(), path.c_str()) != 0) {
    ok = false;
    message = "g4: cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(errno);
  }
  Verdict v = agree(comm, ok, message);
  if (v.failed) {
    remove_tmp();
    throw InputError(where, v.message);
  }
}

// ---- reader -----------------------------------------------------------------------------------

G4File::G4File(const std::string& path) : path_(path) {
  Silence silence;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputError(path, "g4: no such file '" + path + "'");
  if (std::filesystem::is_directory(path, ec)) throw InputError(path, "g4: '" + path + "' is a directory");
  if (H5Fis_hdf5(path.c_str()) <= 0) throw InputError(path, "g4: '" + path + "' is not an HDF5 file");
  file_ = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file_ < 0) throw InputError(path, with_detail("g4: cannot open the HDF5 file '" + path + "'", h5_error()));
  auto fail = [&](const std::string& msg) {
    if (dataset_ >= 0) H5Dclose(dataset_);
    H5Fclose(file_);
    dataset_ = file_ = -1;
    throw InputError(path, msg);
  };
  if (H5Lexists(file_, kDatasetName, H5P_DEFAULT) <= 0)
    fail("g4: '" + path + "' has no dataset '" + kDatasetName + "' (not a G4 file written by plexus?)");
  dataset_ = H5Dopen2(file_, kDatasetName, H5P_DEFAULT);
  if (dataset_ < 0) fail(with_detail("g4: cannot open the dataset 'G4' of '" + path + "'", h5_error()));
  Handle space(H5Dget_space(dataset_), H5Sclose);
  Handle type(H5Dget_type(dataset_), H5Tclose);
  const int rank = space.ok() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  std::vector<hsize_t> dims(static_cast<std::size_t>(std::max(rank, 0)));
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  std::string shape;
  for (std::size_t i = 0; i < dims.size(); ++i) shape += (i ? " x " : "") + std::to_string(dims[i]);
  if (rank != 4 || dims[3] != 2 || dims[0] != dims[1] || dims[1] != dims[2] || dims[0] == 0)
    fail("g4: the dataset 'G4' of '" + path + "' has shape " + (shape.empty() ? std::string("(scalar)") : shape) +
         "; expected N x N x N x 2");
  if (!type.ok() || H5Tget_class(type.get()) != H5T_FLOAT)
    fail("g4: the dataset 'G4' of '" + path + "' does not hold floating-point numbers");
  n_ = static_cast<int>(dims[0]);
}

G4File::~G4File() {
  Silence silence;
  if (dataset_ >= 0) H5Dclose(dataset_);
  if (file_ >= 0) H5Fclose(file_);
}

void G4File::read(std::int64_t begin, std::int64_t count, double* out) const {
  if (count <= 0) return;
  if (begin < 0 || begin + count > elements())
    throw Error(path_, "g4: read of elements [" + std::to_string(begin) + ", " + std::to_string(begin + count) +
                           ") outside G4 of " + std::to_string(elements()));
  Silence silence;
  const auto n = static_cast<hsize_t>(n_);
  const std::vector<hsize_t> dims = {n, n, n, 2};
  Handle fspace(H5Dget_space(dataset_), H5Sclose);
  const hsize_t doubles = 2 * static_cast<hsize_t>(count);
  Handle mem(H5Screate_simple(1, &doubles, nullptr), H5Sclose);
  const bool ok = fspace.ok() && mem.ok() &&
                  select_range(fspace.get(), 2 * static_cast<std::uint64_t>(begin),
                               2 * static_cast<std::uint64_t>(begin + count), dims) &&
                  H5Dread(dataset_, H5T_NATIVE_DOUBLE, mem.get(), fspace.get(), H5P_DEFAULT, out) >= 0;
  if (!ok) throw InputError(path_, with_detail("g4: cannot read the dataset 'G4' of '" + path_ + "'", h5_error()));
}

std::vector<double> G4File::read_all() const {
  std::vector<double> v(static_cast<std::size_t>(2 * elements()));
  read(0, elements(), v.data());
  return v;
}

std::optional<std::int64_t> G4File::int_attribute(const std::string& name) const {
  Silence silence;
  if (H5Aexists(file_, name.c_str()) <= 0) return std::nullopt;
  Handle attr(H5Aopen(file_, name.c_str(), H5P_DEFAULT), H5Aclose);
  Handle type(attr.ok() ? H5Aget_type(attr.get()) : -1, H5Tclose);
  if (!type.ok() || H5Tget_class(type.get()) != H5T_INTEGER) return std::nullopt;
  std::int64_t v = 0;
  if (H5Aread(attr.get(), H5T_NATIVE_INT64, &v) < 0) return std::nullopt;
  return v;
}

std::optional<std::string> G4File::string_attribute(const std::string& name) const {
  Silence silence;
  if (H5Aexists(file_, name.c_str()) > 0) {
    Handle attr(H5Aopen(file_, name.c_str(), H5P_DEFAULT), H5Aclose);
    Handle type(attr.ok() ? H5Aget_type(attr.get()) : -1, H5Tclose);
    if (!type.ok() || H5Tget_class(type.get()) != H5T_STRING || H5Tis_variable_str(type.get()) > 0) return std::nullopt;
    std::string s(H5Tget_size(type.get()), '\0');
    if (H5Aread(attr.get(), type.get(), s.data()) < 0) return std::nullopt;
    s.resize(std::strlen(s.c_str()));
    return s;
  }
  if (H5Lexists(file_, name.c_str(), H5P_DEFAULT) > 0) {
    Handle dset(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), H5Dclose);
    Handle space(dset.ok() ? H5Dget_space(dset.get()) : -1, H5Sclose);
    if (!space.ok() || H5Sget_simple_extent_ndims(space.get()) != 1) return std::nullopt;
    hsize_t len = 0;
    H5Sget_simple_extent_dims(space.get(), &len, nullptr);
    std::string s(len, '\0');
    if (len > 0 && H5Dread(dset.get(), H5T_NATIVE_CHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, s.data()) < 0)
      return std::nullopt;
    return s;
  }
  return std::nullopt;
}

FileDiff diff_files(const std::string& a, const std::string& b, std::int64_t chunk) {
  G4File fa(a), fb(b);
  if (fa.n() != fb.n())
    throw InputError(b, "g4: shape mismatch: '" + a + "' holds G4 with N = " + std::to_string(fa.n()) + " (" +
                            std::to_string(fa.elements()) + " elements), '" + b + "' with N = " +
                            std::to_string(fb.n()) + " (" + std::to_string(fb.elements()) + " elements)");
  FileDiff d;
  d.n = fa.n();
  d.elements = fa.elements();
  chunk = std::max<std::int64_t>(1, std::min(chunk, d.elements));
  std::vector<double> x(static_cast<std::size_t>(2 * chunk)), y(static_cast<std::size_t>(2 * chunk));
  for (std::int64_t at = 0; at < d.elements; at += chunk) {
    const std::int64_t count = std::min(chunk, d.elements - at);
    fa.read(at, count, x.data());
    fb.read(at, count, y.data());
    d.sums.add(x.data(), y.data(), count);
  }
  return d;
}

}  // namespace plexus::g4
