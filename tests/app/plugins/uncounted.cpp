// Test-only plugin: a strategy "test-uncounted" that multiplies with cannon and then drops the
// traffic it counted, as a strategy does whose MPI calls bypass plexus::mpi::Traffic, while
// keeping cannon's predicted volume. `plexus compare` must warn about it (app_compare_uncounted).
#include <memory>
#include <string>

#include "plexus/comm_strategy.hpp"
#include "plexus/multiply.hpp"
#include "plexus/plugin.hpp"
#include "plexus/registry.hpp"

namespace {

class Uncounted final : public plexus::CommStrategy {
 public:
  std::string name() const override { return "test-uncounted"; }
  plexus::Panel run(plexus::MultiplyTask& task) override {
    plexus::ParameterList none("cannon");
    auto cannon = plexus::Registry::global().make_comm("cannon", none, "Communication/cannon");
    plexus::Panel c = cannon->run(task);
    task.traffic().reset();  // what bypassing Traffic looks like: nothing counted
    return c;
  }
};

const plexus::PluginDescriptor& describe() {
  static const plexus::PluginDescriptor d = [] {
    plexus::PluginDescriptor p;
    p.name = "test_uncounted";
    p.version = "1.0.0";
    plexus::ComponentDescriptor c;
    c.kind = plexus::ComponentKind::Comm;
    c.name = "test-uncounted";
    c.summary = "test: cannon's multiply with its traffic left uncounted";
    c.valid_parameters = [] { return Teuchos::rcp(new plexus::ParameterList("test-uncounted")); };
    c.make_comm = [](const plexus::ParameterList&) { return std::make_unique<Uncounted>(); };
    p.components.push_back(std::move(c));
    return p;
  }();
  return d;
}

}  // namespace

PLEXUS_PLUGIN(describe)
