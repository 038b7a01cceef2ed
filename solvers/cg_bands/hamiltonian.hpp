#pragma once
// H psi for one band, distributed as the plane FFT's layout: the kinetic part |k+G|^2 in G-space,
// the local potential in real space on the FFT's planes (V(r) built once from V(G)).
#include <span>
#include <vector>

#include "plane_fft.hpp"
#include "silicon.hpp"

namespace plexus::cg_bands {

class Hamiltonian {
 public:
  /// basis: the whole basis (every rank has it); the rank's coefficients are fft.layout()'s.
  /// terms: the crystal's nonzero V(G) (potential_terms), from which V(r) is built.
  Hamiltonian(const Crystal& crystal, const std::vector<Miller>& basis, const std::vector<PotentialTerm>& terms,
              PlaneFft& fft);

  /// out = H in, both this rank's coefficients. Collective over the FFT's communicator (two
  /// all-to-alls).
  void apply(std::span<const cplx> in, std::span<cplx> out, mpi::Traffic& traffic);

  /// |k+G|^2 of this rank's coefficients, in storage order.
  const std::vector<double>& kinetic() const { return kinetic_; }
  std::size_t local_size() const { return kinetic_.size(); }
  std::int64_t applications() const { return applications_; }
  PlaneFft& fft() { return fft_; }

 private:
  PlaneFft& fft_;
  std::vector<double> kinetic_;
  std::vector<double> potential_;  // V(r) / (Nx Ny Nz) on the local planes ([z][y][x])
  std::int64_t applications_ = 0;
};

/// V(r) = sum_G V(G) exp(i G.r) at the box points of planes [z0, z0 + nz) ([z][y][x]); real.
std::vector<double> potential_on_planes(const std::vector<PotentialTerm>& terms, std::array<int, 3> box, int z0,
                                        int nz);

}  // namespace plexus::cg_bands
