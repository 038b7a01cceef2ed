#include "cg.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "plexus/error.hpp"
#include "plexus/log.hpp"
#include "plexus/progress.hpp"
#include "plexus/timers.hpp"

extern "C" {
void zgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k, const std::complex<double>* alpha,
            const std::complex<double>* a, const int* lda, const std::complex<double>* b, const int* ldb,
            const std::complex<double>* beta, std::complex<double>* c, const int* ldc);
void zhegv_(const int* itype, const char* jobz, const char* uplo, const int* n, std::complex<double>* a, const int* lda,
            std::complex<double>* b, const int* ldb, double* w, std::complex<double>* work, const int* lwork,
            double* rwork, int* info);
}

namespace plexus::cg_bands {

struct BandSolver::Counts {
  std::int64_t cg = 0, other = 0;
  double allreduce_seconds = 0;
  std::map<std::int64_t, std::int64_t> sizes;
};

namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double uniform(std::uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53 - 0.5; }

// Teter's preconditioner K(x) (Teter, Payne and Allan 1989, Eq. 5.9 of Payne et al.).
double teter(double x) {
  const double p = 27 + x * (18 + x * (12 + 8 * x));
  return p / (p + 16 * x * x * x * x);
}

int as_blas(std::size_t n) { return static_cast<int>(n); }

// <a|b> = sum conj(a_k) b_k, and y += alpha x, in real arithmetic: complex products of
// std::complex go through a NaN-checking library call (no -ffast-math here) that is several times
// slower than these loops, which vectorise.
cplx dotc(const cplx* a, const cplx* b, std::size_t n) {
  const double* x = reinterpret_cast<const double*>(a);
  const double* y = reinterpret_cast<const double*>(b);
  double re = 0, im = 0;
  for (std::size_t k = 0; k < 2 * n; k += 2) {
    re += x[k] * y[k] + x[k + 1] * y[k + 1];
    im += x[k] * y[k + 1] - x[k + 1] * y[k];
  }
  return {re, im};
}

void axpy(cplx alpha, const cplx* a, cplx* b, std::size_t n) {
  const double* x = reinterpret_cast<const double*>(a);
  double* y = reinterpret_cast<double*>(b);
  const double ar = alpha.real(), ai = alpha.imag();
  for (std::size_t k = 0; k < 2 * n; k += 2) {
    y[k] += ar * x[k] - ai * x[k + 1];
    y[k + 1] += ar * x[k + 1] + ai * x[k];
  }
}

}  // namespace

BandSolver::BandSolver(Hamiltonian& h, const std::vector<int>& basis_indices, MPI_Comm comm, Collectives& collectives,
                       CgOptions options)
    : h_(h), comm_(comm), collectives_(collectives), options_(options), n_(h.local_size()) {
  if (options_.bands < 1) throw Error("cg_bands", "needs at least one band");
  if (basis_indices.size() != n_) throw Error("cg_bands", "the basis indices do not match the rank's coefficients");
  const std::size_t nb = static_cast<std::size_t>(options_.bands);
  psi_.assign(nb * n_, cplx{});
  hpsi_.assign(nb * n_, cplx{});
  zeta_.assign(n_, cplx{});
  eta_.assign(n_, cplx{});
  phi_.assign(n_, cplx{});
  hphi_.assign(n_, cplx{});
  previous_direction_.assign(n_, cplx{});
  // Starting vectors from each coefficient's global index: the same bands on any rank count.
  const auto& kin = h_.kinetic();
  for (std::size_t b = 0; b < nb; ++b)
    for (std::size_t k = 0; k < n_; ++k) {
      const std::uint64_t key = splitmix64(options_.seed * 0x100000001b3ULL + b) ^
                                splitmix64(static_cast<std::uint64_t>(basis_indices[k]) + 0x51ed27ULL);
      const double re = uniform(splitmix64(key)), im = uniform(splitmix64(key ^ 0xabcdefULL));
      psi_[b * n_ + k] = cplx(re, im) / (1.0 + kin[k]);
    }
}

std::span<cplx> BandSolver::band_(std::vector<cplx>& v, int b) {
  return std::span<cplx>(v.data() + static_cast<std::size_t>(b) * n_, n_);
}

std::span<const cplx> BandSolver::band(int b) const {
  return std::span<const cplx>(psi_.data() + static_cast<std::size_t>(b) * n_, n_);
}

void BandSolver::sum(std::span<double> values, Counts& c, bool cg) {
  {
    const timers::Scoped timer("cg_bands: allreduce", &c.allreduce_seconds);
    collectives_.iallreduce(values, comm_, traffic_).wait();
  }
  ++(cg ? c.cg : c.other);
  ++c.sizes[static_cast<std::int64_t>(sizeof(double) * values.size())];
}

double BandSolver::real_sum(double local, Counts& c, bool cg) {
  sum(std::span<double>(&local, 1), c, cg);
  return local;
}

cplx BandSolver::complex_sum(cplx local, Counts& c, bool cg) {
  double v[2] = {local.real(), local.imag()};
  sum(v, c, cg);
  return {v[0], v[1]};
}

void BandSolver::project_out(std::span<cplx> v, Counts& c) {
  // Plain loops rather than zgemv: OpenBLAS's zgemv_n kernel (Haswell) reads past the end of its
  // arrays, which AddressSanitizer's heap turns into a segmentation fault (and a large array's
  // last page can make it one without). Four bands at a time, so v is read once per four.
  const std::size_t nb = static_cast<std::size_t>(options_.bands);
  std::vector<cplx> d(nb);
  const double* x = reinterpret_cast<const double*>(v.data());
  std::size_t j = 0;
  for (; j + 4 <= nb; j += 4) {
    const double* p[4];
    for (int q = 0; q < 4; ++q) p[q] = reinterpret_cast<const double*>(psi_.data() + (j + q) * n_);
    double re[4] = {0, 0, 0, 0}, im[4] = {0, 0, 0, 0};
    for (std::size_t k = 0; k < 2 * n_; k += 2)
      for (int q = 0; q < 4; ++q) {
        re[q] += p[q][k] * x[k] + p[q][k + 1] * x[k + 1];
        im[q] += p[q][k] * x[k + 1] - p[q][k + 1] * x[k];
      }
    for (int q = 0; q < 4; ++q) d[j + q] = {re[q], im[q]};
  }
  for (; j < nb; ++j) d[j] = dotc(psi_.data() + j * n_, v.data(), n_);
  if (options_.batch) {
    sum(std::span<double>(reinterpret_cast<double*>(d.data()), 2 * d.size()), c, true);
  } else {
    for (auto& e : d) e = complex_sum(e, c, true);  // the paper's scheme: one allreduce per band
  }
  double* y = reinterpret_cast<double*>(v.data());
  for (j = 0; j + 4 <= nb; j += 4) {
    const double* p[4];
    double ar[4], ai[4];
    for (int q = 0; q < 4; ++q) {
      p[q] = reinterpret_cast<const double*>(psi_.data() + (j + q) * n_);
      ar[q] = d[j + q].real();
      ai[q] = d[j + q].imag();
    }
    for (std::size_t k = 0; k < 2 * n_; k += 2) {
      double yr = y[k], yi = y[k + 1];
      for (int q = 0; q < 4; ++q) {
        yr -= ar[q] * p[q][k] - ai[q] * p[q][k + 1];
        yi -= ar[q] * p[q][k + 1] + ai[q] * p[q][k];
      }
      y[k] = yr;
      y[k + 1] = yi;
    }
  }
  for (; j < nb; ++j) axpy(-d[j], psi_.data() + j * n_, v.data(), n_);
}

void BandSolver::line(int i, bool first_line, Counts& c) {
  auto psi = band_(psi_, i), hpsi = band_(hpsi_, i);
  const auto& kin = h_.kinetic();
  double local = dotc(psi.data(), hpsi.data(), n_).real();
  const double lambda = real_sum(local, c, true);  // 1
  for (std::size_t k = 0; k < n_; ++k) zeta_[k] = lambda * psi[k] - hpsi[k];
  project_out(zeta_, c);
  local = 0;
  for (const auto& z : zeta_) local += std::norm(z);
  (void)real_sum(local, c, true);  // 2: the residual of the band
  local = 0;
  for (std::size_t k = 0; k < n_; ++k) local += kin[k] * std::norm(psi[k]);
  const double ekin = real_sum(local, c, true);  // 3
  for (std::size_t k = 0; k < n_; ++k) eta_[k] = teter(ekin > 0 ? kin[k] / ekin : 0.0) * zeta_[k];
  project_out(eta_, c);
  local = dotc(eta_.data(), zeta_.data(), n_).real();
  const double g = real_sum(local, c, true);  // 4
  const double gamma = first_line || previous_gamma_numerator_ == 0 ? 0.0 : g / previous_gamma_numerator_;
  for (std::size_t k = 0; k < n_; ++k) phi_[k] = eta_[k] + gamma * previous_direction_[k];
  previous_gamma_numerator_ = g;
  previous_direction_ = phi_;
  const cplx along = complex_sum(dotc(psi.data(), phi_.data(), n_), c, true);  // 5
  axpy(-along, psi.data(), phi_.data(), n_);
  local = 0;
  for (const auto& z : phi_) local += std::norm(z);
  const double norm2 = real_sum(local, c, true);  // 6
  const bool moving = norm2 > 1e-26;              // a converged band: no direction left
  const double inv = moving ? 1 / std::sqrt(norm2) : 0.0;
  for (auto& z : phi_) z *= inv;
  h_.apply(phi_, hphi_, traffic_);
  local = dotc(hpsi.data(), phi_.data(), n_).real();
  const double cross = real_sum(local, c, true);  // 7
  local = dotc(phi_.data(), hphi_.data(), n_).real();
  const double curvature = real_sum(local, c, true);  // 8
  // E(theta) = (A+B)/2 + (A-B)/2 cos 2theta + C sin 2theta, minimal at tan 2theta = 2C / (A-B).
  const double theta = moving ? 0.5 * std::atan2(-2 * cross, curvature - lambda) : 0.0;
  const double co = std::cos(theta), si = std::sin(theta);
  for (std::size_t k = 0; k < n_; ++k) {
    psi[k] = co * psi[k] + si * phi_[k];
    hpsi[k] = co * hpsi[k] + si * hphi_[k];
  }
  local = 0;
  for (const auto& z : psi) local += std::norm(z);
  const double scale = 1 / std::sqrt(real_sum(local, c, true));  // 9
  for (std::size_t k = 0; k < n_; ++k) {
    psi[k] *= scale;
    hpsi[k] *= scale;
  }
}

void BandSolver::rayleigh_ritz(Counts& c, std::vector<double>& eigenvalues) {
  progress::point("cg_bands rayleigh-ritz");
  const int n = as_blas(n_), nb = options_.bands, ld = std::max(1, n);
  const std::size_t nb2 = static_cast<std::size_t>(nb) * nb;
  const cplx one = 1, zero = 0;
  std::vector<cplx> ms(2 * nb2);  // M = Psi^H H Psi, then S = Psi^H Psi
  zgemm_("C", "N", &nb, &nb, &n, &one, psi_.data(), &ld, hpsi_.data(), &ld, &zero, ms.data(), &nb);
  zgemm_("C", "N", &nb, &nb, &n, &one, psi_.data(), &ld, psi_.data(), &ld, &zero, ms.data() + nb2, &nb);
  sum(std::span<double>(reinterpret_cast<double*>(ms.data()), 2 * ms.size()), c, false);
  cplx* m = ms.data();
  cplx* s = ms.data() + nb2;
  for (int j = 0; j < nb; ++j)
    for (int i = 0; i <= j; ++i) {  // Hermitian parts (the upper triangle is what zhegv reads)
      m[i + j * nb] = 0.5 * (m[i + j * nb] + std::conj(m[j + i * nb]));
      s[i + j * nb] = 0.5 * (s[i + j * nb] + std::conj(s[j + i * nb]));
    }
  eigenvalues.assign(static_cast<std::size_t>(nb), 0.0);
  const int itype = 1, lwork = std::max(1, 4 * nb);
  std::vector<cplx> work(static_cast<std::size_t>(lwork));
  std::vector<double> rwork(static_cast<std::size_t>(std::max(1, 3 * nb - 2)));
  int info = 0;
  zhegv_(&itype, "V", "U", &nb, m, &nb, s, &nb, eigenvalues.data(), work.data(), &lwork, rwork.data(), &info);
  if (info != 0)
    throw Error("cg_bands", "Rayleigh-Ritz: zhegv failed (info " + std::to_string(info) +
                                "): the bands have become linearly dependent");
  // Psi <- Psi U, H Psi <- H Psi U.
  work_.resize(psi_.size());
  zgemm_("N", "N", &n, &nb, &nb, &one, psi_.data(), &ld, m, &nb, &zero, work_.data(), &ld);
  psi_.swap(work_);
  zgemm_("N", "N", &n, &nb, &nb, &one, hpsi_.data(), &ld, m, &nb, &zero, work_.data(), &ld);
  hpsi_.swap(work_);
}

std::vector<double> BandSolver::residuals(const std::vector<double>& eigenvalues, Counts& c) {
  std::vector<double> r(static_cast<std::size_t>(options_.bands), 0.0);
  for (int b = 0; b < options_.bands; ++b) {
    const auto psi = band_(psi_, b), hpsi = band_(hpsi_, b);
    double local = 0;
    for (std::size_t k = 0; k < n_; ++k) local += std::norm(hpsi[k] - eigenvalues[b] * psi[k]);
    r[b] = local;
  }
  sum(r, c, false);
  for (auto& x : r) x = std::sqrt(x);
  return r;
}

CgResult BandSolver::solve() {
  const int nb = options_.bands;
  const bool speak = !options_.quiet && mpi::rank(comm_) == 0;
  CgResult result;
  for (int b = 0; b < nb; ++b) h_.apply(band_(psi_, b), band_(hpsi_, b), traffic_);
  Counts setup;
  std::vector<double> eigenvalues;
  rayleigh_ritz(setup, eigenvalues);
  std::vector<double> res;
  progress::Stage steps("cg_bands sweep", 0);  // the progress line: sweeps until converged
  for (int sweep = 1; sweep <= options_.max_sweeps; ++sweep) {
    steps.done(sweep - 1);
    Counts c;
    timers::Scoped sweep_timer("cg_bands: sweep");
    const auto fft0 = h_.fft().counters();
    const auto traffic0 = traffic_.counts(mpi::Role::Other);
    for (int i = 0; i < nb; ++i)
      for (int l = 0; l < options_.lines; ++l) line(i, l == 0, c);
    rayleigh_ritz(c, eigenvalues);
    res = residuals(eigenvalues, c);
    SweepRecord rec;
    rec.sweep = sweep;
    rec.max_residual = *std::max_element(res.begin(), res.end());
    rec.seconds = sweep_timer.stop();
    rec.allreduce_seconds = c.allreduce_seconds;
    const auto& fft1 = h_.fft().counters();
    rec.alltoall_seconds = fft1.alltoall_seconds - fft0.alltoall_seconds;
    rec.fft_seconds = fft1.fft_seconds - fft0.fft_seconds;
    rec.alltoalls = fft1.alltoalls - fft0.alltoalls;
    rec.cg_allreduces = c.cg;
    rec.other_allreduces = c.other;
    rec.allreduce_sizes = c.sizes;
    const auto traffic1 = traffic_.counts(mpi::Role::Other);
    rec.bytes_sent = traffic1.bytes_sent - traffic0.bytes_sent;
    rec.bytes_received = traffic1.bytes_received - traffic0.bytes_received;
    result.history.push_back(rec);
    result.sweeps = sweep;
    if (speak)
      log().info(
          "cg_bands sweep {:>3}: max residual {:.3e} Ry, lowest {:.10f} Ry, {:.3f} s (allreduce {:.3f} s, "
          "all-to-all {:.3f} s)",
          sweep, rec.max_residual, eigenvalues.front(), rec.seconds, rec.allreduce_seconds, rec.alltoall_seconds);
    if (rec.max_residual < options_.tolerance) {
      result.converged = true;
      break;
    }
  }
  if (!result.converged && options_.throw_on_no_convergence) {
    std::ostringstream os;
    os << "no convergence in " << options_.max_sweeps << " sweeps (cg_bands/MaxSweeps): residuals above "
       << options_.tolerance << " Ry (cg_bands/Tolerance):";
    int shown = 0;
    for (int b = 0; b < nb; ++b)
      if (res[b] >= options_.tolerance && shown++ < 8) os << " band " << b << ": " << res[b];
    if (shown > 8) os << " and " << shown - 8 << " more";
    os << "; raise cg_bands/MaxSweeps or cg_bands/Tolerance";
    throw Error("cg_bands", os.str());
  }
  // The final figures from H psi applied afresh (not the updated one the sweeps carry).
  Counts final;
  for (int b = 0; b < nb; ++b) h_.apply(band_(psi_, b), band_(hpsi_, b), traffic_);
  const int n = as_blas(n_), ld = std::max(1, n);
  const std::size_t nb2 = static_cast<std::size_t>(nb) * nb;
  const cplx one = 1, zero = 0;
  std::vector<cplx> s(nb2 + static_cast<std::size_t>(nb));
  zgemm_("C", "N", &nb, &nb, &n, &one, psi_.data(), &ld, psi_.data(), &ld, &zero, s.data(), &nb);
  for (int b = 0; b < nb; ++b) {
    s[nb2 + static_cast<std::size_t>(b)] = dotc(band_(psi_, b).data(), band_(hpsi_, b).data(), n_);
  }
  sum(std::span<double>(reinterpret_cast<double*>(s.data()), 2 * s.size()), final, false);
  result.eigenvalues.resize(static_cast<std::size_t>(nb));
  for (int i = 0; i < nb; ++i) {
    result.eigenvalues[i] = s[nb2 + static_cast<std::size_t>(i)].real();
    for (int j = 0; j < nb; ++j)
      result.orthonormality_error = std::max(result.orthonormality_error,
                                             std::abs(s[i + static_cast<std::size_t>(j) * nb] - (i == j ? 1.0 : 0.0)));
  }
  result.residuals = residuals(result.eigenvalues, final);
  std::sort(result.eigenvalues.begin(), result.eigenvalues.end());
  return result;
}

}  // namespace plexus::cg_bands
