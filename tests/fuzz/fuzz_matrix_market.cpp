// Fuzz target: a Matrix Market file (plain or gzip-compressed) read as `Problem/FileA` is read (core/src/problem.cpp):
// the header, then, when its dimensions are small enough to hold, the whole matrix into a one-rank
// DistMatrix with block sizes chosen from the dimensions.
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz_support.hpp"
#include "plexus/distribution.hpp"
#include "plexus/layout.hpp"
#include "plexus/matrix_market.hpp"

namespace {
// Dense blocks of at most this many rows and columns in all are allocated.
constexpr std::int64_t kMaxDimension = 256;

void finalize_mpi() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  std::atexit(finalize_mpi);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static plexus::fuzz::MemoryFile file;
  static const auto grid = plexus::Grid::create(MPI_COMM_SELF);
  const std::string& path = file.write(data, size);
  plexus::fuzz::expect_input_errors_only([&] {
    const plexus::MatrixMarketHeader h = plexus::read_matrix_market_header(path);
    if (h.rows > kMaxDimension || h.cols > kMaxDimension) return;
    // Block sizes 1..4, from the dimensions, so that blocks of several sizes occur.
    const plexus::BlockLayout layout{plexus::BlockSizes::covering(h.rows, static_cast<int>(1 + h.rows % 4)),
                                     plexus::BlockSizes::covering(h.cols, static_cast<int>(1 + h.cols % 4))};
    auto dist = plexus::Distribution::block_cyclic(grid, layout.rows.count(), layout.cols.count());
    (void)plexus::read_matrix_market(path, "A", dist, layout);
  });
  return 0;
}
