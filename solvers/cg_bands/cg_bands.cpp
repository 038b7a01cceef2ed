// The "cg_bands" solver: the lowest bands of Cohen-Bergstresser silicon by band-by-band
// preconditioned CG on distributed plane-wave coefficients (Hoefler, Rehm and Janisch's parallel
// ABINIT cgwf), every dot product an allreduce through the run's collectives, the 3D FFT by planes
// with all-to-alls on its own communicator. See docs/cg_bands.md.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "cg.hpp"
#include "plexus/error.hpp"
#include "plexus/log.hpp"
#include "plexus/logp.hpp"
#include "plexus/plugin.hpp"
#include "prediction.hpp"

namespace {

using namespace plexus;
namespace cb = plexus::cg_bands;

struct Settings {
  cb::Crystal crystal;
  double ecut = 0;
  int bands = 0;
  double tolerance = 0;
  int max_sweeps = 0;
  int lines = 1;
  bool batch = false;
  bool keep_unconverged = false;
  int seed = 1;
  cb::PlaneFft::Planning planning = cb::PlaneFft::Planning::Measure;
  std::vector<cb::Miller> basis;  ///< the plane waves, made once (every run of the solver uses them)
  std::string logp;               ///< "measure", "none" or the file read into logp_file
  logp::Parameters logp_file;
};

// The settings of a validated sublist, every check that needs no MPI done (InputError otherwise).
Settings settings_of(const ParameterList& p) {
  Settings s;
  s.crystal.supercell = cb::parse_supercell(p.get<std::string>("Supercell"), "cg_bands/Supercell");
  s.crystal.kpoint = cb::parse_kpoint(p.get<std::string>("KPoint"), "cg_bands/KPoint");
  s.crystal.vacancy = p.get<int>("Vacancy");
  if (s.crystal.vacancy >= s.crystal.perfect_atoms())
    throw InputError("cg_bands/Vacancy", "cg_bands/Vacancy = " + std::to_string(s.crystal.vacancy) +
                                             ": the supercell has atoms 0 to " +
                                             std::to_string(s.crystal.perfect_atoms() - 1) + " (-1: no vacancy)");
  s.ecut = p.get<double>("Ecut");
  s.bands = p.get<int>("Bands");
  if (s.bands == 0) s.bands = 2 * s.crystal.atoms() + 4;
  s.tolerance = p.get<double>("Tolerance");
  s.max_sweeps = p.get<int>("MaxSweeps");
  s.lines = p.get<int>("LinesPerBand");
  s.batch = p.get<bool>("BatchReductions");
  s.keep_unconverged = p.get<bool>("KeepUnconverged");
  s.seed = p.get<int>("Seed");
  s.planning = p.get<std::string>("FftPlanning") == "estimate" ? cb::PlaneFft::Planning::Estimate
                                                               : cb::PlaneFft::Planning::Measure;
  s.logp = p.get<std::string>("LogP");
  if (s.logp != "measure" && s.logp != "none") {
    try {
      s.logp_file = logp::read_file(s.logp);
    } catch (const Error& e) {
      throw InputError("cg_bands/LogP", std::string("cg_bands/LogP: ") + e.what() +
                                            " (give 'measure', 'none' or a file written by plexus logp --json)");
    }
  }
  s.basis = cb::basis(s.crystal, s.ecut);
  const auto npw = static_cast<std::int64_t>(s.basis.size());
  if (npw < s.bands) {
    // npw grows as Ecut^(3/2): the cut-off that would hold the bands, with a margin.
    const double need = s.ecut * std::pow(1.3 * s.bands / std::max<double>(1, npw), 2.0 / 3.0);
    throw InputError("cg_bands/Ecut", "cg_bands/Ecut = " + std::to_string(s.ecut) + " Ry gives " + std::to_string(npw) +
                                          " plane waves, too few for cg_bands/Bands = " + std::to_string(s.bands) +
                                          " bands: raise Ecut (to about " +
                                          std::to_string(static_cast<int>(std::ceil(need))) + " Ry) or lower Bands");
  }
  return s;
}

double max_over_ranks(double v, MPI_Comm comm) {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, comm);
  return v;
}

class CgBandsSolver final : public Solver {
 public:
  explicit CgBandsSolver(const ParameterList& p) : s_(settings_of(p)) {}

  std::string name() const override { return "cg_bands"; }

  SolverResult run(SolverContext& sc) override {
    Context& ctx = *sc.context;
    const int p = ctx.size(), me = ctx.rank();
    const bool speak = !sc.quiet && me == 0;
    LogScope scope = ctx.log_scope();
    MPI_Comm dots = ctx.comms().dup(ctx.comm(), "cg_bands/dots");
    MPI_Comm fft_comm = ctx.comms().dup(ctx.comm(), "cg_bands/fft");

    const auto& basis = s_.basis;
    const auto terms = cb::potential_terms(s_.crystal);
    const auto box = cb::fft_box(basis, terms);
    cb::Layout layout(basis, box, p);
    if (speak) describe(layout, terms.size(), ctx.collectives().name());
    cb::PlaneFft fft(layout, fft_comm, ctx.collectives(), s_.planning);
    cb::Hamiltonian h(s_.crystal, basis, terms, fft);
    cb::CgOptions o;
    o.bands = s_.bands;
    o.tolerance = s_.tolerance;
    o.max_sweeps = s_.max_sweeps;
    o.lines = s_.lines;
    o.batch = s_.batch;
    o.seed = static_cast<std::uint64_t>(s_.seed);
    o.quiet = sc.quiet;
    o.throw_on_no_convergence = !s_.keep_unconverged;
    const logp::Parameters net = network(ctx, speak);
    cb::BandSolver solver(h, layout.basis_indices(me), dots, ctx.collectives(), o);
    const cb::CgResult r = solver.solve();

    SolverResult result;
    const double pair_bytes = max_over_ranks(fft.bytes_per_pair(), ctx.comm());
    record_sweeps(ctx, r, net, pair_bytes, result);
    figures(r, layout, pair_bytes, ctx.comm(), result);
    if (s_.logp != "none") predictions(r, layout, net, pair_bytes, p, speak, result);
    if (speak) print_bands(r);
    if (speak && !r.converged)
      log().warn(
          "cg_bands: not converged in {} sweeps (largest residual {:.3e} Ry, cg_bands/Tolerance {}); the "
          "figures are those of the last sweep (cg_bands/KeepUnconverged)",
          r.sweeps, result.figures["max_residual"], s_.tolerance);
    result.operations = scope.take();
    return result;
  }

 private:
  void describe(const cb::Layout& layout, std::size_t terms, const std::string& collectives) const {
    const auto box = layout.box();
    const int p = layout.ranks();
    std::int64_t lo = layout.coefficients_of(0), hi = lo;
    int planes_lo = layout.planes_of(0), planes_hi = planes_lo, no_plane = 0;
    for (int r = 0; r < p; ++r) {
      lo = std::min(lo, layout.coefficients_of(r));
      hi = std::max(hi, layout.coefficients_of(r));
      planes_lo = std::min(planes_lo, layout.planes_of(r));
      planes_hi = std::max(planes_hi, layout.planes_of(r));
      no_plane += layout.planes_of(r) == 0 ? 1 : 0;
    }
    log().info(
        "cg_bands: Si {}x{}x{} cells, {} atoms{}, k = ({}, {}, {}) 2pi/a; Ecut {} Ry: {} plane waves, {} "
        "bands, {} nonzero V(G)",
        s_.crystal.supercell[0], s_.crystal.supercell[1], s_.crystal.supercell[2], s_.crystal.atoms(),
        s_.crystal.vacancy >= 0 ? " (vacancy at atom " + std::to_string(s_.crystal.vacancy) + ")" : "",
        s_.crystal.kpoint[0], s_.crystal.kpoint[1], s_.crystal.kpoint[2], s_.ecut, layout.npw(), s_.bands, terms);
    log().info(
        "cg_bands: FFT box {}x{}x{}, {} sticks; {} to {} coefficients and {} to {} z-planes a rank; "
        "collectives '{}'{}",
        box[0], box[1], box[2], layout.sticks().size(), lo, hi, planes_lo, planes_hi, collectives,
        s_.batch ? ", batched projections" : "");
    if (no_plane > 0)
      log().warn(
          "cg_bands: {} ranks but {} z-planes: {} rank{} hold no plane (they still hold coefficients and take "
          "part in every all-to-all)",
          p, box[2], no_plane, no_plane == 1 ? "" : "s");
    if (static_cast<std::size_t>(p) > layout.sticks().size())
      log().warn("cg_bands: {} ranks but {} sticks: some ranks hold no coefficients", p, layout.sticks().size());
  }

  // The LogGP parameters: measured on the run's ranks (before any sweep), read, or none.
  logp::Parameters network(Context& ctx, bool speak) const {
    if (s_.logp == "none") return {};
    if (s_.logp != "measure") {
      if (speak && s_.logp_file.ranks > 0 && s_.logp_file.ranks != ctx.size())
        log().warn("cg_bands: the LogGP parameters of '{}' were measured on {} ranks, this run has {}", s_.logp,
                   s_.logp_file.ranks, ctx.size());
      return s_.logp_file;
    }
    logp::MeasureOptions mo;
    mo.repetitions = 10;
    mo.max_bytes = std::int64_t{1} << 18;
    const logp::Parameters net = logp::measure(ctx.comms().dup(ctx.comm(), "cg_bands/logp"), mo);
    if (speak && ctx.size() > 1)
      log().info(
          "cg_bands: LogGP measured on ranks 0 and 1: L {:.3g} us, o_s {:.3g} us, o_r {:.3g} us, g {:.3g} us, "
          "G {:.3g} ns/byte",
          net.L * 1e6, net.o_s * 1e6, net.o_r * 1e6, net.g * 1e6, net.G * 1e9);
    return net;
  }

  // The prediction next to the measurement, and the saturation rank count ("Eq. 26").
  void predictions(const cb::CgResult& r, const cb::Layout& layout, const logp::Parameters& net, double pair_bytes,
                   int ranks, bool speak, SolverResult& result) const {
    if (r.history.empty()) return;
    auto& f = result.figures;
    const cb::Prediction pred = cb::predict_sweep(net, ranks, r.history.back(), pair_bytes);
    f["predicted_allreduce_seconds_per_sweep"] = pred.allreduce_seconds;
    f["predicted_alltoall_seconds_per_sweep"] = pred.alltoall_seconds;
    f["predicted_communication_seconds_per_sweep"] = pred.total();
    f["communication_seconds_per_sweep"] = f["allreduce_seconds_per_sweep"] + f["alltoall_seconds_per_sweep"];
    f["logp_L"] = net.L;
    f["logp_o"] = net.o();
    f["logp_g"] = net.g;
    f["logp_G"] = net.G;
    const double transpose = 16.0 * static_cast<double>(layout.sticks().size()) * layout.box()[2];
    const int max_ranks = static_cast<int>(std::min<std::size_t>(layout.sticks().size(), 1 << 16));
    if (speak)
      log().info(
          "cg_bands: communication per sweep: allreduce {:.4g} s measured, {:.4g} s predicted; all-to-all "
          "{:.4g} s measured, {:.4g} s predicted (LogGP parameters: {})",
          f["allreduce_seconds_per_sweep"], pred.allreduce_seconds, f["alltoall_seconds_per_sweep"],
          pred.alltoall_seconds, net.source.empty() ? "none" : net.source);
    // Without a network (one rank measured nothing) every rank count would look free.
    if (net.L + net.o_s + net.o_r + net.g + net.G <= 0) {
      if (speak)
        log().info(
            "cg_bands: no saturation rank count: the LogGP parameters are all zero (measured on one rank); "
            "give cg_bands/LogP a file of plexus logp --json run on 2 or more ranks");
      return;
    }
    const cb::Saturation sat =
        cb::saturation(net, ranks, r.history.back(), transpose, f["compute_seconds_per_sweep"], max_ranks);
    f["saturation_ranks"] = sat.ranks;
    f["saturation_sweep_seconds"] = sat.seconds;
    if (speak)
      log().info("cg_bands: a sweep is predicted fastest on {} rank{} ({:.4g} s; Eq. 26)", sat.ranks,
                 sat.ranks == 1 ? "" : "s", sat.seconds);
  }

  // One operation report per sweep, and the history rows.
  void record_sweeps(Context& ctx, const cb::CgResult& r, const logp::Parameters& net, double pair_bytes,
                     SolverResult& result) const {
    for (const auto& rec : r.history) {
      OperationReport op;
      op.operation = "cg_sweep";
      op.component = ctx.collectives().name();
      op.seconds = rec.seconds;
      auto& t = op.traffic[static_cast<int>(mpi::Role::Other)];
      t.bytes_sent = rec.bytes_sent;
      t.bytes_received = rec.bytes_received;
      t.wait_seconds = rec.allreduce_seconds + rec.alltoall_seconds;
      op.extra["allreduce_seconds"] = rec.allreduce_seconds;
      op.extra["alltoall_seconds"] = rec.alltoall_seconds;
      op.extra["cg_allreduces"] = static_cast<double>(rec.cg_allreduces);
      op.extra["other_allreduces"] = static_cast<double>(rec.other_allreduces);
      op.extra["alltoalls"] = static_cast<double>(rec.alltoalls);
      if (s_.logp != "none") {
        const cb::Prediction pred = cb::predict_sweep(net, ctx.size(), rec, pair_bytes);
        op.predicted["allreduce_seconds"] = pred.allreduce_seconds;
        op.predicted["alltoall_seconds"] = pred.alltoall_seconds;
        op.predicted["seconds_communication"] = pred.total();
      }
      ctx.record(op);
      result.history.push_back({{"sweep", rec.sweep},
                                {"residual", rec.max_residual},
                                {"seconds", rec.seconds},
                                {"allreduce_seconds", rec.allreduce_seconds},
                                {"alltoall_seconds", rec.alltoall_seconds},
                                {"fft_seconds", rec.fft_seconds},
                                {"compute_seconds", rec.seconds - rec.allreduce_seconds - rec.alltoall_seconds},
                                {"cg_allreduces", static_cast<double>(rec.cg_allreduces)},
                                {"other_allreduces", static_cast<double>(rec.other_allreduces)},
                                {"alltoalls", static_cast<double>(rec.alltoalls)},
                                {"bytes_received", static_cast<double>(rec.bytes_received)}});
    }
  }

  void figures(const cb::CgResult& r, const cb::Layout& layout, double pair_bytes, MPI_Comm comm,
               SolverResult& result) const {
    auto& f = result.figures;
    const double nb = s_.bands;
    f["npw"] = static_cast<double>(layout.npw());
    f["atoms"] = s_.crystal.atoms();
    f["bands"] = nb;
    f["sweeps"] = r.sweeps;
    f["converged"] = r.converged ? 1 : 0;
    f["max_residual"] = *std::max_element(r.residuals.begin(), r.residuals.end());
    f["orthonormality_error"] = r.orthonormality_error;
    f["lowest_eigenvalue"] = r.eigenvalues.front();
    f["sticks"] = static_cast<double>(layout.sticks().size());
    // Eq. 24: allreduces of one band's line minimisation, times bands and lines.
    f["eq24_allreduces_per_sweep"] = nb * s_.lines * (s_.batch ? 9 + 2 : 9 + 2 * nb);
    double seconds = 0, allreduce = 0, alltoall = 0, cg_calls = 0, other_calls = 0, a2a = 0;
    for (const auto& rec : r.history) {
      seconds += rec.seconds;
      allreduce += rec.allreduce_seconds;
      alltoall += rec.alltoall_seconds;
      cg_calls += static_cast<double>(rec.cg_allreduces);
      other_calls += static_cast<double>(rec.other_allreduces);
      a2a += static_cast<double>(rec.alltoalls);
    }
    const double sweeps = std::max(1, r.sweeps);
    f["cg_allreduces_per_sweep"] = cg_calls / sweeps;
    f["other_allreduces_per_sweep"] = other_calls / sweeps;
    f["alltoalls_per_sweep"] = a2a / sweeps;
    f["seconds_per_sweep"] = max_over_ranks(seconds / sweeps, comm);
    f["allreduce_seconds_per_sweep"] = max_over_ranks(allreduce / sweeps, comm);
    f["alltoall_seconds_per_sweep"] = max_over_ranks(alltoall / sweeps, comm);
    f["compute_seconds_per_sweep"] = max_over_ranks((seconds - allreduce - alltoall) / sweeps, comm);
    f["alltoall_bytes_per_pair"] = pair_bytes;
    const int valence = 2 * s_.crystal.atoms();
    if (valence <= s_.bands) f["valence_band_width"] = r.eigenvalues[valence - 1] - r.eigenvalues.front();
    if (valence < s_.bands) f["gap"] = r.eigenvalues[valence] - r.eigenvalues[valence - 1];
    result.series["eigenvalues"] = r.eigenvalues;
    result.series["residuals"] = r.residuals;
    const auto box = layout.box();
    result.series["fft_box"] = {static_cast<double>(box[0]), static_cast<double>(box[1]), static_cast<double>(box[2])};
  }

  void print_bands(const cb::CgResult& r) const {
    constexpr double kEv = 13.605693122994;  // eV per Ry
    log().info("cg_bands: {} after {} sweep{}; eigenvalues (Ry, eV), residual:", r.converged ? "converged" : "stopped",
               r.sweeps, r.sweeps == 1 ? "" : "s");
    for (std::size_t b = 0; b < r.eigenvalues.size(); ++b)
      log().info("  band {:>4}  {:>16.10f}  {:>12.6f}  {:.2e}", b, r.eigenvalues[b], r.eigenvalues[b] * kEv,
                 r.residuals[b]);
  }

  Settings s_;
};

ParameterListPtr valid_parameters() {
  auto v = Teuchos::rcp(new ParameterList("cg_bands"));
  declare_string(*v, "Supercell", "1,1,1",
                 "cubic 8-atom silicon cells along x, y and z, 'n1,n2,n3' (a = 10.26 bohr; 2x2x2 is 64 atoms)");
  declare_double(*v, "Ecut", 6.0, "plane-wave cut-off: every G with |k+G|^2 <= Ecut (Ry)", 0.0, 1e4, true);
  declare_int(*v, "Bands", 0, "bands to compute, the lowest ones (0: the 2 x atoms valence bands plus 4)", 0, 1000000);
  declare_string(*v, "KPoint", "0,0,0", "the k-point 'kx,ky,kz' in units of 2 pi / a (0,0,0: Gamma)");
  declare_int(*v, "Vacancy", -1, "index of an atom to remove (-1: none), so that the supercell has less symmetry", -1,
              std::numeric_limits<int>::max());
  declare_double(*v, "Tolerance", 1e-6, "converged when every band's |H psi - lambda psi| is below it (Ry)", 0.0, 1.0,
                 true);
  declare_int(*v, "MaxSweeps", 200, "sweeps over all bands before giving up (an error with the residuals)", 1, 1000000);
  declare_bool(*v, "KeepUnconverged", false,
               "no convergence in MaxSweeps: warn and report the last sweep's bands (e.g. to time a fixed number "
               "of sweeps) instead of an error");
  declare_int(*v, "LinesPerBand", 1,
              "line minimisations of each band per sweep (ABINIT's nline; 1: the paper's count of Eq. 24)", 1, 100);
  declare_bool(*v, "BatchReductions", false,
               "merge each orthogonalisation's nband projections into one allreduce of nband values (2 calls "
               "instead of 2 nband a line; false: the paper's scheme)");
  declare_int(*v, "Seed", 1, "seed of the starting vectors (the same bands on any rank count)", 0,
              std::numeric_limits<int>::max());
  declare_string(*v, "LogP", "measure",
                 "LogGP parameters for the communication prediction: 'measure' (on ranks 0 and 1 before the first "
                 "sweep, about a second), 'none', or a file written by plexus logp --json");
  declare_choice(*v, "FftPlanning", "measure", {"measure", "estimate"},
                 "FFTW planning of the local transforms: measure (time candidate plans once) or estimate");
  return v;
}

const PluginDescriptor& describe() {
  static const PluginDescriptor d = [] {
    PluginDescriptor p;
    p.name = "solver_cg_bands";
    p.version = "0.1.0";
    ComponentDescriptor c;
    c.kind = ComponentKind::Solver;
    c.name = "cg_bands";
    c.summary =
        "lowest bands of Cohen-Bergstresser silicon by band-by-band preconditioned CG (Teter, Payne, Allan) on "
        "distributed plane waves, FFT by planes; figures: eigenvalues, npw, sweeps, allreduce and all-to-all times";
    c.valid_parameters = valid_parameters;
    c.make_solver = [](const ParameterList& p) -> std::unique_ptr<Solver> {
      return std::make_unique<CgBandsSolver>(p);
    };
    p.components.push_back(std::move(c));
    return p;
  }();
  return d;
}

}  // namespace

PLEXUS_PLUGIN(describe)
