#pragma once
// The two-particle accumulator's model, shared by the g4 solver, its tests, its benchmark and
// `plexus g4-diff`: combined indices, the deterministic single-particle G's of a measurement,
// the update of a range of G4, slices, and norms. Header-only, no MPI.
//
//   K = (k, w): k = (kx, ky) on a periodic Lx x Ly cluster, w one of Nw periodic frequencies.
//   Flat index of K: k + Nk * w with k = kx + Lx * ky and Nk = Lx * Ly; N = Nk * Nw.
//   K1 - K2 is taken componentwise modulo (Lx, Ly, Nw).
//   A measurement gives G_up and G_down, complex N x N, row-major, complex as (re, im).
//   G4(K1, K2, K3) += sum_s G_s(K3 - K2, K3 - K1) * G_{-s}(K2, K1),
//   G4 flattened (K1, K2, K3) row-major: complex element i = (K1 * N + K2) * N + K3.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace plexus::g4 {

struct Model {
  int lx = 1, ly = 1, nw = 1;

  int nk() const { return lx * ly; }
  int n() const { return lx * ly * nw; }
  /// Complex elements of G4: N^3.
  std::int64_t elements() const {
    const std::int64_t n3 = n();
    return n3 * n3 * n3;
  }
  /// Doubles of one measurement's buffer: G_up then G_down, N x N complex each.
  std::int64_t buffer_doubles() const { return 4 * std::int64_t{n()} * n(); }

  int index(int kx, int ky, int w) const { return kx + lx * ky + nk() * w; }
  /// K1 - K2, componentwise modulo (Lx, Ly, Nw).
  int minus(int k1, int k2) const {
    const int kx1 = k1 % lx, ky1 = (k1 / lx) % ly, w1 = k1 / nk();
    const int kx2 = k2 % lx, ky2 = (k2 / lx) % ly, w2 = k2 / nk();
    return index((kx1 - kx2 + lx) % lx, (ky1 - ky2 + ly) % ly, (w1 - w2 + nw) % nw);
  }
  /// K1 + K2, componentwise modulo (Lx, Ly, Nw).
  int plus(int k1, int k2) const {
    const int kx1 = k1 % lx, ky1 = (k1 / lx) % ly, w1 = k1 / nk();
    const int kx2 = k2 % lx, ky2 = (k2 / lx) % ly, w2 = k2 / nk();
    return index((kx1 + kx2) % lx, (ky1 + ky2) % ly, (w1 + w2) % nw);
  }
  /// table[a * N + b] = b - a: for a fixed a, contiguous in b (the inner loop of the update).
  std::vector<int> minus_table() const {
    const int N = n();
    std::vector<int> t(static_cast<std::size_t>(N) * N);
    for (int a = 0; a < N; ++a)
      for (int b = 0; b < N; ++b) t[static_cast<std::size_t>(a) * N + b] = minus(b, a);
    return t;
  }
};

/// splitmix64's finaliser: a bijective mix of 64 bits.
inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// The key of one measurement's stream: depends only on (seed, rank, thread, measurement).
inline std::uint64_t measurement_key(std::uint64_t seed, int rank, int thread, std::int64_t measurement) {
  std::uint64_t h = mix64(seed ^ 0x6734A1C95E2B0F1Dull);
  h = mix64(h ^ (static_cast<std::uint64_t>(rank) + 0x1000193ull));
  h = mix64(h ^ (static_cast<std::uint64_t>(thread) + 0x2545F491ull));
  h = mix64(h ^ (static_cast<std::uint64_t>(measurement) + 0x9E3779B9ull));
  return h;
}

/// Fills one measurement's buffer (model.buffer_doubles() doubles): G_up, then G_down, each
/// N x N complex row-major, every real and imaginary part uniform in [-1, 1). Value j of the
/// buffer depends only on (seed, rank, thread, measurement, j), so any rank can recompute it.
inline void generate(const Model& model, std::uint64_t seed, int rank, int thread, std::int64_t measurement,
                     double* out) {
  const std::uint64_t key = measurement_key(seed, rank, thread, measurement);
  const std::int64_t count = model.buffer_doubles();
  for (std::int64_t j = 0; j < count; ++j) {
    const std::uint64_t bits = mix64(key + static_cast<std::uint64_t>(j + 1) * 0x9E3779B97F4A7C15ull);
    out[j] = static_cast<double>(bits >> 11) * (2.0 / 9007199254740992.0) - 1.0;  // 53 bits -> [-1, 1)
  }
}

/// A contiguous range of complex elements [begin, end).
struct Slice {
  std::int64_t begin = 0, end = 0;
  std::int64_t size() const { return end - begin; }
};

/// Part p of `parts` of [0, total), balanced to within one element:
/// [p*(T/S) + min(p, T%S), (p+1)*(T/S) + min(p+1, T%S)).
inline Slice slice_of(std::int64_t total, int parts, int p) {
  const std::int64_t q = total / parts, r = total % parts;
  return {p * q + std::min<std::int64_t>(p, r), (p + 1) * q + std::min<std::int64_t>(p + 1, r)};
}
/// The largest part: ceil(total / parts).
inline std::int64_t max_slice(std::int64_t total, int parts) { return (total + parts - 1) / parts; }

/// Flops of the update of one complex element by one measurement: two complex products
/// (6 flops each) and two complex additions (2 each).
inline constexpr double kFlopsPerElement = 16.0;

/// Adds one measurement (`g`: G_up then G_down, as generate writes them) to the complex elements
/// [begin, end) of G4; `out` holds element `begin` at out[0] (re) and out[1] (im). `minus` is
/// model.minus_table().
inline void accumulate(const Model& model, const int* minus, const double* g, std::int64_t begin, std::int64_t end,
                       double* out) {
  const std::int64_t N = model.n();
  const double* gup = g;
  const double* gdn = g + 2 * N * N;
  std::int64_t i = begin;
  while (i < end) {
    const std::int64_t row = i / N;  // (K1, K2)
    const std::int64_t k1 = row / N, k2 = row % N;
    const std::int64_t k3_begin = i % N;
    const std::int64_t k3_end = std::min<std::int64_t>(N, k3_begin + (end - i));
    // G_{-s}(K2, K1) for s = up (G_down) and s = down (G_up).
    const std::int64_t b = 2 * (k2 * N + k1);
    const double dn_re = gdn[b], dn_im = gdn[b + 1], up_re = gup[b], up_im = gup[b + 1];
    const int* m2 = minus + k2 * N;  // m2[K3] = K3 - K2
    const int* m1 = minus + k1 * N;  // m1[K3] = K3 - K1
    double* o = out + 2 * (i - begin);
    for (std::int64_t k3 = k3_begin; k3 < k3_end; ++k3) {
      const std::int64_t a = 2 * (std::int64_t{m2[k3]} * N + m1[k3]);  // G_s(K3 - K2, K3 - K1)
      const double ur = gup[a], ui = gup[a + 1], dr = gdn[a], di = gdn[a + 1];
      o[0] += ur * dn_re - ui * dn_im + dr * up_re - di * up_im;
      o[1] += ur * dn_im + ui * dn_re + dr * up_im + di * up_re;
      o += 2;
    }
    i += k3_end - k3_begin;
  }
}

/// Sums for the relative errors ||vec(A - B)||_p / ||vec(A)||_p, p = 1, 2 (PASC'21 Eqs. 2-3),
/// over complex elements (|z| the modulus). Add ranges, merge partial sums, then read.
struct ErrorSums {
  double diff_l1 = 0, diff_l2sq = 0, ref_l1 = 0, ref_l2sq = 0;

  /// a, b: `count` complex elements each (2 * count doubles).
  void add(const double* a, const double* b, std::int64_t count) {
    for (std::int64_t j = 0; j < count; ++j) {
      const double ar = a[2 * j], ai = a[2 * j + 1];
      const double dr = ar - b[2 * j], di = ai - b[2 * j + 1];
      const double d2 = dr * dr + di * di, a2 = ar * ar + ai * ai;
      diff_l1 += std::sqrt(d2);
      diff_l2sq += d2;
      ref_l1 += std::sqrt(a2);
      ref_l2sq += a2;
    }
  }
  void merge(const ErrorSums& o) {
    diff_l1 += o.diff_l1;
    diff_l2sq += o.diff_l2sq;
    ref_l1 += o.ref_l1;
    ref_l2sq += o.ref_l2sq;
  }
  static double ratio(double num, double den) {
    if (den > 0) return num / den;
    return num > 0 ? INFINITY : 0.0;
  }
  double l1() const { return ratio(diff_l1, ref_l1); }
  double l2() const { return ratio(std::sqrt(diff_l2sq), std::sqrt(ref_l2sq)); }
};

/// ||vec(A)||_1 and ||vec(A)||_2^2 of `count` complex elements.
struct NormSums {
  double l1 = 0, l2sq = 0;
  void add(const double* a, std::int64_t count) {
    for (std::int64_t j = 0; j < count; ++j) {
      const double s = a[2 * j] * a[2 * j] + a[2 * j + 1] * a[2 * j + 1];
      l1 += std::sqrt(s);
      l2sq += s;
    }
  }
};

}  // namespace plexus::g4
