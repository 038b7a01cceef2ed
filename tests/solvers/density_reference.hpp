#pragma once
// The dense reference of the density-matrix solvers' tests: the generalized eigenproblem
// H c = e S c by LAPACK's dsygvd on the gathered matrices, and P = C_occ C_occ^T.
#include <mpi.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

extern "C" void dsygvd_(const int* itype, const char* jobz, const char* uplo, const int* n, double* a, const int* lda,
                        double* b, const int* ldb, double* w, double* work, const int* lwork, int* iwork,
                        const int* liwork, int* info);

namespace plexus::test {

struct DenseDensity {
  int n = 0, occupied = 0;
  std::vector<double> levels;  ///< ascending
  std::vector<double> p;       ///< C_occ C_occ^T, column-major n x n
  double band_energy = 0;      ///< 2 sum of the occupied levels = 2 Tr(P H)
  double homo() const { return levels[static_cast<std::size_t>(occupied) - 1]; }
  double lumo() const { return levels[static_cast<std::size_t>(occupied)]; }
  double mid_gap() const { return 0.5 * (homo() + lumo()); }
};

/// h and s column-major n x n (s empty: the identity). Computed on rank 0 of comm and broadcast.
inline DenseDensity dense_density(std::vector<double> h, std::vector<double> s, int n, int occupied, MPI_Comm comm) {
  DenseDensity d;
  d.n = n;
  d.occupied = occupied;
  d.levels.assign(static_cast<std::size_t>(n), 0.0);
  d.p.assign(static_cast<std::size_t>(n) * n, 0.0);
  int rank = 0, info = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank == 0) {
    if (s.empty()) {
      s.assign(static_cast<std::size_t>(n) * n, 0.0);
      for (int i = 0; i < n; ++i) s[static_cast<std::size_t>(i) * n + i] = 1.0;
    }
    const int itype = 1;
    int lwork = -1, liwork = -1, iwork_size = 0;
    double work_size = 0;
    dsygvd_(&itype, "V", "L", &n, h.data(), &n, s.data(), &n, d.levels.data(), &work_size, &lwork, &iwork_size,
            &liwork, &info);
    lwork = static_cast<int>(work_size);
    liwork = iwork_size;
    std::vector<double> work(static_cast<std::size_t>(lwork));
    std::vector<int> iwork(static_cast<std::size_t>(liwork));
    dsygvd_(&itype, "V", "L", &n, h.data(), &n, s.data(), &n, d.levels.data(), work.data(), &lwork, iwork.data(),
            &liwork, &info);
    // h now holds the eigenvectors C (C^T S C = I): P = sum over the occupied columns c c^T.
    for (int k = 0; k < occupied; ++k) {
      const double* c = h.data() + static_cast<std::size_t>(k) * n;
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) d.p[static_cast<std::size_t>(j) * n + i] += c[i] * c[j];
    }
  }
  MPI_Bcast(&info, 1, MPI_INT, 0, comm);
  if (info != 0) throw std::runtime_error("dsygvd failed: info = " + std::to_string(info));
  MPI_Bcast(d.levels.data(), n, MPI_DOUBLE, 0, comm);
  MPI_Bcast(d.p.data(), n * n, MPI_DOUBLE, 0, comm);
  for (int k = 0; k < occupied; ++k) d.band_energy += 2 * d.levels[static_cast<std::size_t>(k)];
  return d;
}

}  // namespace plexus::test
