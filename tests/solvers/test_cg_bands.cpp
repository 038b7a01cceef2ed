// The cg_bands solver's pieces against independent computations, on every rank count:
//   - the plane FFT against FFTW's own serial 3D transform of the same box, and its round trip;
//   - H psi through the FFT against the dense plane-wave Hamiltonian assembled from the formula;
//   - the CG's eigenvalues against LAPACK's zheevd of that dense matrix, through every collectives
//     component, the bands orthonormal and each an eigenvector of the dense matrix;
//   - the number of allreduces of Eq. 24, with BatchReductions off and on.
#include <fftw3.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <vector>

#include "cg.hpp"
#include "collectives_components.hpp"
#include "plexus/collectives.hpp"
#include "plexus/error.hpp"
#include "plexus/parameters.hpp"
#include "plexus/registry.hpp"
#include "prediction.hpp"

extern "C" void zheevd_(const char* jobz, const char* uplo, const int* n, std::complex<double>* a, const int* lda,
                        double* w, std::complex<double>* work, const int* lwork, double* rwork, const int* lrwork,
                        int* iwork, const int* liwork, int* info);

namespace {

using namespace plexus;
namespace cb = plexus::cg_bands;
using cb::cplx;
using cb::Miller;

int world_rank() { return mpi::rank(MPI_COMM_WORLD); }
int world_size() { return mpi::size(MPI_COMM_WORLD); }

struct Model {
  cb::Crystal crystal;
  double ecut = 0;
  std::vector<Miller> basis;
  std::vector<cb::PotentialTerm> terms;
  std::array<int, 3> box{};
};

Model model(std::array<int, 3> supercell, double ecut, std::array<double, 3> k = {0, 0, 0}, int vacancy = -1) {
  Model m;
  m.crystal.supercell = supercell;
  m.crystal.kpoint = k;
  m.crystal.vacancy = vacancy;
  m.ecut = ecut;
  m.basis = cb::basis(m.crystal, ecut);
  m.terms = cb::potential_terms(m.crystal);
  m.box = cb::fft_box(m.basis, m.terms);
  return m;
}

// A value of a deterministic pseudo-random field, the same on every rank.
cplx field(std::int64_t i, int salt) {
  const double a = std::sin(0.7 * static_cast<double>(i) + 1.3 * salt) + 0.25 * std::cos(3.1 * static_cast<double>(i));
  const double b = std::cos(1.9 * static_cast<double>(i) + 0.4 * salt);
  return {a, b};
}

// The dense plane-wave H, column-major, from the formula V(G - G') (not through the FFT).
std::vector<cplx> dense_h(const Model& m) {
  const std::size_t n = m.basis.size();
  std::vector<cplx> h(n * n);
  std::map<Miller, cplx> v;
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t i = 0; i < n; ++i) {
      const Miller d{m.basis[i][0] - m.basis[j][0], m.basis[i][1] - m.basis[j][1], m.basis[i][2] - m.basis[j][2]};
      auto it = v.find(d);
      if (it == v.end()) it = v.emplace(d, cb::potential(m.crystal, d)).first;
      h[i + j * n] = it->second + (i == j ? cb::kinetic(m.crystal, m.basis[i]) : 0.0);
    }
  return h;
}

// Eigenvalues (ascending) and eigenvectors of the dense H by zheevd.
std::vector<double> dense_eigen(std::vector<cplx> h, std::size_t n, std::vector<cplx>* vectors = nullptr) {
  const int nn = static_cast<int>(n);
  std::vector<double> w(n);
  int lwork = -1, lrwork = -1, liwork = -1, info = 0, iw = 0;
  cplx wq;
  double rq = 0;
  zheevd_("V", "U", &nn, h.data(), &nn, w.data(), &wq, &lwork, &rq, &lrwork, &iw, &liwork, &info);
  lwork = static_cast<int>(wq.real());
  lrwork = static_cast<int>(rq);
  liwork = iw;
  std::vector<cplx> work(static_cast<std::size_t>(lwork));
  std::vector<double> rwork(static_cast<std::size_t>(lrwork));
  std::vector<int> iwork(static_cast<std::size_t>(liwork));
  zheevd_("V", "U", &nn, h.data(), &nn, w.data(), work.data(), &lwork, rwork.data(), &lrwork, iwork.data(), &liwork,
          &info);
  EXPECT_EQ(info, 0);
  if (vectors) *vectors = std::move(h);
  return w;
}

// The serial 3D FFT of the whole box ([z][y][x]) by FFTW.
std::vector<cplx> serial_fft(std::vector<cplx> box_values, std::array<int, 3> box, int sign) {
  auto* data = reinterpret_cast<fftw_complex*>(box_values.data());
  fftw_plan plan = fftw_plan_dft_3d(box[2], box[1], box[0], data, data, sign, FFTW_ESTIMATE);
  fftw_execute(plan);
  fftw_destroy_plan(plan);
  return box_values;
}

std::size_t at(std::array<int, 3> box, int x, int y, int z) {
  return (static_cast<std::size_t>(z) * box[1] + y) * box[0] + x;
}

// ---- the model ---------------------------------------------------------------------------------

TEST(Silicon, ThePerfectCrystalHasThePublishedPotential) {
  // V(G) = cos(G.tau) v(|G|^2) at the fcc reciprocal lattice vectors of the 1x1x1 cell (origin at an
  // fcc site: the four sites' phases sum to 4 there, and the atoms sit at +-tau about each).
  const Model m = model({1, 1, 1}, 4.0);
  ASSERT_FALSE(m.terms.empty());
  for (const auto& t : m.terms) {
    const double g2 = t.m[0] * t.m[0] + t.m[1] * t.m[1] + t.m[2] * t.m[2];
    const double cos_g_tau = std::cos(2 * M_PI * (t.m[0] + t.m[1] + t.m[2]) / 8.0);
    EXPECT_NEAR(t.v.real(), cos_g_tau * cb::form_factor(g2), 1e-14);
    EXPECT_NEAR(t.v.imag(), 0.0, 1e-14);
  }
  // (1,1,1): 8 vectors, cos(3 pi / 4) v(3); (2,2,0): 12 vectors; (3,1,1): 24 vectors.
  EXPECT_EQ(m.terms.size(), 8u + 12u + 24u);
  // A 2x1x1 supercell has the same V at the same G (now with m0 even).
  const Model m2 = model({2, 1, 1}, 4.0);
  for (const auto& t : m.terms) {
    const cplx v2 = cb::potential(m2.crystal, Miller{2 * t.m[0], t.m[1], t.m[2]});
    EXPECT_NEAR(std::abs(v2 - t.v), 0.0, 1e-14);
  }
}

TEST(Silicon, TheBoxHoldsTheProductWithoutAliasing) {
  for (const Model& m : {model({1, 1, 1}, 6.0), model({2, 1, 1}, 3.0, {0.1, 0.2, 0.3}, 5)}) {
    int vmax[3] = {0, 0, 0}, lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    for (const auto& t : m.terms)
      for (int d = 0; d < 3; ++d) vmax[d] = std::max(vmax[d], std::abs(t.m[d]));
    for (const auto& g : m.basis)
      for (int d = 0; d < 3; ++d) {
        lo[d] = std::min(lo[d], g[d]);
        hi[d] = std::max(hi[d], g[d]);
      }
    for (int d = 0; d < 3; ++d) EXPECT_GT(m.box[d], hi[d] - lo[d] + vmax[d]);
    for (const auto& g : m.basis) EXPECT_LE(cb::kinetic(m.crystal, g), m.ecut);
  }
}

// ---- the FFT -----------------------------------------------------------------------------------

// The plane FFT of a basis on `box` against the serial transform of the whole box, both ways.
void check_fft(const Model& m, std::array<int, 3> box) {
  const int p = world_size(), me = world_rank();
  cb::Layout layout(m.basis, box, p);
  MpiCollectives coll;
  mpi::Traffic traffic;
  cb::PlaneFft fft(layout, MPI_COMM_WORLD, coll, cb::PlaneFft::Planning::Estimate);
  const auto mine = layout.basis_indices(me);
  std::vector<cplx> c(mine.size());
  for (std::size_t k = 0; k < mine.size(); ++k) c[k] = field(mine[k], 1);
  // G -> r against the serial backward transform.
  std::vector<cplx> whole(static_cast<std::size_t>(box[0]) * box[1] * box[2]);
  for (std::size_t i = 0; i < m.basis.size(); ++i) {
    const auto& g = m.basis[i];
    whole[at(box, ((g[0] % box[0]) + box[0]) % box[0], ((g[1] % box[1]) + box[1]) % box[1], layout.z_of(g[2]))] =
        field(static_cast<std::int64_t>(i), 1);
  }
  const auto reference = serial_fft(whole, box, FFTW_BACKWARD);
  fft.to_real(c, traffic);
  const auto planes = fft.planes();
  const std::size_t plane = static_cast<std::size_t>(box[0]) * box[1];
  double err = 0, scale = 0;
  for (std::size_t k = 0; k < planes.size(); ++k) {
    err = std::max(err, std::abs(planes[k] - reference[layout.first_plane(me) * plane + k]));
    scale = std::max(scale, std::abs(planes[k]));
  }
  EXPECT_LT(err, 1e-12 * std::max(1.0, scale));
  // Round trip: to_coefficients(to_real(c)) = N c.
  std::vector<cplx> back(c.size());
  fft.to_coefficients(back, traffic);
  const double n = static_cast<double>(fft.box_points());
  for (std::size_t k = 0; k < c.size(); ++k) EXPECT_LT(std::abs(back[k] / n - c[k]), 1e-12) << "coefficient " << k;
  // r -> G of a field on the whole box against the serial forward transform.
  std::vector<cplx> f(whole.size());
  for (std::size_t i = 0; i < f.size(); ++i) f[i] = field(static_cast<std::int64_t>(i), 2);
  const auto forward = serial_fft(f, box, FFTW_FORWARD);
  std::copy(f.begin() + static_cast<std::ptrdiff_t>(layout.first_plane(me) * plane),
            f.begin() + static_cast<std::ptrdiff_t>((layout.first_plane(me) + layout.planes_of(me)) * plane),
            planes.begin());
  fft.to_coefficients(back, traffic);
  for (std::size_t k = 0; k < mine.size(); ++k) {
    const auto& g = m.basis[static_cast<std::size_t>(mine[k])];
    const cplx want =
        forward[at(box, ((g[0] % box[0]) + box[0]) % box[0], ((g[1] % box[1]) + box[1]) % box[1], layout.z_of(g[2]))];
    EXPECT_LT(std::abs(back[k] - want), 1e-10) << "coefficient " << k;
  }
  EXPECT_EQ(fft.counters().alltoalls, 3);
}

TEST(PlaneFft, EqualsFftwSerialTransformAndRoundTrips) {
  const Model m = model({1, 1, 1}, 6.0);
  check_fft(m, m.box);
}

TEST(PlaneFft, OddBoxesAndRanksNotDividingTheirPlanes) {
  // 7 planes (prime) and odd x, y: every rank count from 2 up leaves planes uneven, and 8 ranks
  // leave one without a plane.
  const Model m = model({1, 1, 1}, 2.5);
  check_fft(m, {9, 11, 7});
  // The smallest box that holds the basis (range + 1 each way), made odd, with a prime Nz.
  const Model k = model({1, 1, 2}, 2.0, {0.25, 0.0, 0.1}, 3);
  std::array<int, 3> lo{}, hi{};
  for (const auto& g : k.basis)
    for (int d = 0; d < 3; ++d) {
      lo[d] = std::min(lo[d], g[d]);
      hi[d] = std::max(hi[d], g[d]);
    }
  auto prime_from = [](int n) {
    for (;; ++n) {
      bool prime = n > 1;
      for (int f = 2; f * f <= n; ++f) prime = prime && n % f != 0;
      if (prime) return n;
    }
  };
  check_fft(k, {(hi[0] - lo[0] + 1) | 1, (hi[1] - lo[1] + 1) | 1, prime_from(hi[2] - lo[2] + 1)});
  // A box too small for the basis is refused (two coefficients would share a point).
  EXPECT_THROW(cb::Layout(k.basis, {hi[0] - lo[0], k.box[1], k.box[2]}, world_size()), Error);
}

// ---- H psi -------------------------------------------------------------------------------------

TEST(Hamiltonian, EqualsTheDenseMatrix) {
  for (const Model& m : {model({1, 1, 1}, 5.0), model({1, 2, 1}, 2.5, {0.1, -0.2, 0.3}, 7)}) {
    const int me = world_rank();
    cb::Layout layout(m.basis, m.box, world_size());
    MpiCollectives coll;
    mpi::Traffic traffic;
    cb::PlaneFft fft(layout, MPI_COMM_WORLD, coll);
    cb::Hamiltonian h(m.crystal, m.basis, m.terms, fft);
    const auto mine = layout.basis_indices(me);
    std::vector<cplx> in(mine.size()), out(mine.size());
    for (std::size_t k = 0; k < mine.size(); ++k) in[k] = field(mine[k], 3);
    h.apply(in, out, traffic);
    const auto dense = dense_h(m);
    const std::size_t n = m.basis.size();
    for (std::size_t k = 0; k < mine.size(); ++k) {
      cplx want = 0;
      const std::size_t i = static_cast<std::size_t>(mine[k]);
      for (std::size_t j = 0; j < n; ++j) want += dense[i + j * n] * field(static_cast<std::int64_t>(j), 3);
      EXPECT_LT(std::abs(out[k] - want), 1e-12 * std::max(1.0, std::abs(want))) << "coefficient " << i;
    }
  }
}

// ---- the CG ------------------------------------------------------------------------------------

struct Solved {
  cb::CgResult result;
  std::vector<cplx> bands;  // every band's whole vector (npw x bands, column-major), on every rank
};

Solved solve(const Model& m, Collectives& coll, cb::CgOptions o) {
  const int me = world_rank();
  cb::Layout layout(m.basis, m.box, world_size());
  mpi::Traffic traffic;
  cb::PlaneFft fft(layout, MPI_COMM_WORLD, coll);
  cb::Hamiltonian h(m.crystal, m.basis, m.terms, fft);
  const auto mine = layout.basis_indices(me);
  o.quiet = true;
  cb::BandSolver solver(h, mine, MPI_COMM_WORLD, coll, o);
  Solved run;
  run.result = solver.solve();
  const std::size_t n = m.basis.size();
  run.bands.assign(n * static_cast<std::size_t>(o.bands), cplx{});
  for (int b = 0; b < o.bands; ++b) {
    const auto v = solver.band(b);
    for (std::size_t k = 0; k < mine.size(); ++k) run.bands[static_cast<std::size_t>(mine[k]) + b * n] = v[k];
  }
  MPI_Allreduce(MPI_IN_PLACE, run.bands.data(), static_cast<int>(2 * run.bands.size()), MPI_DOUBLE, MPI_SUM,
                MPI_COMM_WORLD);
  return run;
}

void check_against_dense(const Model& m, Collectives& coll, cb::CgOptions o) {
  const Solved run = solve(m, coll, o);
  const auto dense = dense_h(m);
  const std::size_t n = m.basis.size();
  const auto w = dense_eigen(dense, n);
  ASSERT_TRUE(run.result.converged);
  ASSERT_EQ(run.result.eigenvalues.size(), static_cast<std::size_t>(o.bands));
  for (int b = 0; b < o.bands; ++b) EXPECT_NEAR(run.result.eigenvalues[b], w[b], 1e-8) << "band " << b;
  // Orthonormal, and each band an eigenvector of the dense matrix (residual below the tolerance).
  for (int a = 0; a < o.bands; ++a) {
    for (int b = 0; b < o.bands; ++b) {
      cplx s = 0;
      for (std::size_t i = 0; i < n; ++i) s += std::conj(run.bands[i + a * n]) * run.bands[i + b * n];
      EXPECT_LT(std::abs(s - (a == b ? 1.0 : 0.0)), 1e-10) << "bands " << a << ", " << b;
    }
    double lambda = 0, r2 = 0;
    std::vector<cplx> hv(n);
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t i = 0; i < n; ++i) hv[i] += dense[i + j * n] * run.bands[j + a * n];
    for (std::size_t i = 0; i < n; ++i) lambda += (std::conj(run.bands[i + a * n]) * hv[i]).real();
    for (std::size_t i = 0; i < n; ++i) r2 += std::norm(hv[i] - lambda * run.bands[i + a * n]);
    EXPECT_LT(std::sqrt(r2), 2 * o.tolerance) << "band " << a;
  }
}

TEST(CgBands, EigenvaluesEqualZheevdThroughEveryCollectives) {
  const Model gamma = model({1, 1, 1}, 4.0);
  test::for_each_collectives_component([&](Collectives& coll) {
    cb::CgOptions o;
    o.bands = 16;  // the valence bands
    o.lines = 3;
    o.batch = true;
    o.tolerance = 1e-6;
    check_against_dense(gamma, coll, o);
  });
}

TEST(CgBands, ComplexHamiltonianWithVacancyAndKPoint) {
  // No inversion symmetry (a vacancy) and k off Gamma: H is complex Hermitian.
  const Model m = model({1, 1, 2}, 3.0, {0.1, 0.2, 0.3}, 5);
  MpiCollectives coll;
  cb::CgOptions o;
  o.bands = 2 * m.crystal.atoms() + 2;
  o.lines = 3;
  o.batch = true;  // the paper's unbatched scheme: AllreducesPerSweepAreThoseOfEq24 and the program tests
  o.tolerance = 1e-6;
  o.max_sweeps = 400;
  check_against_dense(m, coll, o);
}

TEST(CgBands, AllreducesPerSweepAreThoseOfEq24) {
  const Model m = model({1, 1, 1}, 4.0);
  MpiCollectives coll;
  for (bool batch : {false, true})
    for (int lines : {1, 2}) {
      cb::CgOptions o;
      o.bands = 12;
      o.lines = lines;
      o.batch = batch;
      o.max_sweeps = 2;
      o.tolerance = 1e-300;  // not reached: two full sweeps
      o.throw_on_no_convergence = false;
      const Solved run = solve(m, coll, o);
      ASSERT_EQ(run.result.history.size(), 2u);
      const std::int64_t nb = o.bands;
      const std::int64_t per_line = batch ? 9 + 2 : 9 + 2 * nb;
      for (const auto& rec : run.result.history) {
        EXPECT_EQ(rec.cg_allreduces, nb * lines * per_line) << "batch " << batch << ", lines " << lines;
        EXPECT_EQ(rec.other_allreduces, 2);        // Rayleigh-Ritz and the residual check
        EXPECT_EQ(rec.alltoalls, 2 * nb * lines);  // one H phi a line, two all-to-alls each
        std::int64_t calls = 0;
        for (const auto& [bytes, count] : rec.allreduce_sizes) calls += count;
        EXPECT_EQ(calls, rec.cg_allreduces + rec.other_allreduces);
      }
    }
}

TEST(CgBands, NoConvergenceIsAnErrorNamingTheResiduals) {
  const Model m = model({1, 1, 1}, 4.0);
  MpiCollectives coll;
  cb::CgOptions o;
  o.bands = 8;
  o.max_sweeps = 1;
  o.tolerance = 1e-12;
  try {
    solve(m, coll, o);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no convergence in 1 sweeps (cg_bands/MaxSweeps)"), std::string::npos) << what;
    EXPECT_NE(what.find("band 0: "), std::string::npos) << what;
  }
}

// ---- the LogGP prediction ----------------------------------------------------------------------

TEST(Prediction, SumsTheLogGPTimesOfEveryCollectiveOfTheSweep) {
  logp::Parameters p;
  p.L = 5e-6;
  p.o_s = 1e-6;
  p.o_r = 2e-6;
  p.g = 3e-6;
  p.G = 1e-9;
  cb::SweepRecord rec;
  rec.allreduce_sizes = {{8, 100}, {16, 40}, {256, 2}};
  rec.alltoalls = 6;
  // By hand: a message of k bytes takes o_s + (k-1) G + L + o_r; recursive doubling on 4 ranks is
  // 2 rounds; the all-to-all on 4 ranks posts 2 messages after the first, each max(g + (k-1) G,
  // o_s + o_r) later.
  auto msg = [&](double k) { return 1e-6 + (k - 1) * 1e-9 + 5e-6 + 2e-6; };
  const double red = 100 * 2 * msg(8) + 40 * 2 * msg(16) + 2 * 2 * msg(256);
  const double a2a = 6 * (2 * std::max(3e-6 + 999 * 1e-9, 3e-6) + msg(1000));
  const cb::Prediction pred = cb::predict_sweep(p, 4, rec, 1000);
  EXPECT_NEAR(pred.allreduce_seconds, red, 1e-15);
  EXPECT_NEAR(pred.alltoall_seconds, a2a, 1e-15);
  // One rank communicates nothing.
  EXPECT_EQ(cb::predict_sweep(p, 1, rec, 1000).total(), 0.0);
}

TEST(Prediction, SaturationIsWhereTheSweepIsShortest) {
  cb::SweepRecord rec;
  rec.allreduce_sizes = {{8, 1000}};
  rec.alltoalls = 40;
  // A free network: the computation alone, shortest on the most ranks.
  const logp::Parameters free_network;
  EXPECT_EQ(cb::saturation(free_network, 4, rec, 1e6, 1.0, 64).ranks, 64);
  // A slow one: every added rank costs more than it saves.
  logp::Parameters slow;
  slow.L = 1.0;
  EXPECT_EQ(cb::saturation(slow, 4, rec, 1e6, 1.0, 64).ranks, 1);
  // In between, the minimum of the same function sweep_seconds_at evaluates.
  logp::Parameters mid;
  mid.L = 2e-4;  // 4/r + 0.2 log2(r) s: shortest at 16 ranks
  mid.G = 1e-9;
  const auto sat = cb::saturation(mid, 4, rec, 1e6, 1.0, 64);
  for (int r = 1; r <= 64; ++r) EXPECT_LE(sat.seconds, cb::sweep_seconds_at(mid, r, 4, rec, 1e6, 1.0)) << r;
  EXPECT_EQ(sat.ranks, 16);
}

}  // namespace
