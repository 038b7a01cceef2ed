// plexus-fft-bench: cg_bands' plane-decomposed 3D FFT against FFTW's own MPI transform on the same
// box and ranks, measured in one run (issue 12, item 2).
//
// The box is that of a cg_bands model (Cohen-Bergstresser silicon, --supercell and --ecut, as the
// solver builds it: cg_bands::basis, potential_terms, fft_box). Both sides do what one H
// application does with its FFT: coefficients -> real space -> coefficients.
//   ours       PlaneFft::to_real then PlaneFft::to_coefficients on this rank's coefficients
//              (sticks spread over the ranks, z-transforms on the sticks inside the sphere only,
//              one all-to-all each way, 2D transforms on the local z-planes);
//   fftw_mpi   fftw_mpi_plan_dft_3d on the whole box, slab-decomposed along z as FFTW chooses
//              (fftw_mpi_local_size_3d), in place: the rank's coefficients (those of its G-slab)
//              scattered into its zeroed slab, the backward plan, the forward plan, the coefficients
//              gathered back (the same packing ours does inside to_real / to_coefficients).
//              With --fftw-transposed the backward plan leaves real space transposed
//              (FFTW_MPI_TRANSPOSED_OUT) and the forward plan takes it so (FFTW_MPI_TRANSPOSED_IN):
//              the usual way to save FFTW's two transposes back.
// Both planned with the same FFTW flag (--planning measure|estimate). Before the timing, both are
// checked to compute the same thing: the same random coefficients, real space multiplied by the
// model's V(r), back to the coefficients: every coefficient must agree to --tolerance (relative
// to the largest), or the bench fails (exit 1) before timing anything.
// Timing: --warmup uncounted pairs, then --repetitions pairs interleaved (ours, FFTW, ours, ...);
// a repetition's time is the slowest rank's after a barrier. Reported per side: min, median,
// mean; the ratio ours / FFTW of the medians (and of the minima). JSON out; speed is never asserted.
#include <fftw3-mpi.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "hamiltonian.hpp"
#include "plane_fft.hpp"
#include "plexus/collectives.hpp"
#include "plexus/mpi.hpp"
#include "silicon.hpp"

namespace {

namespace cb = plexus::cg_bands;
using cplx = std::complex<double>;
using json = nlohmann::json;
using plexus::bench::loadavg1;
using plexus::bench::machine_info;
using plexus::bench::number;
using plexus::bench::stats_of;
using plexus::bench::to_int;
using plexus::bench::UsageError;

const char* const kUsage =
    R"(Usage: mpiexec -n P plexus-fft-bench [options]

cg_bands' plane FFT (sticks -> planes, z-transforms only inside the sphere) against FFTW's MPI
transform (fftw_mpi_plan_dft_3d, slab decomposition) on the FFT box of a cg_bands silicon model,
on the job's ranks, in one run. Both sides: coefficients -> real space -> coefficients (what one
H application does). Checked to agree before timing; then --repetitions pairs interleaved.

Options:
  --supercell n1,n2,n3   cubic 8-atom cells (default 2,2,2: 64 atoms)
  --ecut E               plane-wave cut-off, Ry (default 6)
  --planning P           measure | estimate: the FFTW flag of both sides (default measure)
  --fftw-transposed      FFTW side: backward with FFTW_MPI_TRANSPOSED_OUT, forward with
                         FFTW_MPI_TRANSPOSED_IN (saves FFTW's transposes back)
  --repetitions R        counted pairs (default 50)
  --warmup W             uncounted pairs before them (default 5)
  --tolerance T          largest relative difference allowed between the two (default 1e-10)
  --json FILE            write the JSON there (default: stdout)
  --check                re-read the JSON file and check it is complete (needs --json)
  --quick                tiny run for tests: supercell 1,1,1, Ecut 3, 3 repetitions, 1 warm-up
                         (options after --quick override it)
  -h, --help             this text
)";

struct Options {
  std::array<int, 3> supercell{2, 2, 2};
  double ecut = 6;
  bool measure = true;
  bool transposed = false;
  int repetitions = 50;
  int warmup = 5;
  double tolerance = 1e-10;
  std::string json_path;
  bool check = false;
  bool quick = false;
  std::string command;
  std::vector<std::string> command_words;  // the same, for the metadata
};

Options parse(int argc, char** argv, bool& help) {
  Options o;
  o.command_words = plexus::bench::command_line(argc, argv);
  for (int i = 0; i < argc; ++i) {
    if (i > 0) o.command.push_back(' ');
    o.command.append(argv[i]);
  }
  auto value = [&](int& i, const std::string& a) -> std::string {
    if (i + 1 >= argc) throw UsageError(a + " needs a value");
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      help = true;
    } else if (a == "--supercell") {
      o.supercell = cb::parse_supercell(value(i, a), "--supercell");
    } else if (a == "--ecut") {
      const std::string v = value(i, a);
      char* end = nullptr;
      o.ecut = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(o.ecut > 0))
        throw UsageError("--ecut needs a positive number, got '" + v + "'");
    } else if (a == "--planning") {
      const std::string v = value(i, a);
      if (v != "measure" && v != "estimate") throw UsageError("--planning is measure or estimate, got '" + v + "'");
      o.measure = v == "measure";
    } else if (a == "--fftw-transposed") {
      o.transposed = true;
    } else if (a == "--repetitions") {
      o.repetitions = static_cast<int>(to_int(a, value(i, a), 1, 100000));
    } else if (a == "--warmup") {
      o.warmup = static_cast<int>(to_int(a, value(i, a), 0, 100000));
    } else if (a == "--tolerance") {
      const std::string v = value(i, a);
      char* end = nullptr;
      o.tolerance = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(o.tolerance > 0))
        throw UsageError("--tolerance needs a positive number, got '" + v + "'");
    } else if (a == "--json") {
      o.json_path = value(i, a);
    } else if (a == "--check") {
      o.check = true;
    } else if (a == "--quick") {
      o.quick = true;
      o.supercell = {1, 1, 1};
      o.ecut = 3;
      o.repetitions = 3;
      o.warmup = 1;
    } else {
      throw UsageError("unknown option '" + a + "' (see --help)");
    }
  }
  if (o.check && (o.json_path.empty() || o.json_path == "-"))
    throw UsageError("--check needs --json FILE (a file it can read back)");
  return o;
}

int positive_mod(int a, int n) { return ((a % n) + n) % n; }

// The same pseudo-random coefficient of basis vector i on every rank and side.
cplx coefficient(std::int64_t i) {
  std::uint64_t x = static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
  auto next = [&x] {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb93fe53ec96bull;
    x ^= x >> 33;
    return static_cast<double>(x >> 11) / 9007199254740992.0 * 2 - 1;
  };
  const double re = next();
  return {re, next()};
}

// FFTW's MPI transform of the whole box, in place, slab-decomposed along z (the slowest index;
// the box is [z][y][x] as cg_bands' planes).
class FftwMpi {
 public:
  FftwMpi(const std::vector<cb::Miller>& basis, std::array<int, 3> box, MPI_Comm comm, bool measure, bool transposed)
      : box_(box), transposed_(transposed) {
    const ptrdiff_t n0 = box[2], n1 = box[1], n2 = box[0];
    ptrdiff_t alloc = 0;
    if (transposed)
      alloc =
          fftw_mpi_local_size_3d_transposed(n0, n1, n2, comm, &local_n0_, &local_0_start_, &local_n1_, &local_1_start_);
    else
      alloc = fftw_mpi_local_size_3d(n0, n1, n2, comm, &local_n0_, &local_0_start_);
    data_ = fftw_alloc_complex(static_cast<std::size_t>(std::max<ptrdiff_t>(alloc, 1)));
    const unsigned flags = measure ? FFTW_MEASURE : FFTW_ESTIMATE;
    backward_ = fftw_mpi_plan_dft_3d(n0, n1, n2, data_, data_, comm, FFTW_BACKWARD,
                                     flags | (transposed ? FFTW_MPI_TRANSPOSED_OUT : 0u));
    forward_ = fftw_mpi_plan_dft_3d(n0, n1, n2, data_, data_, comm, FFTW_FORWARD,
                                    flags | (transposed ? FFTW_MPI_TRANSPOSED_IN : 0u));
    if (!backward_ || !forward_) throw std::runtime_error("FFTW could not make an MPI plan");
    alloc_ = alloc;
    // The coefficients of this rank: the basis vectors whose z lies in its G-slab.
    const std::size_t plane = static_cast<std::size_t>(box[0]) * box[1];
    for (std::size_t i = 0; i < basis.size(); ++i) {
      const auto& g = basis[i];
      const int z = positive_mod(g[2], box[2]);
      if (z < local_0_start_ || z >= local_0_start_ + local_n0_) continue;
      index_.push_back(static_cast<std::int64_t>(i));
      offset_.push_back((z - local_0_start_) * plane + static_cast<std::size_t>(positive_mod(g[1], box[1])) * box[0] +
                        static_cast<std::size_t>(positive_mod(g[0], box[0])));
    }
  }
  ~FftwMpi() {
    fftw_destroy_plan(backward_);
    fftw_destroy_plan(forward_);
    fftw_free(data_);
  }
  FftwMpi(const FftwMpi&) = delete;
  FftwMpi& operator=(const FftwMpi&) = delete;

  const std::vector<std::int64_t>& basis_indices() const { return index_; }
  /// Coefficients (basis_indices order) -> real space in data().
  void to_real(std::span<const cplx> c) {
    cplx* d = reinterpret_cast<cplx*>(data_);
    std::fill(d, d + alloc_, cplx{});
    for (std::size_t k = 0; k < offset_.size(); ++k) d[offset_[k]] = c[k];
    fftw_execute(backward_);
  }
  /// data() -> coefficients (unnormalised).
  void to_coefficients(std::span<cplx> c) {
    fftw_execute(forward_);
    const cplx* d = reinterpret_cast<const cplx*>(data_);
    for (std::size_t k = 0; k < offset_.size(); ++k) c[k] = d[offset_[k]];
  }
  /// Real space: index of (x, y, z) in data() if this rank holds it, else -1.
  std::int64_t real_index(int x, int y, int z) const {
    if (!transposed_) {
      if (z < local_0_start_ || z >= local_0_start_ + local_n0_) return -1;
      return ((static_cast<std::int64_t>(z - local_0_start_) * box_[1]) + y) * box_[0] + x;
    }
    if (y < local_1_start_ || y >= local_1_start_ + local_n1_) return -1;  // [y][z][x]
    return ((static_cast<std::int64_t>(y - local_1_start_) * box_[2]) + z) * box_[0] + x;
  }
  cplx* data() { return reinterpret_cast<cplx*>(data_); }
  ptrdiff_t slab() const { return transposed_ ? local_n1_ : local_n0_; }

 private:
  std::array<int, 3> box_;
  bool transposed_;
  ptrdiff_t local_n0_ = 0, local_0_start_ = 0, local_n1_ = 0, local_1_start_ = 0, alloc_ = 0;
  fftw_complex* data_ = nullptr;
  fftw_plan backward_ = nullptr, forward_ = nullptr;
  std::vector<std::int64_t> index_;
  std::vector<std::size_t> offset_;
};

double max_over(double v, MPI_Comm comm) {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, comm);
  return v;
}

json stats_json(const std::vector<double>& v) {
  const auto s = stats_of(v);
  return {{"min", number(s.min)}, {"median", number(s.median)}, {"mean", number(s.mean)}};
}

// Re-reads the JSON and checks what a consumer (bench/cg_bands_plot.py) relies on, and the metadata
// of a run on `ranks` ranks. "" when fine.
std::string check_json(const std::string& path, int ranks) {
  std::ifstream in(path);
  if (!in) return "cannot open " + path;
  json j;
  try {
    j = json::parse(in);
  } catch (const std::exception& e) {
    return std::string("not JSON: ") + e.what();
  }
  try {
    for (const char* k : {"box", "supercell"})
      if (!j.at("parameters").at(k).is_array() || j["parameters"][k].size() != 3) return std::string("parameters.") + k;
    for (const char* k : {"npw", "sticks", "ranks", "ecut", "repetitions"})
      if (!j.at("parameters").at(k).is_number()) return std::string("parameters.") + k;
    if (!j.at("parameters").at("planning").is_string()) return "parameters.planning";
    for (const char* side : {"ours", "fftw_mpi"})
      for (const char* k : {"min", "median", "mean"}) {
        const auto& v = j.at(side).at("seconds").at(k);
        if (!v.is_number() || !(v.get<double>() > 0)) return std::string(side) + ".seconds." + k;
      }
    for (const char* k : {"ratio_median", "ratio_min"})
      if (!j.at(k).is_number() || !(j[k].get<double>() > 0)) return k;
    if (!j.at("check").at("passed").get<bool>()) return "check.passed is false";
    if (!j.at("machine").at("ranks").is_number()) return "machine.ranks";
    return plexus::bench::check_metadata(j, "plexus-fft-bench", ranks);
  } catch (const std::exception& e) {
    return std::string("missing or malformed field: ") + e.what();
  }
}

int run(const Options& o, MPI_Comm comm) {
  const int p = plexus::mpi::size(comm), me = plexus::mpi::rank(comm);
  const double load_before = loadavg1();
  cb::Crystal crystal;
  crystal.supercell = o.supercell;
  const auto basis = cb::basis(crystal, o.ecut);
  const auto terms = cb::potential_terms(crystal);
  const auto box = cb::fft_box(basis, terms);
  const std::int64_t npw = static_cast<std::int64_t>(basis.size());
  const std::int64_t points = static_cast<std::int64_t>(box[0]) * box[1] * box[2];
  if (me == 0)
    std::fprintf(stderr, "plexus-fft-bench: Si %dx%dx%d, Ecut %g Ry: %lld plane waves, box %dx%dx%d, %d rank%s\n",
                 o.supercell[0], o.supercell[1], o.supercell[2], o.ecut, static_cast<long long>(npw), box[0], box[1],
                 box[2], p, p == 1 ? "" : "s");

  // Ours.
  MPI_Comm ours_comm = MPI_COMM_NULL;
  MPI_Comm_dup(comm, &ours_comm);
  plexus::MpiCollectives collectives;
  plexus::mpi::Traffic traffic;
  cb::Layout layout(basis, box, p);
  const std::int64_t sticks = static_cast<std::int64_t>(layout.sticks().size());
  auto ours = std::make_unique<cb::PlaneFft>(
      layout, ours_comm, collectives, o.measure ? cb::PlaneFft::Planning::Measure : cb::PlaneFft::Planning::Estimate);
  const auto mine = layout.basis_indices(me);
  std::vector<cplx> c_ours(mine.size()), out_ours(mine.size());
  for (std::size_t k = 0; k < mine.size(); ++k) c_ours[k] = coefficient(mine[k]);

  // FFTW MPI.
  MPI_Comm fftw_comm = MPI_COMM_NULL;
  MPI_Comm_dup(comm, &fftw_comm);
  auto fftw = std::make_unique<FftwMpi>(basis, box, fftw_comm, o.measure, o.transposed);
  const auto& theirs_idx = fftw->basis_indices();
  std::vector<cplx> c_fftw(theirs_idx.size()), out_fftw(theirs_idx.size());
  for (std::size_t k = 0; k < theirs_idx.size(); ++k) c_fftw[k] = coefficient(theirs_idx[k]);

  // The check: V psi on both sides (real space times the model's V(r)), every coefficient compared.
  const auto v_all = cb::potential_on_planes(terms, box, 0, box[2]);  // [z][y][x], the whole box
  const std::size_t plane = static_cast<std::size_t>(box[0]) * box[1];
  ours->to_real(c_ours, traffic);
  {
    auto planes = ours->planes();
    const std::size_t z0 = static_cast<std::size_t>(layout.first_plane(me));
    for (std::size_t k = 0; k < planes.size(); ++k) planes[k] *= v_all[z0 * plane + k];
  }
  ours->to_coefficients(out_ours, traffic);
  fftw->to_real(c_fftw);
  for (int z = 0; z < box[2]; ++z)
    for (int y = 0; y < box[1]; ++y)
      for (int x = 0; x < box[0]; ++x) {
        const std::int64_t at = fftw->real_index(x, y, z);
        if (at >= 0) fftw->data()[at] *= v_all[(static_cast<std::size_t>(z) * box[1] + y) * box[0] + x];
      }
  fftw->to_coefficients(out_fftw);
  std::vector<cplx> all_ours(static_cast<std::size_t>(npw)), all_fftw(static_cast<std::size_t>(npw));
  for (std::size_t k = 0; k < mine.size(); ++k) all_ours[static_cast<std::size_t>(mine[k])] = out_ours[k];
  for (std::size_t k = 0; k < theirs_idx.size(); ++k) all_fftw[static_cast<std::size_t>(theirs_idx[k])] = out_fftw[k];
  MPI_Allreduce(MPI_IN_PLACE, all_ours.data(), static_cast<int>(2 * npw), MPI_DOUBLE, MPI_SUM, comm);
  MPI_Allreduce(MPI_IN_PLACE, all_fftw.data(), static_cast<int>(2 * npw), MPI_DOUBLE, MPI_SUM, comm);
  double diff = 0, scale = 0;
  for (std::int64_t i = 0; i < npw; ++i) {
    diff = std::max(diff, std::abs(all_ours[i] - all_fftw[i]));
    scale = std::max(scale, std::abs(all_fftw[i]));
  }
  const double rel = diff / std::max(scale, 1e-300);
  const bool passed = rel <= o.tolerance;
  if (me == 0)
    std::fprintf(stderr,
                 "plexus-fft-bench: check: V psi by both transforms, largest difference %.3e of %.3e (%.2e): %s\n",
                 diff, scale, rel, passed ? "agree" : "DISAGREE");
  if (!passed) {
    if (me == 0)
      std::fprintf(stderr,
                   "plexus-fft-bench: error: the two transforms disagree (%.3e > --tolerance %.1e); no timing\n", rel,
                   o.tolerance);
    fftw.reset();
    ours.reset();
    MPI_Comm_free(&fftw_comm);
    MPI_Comm_free(&ours_comm);
    return 1;
  }

  // Timing: pairs interleaved, warm-up uncounted.
  std::vector<double> t_ours, t_fftw, t_ours_a2a;
  for (int rep = 0; rep < o.warmup + o.repetitions; ++rep) {
    MPI_Barrier(comm);
    const double a2a0 = ours->counters().alltoall_seconds;
    double t0 = MPI_Wtime();
    ours->to_real(c_ours, traffic);
    ours->to_coefficients(out_ours, traffic);
    const double dt_ours = max_over(MPI_Wtime() - t0, comm);
    const double a2a = max_over(ours->counters().alltoall_seconds - a2a0, comm);
    MPI_Barrier(comm);
    t0 = MPI_Wtime();
    fftw->to_real(c_fftw);
    fftw->to_coefficients(out_fftw);
    const double dt_fftw = max_over(MPI_Wtime() - t0, comm);
    if (rep >= o.warmup) {
      t_ours.push_back(dt_ours);
      t_fftw.push_back(dt_fftw);
      t_ours_a2a.push_back(a2a);
    }
  }
  const double load_after = loadavg1();
  const auto so = stats_of(t_ours), sf = stats_of(t_fftw);

  json j;
  j["benchmark"] = "plexus-fft-bench";
  j["command"] = o.command;
  j["machine"] = machine_info(p);
  j["load_average_1min"] = {{"before", load_before}, {"after", load_after}};
  std::int64_t lo = layout.coefficients_of(0), hi = lo;
  for (int r = 0; r < p; ++r) {
    lo = std::min(lo, layout.coefficients_of(r));
    hi = std::max(hi, layout.coefficients_of(r));
  }
  j["parameters"] = {{"supercell", o.supercell},
                     {"atoms", crystal.atoms()},
                     {"ecut", o.ecut},
                     {"box", box},
                     {"box_points", points},
                     {"npw", npw},
                     {"sticks", sticks},
                     {"ranks", p},
                     {"coefficients_per_rank_min", lo},
                     {"coefficients_per_rank_max", hi},
                     {"planning", o.measure ? "FFTW_MEASURE" : "FFTW_ESTIMATE"},
                     {"fftw_layout", o.transposed ? "transposed (FFTW_MPI_TRANSPOSED_OUT / _IN)" : "natural"},
                     {"repetitions", o.repetitions},
                     {"warmup", o.warmup},
                     {"z_columns_ours", sticks},
                     {"z_columns_fftw", static_cast<std::int64_t>(box[0]) * box[1]}};
  j["what"] =
      "seconds of one coefficients -> real space -> coefficients pair, the slowest rank's, per repetition; "
      "ours = PlaneFft::to_real + to_coefficients, fftw_mpi = scatter into the zeroed slab + "
      "fftw_mpi_plan_dft_3d backward + forward + gather; interleaved; ratio = ours / fftw_mpi";
  j["ours"] = {{"seconds", stats_json(t_ours)}, {"alltoall_seconds", stats_json(t_ours_a2a)}};
  j["fftw_mpi"] = {{"seconds", stats_json(t_fftw)}};
  j["ratio_median"] = number(so.median / sf.median);
  j["ratio_min"] = number(so.min / sf.min);
  j["check"] = {{"quantity", "V psi: coefficients -> real space x V(r) -> coefficients, every plane wave"},
                {"max_abs_difference", diff},
                {"max_abs_value", scale},
                {"relative_difference", rel},
                {"tolerance", o.tolerance},
                {"passed", passed}};
  j["samples"] = {{"ours", t_ours}, {"fftw_mpi", t_fftw}, {"ours_alltoall", t_ours_a2a}};
  plexus::bench::RunInfo info;
  info.benchmark = "plexus-fft-bench";
  info.command_line = o.command_words;
  info.ranks = p;
  // No grid: ours cuts the box into z-planes, FFTW into z-slabs, over all ranks.
  info.threads_set = nullptr;  // the bench sets no threads
  info.options = {{"supercell", o.supercell},
                  {"ecut", o.ecut},
                  {"planning", o.measure ? "measure" : "estimate"},
                  {"fftw_transposed", o.transposed},
                  {"repetitions", o.repetitions},
                  {"warmup", o.warmup},
                  {"tolerance", o.tolerance},
                  {"json", o.json_path},
                  {"check", o.check},
                  {"quick", o.quick}};
  info.warm_up = o.warmup;  // pairs
  info.rounds = o.repetitions;
  info.per_repetition_times = {"/samples/ours", "/samples/fftw_mpi", "/samples/ours_alltoall"};
  j["metadata"] = plexus::bench::run_metadata(info);

  fftw.reset();
  ours.reset();
  MPI_Comm_free(&fftw_comm);
  MPI_Comm_free(&ours_comm);

  int code = 0;
  if (me == 0) {
    std::fprintf(stderr,
                 "plexus-fft-bench: median ours %.4g ms (all-to-all %.4g ms), FFTW MPI %.4g ms; ratio %.3f "
                 "(min: %.3f); load %.2f -> %.2f\n",
                 so.median * 1e3, stats_of(t_ours_a2a).median * 1e3, sf.median * 1e3, so.median / sf.median,
                 so.min / sf.min, load_before, load_after);
    try {
      plexus::bench::write_json(j, o.json_path);
    } catch (const plexus::Error& e) {
      std::fprintf(stderr, "plexus-fft-bench: error: %s: %s\n", e.where().c_str(), e.what());
      code = 1;
    }
    if (code == 0 && o.check) {
      const std::string err = check_json(o.json_path, p);
      if (!err.empty()) {
        std::fprintf(stderr, "plexus-fft-bench: check of %s failed: %s\n", o.json_path.c_str(), err.c_str());
        code = 1;
      } else {
        std::printf("JSON check passed\n");
      }
    }
  }
  MPI_Bcast(&code, 1, MPI_INT, 0, comm);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  fftw_mpi_init();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  Options o;
  if (const int rc = plexus::bench::start("plexus-fft-bench", kUsage, [&](bool& help) {
        o = parse(argc, argv, help);
        return o.json_path;
      });
      rc >= 0) {
    fftw_mpi_cleanup();
    MPI_Finalize();
    return rc;
  }
  int code = 0;
  try {
    code = run(o, MPI_COMM_WORLD);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plexus-fft-bench: error on rank %d: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  fftw_mpi_cleanup();
  MPI_Finalize();
  return code;
}
