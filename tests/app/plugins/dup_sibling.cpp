// Test-only plugin: its kernel "test-good" duplicates the one of the test_good plugin.
#include "plexus/plugin.hpp"

namespace {

const plexus::PluginDescriptor& describe() {
  static const plexus::PluginDescriptor d = [] {
    plexus::PluginDescriptor p;
    p.name = "test_dup_sibling";
    p.version = "1.0";
    plexus::ComponentDescriptor k;
    k.kind = plexus::ComponentKind::Kernel;
    k.name = "test-good";
    k.summary = "duplicates test_good's kernel";
    p.components.push_back(k);
    return p;
  }();
  return d;
}

}  // namespace

PLEXUS_PLUGIN(describe)
