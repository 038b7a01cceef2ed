// Test-only plugin: a solver "test-needs" that states a requirement on the run (a rank count),
// so the program's set-up check (Solver::check) can be seen refusing a run before any work.
#include <memory>
#include <string>

#include "plexus/context.hpp"
#include "plexus/error.hpp"
#include "plexus/log.hpp"
#include "plexus/plugin.hpp"
#include "plexus/solver.hpp"

namespace {

class NeedsSolver final : public plexus::Solver {
 public:
  explicit NeedsSolver(int ranks) : ranks_(ranks) {}
  std::string name() const override { return "test-needs"; }
  void check(const plexus::Context& ctx) const override {
    if (ranks_ != 0 && ctx.size() != ranks_)
      throw plexus::InputError("test-needs/Ranks", "test-needs: needs " + std::to_string(ranks_) + " ranks, the run has " +
                                                       std::to_string(ctx.size()));
  }
  plexus::SolverResult run(plexus::SolverContext& ctx) override {
    if (ctx.context->rank() == 0) plexus::log().info("test-needs: running on {} ranks", ctx.context->size());
    return {};
  }

 private:
  int ranks_;
};

const plexus::PluginDescriptor& describe() {
  static const plexus::PluginDescriptor d = [] {
    plexus::PluginDescriptor p;
    p.name = "test_needs";
    p.version = "1.0.0";
    plexus::ComponentDescriptor s;
    s.kind = plexus::ComponentKind::Solver;
    s.name = "test-needs";
    s.summary = "test solver that needs a given number of ranks";
    s.valid_parameters = [] {
      auto v = Teuchos::rcp(new plexus::ParameterList("test-needs"));
      plexus::declare_int(*v, "Ranks", 0, "the rank count the run must have (0: any)", 0, 1 << 20);
      return v;
    };
    s.make_solver = [](const plexus::ParameterList& l) -> std::unique_ptr<plexus::Solver> {
      return std::make_unique<NeedsSolver>(l.get<int>("Ranks"));
    };
    p.components.push_back(std::move(s));
    return p;
  }();
  return d;
}

}  // namespace

PLEXUS_PLUGIN(describe)
