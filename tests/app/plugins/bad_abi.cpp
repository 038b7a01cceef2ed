// Test-only plugin built for another ABI version: its entry points are written by hand, the
// version is kAbiVersion + 1000. The registry must refuse it before reading the descriptor.
#include <boost/dll/alias.hpp>

#include "plexus/plugin.hpp"

namespace bad_abi {

int abi_version() { return plexus::kAbiVersion + 1000; }

const plexus::PluginDescriptor& describe() {
  static const plexus::PluginDescriptor d = [] {
    plexus::PluginDescriptor p;
    p.name = "test_bad_abi";
    p.version = "1.0";
    plexus::ComponentDescriptor k;
    k.kind = plexus::ComponentKind::Kernel;
    k.name = "test-bad-abi";
    p.components.push_back(k);
    return p;
  }();
  return d;
}

}  // namespace bad_abi

BOOST_DLL_ALIAS(bad_abi::abi_version, plexus_plugin_abi_version)
BOOST_DLL_ALIAS(bad_abi::describe, plexus_plugin_descriptor)
