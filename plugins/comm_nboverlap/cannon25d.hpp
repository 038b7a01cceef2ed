#pragma once
// Huang and Chow's 2.5D variant (Algorithm 6) on a q x q x c mesh (Replication = c): the
// operands on the plane P_{:,:,0}; each layer l runs its share of Cannon's q steps (steps
// floor(l q / c) .. floor((l+1) q / c) - 1), its first operands fetched from the plane already
// skewed, the following ones shifted within the layer while the current product runs; the
// partial products summed along the fibre P_{i,j,:}: by Reduce onto the plane for a product, by
// Allreduce for D^2 (every layer needs it as B of D^3), each in NDup pipelined parts.
#include <vector>

#include "mesh.hpp"
#include "plane.hpp"
#include "plexus/multiply.hpp"
#include "wire.hpp"

namespace plexus::nboverlap {

/// The Cannon steps of layer l: [first, last).
struct LayerSteps {
  int first = 0, last = 0;
};
LayerSteps layer_steps(int q, int c, int l);

/// One multiply on an active rank of the 2.5D mesh: C_{i,j} on P_{i,j,0}, an empty panel elsewhere.
Panel cannon_product(MultiplyTask& task, const Mesh& m, Transport& tr, const PartPlan& plan, const PlaneOperand& pa,
                     const PlaneOperand& pb, const std::vector<int>& rows_i);

/// SymmSquareCube (Algorithm 6) on an active rank of the 2.5D mesh.
void cannon_square_cube(const SquareCubeJob& job, SquareCube& out);

}  // namespace plexus::nboverlap
