#pragma once
// The distributed 3D FFT by planes (Hoefler, Rehm and Janisch's scheme, as in ABINIT and most
// plane-wave codes). The plane-wave coefficients live on "sticks": the (x, y) columns of the box
// that hold at least one basis vector, each a contiguous run in z. Sticks are spread over the ranks
// so that every rank holds nearly npw / P coefficients (the paper's Fig. 1); z-planes are spread in
// contiguous blocks. G -> r: 1D FFTs along z on the local sticks only, an all-to-all (on its own
// communicator) from sticks to planes, 2D FFTs on the local planes. r -> G: the same backwards.
// Columns outside the sphere are never transformed along z (the paper's "avoid the
// transformation of zeros"). Local transforms through FFTW3, planned once.
#include <fftw3.h>
#include <mpi.h>

#include <array>
#include <complex>
#include <cstdint>
#include <span>
#include <vector>

#include "plexus/collectives.hpp"
#include "plexus/mpi.hpp"
#include "silicon.hpp"

namespace plexus::cg_bands {

/// Which sticks and planes each of P ranks holds. Deterministic: the same on every rank.
class Layout {
 public:
  struct Stick {
    int x = 0, y = 0;  ///< box column (m0 mod Nx, m1 mod Ny)
    int first = 0;     ///< index of its first basis vector (the basis is ordered by m0, m1, m2)
    int count = 0;     ///< basis vectors on it (consecutive m2)
    int owner = 0;     ///< rank holding it
  };
  /// basis: as cg_bands::basis orders it. Sticks go to ranks longest first, each to the rank with
  /// the fewest coefficients so far (ties: the lowest rank); z-planes in blocks of floor/ceil(Nz/P)
  /// (ranks beyond Nz hold none).
  Layout(const std::vector<Miller>& basis, std::array<int, 3> box, int ranks);

  std::array<int, 3> box() const { return box_; }
  int ranks() const { return ranks_; }
  const std::vector<Stick>& sticks() const { return sticks_; }
  /// The sticks of rank r, in the order its coefficients are stored.
  const std::vector<int>& sticks_of(int r) const { return sticks_of_[r]; }
  /// Coefficients of rank r, and the global basis index of each of them (in storage order).
  std::int64_t coefficients_of(int r) const { return coefficients_[r]; }
  std::vector<int> basis_indices(int r) const;
  /// z-planes [first, first + count) of rank r.
  int first_plane(int r) const { return plane_first_[r]; }
  int planes_of(int r) const { return plane_first_[r + 1] - plane_first_[r]; }
  /// The z index in the box of m2 (m2 mod Nz in [0, Nz)).
  int z_of(int m2) const;
  std::int64_t npw() const { return npw_; }

 private:
  std::array<int, 3> box_;
  int ranks_;
  std::vector<Stick> sticks_;
  std::vector<std::vector<int>> sticks_of_;
  std::vector<std::int64_t> coefficients_;
  std::vector<int> plane_first_;  // ranks + 1
  std::vector<int> first_m2_;     // per stick: m2 of its first basis vector
  std::int64_t npw_ = 0;
  friend class PlaneFft;
};

/// One rank's part of the transform. Plans and buffers are made once; the plans' destruction calls
/// no MPI function.
class PlaneFft {
 public:
  enum class Planning { Estimate, Measure };
  /// comm: the ranks of the layout, in order (the transform's own communicator).
  PlaneFft(Layout layout, MPI_Comm comm, Collectives& collectives, Planning planning = Planning::Estimate);
  ~PlaneFft();
  PlaneFft(const PlaneFft&) = delete;
  PlaneFft& operator=(const PlaneFft&) = delete;

  /// psi(r) = sum_G c_G exp(i G.r) on the local planes, from the local coefficients (layout
  /// order). The result is planes(): [z - first_plane][y][x].
  void to_real(std::span<const cplx> coefficients, mpi::Traffic& traffic);
  /// c_G = sum_r f(r) exp(-i G.r) (unnormalised: to_coefficients(to_real(c)) = Nx Ny Nz c) of
  /// f = planes(), at the local coefficients.
  void to_coefficients(std::span<cplx> coefficients, mpi::Traffic& traffic);

  std::span<cplx> planes() { return planes_; }
  std::int64_t box_points() const;  ///< Nx Ny Nz
  int rank() const { return rank_; }
  const Layout& layout() const { return layout_; }

  /// What the all-to-alls did so far on this rank.
  struct Counters {
    std::int64_t alltoalls = 0;
    double alltoall_seconds = 0;  ///< from posting to completion
    double fft_seconds = 0;       ///< local 1D and 2D transforms, packing
  };
  const Counters& counters() const { return counters_; }
  /// Mean bytes this rank sends to each other rank in one all-to-all (the LogGP model's message).
  double bytes_per_pair() const;

 private:
  void exchange(std::span<const cplx> send, std::span<cplx> recv, const std::vector<int>& send_counts,
                const std::vector<int>& recv_counts, mpi::Traffic& traffic);

  Layout layout_;
  MPI_Comm comm_;
  Collectives& collectives_;
  int rank_ = 0;
  int nx_ = 0, ny_ = 0, nz_ = 0;
  std::vector<cplx> sticks_;  // local sticks x Nz
  std::vector<cplx> planes_;  // local planes x Ny x Nx
  std::vector<cplx> send_, recv_;
  std::vector<int> to_planes_send_, to_planes_recv_;  // counts in doubles, per rank
  std::vector<int> z_offset_;                         // per local coefficient: its position in sticks_
  fftw_plan z_backward_ = nullptr, z_forward_ = nullptr, xy_backward_ = nullptr, xy_forward_ = nullptr;
  Counters counters_;
};

}  // namespace plexus::cg_bands
