#include "plane_fft.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>
#include <string>

#include "plexus/error.hpp"
#include "plexus/progress.hpp"
#include "plexus/timers.hpp"

namespace plexus::cg_bands {

namespace {

int positive_mod(int a, int n) { return ((a % n) + n) % n; }

fftw_complex* as_fftw(std::vector<cplx>& v) { return reinterpret_cast<fftw_complex*>(v.data()); }

int as_int(std::int64_t n, const char* what) {
  if (n > std::numeric_limits<int>::max())
    throw Error("cg_bands", std::string(what) + ": " + std::to_string(n) +
                                " values exceed an MPI count; use more ranks or a smaller Ecut");
  return static_cast<int>(n);
}

}  // namespace

Layout::Layout(const std::vector<Miller>& basis, std::array<int, 3> box, int ranks)
    : box_(box),
      ranks_(ranks),
      sticks_of_(static_cast<std::size_t>(ranks)),
      coefficients_(static_cast<std::size_t>(ranks), 0),
      plane_first_(static_cast<std::size_t>(ranks) + 1, 0),
      npw_(static_cast<std::int64_t>(basis.size())) {
  if (ranks < 1) throw Error("cg_bands layout", "needs at least one rank");
  for (int d = 0; d < 3 && !basis.empty(); ++d) {
    int lo = basis.front()[d], hi = lo;
    for (const auto& m : basis) {
      lo = std::min(lo, m[d]);
      hi = std::max(hi, m[d]);
    }
    if (hi - lo >= box[d])
      throw Error("cg_bands layout", "the FFT box (" + std::to_string(box[d]) + " points along axis " +
                                         std::to_string(d) + ") is smaller than the basis's extent (" +
                                         std::to_string(hi - lo + 1) + ")");
  }
  // Sticks: runs of equal (m0, m1) in the ordered basis.
  for (std::size_t i = 0; i < basis.size();) {
    std::size_t j = i;
    while (j < basis.size() && basis[j][0] == basis[i][0] && basis[j][1] == basis[i][1]) ++j;
    Stick s;
    s.x = positive_mod(basis[i][0], box[0]);
    s.y = positive_mod(basis[i][1], box[1]);
    s.first = static_cast<int>(i);
    s.count = static_cast<int>(j - i);
    sticks_.push_back(s);
    first_m2_.push_back(basis[i][2]);
    i = j;
  }
  // Longest first, each to the rank with the fewest coefficients.
  std::vector<int> order(sticks_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return sticks_[a].count > sticks_[b].count; });
  for (int s : order) {
    const auto it = std::min_element(coefficients_.begin(), coefficients_.end());
    const int r = static_cast<int>(it - coefficients_.begin());
    sticks_[s].owner = r;
    *it += sticks_[s].count;
    sticks_of_[r].push_back(s);
  }
  for (auto& list : sticks_of_) std::sort(list.begin(), list.end());
  for (int r = 0; r <= ranks; ++r) plane_first_[r] = static_cast<int>(static_cast<std::int64_t>(r) * box[2] / ranks);
}

std::vector<int> Layout::basis_indices(int r) const {
  std::vector<int> out;
  out.reserve(static_cast<std::size_t>(coefficients_[r]));
  for (int s : sticks_of_[r])
    for (int j = 0; j < sticks_[s].count; ++j) out.push_back(sticks_[s].first + j);
  return out;
}

int Layout::z_of(int m2) const { return positive_mod(m2, box_[2]); }

PlaneFft::PlaneFft(Layout layout, MPI_Comm comm, Collectives& collectives, Planning planning)
    : layout_(std::move(layout)), comm_(comm), collectives_(collectives) {
  rank_ = mpi::rank(comm);
  if (mpi::size(comm) != layout_.ranks())
    throw Error("cg_bands fft", "the layout is for " + std::to_string(layout_.ranks()) +
                                    " ranks, the communicator has " + std::to_string(mpi::size(comm)));
  nx_ = layout_.box_[0];
  ny_ = layout_.box_[1];
  nz_ = layout_.box_[2];
  const int p = layout_.ranks();
  const auto& mine = layout_.sticks_of(rank_);
  const std::int64_t ns = static_cast<std::int64_t>(mine.size());
  const int np = layout_.planes_of(rank_);
  sticks_.assign(static_cast<std::size_t>(ns * nz_), cplx{});
  planes_.assign(static_cast<std::size_t>(np) * ny_ * nx_, cplx{});
  // Sticks -> planes: to rank q, every local stick's values on q's planes; from q, every stick of
  // q on mine. Planes -> sticks is the same with the roles swapped.
  to_planes_send_.resize(p);
  to_planes_recv_.resize(p);
  for (int q = 0; q < p; ++q) {
    to_planes_send_[q] = as_int(2 * ns * layout_.planes_of(q), "cg_bands fft all-to-all");
    to_planes_recv_[q] =
        as_int(2 * static_cast<std::int64_t>(layout_.sticks_of(q).size()) * np, "cg_bands fft all-to-all");
  }
  const std::int64_t buffer = std::max(ns * nz_, static_cast<std::int64_t>(layout_.sticks().size()) * np);
  send_.assign(static_cast<std::size_t>(buffer), cplx{});
  recv_.assign(static_cast<std::size_t>(buffer), cplx{});
  for (std::size_t k = 0; k < mine.size(); ++k) {
    const int s = mine[k];
    for (int j = 0; j < layout_.sticks()[s].count; ++j)
      z_offset_.push_back(static_cast<int>(k) * nz_ + layout_.z_of(layout_.first_m2_[s] + j));
  }
  const unsigned flags = planning == Planning::Measure ? FFTW_MEASURE : FFTW_ESTIMATE;
  if (ns > 0) {
    const int n[1] = {nz_};
    const int howmany = static_cast<int>(ns);
    z_backward_ = fftw_plan_many_dft(1, n, howmany, as_fftw(sticks_), nullptr, 1, nz_, as_fftw(sticks_), nullptr, 1,
                                     nz_, FFTW_BACKWARD, flags);
    z_forward_ = fftw_plan_many_dft(1, n, howmany, as_fftw(sticks_), nullptr, 1, nz_, as_fftw(sticks_), nullptr, 1, nz_,
                                    FFTW_FORWARD, flags);
  }
  if (np > 0) {
    const int n[2] = {ny_, nx_};
    xy_backward_ = fftw_plan_many_dft(2, n, np, as_fftw(planes_), nullptr, 1, nx_ * ny_, as_fftw(planes_), nullptr, 1,
                                      nx_ * ny_, FFTW_BACKWARD, flags);
    xy_forward_ = fftw_plan_many_dft(2, n, np, as_fftw(planes_), nullptr, 1, nx_ * ny_, as_fftw(planes_), nullptr, 1,
                                     nx_ * ny_, FFTW_FORWARD, flags);
  }
  if ((ns > 0 && (!z_backward_ || !z_forward_)) || (np > 0 && (!xy_backward_ || !xy_forward_)))
    throw Error("cg_bands fft", "FFTW could not make a plan");
  // Planning with FFTW_MEASURE overwrites the arrays.
  std::fill(sticks_.begin(), sticks_.end(), cplx{});
  std::fill(planes_.begin(), planes_.end(), cplx{});
}

PlaneFft::~PlaneFft() {
  for (fftw_plan p : {z_backward_, z_forward_, xy_backward_, xy_forward_})
    if (p) fftw_destroy_plan(p);
}

std::int64_t PlaneFft::box_points() const { return static_cast<std::int64_t>(nx_) * ny_ * nz_; }

double PlaneFft::bytes_per_pair() const {
  const int p = layout_.ranks();
  if (p < 2) return 0;
  double sent = 0;
  for (int q = 0; q < p; ++q)
    if (q != rank_) sent += 8.0 * to_planes_send_[q];
  return sent / (p - 1);
}

void PlaneFft::exchange(std::span<const cplx> send, std::span<cplx> recv, const std::vector<int>& send_counts,
                        const std::vector<int>& recv_counts, mpi::Traffic& traffic) {
  const timers::Scoped timer("cg_bands: all-to-all", &counters_.alltoall_seconds);
  const std::span<const double> s(reinterpret_cast<const double*>(send.data()), 2 * send.size());
  const std::span<double> r(reinterpret_cast<double*>(recv.data()), 2 * recv.size());
  collectives_.ialltoallv(s, send_counts, r, recv_counts, comm_, traffic).wait();
  ++counters_.alltoalls;
}

void PlaneFft::to_real(std::span<const cplx> coefficients, mpi::Traffic& traffic) {
  progress::point("cg_bands fft to_real");
  if (coefficients.size() != z_offset_.size())
    throw Error("cg_bands fft", "to_real: " + std::to_string(coefficients.size()) +
                                    " coefficients given, the rank holds " + std::to_string(z_offset_.size()));
  // Two FFT phases (z, then x-y) around the all-to-all, each a call of "cg_bands: fft".
  std::optional<timers::Scoped> fft(std::in_place, "cg_bands: fft", &counters_.fft_seconds);
  const int p = layout_.ranks();
  const auto& mine = layout_.sticks_of(rank_);
  std::fill(sticks_.begin(), sticks_.end(), cplx{});
  for (std::size_t i = 0; i < z_offset_.size(); ++i) sticks_[z_offset_[i]] = coefficients[i];
  if (z_backward_) fftw_execute(z_backward_);
  std::size_t at = 0;
  for (int q = 0; q < p; ++q) {
    const int z0 = layout_.first_plane(q), nq = layout_.planes_of(q);
    for (std::size_t k = 0; k < mine.size(); ++k)
      for (int z = 0; z < nq; ++z) send_[at++] = sticks_[k * nz_ + z0 + z];
  }
  std::size_t received = 0;
  for (int q = 0; q < p; ++q) received += static_cast<std::size_t>(to_planes_recv_[q] / 2);
  fft.reset();
  exchange(std::span<const cplx>(send_.data(), at), std::span<cplx>(recv_.data(), received), to_planes_send_,
           to_planes_recv_, traffic);
  fft.emplace("cg_bands: fft", &counters_.fft_seconds);
  std::fill(planes_.begin(), planes_.end(), cplx{});
  const int np = layout_.planes_of(rank_);
  at = 0;
  for (int q = 0; q < p; ++q)
    for (int s : layout_.sticks_of(q)) {
      const auto& st = layout_.sticks()[s];
      for (int z = 0; z < np; ++z) planes_[(static_cast<std::size_t>(z) * ny_ + st.y) * nx_ + st.x] = recv_[at++];
    }
  if (xy_backward_) fftw_execute(xy_backward_);
}

void PlaneFft::to_coefficients(std::span<cplx> coefficients, mpi::Traffic& traffic) {
  progress::point("cg_bands fft to_coefficients");
  if (coefficients.size() != z_offset_.size())
    throw Error("cg_bands fft", "to_coefficients: room for " + std::to_string(coefficients.size()) +
                                    " coefficients given, the rank holds " + std::to_string(z_offset_.size()));
  // Two FFT phases (x-y, then z) around the all-to-all, each a call of "cg_bands: fft".
  std::optional<timers::Scoped> fft(std::in_place, "cg_bands: fft", &counters_.fft_seconds);
  const int p = layout_.ranks();
  const int np = layout_.planes_of(rank_);
  if (xy_forward_) fftw_execute(xy_forward_);
  std::size_t at = 0;
  for (int q = 0; q < p; ++q)
    for (int s : layout_.sticks_of(q)) {
      const auto& st = layout_.sticks()[s];
      for (int z = 0; z < np; ++z) send_[at++] = planes_[(static_cast<std::size_t>(z) * ny_ + st.y) * nx_ + st.x];
    }
  std::size_t received = 0;
  for (int q = 0; q < p; ++q) received += static_cast<std::size_t>(to_planes_send_[q] / 2);
  fft.reset();
  exchange(std::span<const cplx>(send_.data(), at), std::span<cplx>(recv_.data(), received), to_planes_recv_,
           to_planes_send_, traffic);
  fft.emplace("cg_bands: fft", &counters_.fft_seconds);
  const auto& mine = layout_.sticks_of(rank_);
  at = 0;
  for (int q = 0; q < p; ++q) {
    const int z0 = layout_.first_plane(q), nq = layout_.planes_of(q);
    for (std::size_t k = 0; k < mine.size(); ++k)
      for (int z = 0; z < nq; ++z) sticks_[k * nz_ + z0 + z] = recv_[at++];
  }
  if (z_forward_) fftw_execute(z_forward_);
  for (std::size_t i = 0; i < z_offset_.size(); ++i) coefficients[i] = sticks_[z_offset_[i]];
}

}  // namespace plexus::cg_bands
