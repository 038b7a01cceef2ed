#include "silicon.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>

#include "plexus/error.hpp"

namespace plexus::cg_bands {

namespace {

// |G|^2 in units of (2 pi / a)^2.
double g2_units(const Crystal& c, const Miller& m) {
  double s = 0;
  for (int d = 0; d < 3; ++d) {
    const double x = static_cast<double>(m[d]) / c.supercell[d];
    s += x * x;
  }
  return s;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, ',')) parts.push_back(part);
  if (!text.empty() && text.back() == ',') parts.emplace_back();
  return parts;
}

}  // namespace

double form_factor(double g2) {
  constexpr double eps = 1e-9;
  if (std::abs(g2 - 3) < eps) return kFormFactor3;
  if (std::abs(g2 - 8) < eps) return kFormFactor8;
  if (std::abs(g2 - 11) < eps) return kFormFactor11;
  return 0;
}

double Crystal::two_pi_over_a() const { return 2 * std::numbers::pi / a; }

std::vector<std::array<double, 3>> Crystal::positions() const {
  static constexpr double fcc[4][3] = {{0, 0, 0}, {0, 0.5, 0.5}, {0.5, 0, 0.5}, {0.5, 0.5, 0}};
  std::vector<std::array<double, 3>> out;
  out.reserve(static_cast<std::size_t>(perfect_atoms()));
  int index = 0;
  for (int c0 = 0; c0 < supercell[0]; ++c0)
    for (int c1 = 0; c1 < supercell[1]; ++c1)
      for (int c2 = 0; c2 < supercell[2]; ++c2)
        for (const auto& site : fcc)
          for (int sign : {1, -1}) {
            if (index++ == vacancy) continue;
            const int cell[3] = {c0, c1, c2};
            std::array<double, 3> r{};
            for (int d = 0; d < 3; ++d) r[d] = a * (cell[d] + site[d] + sign * 0.125);
            out.push_back(r);
          }
  return out;
}

double kinetic(const Crystal& c, const Miller& m) {
  const double b = c.two_pi_over_a();
  double s = 0;
  for (int d = 0; d < 3; ++d) {
    const double x = b * (c.kpoint[d] + static_cast<double>(m[d]) / c.supercell[d]);
    s += x * x;
  }
  return s;
}

namespace {
cplx structure_sum(const Crystal& c, const std::vector<std::array<double, 3>>& atoms, const Miller& m) {
  const double b = c.two_pi_over_a();
  cplx s = 0;
  for (const auto& r : atoms) {
    double phase = 0;
    for (int d = 0; d < 3; ++d) phase += b * static_cast<double>(m[d]) / c.supercell[d] * r[d];
    s += std::polar(1.0, -phase);
  }
  return s;
}
}  // namespace

cplx potential(const Crystal& c, const Miller& m) {
  const double v = form_factor(g2_units(c, m));
  if (v == 0) return 0;
  return v * structure_sum(c, c.positions(), m) / static_cast<double>(c.perfect_atoms());
}

std::vector<PotentialTerm> potential_terms(const Crystal& c) {
  const auto atoms = c.positions();
  std::vector<PotentialTerm> out;
  std::array<int, 3> r{};
  for (int d = 0; d < 3; ++d) r[d] = static_cast<int>(std::ceil(std::sqrt(11.0) * c.supercell[d])) + 1;
  for (int m0 = -r[0]; m0 <= r[0]; ++m0)
    for (int m1 = -r[1]; m1 <= r[1]; ++m1)
      for (int m2 = -r[2]; m2 <= r[2]; ++m2) {
        const Miller m{m0, m1, m2};
        const double v = form_factor(g2_units(c, m));
        if (v == 0) continue;
        const cplx value = v * structure_sum(c, atoms, m) / static_cast<double>(c.perfect_atoms());
        // The structure factor of the perfect lattice vanishes exactly off the fcc reciprocal
        // lattice; rounding leaves ~1e-17.
        if (std::abs(value) > 1e-12 * std::abs(v)) out.push_back({m, value});
      }
  return out;
}

std::vector<Miller> basis(const Crystal& c, double ecut) {
  const double radius = std::sqrt(ecut) / c.two_pi_over_a();  // |k+G| <= radius, units of 2 pi / a
  std::array<int, 3> lo{}, hi{};
  for (int d = 0; d < 3; ++d) {
    lo[d] = static_cast<int>(std::floor(c.supercell[d] * (-c.kpoint[d] - radius))) - 1;
    hi[d] = static_cast<int>(std::ceil(c.supercell[d] * (-c.kpoint[d] + radius))) + 1;
  }
  std::vector<Miller> out;
  for (int m0 = lo[0]; m0 <= hi[0]; ++m0)
    for (int m1 = lo[1]; m1 <= hi[1]; ++m1)
      for (int m2 = lo[2]; m2 <= hi[2]; ++m2) {
        const Miller m{m0, m1, m2};
        if (kinetic(c, m) <= ecut) out.push_back(m);
      }
  return out;
}

int good_fft_size(int n) {
  for (int k = std::max(n, 1);; ++k) {
    int r = k;
    for (int p : {2, 3, 5, 7})
      while (r % p == 0) r /= p;
    if (r == 1) return k;
  }
}

std::array<int, 3> fft_box(const std::vector<Miller>& basis, const std::vector<PotentialTerm>& terms) {
  std::array<int, 3> box{};
  for (int d = 0; d < 3; ++d) {
    int lo = 0, hi = 0, v = 0;
    if (!basis.empty()) {
      lo = hi = basis.front()[d];
      for (const auto& m : basis) {
        lo = std::min(lo, m[d]);
        hi = std::max(hi, m[d]);
      }
    }
    for (const auto& t : terms) v = std::max(v, std::abs(t.m[d]));
    box[d] = good_fft_size(std::max(hi - lo + v + 1, 2 * v + 1));
  }
  return box;
}

std::array<int, 3> parse_supercell(const std::string& text, const std::string& where) {
  const auto parts = split_commas(text);
  std::array<int, 3> out{};
  bool ok = parts.size() == 3;
  for (std::size_t d = 0; ok && d < 3; ++d) {
    std::size_t used = 0;
    try {
      const long v = std::stol(parts[d], &used);
      ok = used == parts[d].size() && v >= 1 && v <= 64;
      out[d] = static_cast<int>(v);
    } catch (const std::exception&) {
      ok = false;
    }
  }
  if (!ok)
    throw InputError(where, where + " = '" + text +
                                "': give three positive integers n1,n2,n3 (at most 64 each), the cubic 8-atom "
                                "cells of the supercell along x, y and z, e.g. 2,2,2");
  return out;
}

std::array<double, 3> parse_kpoint(const std::string& text, const std::string& where) {
  const auto parts = split_commas(text);
  std::array<double, 3> out{};
  bool ok = parts.size() == 3;
  for (std::size_t d = 0; ok && d < 3; ++d) {
    std::size_t used = 0;
    try {
      out[d] = std::stod(parts[d], &used);
      ok = used == parts[d].size() && std::isfinite(out[d]) && std::abs(out[d]) <= 1e3;
    } catch (const std::exception&) {
      ok = false;
    }
  }
  if (!ok)
    throw InputError(where, where + " = '" + text +
                                "': give three real numbers kx,ky,kz in units of 2 pi / a, e.g. 0,0,0 (Gamma) or "
                                "0.5,0.5,0.5 (L)");
  return out;
}

}  // namespace plexus::cg_bands
