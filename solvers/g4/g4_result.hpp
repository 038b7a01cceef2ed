#pragma once
// G4 as a distributed matrix (g4/ResultMatrix), so that `plexus compare` can check one run's G4
// against another's.
#include <memory>
#include <vector>

#include "g4_model.hpp"
#include "plexus/context.hpp"
#include "plexus/matrix.hpp"

namespace plexus::g4 {

/// G4 as a distributed matrix for `plexus compare`: N block rows (one per K1) of 2*N^2 doubles
/// (K2, K3, re/im) and one column, distributed by contiguous block rows over a P x 1 grid. The same
/// layout and distribution in both modes and for every ring size, so results compare directly.
/// `held`: what this rank holds of G4, the complex elements held_range (replicated: all of it;
/// distributed: its ring position's slice); writer_of[p]: the rank that sends ring position p's
/// slice (distributed mode, rings of S). Collective over ctx.comm().
std::shared_ptr<DistMatrix> result_matrix(Context& ctx, const Model& model, bool distributed, const double* held,
                                          Slice held_range, const std::vector<int>& writer_of, int S);

}  // namespace plexus::g4
