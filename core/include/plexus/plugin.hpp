#pragma once
// The plugin ABI. A plugin is one shared library that exports, through Boost.DLL aliases,
//   plexus_plugin_abi_version : int()                       checked first
//   plexus_plugin_descriptor  : const PluginDescriptor&()   read only when the ABI matches
// Write PLEXUS_PLUGIN(function) once in the plugin; see docs/plugin-guide.md. The descriptors and
// kAbiVersion are in descriptor.hpp.
#include <boost/dll/alias.hpp>

#include "plexus/descriptor.hpp"

/// Exports the two entry points. `describe` is a function `const plexus::PluginDescriptor& f()`.
#define PLEXUS_PLUGIN(describe)                                             \
  namespace plexus_plugin_entry {                                           \
  inline int abi_version() { return ::plexus::kAbiVersion; }                \
  }                                                                         \
  BOOST_DLL_ALIAS(plexus_plugin_entry::abi_version, plexus_plugin_abi_version) \
  BOOST_DLL_ALIAS(describe, plexus_plugin_descriptor)
