#pragma once
// Problem/Generator = model: Kohn-Sham-like H and S of N molecules in a periodic cubic box, for
// scaling studies of the density-matrix solvers. The construction and its bounds are in
// docs/model-generator.md.
#include <array>
#include <cstdint>
#include <memory>

#include "plexus/matrix.hpp"
#include "plexus/parameters.hpp"
#include "plexus/problem.hpp"

namespace plexus {

struct MoleculeModel {
  std::int64_t molecules = 64;  ///< N (Problem/Molecules)
  int block = 0;                ///< b: basis functions a molecule (the single Problem/BlockSizes entry; even)
  double gap = 0.25;            ///< ModelGap: between the on-site occupied and empty levels
  double width = 1.0;           ///< ModelWidth: width of each on-site band of levels
  double radius = 1.8;          ///< ModelRadius: coupling cut-off, lattice spacings
  double decay = 0.5;           ///< ModelDecay: decay length of the H couplings (S: half of it)
  double coupling = 0.5;        ///< ModelCoupling: ||H - diag blocks||_2 <= coupling * gap / 2
  double overlap = 0.3;         ///< ModelOverlap: ||S - I||_2 <= overlap
  double displacement = 0.1;    ///< ModelDisplacement: each coordinate moved by up to this
  std::uint64_t seed = 1;       ///< ModelSeed
};

/// The spec of a Problem list (validated and filled here; Generator need not be 'model'). Bad
/// combinations (a BlockSizes pattern, an odd block size) throw InputError naming the parameter.
MoleculeModel model_spec(const ParameterList& problem);

/// The lattice n1 x n2 x n3 = molecules, n1 >= n2 >= n3, as near a cube as the factors of N allow
/// (N = m^3: m x m x m).
std::array<std::int64_t, 3> model_box(std::int64_t molecules);

/// What the construction guarantees (docs/model-generator.md), for any N.
struct MoleculeModelBounds {
  double h_amplitude = 0;   ///< t_H: H_IJ = t_H exp(-d/decay) R_IJ, R_IJ orthogonal
  double s_amplitude = 0;   ///< t_S: S_IJ = t_S exp(-2d/decay) R'_IJ, R'_IJ orthogonal
  double homo_max = 0;      ///< every occupied eigenvalue of H c = e S c is <= homo_max < 0
  double lumo_min = 0;      ///< every empty one is >= lumo_min > 0
  double spectrum_max = 0;  ///< |e| <= spectrum_max
  double s_min = 0, s_max = 0;  ///< the eigenvalues of S lie in [s_min, s_max], s_min > 0
  int max_blocks_per_row = 0;   ///< blocks in a block row of H or S, at most (the diagonal included)
};
MoleculeModelBounds model_bounds(const MoleculeModel& spec);

/// Electrons of the model: N * b (b/2 doubly occupied orbitals a molecule).
std::int64_t model_electrons(const ParameterList& problem);

/// H and S of the model on `dist` (N x N blocks of b x b). Each rank computes only its own blocks,
/// each from the seed and the molecules' indices: the same matrices on any rank count and
/// distribution. Local, no communication.
HamiltonianMatrices generate_model(const MoleculeModel& spec, std::shared_ptr<const Distribution> dist);

}  // namespace plexus
