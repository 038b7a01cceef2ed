#pragma once
// The matrix API for solvers (DBCSR's free functions are the model). Every function is collective
// over the matrix's grid where it moves data or reduces, counts every byte it moves, and records
// an OperationReport in the context's log (operation name, component, time, traffic).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "plexus/context.hpp"
#include "plexus/matrix.hpp"
#include "plexus/multiply.hpp"

namespace plexus {

/// C = alpha * op(A) * op(B) + beta * C through the context's multiply algorithm and kernel,
/// with the context's default options. C may be A and/or B.
MultiplyReport multiply(Context& ctx, Trans trans_a, Trans trans_b, double alpha, const DistMatrix& A,
                        const DistMatrix& B, double beta, DistMatrix& C);
MultiplyReport multiply(Context& ctx, Trans trans_a, Trans trans_b, double alpha, const DistMatrix& A,
                        const DistMatrix& B, double beta, DistMatrix& C, const MultiplyOptions& options);

/// D2 = D D and D3 = D D D of a symmetric D: the multiply algorithm's fused operation when it
/// has one (MultiplyAlgorithm::square_and_cube), else two multiplies (D2 = D D, D3 = D D2). D2
/// and D3 need D's layout and distribution. Every multiply's report goes to `reports` and to the
/// context's log. Returns whether the fused operation ran.
bool square_and_cube(Context& ctx, const DistMatrix& D, DistMatrix& D2, DistMatrix& D3,
                     std::vector<MultiplyReport>& reports, const MultiplyOptions& options);

/// Y = alpha * Y + beta * X over the union of their block patterns, on the kernel's threads. X
/// must have Y's layout; when its distribution differs it is redistributed onto Y's first
/// (counted).
void add(Context& ctx, double alpha, DistMatrix& Y, double beta, const DistMatrix& X);
/// alpha * X + beta * Y over the union of their block patterns, a new matrix on X's distribution
/// (named `name`, or X's name), on the kernel's threads: what copy() and add() give, in one pass
/// that writes each value once. Y must have X's layout; when its distribution differs it is
/// redistributed onto X's first (counted).
DistMatrix combine(Context& ctx, double alpha, const DistMatrix& X, double beta, const DistMatrix& Y,
                   const std::string& name = "");
/// X = alpha * X, on the kernel's threads (Kernel::threads).
void scale(Context& ctx, DistMatrix& X, double alpha);
/// X = X + alpha * I (square layouts; missing diagonal blocks are created).
void add_on_diag(Context& ctx, DistMatrix& X, double alpha);
/// Drops the blocks whose Frobenius norm is below eps; returns the number dropped on all ranks.
/// On the kernel's threads.
std::int64_t filter(Context& ctx, DistMatrix& X, double eps);
/// A copy with the same layout, distribution and blocks (named `name`, or X's name), its values
/// copied on the kernel's threads.
DistMatrix copy(Context& ctx, const DistMatrix& X, const std::string& name = "");
/// An empty matrix with X's layout and distribution.
DistMatrix create_like(const DistMatrix& X, const std::string& name);
/// X^T (see transpose(const DistMatrix&) in multiply.hpp for its distribution), counted.
DistMatrix transpose(Context& ctx, const DistMatrix& X);
/// X on another distribution over the same ranks, counted.
DistMatrix redistribute(Context& ctx, const DistMatrix& X, std::shared_ptr<const Distribution> target);
/// The trace (square layouts).
double trace(Context& ctx, const DistMatrix& X);
/// sum_ij X_ij Y_ij (Y redistributed onto X's distribution when it differs, counted); the local
/// sum on the kernel's threads (its last digits may depend on how many, as norm's).
double dot(Context& ctx, const DistMatrix& X, const DistMatrix& Y);
/// The Frobenius norm, its local sum on the kernel's threads (Kernel::threads).
double norm(Context& ctx, const DistMatrix& X);

// ---- collectives through the context ----------------------------------------------------------
// The context's collectives (ctx.collectives()) over ctx.comm(), blocking, each recorded as an
// OperationReport whose component is the collectives' name and whose predicted figures are the
// component's model (Collectives::model) of the call.

/// In-place sum over the context's ranks.
void allreduce(Context& ctx, std::span<double> values, mpi::Role role = mpi::Role::Other);
/// root's values to every rank.
void bcast(Context& ctx, std::span<double> values, int root, mpi::Role role = mpi::Role::Other);
/// The sum of every rank's `in` into root's `out`.
void reduce(Context& ctx, std::span<const double> in, std::span<double> out, int root,
            mpi::Role role = mpi::Role::Other);
/// Block q of `send` to rank q, block q of `recv` from rank q.
void alltoall(Context& ctx, std::span<const double> send, std::span<double> recv, mpi::Role role = mpi::Role::Other);

}  // namespace plexus
