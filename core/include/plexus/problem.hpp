#pragma once
// The "Problem" sublist: which matrices a solver works on (generated or read from files), their
// block sizes, distribution and process grid.
#include <mpi.h>

#include <memory>
#include <string>

#include "plexus/context.hpp"
#include "plexus/matrix.hpp"
#include "plexus/parameters.hpp"

namespace plexus {

/// The valid "Problem" parameters with their defaults (the built-in H2O-like problem).
ParameterListPtr problem_valid_parameters();

struct ProblemMatrices {
  std::shared_ptr<DistMatrix> a, b, c;
};

/// Builds A, B and (when with_c) C of the problem on a grid of the context (its communicators
/// from the context's pool), in the distribution the context's multiply algorithm asks for.
/// trans_a / trans_b: the multiply takes op(A) = A^T (op(B) = B^T), so A is generated K x M (B
/// N x K; Generator = random only). Collective over ctx.comm().
ProblemMatrices build_problem(const ParameterList& problem, Context& ctx, bool with_c, bool trans_a = false,
                              bool trans_b = false);

/// The Hamiltonian problem of the density-matrix solvers: the Kohn-Sham matrix H and the overlap
/// S (null: an orthogonal basis, S = I), square, symmetric, with the same layout and
/// distribution.
struct HamiltonianMatrices {
  std::shared_ptr<DistMatrix> h, s;
};

/// Builds H and S of the problem (Problem/Generator = matrix-market: FileH and FileS) on a grid
/// of the context, in the distribution the context's multiply algorithm asks for. The block sizes
/// must cover the dimension exactly (a cycled pattern that cuts the last block is refused).
/// Collective over ctx.comm(); bad input throws InputError on every rank alike.
HamiltonianMatrices build_hamiltonian(const ParameterList& problem, Context& ctx);

/// "23" -> {23}; "1,5,13" -> {1,5,13}. Throws InputError naming `where` on bad input.
std::vector<int> parse_int_list(const std::string& text, const std::string& where);

}  // namespace plexus
