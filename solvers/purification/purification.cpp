// The "purification" solver: the density matrix of a Kohn-Sham matrix H with overlap S by
// polynomial purification of the orthogonalised F = S^-1/2 H S^-1/2: canonical (Palser and
// Manolopoulos; the method of GTFock), TRS4 (Niklasson's trace-resetting fourth order; CP2K's
// H2O-DFT-LS benchmark), or McWeeny's grand-canonical one at a given mu; P = S^-1/2 D S^-1/2.
#include <mpi.h>

#include <limits>
#include <string>

#include "density.hpp"
#include "plexus/error.hpp"
#include "plexus/log.hpp"
#include "plexus/plugin.hpp"

namespace {

using namespace plexus;
namespace dm = plexus::density;

dm::Purification method_of(const std::string& m) {
  if (m == "canonical") return dm::Purification::Canonical;
  if (m == "trs4") return dm::Purification::Trs4;
  return dm::Purification::McWeeny;
}

class PurificationSolver final : public Solver {
 public:
  explicit PurificationSolver(const ParameterList& p)
      : settings_(dm::Settings::from(p, "purification")), method_name_(p.get<std::string>("Method")) {
    method_ = method_of(method_name_);
    if (method_ == dm::Purification::McWeeny && !settings_.mu_given)
      throw InputError("purification/Mu", "purification/Method = 'mcweeny' (grand canonical) needs purification/Mu");
    if (method_ != dm::Purification::McWeeny && settings_.electrons == 0)
      throw InputError("purification/Electrons", "purification/Method = '" + method_name_ +
                                                     "' keeps the electron count and needs purification/Electrons");
    if (method_ != dm::Purification::McWeeny && settings_.mu_given)
      throw InputError("purification/Mu", "purification/Method = '" + method_name_ +
                                              "' finds the occupation from purification/Electrons and takes no Mu; "
                                              "Method = 'mcweeny' purifies at a given Mu");
  }

  std::string name() const override { return "purification"; }

  void check(const Context& ctx) const override { dm::check_output(ctx, settings_); }

  SolverResult run(SolverContext& sc) override {
    dm::Start run(sc, settings_);
    Context& ctx = run.ctx;
    const dm::Settings& s = run.s;
    dm::Trace& rec = run.rec;
    const dm::Orthogonal& o = run.o;
    const std::size_t first = rec.history.size();
    const double occupied = s.electrons / 2.0;
    dm::PurifyResult d;
    if (s.full()) {
      // Every level occupied: D = I, no iteration; mu lies above the spectrum.
      d.d = dm::identity(ctx, *o.k);
      d.converged = true;
      d.mu = std::numeric_limits<double>::quiet_NaN();
    } else {
      d = dm::purify(ctx, *o.k, method_, occupied, s.mu, o.bounds, s.iteration, rec);
    }
    for (std::size_t i = first; i < rec.history.size(); ++i) rec.history[i]["stage"] = 2;
    const double levels = trace(ctx, *d.d);
    if (method_ == dm::Purification::McWeeny && (levels < 0.5 || levels > static_cast<double>(o.n) - 0.5))
      throw InputError("purification/Mu", "purification/Mu = " + std::to_string(s.mu) + " lies outside the spectrum: " +
                                              (levels < 0.5 ? "no level is" : "every level is") + " occupied");
    SolverResult result;
    dm::finish(ctx, o, *d.d, s, rec, result);
    auto& f = result.figures;
    // mu: the level the iteration's polynomials map to 1/2 (canonical, TRS4); as given (McWeeny).
    f["mu"] = method_ == dm::Purification::McWeeny ? s.mu : d.mu;
    f["iterations"] = d.iterations;
    f["residual"] = d.residual;
    f["occupied_levels"] = levels;
    f["converged"] = d.converged ? 1 : 0;
    f["fused_iterations"] = d.fused;  // D^2 and D^3 by the algorithm's SymmSquareCube
    if (dm::speaks(ctx, s.iteration))
      log().info("purification ({}): {} iterations, energy 2 Tr(PH) = {:.10f}, Tr(PS) = {:.8f}", method_name_,
                 d.iterations, f["energy"], f["trace_PS"]);
    result.operations = run.scope.take();
    return result;
  }

 private:
  dm::Settings settings_;
  std::string method_name_;
  dm::Purification method_;
};

ParameterListPtr valid_parameters() {
  auto v = Teuchos::rcp(new ParameterList("purification"));
  dm::declare_common(*v);
  declare_choice(*v, "Method", "canonical", {"canonical", "trs4", "mcweeny"},
                 "canonical: Palser-Manolopoulos (keeps Tr D = Electrons/2); trs4: Niklasson's trace-resetting "
                 "fourth order; mcweeny: grand canonical at purification/Mu (3D^2 - 2D^3)");
  return v;
}

const PluginDescriptor& describe() {
  static const PluginDescriptor d = [] {
    PluginDescriptor p;
    p.name = "solver_purification";
    p.version = "0.1.0";
    ComponentDescriptor c;
    c.kind = ComponentKind::Solver;
    c.name = "purification";
    c.summary =
        "density matrix by canonical (Palser-Manolopoulos), TRS4 or McWeeny purification of S^-1/2 H S^-1/2; "
        "figures: energy, trace_PS, iterations, idempotency_error";
    c.valid_parameters = valid_parameters;
    c.make_solver = [](const ParameterList& p) -> std::unique_ptr<Solver> {
      return std::make_unique<PurificationSolver>(p);
    };
    p.components.push_back(std::move(c));
    return p;
  }();
  return d;
}

}  // namespace

PLEXUS_PLUGIN(describe)
