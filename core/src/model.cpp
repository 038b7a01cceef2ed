// Problem/Generator = model (docs/model-generator.md): molecules on a periodic simple cubic
// lattice, an on-site block per molecule with b/2 levels below the gap and b/2 above it, and
// couplings that decay exponentially with distance and stop at a cut-off radius. Every element is
// a function of the seed and the molecules' indices, so every rank computes its own blocks alone.
#include "plexus/model.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "plexus/distribution.hpp"
#include "plexus/error.hpp"
#include "plexus/panel.hpp"
#include "plexus/parameters.hpp"
#include "random_hash.hpp"

namespace plexus {

namespace {

using detail::hash;
using detail::unit;

// What a random number is for: the second hash argument is (molecule << 3) | tag.
enum Tag : std::uint64_t { kPosition = 0, kCouplingH = 1, kCouplingS = 2, kLevel = 3, kRotation = 4 };

std::uint64_t key(std::int64_t molecule, Tag tag) { return static_cast<std::uint64_t>(molecule) << 3 | tag; }

constexpr double kPi = 3.14159265358979323846;
// The on-site block is made in O(b^3) per molecule: a bound that keeps that reasonable.
constexpr int kModelMaxBlock = 2048;

// The largest a displacement can change a distance: two molecules, each moved by at most
// displacement in every coordinate.
double max_shift(const MoleculeModel& spec) { return 2 * spec.displacement * std::sqrt(3.0); }

// Lattice vectors v != 0 with |v| <= radius + max_shift: every neighbour of a molecule lies at
// one of them (before its displacement), whatever the box.
std::vector<std::array<int, 3>> candidate_vectors(const MoleculeModel& spec) {
  const double reach = spec.radius + max_shift(spec);
  const int r = static_cast<int>(std::floor(reach));
  std::vector<std::array<int, 3>> out;
  for (int x = -r; x <= r; ++x)
    for (int y = -r; y <= r; ++y)
      for (int z = -r; z <= r; ++z) {
        if (x == 0 && y == 0 && z == 0) continue;
        if (std::sqrt(double(x * x + y * y + z * z)) <= reach) out.push_back({x, y, z});
      }
  return out;
}

// sum over the candidate vectors of exp(-max(|v| - shift, 0) / length): bounds the coupling
// weights a molecule's row adds up to (docs/model-generator.md).
double weight_bound(const MoleculeModel& spec, double length) {
  double sum = 0;
  for (const auto& v : candidate_vectors(spec)) {
    const double d = std::sqrt(double(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]));
    sum += std::exp(-std::max(d - max_shift(spec), 0.0) / length);
  }
  return sum;
}

class Geometry {
 public:
  explicit Geometry(const MoleculeModel& spec) : spec_(spec), box_(model_box(spec.molecules)) {}

  std::array<double, 3> position(std::int64_t i) const {
    const std::int64_t site[3] = {i % box_[0], i / box_[0] % box_[1], i / (box_[0] * box_[1])};
    std::array<double, 3> p{};
    for (int k = 0; k < 3; ++k)
      p[static_cast<std::size_t>(k)] =
          static_cast<double>(site[k]) +
          spec_.displacement * (2 * unit(hash(spec_.seed, key(i, kPosition), static_cast<std::uint64_t>(k), 0)) - 1);
    return p;
  }

  // The minimum-image distance of molecules i and j, computed from (min, max) so that it is the
  // same number both ways.
  double distance(std::int64_t i, std::int64_t j) const {
    if (i > j) std::swap(i, j);
    const auto a = position(i), b = position(j);
    double sum = 0;
    for (std::size_t k = 0; k < 3; ++k) {
      const double n = static_cast<double>(box_[k]);
      double d = b[k] - a[k];
      d -= n * std::round(d / n);
      sum += d * d;
    }
    return std::sqrt(sum);
  }

  // The molecules coupled to i (i included), ascending, with their distances.
  std::vector<std::pair<std::int64_t, double>> neighbours(std::int64_t i,
                                                          const std::vector<std::array<int, 3>>& vectors) const {
    const std::int64_t site[3] = {i % box_[0], i / box_[0] % box_[1], i / (box_[0] * box_[1])};
    std::vector<std::int64_t> js;
    for (const auto& v : vectors) {
      std::int64_t s[3];
      for (std::size_t k = 0; k < 3; ++k) s[k] = ((site[k] + v[k]) % box_[k] + box_[k]) % box_[k];
      const std::int64_t j = s[0] + box_[0] * (s[1] + box_[1] * s[2]);
      if (j != i) js.push_back(j);
    }
    std::sort(js.begin(), js.end());
    js.erase(std::unique(js.begin(), js.end()), js.end());
    std::vector<std::pair<std::int64_t, double>> out;
    bool self = false;
    for (std::int64_t j : js) {
      if (!self && j > i) {
        out.emplace_back(i, 0.0);
        self = true;
      }
      const double d = distance(i, j);
      if (d <= spec_.radius) out.emplace_back(j, d);
    }
    if (!self) out.emplace_back(i, 0.0);
    return out;
  }

 private:
  const MoleculeModel& spec_;
  std::array<std::int64_t, 3> box_;
};

// The on-site block of molecule i, column-major b x b: Q diag(levels) Q^T with Q orthogonal
// (Gram-Schmidt, twice, on a Gaussian matrix), exactly symmetric.
void onsite_block(const MoleculeModel& spec, std::int64_t i, double* out) {
  const int b = spec.block;
  const auto ub = static_cast<std::size_t>(b);
  std::vector<double> levels(ub), q(ub * ub);
  for (int k = 0; k < b; ++k) {
    const double u = unit(hash(spec.seed, key(i, kLevel), static_cast<std::uint64_t>(k), 0));
    levels[static_cast<std::size_t>(k)] = k < b / 2 ? -spec.gap / 2 - spec.width * u : spec.gap / 2 + spec.width * u;
  }
  for (std::size_t e = 0; e < ub * ub; ++e) {
    const double u1 = unit(hash(spec.seed, key(i, kRotation), e, 0)), u2 = unit(hash(spec.seed, key(i, kRotation), e, 1));
    q[e] = std::sqrt(-2 * std::log1p(-u1)) * std::cos(2 * kPi * u2);
  }
  for (std::size_t c = 0; c < ub; ++c) {
    double* qc = &q[c * ub];
    for (int pass = 0; pass < 2; ++pass)
      for (std::size_t p = 0; p < c; ++p) {
        const double* qp = &q[p * ub];
        const double dot = std::inner_product(qc, qc + ub, qp, 0.0);
        for (std::size_t r = 0; r < ub; ++r) qc[r] -= dot * qp[r];
      }
    const double norm = std::sqrt(std::inner_product(qc, qc + ub, qc, 0.0));
    PLEXUS_CHECK(norm > 1e-8, "model: degenerate random rotation of molecule " + std::to_string(i));
    for (std::size_t r = 0; r < ub; ++r) qc[r] /= norm;
  }
  for (std::size_t c = 0; c < ub; ++c)
    for (std::size_t r = c; r < ub; ++r) {
      double v = 0;
      for (std::size_t k = 0; k < ub; ++k) v += q[r + k * ub] * levels[k] * q[c + k * ub];
      out[r + c * ub] = out[c + r * ub] = v;
    }
}

// A unit vector of b Gaussian components.
std::vector<double> random_unit(const MoleculeModel& spec, std::uint64_t k1, std::uint64_t k2, std::uint64_t k3) {
  const auto b = static_cast<std::size_t>(spec.block);
  std::vector<double> u(b);
  for (std::size_t r = 0; r < b; ++r) {
    const double u1 = unit(hash(spec.seed, k1, k2, k3 + 2 * r)), u2 = unit(hash(spec.seed, k1, k2, k3 + 2 * r + 1));
    u[r] = std::sqrt(-2 * std::log1p(-u1)) * std::cos(2 * kPi * u2);
  }
  const double norm = std::sqrt(std::inner_product(u.begin(), u.end(), u.begin(), 0.0));
  PLEXUS_CHECK(norm > 1e-8, "model: degenerate random vector");
  for (auto& x : u) x /= norm;
  return u;
}

// The coupling block (i, j), i != j, column-major: amplitude * R with R orthogonal (||R||_2 = 1):
// two Householder reflections and a permutation of the columns, R = (I - 2uu^T)(I - 2vv^T) P, all
// drawn from the seed and the pair. Block (j, i) is the transpose of block (i, j).
void coupling_block(const MoleculeModel& spec, Tag tag, std::int64_t i, std::int64_t j, double amplitude, double* out) {
  const auto b = static_cast<std::size_t>(spec.block);
  const std::int64_t lo = std::min(i, j), hi = std::max(i, j);
  const auto k1 = key(lo, tag), k2 = static_cast<std::uint64_t>(hi);
  const auto u = random_unit(spec, k1, k2, 0), v = random_unit(spec, k1, k2, 2 * b);
  std::vector<std::size_t> perm(b);
  std::iota(perm.begin(), perm.end(), std::size_t{0});
  for (std::size_t c = b; c > 1; --c)  // Fisher-Yates
    std::swap(perm[c - 1], perm[static_cast<std::size_t>(unit(hash(spec.seed, k1, k2, 4 * b + c)) * static_cast<double>(c))]);
  const double uv = std::inner_product(u.begin(), u.end(), v.begin(), 0.0);
  for (std::size_t c = 0; c < b; ++c) {
    const std::size_t q = perm[c];
    for (std::size_t r = 0; r < b; ++r) {
      // (I - 2uu^T)(I - 2vv^T) element (r, q).
      const double m = (r == q ? 1.0 : 0.0) - 2 * u[r] * u[q] - 2 * v[r] * v[q] + 4 * u[r] * uv * v[q];
      if (i < j)
        out[r + c * b] = amplitude * m;
      else
        out[c + r * b] = amplitude * m;
    }
  }
}

}  // namespace

MoleculeModel model_spec(const ParameterList& given) {
  ParameterList problem(given);
  validate_and_fill(problem, *problem_valid_parameters(), "plexus/Problem");
  const std::string sizes_text = problem.get<std::string>("BlockSizes");
  const auto pattern = parse_int_list(sizes_text, "Problem/BlockSizes");
  if (pattern.size() != 1)
    throw InputError("Problem/BlockSizes", "Problem/Generator = 'model' needs one block size, the basis functions of a "
                                           "molecule (all molecules alike), not the pattern '" + sizes_text + "'");
  MoleculeModel spec;
  spec.block = pattern[0];
  if (spec.block % 2 != 0 || spec.block > kModelMaxBlock)
    throw InputError("Problem/BlockSizes",
                     "Problem/Generator = 'model' needs an even block size of at most " +
                         std::to_string(kModelMaxBlock) + " (b/2 occupied and b/2 empty levels a molecule), got " +
                         std::to_string(spec.block) + (spec.block % 2 != 0 ? "; e.g. " + std::to_string(spec.block - 1) +
                                                                                 " or " + std::to_string(spec.block + 1)
                                                                           : std::string()));
  spec.molecules = problem.get<int>("Molecules");
  spec.gap = problem.get<double>("ModelGap");
  spec.width = problem.get<double>("ModelWidth");
  spec.radius = problem.get<double>("ModelRadius");
  spec.decay = problem.get<double>("ModelDecay");
  spec.coupling = problem.get<double>("ModelCoupling");
  spec.overlap = problem.get<double>("ModelOverlap");
  spec.displacement = problem.get<double>("ModelDisplacement");
  spec.seed = static_cast<std::uint64_t>(problem.get<int>("ModelSeed"));
  return spec;
}

std::int64_t model_electrons(const ParameterList& problem) {
  const MoleculeModel spec = model_spec(problem);
  return spec.molecules * spec.block;
}

std::array<std::int64_t, 3> model_box(std::int64_t n) {
  auto largest_divisor_at_most = [](std::int64_t m, double limit) {
    std::int64_t best = 1;
    for (std::int64_t d = 1; static_cast<double>(d) <= limit + 1e-9 && d <= m; ++d)
      if (m % d == 0) best = d;
    return best;
  };
  const std::int64_t n3 = largest_divisor_at_most(n, std::cbrt(static_cast<double>(n)));
  const std::int64_t rest = n / n3;
  const std::int64_t n2 = largest_divisor_at_most(rest, std::sqrt(static_cast<double>(rest)));
  std::array<std::int64_t, 3> box{rest / n2, n2, n3};
  std::sort(box.begin(), box.end(), std::greater<>());
  return box;
}

MoleculeModelBounds model_bounds(const MoleculeModel& spec) {
  MoleculeModelBounds m;
  const double kh = weight_bound(spec, spec.decay), ks = weight_bound(spec, spec.decay / 2);
  m.h_amplitude = kh > 0 ? spec.coupling * (spec.gap / 2) / kh : 0.0;
  m.s_amplitude = ks > 0 ? spec.overlap / ks : 0.0;
  m.s_min = 1 - spec.overlap;
  m.s_max = 1 + spec.overlap;
  const double edge = (1 - spec.coupling) * spec.gap / 2;
  m.homo_max = -edge / m.s_max;
  m.lumo_min = edge / m.s_max;
  m.spectrum_max = (spec.gap / 2 + spec.width + spec.coupling * spec.gap / 2) / m.s_min;
  m.max_blocks_per_row = static_cast<int>(
      std::min<std::int64_t>(spec.molecules, 1 + static_cast<std::int64_t>(candidate_vectors(spec).size())));
  return m;
}

HamiltonianMatrices generate_model(const MoleculeModel& spec, std::shared_ptr<const Distribution> dist) {
  const auto n = static_cast<int>(spec.molecules);
  PLEXUS_CHECK(dist->nblkrows() == n && dist->nblkcols() == n, "model: the distribution is not molecules x molecules");
  const BlockSizes sizes = BlockSizes::uniform(n, spec.block);
  const BlockLayout layout{sizes, sizes};
  const MoleculeModelBounds bounds = model_bounds(spec);
  const Geometry geometry(spec);
  const auto vectors = candidate_vectors(spec);
  const auto& rows = dist->local_rows();
  const int b = spec.block;
  const int values = b * b;
  Panel ph(rows), ps(rows);
  HamiltonianMatrices out;
  out.h = std::make_shared<DistMatrix>("H", dist, layout);
  out.s = std::make_shared<DistMatrix>("S", dist, layout);
  for (int r = 0; r < static_cast<int>(rows.size()); ++r) {
    const int i = rows[static_cast<std::size_t>(r)];
    for (const auto& [j64, d] : geometry.neighbours(i, vectors)) {
      const int j = static_cast<int>(j64);
      if (!out.h->is_local(i, j)) continue;
      double* h = ph.append_block(r, j, values);
      double* s = ps.append_block(r, j, values);
      if (i == j) {
        onsite_block(spec, i, h);
        for (int k = 0; k < b; ++k) s[k + static_cast<std::size_t>(k) * static_cast<std::size_t>(b)] = 1.0;
      } else {
        coupling_block(spec, kCouplingH, i, j, bounds.h_amplitude * std::exp(-d / spec.decay), h);
        coupling_block(spec, kCouplingS, i, j, bounds.s_amplitude * std::exp(-2 * d / spec.decay), s);
      }
    }
  }
  out.h->set_local(std::move(ph));
  out.s->set_local(std::move(ps));
  return out;
}

}  // namespace plexus
