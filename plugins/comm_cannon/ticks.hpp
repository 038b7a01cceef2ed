#pragma once
// Cannon's ticks (cannon.cpp, ticks.cpp): after the pre-shift and the buffers, the local products of
// the images and the shifts that bring them.
#include "image_queue.hpp"
#include "plexus/local_multiply.hpp"
#include "plexus/matrix.hpp"
#include "plexus/mpi.hpp"
#include "schedule.hpp"

namespace plexus::cannon {

// V ticks: the front images multiplied while the fronts travel to the neighbours (A left, B up),
// the queues rotating after each tick but the last.
void run_ticks(const Plan& plan, const DistMatrix& A, const DistMatrix& B, OperandQueue& a_q, OperandQueue& b_q,
               LocalProduct& product, mpi::Traffic& traffic);

// Both ticks of a V = 2 schedule in one pass (FuseTicks): each moving operand's two images as one
// panel, by messages or through its shared window (FusedOperand). Through a window, every rank of
// the grid must have finished its previous multiply before any rank calls this (Cannon::run's
// routes agreement, a collective over the grid, comes first): a rank writes its segment at once.
void run_fused(const Plan& plan, const DistMatrix& A, const DistMatrix& B, FusedOperand& a_f, FusedOperand& b_f,
               LocalProduct& product, mpi::Traffic& traffic);

}  // namespace plexus::cannon
