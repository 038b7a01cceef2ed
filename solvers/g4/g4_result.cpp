// G4 as a distributed matrix (g4_result.hpp).
#include "g4_result.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdint>

#include "plexus/distribution.hpp"
#include "plexus/error.hpp"
#include "plexus/layout.hpp"
#include "plexus/mpi.hpp"
#include "plexus/panel.hpp"

namespace plexus::g4 {

namespace {
constexpr int kTagResult = 7700;
}  // namespace

std::shared_ptr<DistMatrix> result_matrix(Context& ctx, const Model& model, bool distributed, const double* held,
                                          Slice held_range, const std::vector<int>& writer_of, int S) {
  const MPI_Comm comm = ctx.comm();
  const int P = mpi::size(comm), rank = mpi::rank(comm);
  const int N = model.n();
  const std::int64_t total = model.elements(), row = std::int64_t{N} * N;  // complex elements per K1
  auto grid = ctx.grid(P, 1);                                              // its communicators from the context's pool
  auto dist = Distribution::rows_1d(grid, N, 1);
  BlockLayout layout{BlockSizes::uniform(N, static_cast<int>(2 * row)), BlockSizes::uniform(1, 1)};
  // The K1 rows of every rank: contiguous ranges.
  std::vector<Slice> rows_of(static_cast<std::size_t>(P), Slice{0, 0});
  std::vector<bool> seen(static_cast<std::size_t>(P), false);
  for (int b = 0; b < N; ++b) {
    const auto owner = static_cast<std::size_t>(dist->row_dist()[static_cast<std::size_t>(b)]);
    if (!seen[owner]) rows_of[owner] = {b, b};
    seen[owner] = true;
    PLEXUS_CHECK(rows_of[owner].end == b, "g4: the rows-1d distribution is not contiguous");
    rows_of[owner].end = b + 1;
  }
  const Slice my_rows = rows_of[static_cast<std::size_t>(rank)];
  const Slice wanted{my_rows.begin * row, my_rows.end * row};  // complex elements
  MatrixData data(static_cast<std::size_t>(2 * wanted.size()));
  auto overlap = [](Slice a, Slice b) { return Slice{std::max(a.begin, b.begin), std::min(a.end, b.end)}; };

  if (!distributed) {
    std::copy(held + 2 * wanted.begin, held + 2 * wanted.end, data.begin());
  } else {
    // Slices go from the writer of each ring position to the owners of the rows they cover.
    constexpr std::int64_t kPiece = std::int64_t{1} << 27;  // doubles per message
    std::vector<MPI_Request> requests;
    auto post = [&](bool send, double* base, std::int64_t doubles, int peer) {
      for (std::int64_t at = 0; at < doubles; at += kPiece) {
        const int count = static_cast<int>(std::min(kPiece, doubles - at));
        requests.emplace_back();
        if (send)
          mpi::check(MPI_Isend(base + at, count, MPI_DOUBLE, peer, kTagResult, comm, &requests.back()), "MPI_Isend");
        else
          mpi::check(MPI_Irecv(base + at, count, MPI_DOUBLE, peer, kTagResult, comm, &requests.back()), "MPI_Irecv");
      }
    };
    for (int p = 0; p < S; ++p) {
      const Slice o = overlap(wanted, g4::slice_of(total, S, p));
      const int src = writer_of[static_cast<std::size_t>(p)];
      if (o.size() <= 0) continue;
      if (src == rank)
        std::copy(held + 2 * (o.begin - held_range.begin), held + 2 * (o.end - held_range.begin),
                  data.begin() + 2 * (o.begin - wanted.begin));
      else
        post(false, data.data() + 2 * (o.begin - wanted.begin), 2 * o.size(), src);
    }
    int my_position = -1;
    for (int p = 0; p < S; ++p)
      if (writer_of[static_cast<std::size_t>(p)] == rank) my_position = p;
    if (my_position >= 0)
      for (int d = 0; d < P; ++d) {
        const Slice dr = rows_of[static_cast<std::size_t>(d)];
        const Slice o = overlap(Slice{dr.begin * row, dr.end * row}, held_range);
        if (d == rank || o.size() <= 0) continue;
        post(true, const_cast<double*>(held) + 2 * (o.begin - held_range.begin), 2 * o.size(), d);
      }
    mpi::check(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  }

  const auto nrows = static_cast<std::size_t>(my_rows.size());
  IndexArray row_ids(nrows), row_ptr(nrows + 1), cols(nrows, 0), offsets(nrows);
  for (std::size_t r = 0; r < nrows; ++r) {
    row_ids[r] = my_rows.begin + static_cast<std::int64_t>(r);
    row_ptr[r] = static_cast<std::int64_t>(r);
    offsets[r] = 2 * row * static_cast<std::int64_t>(r);
  }
  row_ptr[nrows] = static_cast<std::int64_t>(nrows);
  auto matrix = std::make_shared<DistMatrix>("G4", dist, layout);
  matrix->set_local(
      Panel::adopt(std::move(row_ids), std::move(row_ptr), std::move(cols), std::move(offsets), std::move(data)));
  return matrix;
}

}  // namespace plexus::g4
