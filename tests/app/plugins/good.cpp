// Test-only plugin: a kernel "test-good" with one documented parameter, and a solver.
#include <limits>

#include "plexus/plugin.hpp"

namespace {

class LoopKernel final : public plexus::HostKernel {
 public:
  explicit LoopKernel(int scale) : scale_(scale) {}
  std::string name() const override { return "test-good"; }
  void process(const plexus::StackEntry* stack, std::int64_t n, const double* a, const double* b, double* c) override {
    for (std::int64_t s = 0; s < n; ++s) {
      const auto& e = stack[s];
      for (int j = 0; j < e.n; ++j)
        for (int l = 0; l < e.k; ++l)
          for (int i = 0; i < e.m; ++i) c[e.c + i + j * e.m] += scale_ * a[e.a + i + l * e.m] * b[e.b + l + j * e.k];
    }
  }

 private:
  int scale_;
};

const plexus::PluginDescriptor& describe() {
  static const plexus::PluginDescriptor d = [] {
    plexus::PluginDescriptor p;
    p.name = "test_good";
    p.version = "9.9.9";
    plexus::ComponentDescriptor k;
    k.kind = plexus::ComponentKind::Kernel;
    k.name = "test-good";
    k.summary = "a test kernel";
    k.valid_parameters = [] {
      auto v = Teuchos::rcp(new plexus::ParameterList("test-good"));
      plexus::declare_int(*v, "Scale", 1, "multiplies every product", 1, 10);
      return v;
    };
    k.make_kernel = [](const plexus::ParameterList& l) -> std::unique_ptr<plexus::Kernel> {
      return std::make_unique<LoopKernel>(l.get<int>("Scale"));
    };
    p.components.push_back(std::move(k));
    return p;
  }();
  return d;
}

}  // namespace

PLEXUS_PLUGIN(describe)
