#pragma once
// Bulk silicon with the Cohen-Bergstresser empirical pseudopotential (Phys. Rev. 141, 789 (1966)),
// in Rydberg atomic units, on a supercell of n1 x n2 x n3 cubic 8-atom cells, expanded in plane
// waves |k+G|^2 <= Ecut. Everything here is local (no MPI): every rank builds the same model.
//
//   H(G, G') = |k+G|^2 delta(G, G') + V(G - G')
//   V(G)     = (1/N0) sum_atoms v(|G|^2) exp(-i G.r_atom),  N0 = 8 n1 n2 n3 (the perfect crystal's
//              atoms: a vacancy removes one atom's potential and keeps the normalisation)
//   v(3) = -0.21 Ry, v(8) = 0.04 Ry, v(11) = 0.08 Ry (|G|^2 in units of (2 pi / a)^2), else 0.
// For the perfect crystal this is the published V(G) = cos(G.tau) v(|G|^2) with the atoms at
// +-tau = +-a/8 (1,1,1) about each fcc site.
#include <array>
#include <complex>
#include <cstdint>
#include <string>
#include <vector>

namespace plexus::cg_bands {

using cplx = std::complex<double>;

/// The published figures (Cohen and Bergstresser 1966, silicon).
inline constexpr double kLatticeConstant = 10.26;  ///< a, bohr
inline constexpr double kFormFactor3 = -0.21;      ///< v(3), Ry
inline constexpr double kFormFactor8 = 0.04;       ///< v(8), Ry
inline constexpr double kFormFactor11 = 0.08;      ///< v(11), Ry

/// v(|G|^2) with |G|^2 in units of (2 pi / a)^2: the form factor at 3, 8 and 11, zero elsewhere.
double form_factor(double g2_units);

struct Crystal {
  std::array<int, 3> supercell{1, 1, 1};  ///< cubic cells along x, y, z
  double a = kLatticeConstant;            ///< bohr
  std::array<double, 3> kpoint{0, 0, 0};  ///< units of 2 pi / a
  int vacancy = -1;                       ///< index of the removed atom (-1: none)

  int cells() const { return supercell[0] * supercell[1] * supercell[2]; }
  int perfect_atoms() const { return 8 * cells(); }
  int atoms() const { return perfect_atoms() - (vacancy >= 0 ? 1 : 0); }
  /// Atom positions in bohr, the vacancy left out. Atom i of the perfect crystal is, in cell
  /// (c0, c1, c2) (c0 slowest), fcc site s = (i / 2) % 4 of (0,0,0), (0,1/2,1/2), (1/2,0,1/2),
  /// (1/2,1/2,0), at +tau (i even) or -tau (i odd).
  std::vector<std::array<double, 3>> positions() const;
  double two_pi_over_a() const;
};

/// A reciprocal lattice vector of the supercell: G = (2 pi / a) (m0/n0, m1/n1, m2/n2).
using Miller = std::array<int, 3>;

/// |k+G|^2 in bohr^-2 = Ry (the kinetic energy of the plane wave).
double kinetic(const Crystal& c, const Miller& m);

/// V(G) for the crystal (Ry).
cplx potential(const Crystal& c, const Miller& m);

/// The nonzero V(G): every G with |G|^2 in {3, 8, 11} (2 pi / a)^2 whose structure factor does not
/// vanish, with its value.
struct PotentialTerm {
  Miller m;
  cplx v;
};
std::vector<PotentialTerm> potential_terms(const Crystal& c);

/// The plane-wave basis: every G with |k+G|^2 <= ecut, ordered by (m0, m1, m2) lexicographically
/// (so each (m0, m1) column is a contiguous run in m2).
std::vector<Miller> basis(const Crystal& c, double ecut);

/// The FFT box for the basis and the potential: per direction the smallest N with only the
/// factors 2, 3, 5 and 7 such that N > (max m - min m of the basis) + (max |m| of the potential),
/// so that V psi computed on the box equals the plane-wave product on every basis G (no alias).
std::array<int, 3> fft_box(const std::vector<Miller>& basis, const std::vector<PotentialTerm>& terms);

/// The smallest n' >= n whose prime factors are all in {2, 3, 5, 7}.
int good_fft_size(int n);

/// Parses "n1,n2,n3" (positive integers) or "x,y,z" (reals) for the named parameter; throws
/// InputError naming it.
std::array<int, 3> parse_supercell(const std::string& text, const std::string& where);
std::array<double, 3> parse_kpoint(const std::string& text, const std::string& where);

}  // namespace plexus::cg_bands
