// main() for every plexus GoogleTest suite: initialises MPI, prints only rank 0's results, and
// turns a failure on any rank into a failing exit code on every rank (no rank waits forever:
// CTest's timeout covers a rank stuck in a collective).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

namespace {
// Silences the default printer on ranks other than 0, but keeps failures visible with the rank.
class RankPrinter : public testing::EmptyTestEventListener {
 public:
  explicit RankPrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const testing::TestPartResult& r) override {
    if (r.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_, r.file_name() ? r.file_name() : "?",
                   r.line_number(), r.summary());
  }

 private:
  int rank_;
};
}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);  // threaded rings need it; the rest does not
  testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankPrinter(rank));
  }
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any_failed;
}
