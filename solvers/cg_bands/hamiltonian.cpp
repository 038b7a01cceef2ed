#include "hamiltonian.hpp"

#include <numbers>

#include "plexus/error.hpp"

namespace plexus::cg_bands {

namespace {
// exp(2 pi i m x / n) for x = 0 .. n-1.
std::vector<cplx> phases(int m, int n) {
  std::vector<cplx> out(static_cast<std::size_t>(n));
  for (int x = 0; x < n; ++x) {
    const long k = (static_cast<long>(m) * x) % n;  // exact argument reduction
    out[x] = std::polar(1.0, 2 * std::numbers::pi * static_cast<double>(k) / n);
  }
  return out;
}
}  // namespace

std::vector<double> potential_on_planes(const std::vector<PotentialTerm>& terms, std::array<int, 3> box, int z0,
                                        int nz) {
  const int nx = box[0], ny = box[1];
  std::vector<double> v(static_cast<std::size_t>(nz) * ny * nx, 0.0);
  for (const auto& t : terms) {
    const auto px = phases(t.m[0], nx), py = phases(t.m[1], ny), pz = phases(t.m[2], box[2]);
    for (int z = 0; z < nz; ++z)
      for (int y = 0; y < ny; ++y) {
        const cplx yz = t.v * py[y] * pz[z0 + z];
        double* row = v.data() + (static_cast<std::size_t>(z) * ny + y) * nx;
        for (int x = 0; x < nx; ++x) row[x] += (yz * px[x]).real();
      }
  }
  return v;
}

Hamiltonian::Hamiltonian(const Crystal& crystal, const std::vector<Miller>& basis,
                         const std::vector<PotentialTerm>& terms, PlaneFft& fft)
    : fft_(fft) {
  const Layout& layout = fft.layout();
  const int r = fft.rank();
  for (int i : layout.basis_indices(r))
    kinetic_.push_back(cg_bands::kinetic(crystal, basis[static_cast<std::size_t>(i)]));
  potential_ = potential_on_planes(terms, layout.box(), layout.first_plane(r), layout.planes_of(r));
  const double scale = 1.0 / static_cast<double>(fft.box_points());
  for (double& v : potential_) v *= scale;
}

void Hamiltonian::apply(std::span<const cplx> in, std::span<cplx> out, mpi::Traffic& traffic) {
  if (in.size() != kinetic_.size() || out.size() != kinetic_.size())
    throw Error("cg_bands", "H psi: the vectors do not hold this rank's coefficients");
  fft_.to_real(in, traffic);
  auto planes = fft_.planes();
  for (std::size_t k = 0; k < planes.size(); ++k) planes[k] *= potential_[k];
  fft_.to_coefficients(out, traffic);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] += kinetic_[i] * in[i];
  ++applications_;
}

}  // namespace plexus::cg_bands
