// Test-only plugin: a kernel named "cpu" (the name of the real CPU kernel plugin's kernel), and a
// second component that must not be registered when the plugin is refused.
#include "plexus/plugin.hpp"

namespace {

const plexus::PluginDescriptor& describe() {
  static const plexus::PluginDescriptor d = [] {
    plexus::PluginDescriptor p;
    p.name = "test_dup_cpu";
    p.version = "1.0";
    plexus::ComponentDescriptor extra;
    extra.kind = plexus::ComponentKind::Kernel;
    extra.name = "test-dup-extra";
    p.components.push_back(extra);
    plexus::ComponentDescriptor k;
    k.kind = plexus::ComponentKind::Kernel;
    k.name = "cpu";
    p.components.push_back(k);
    return p;
  }();
  return d;
}

}  // namespace

PLEXUS_PLUGIN(describe)
