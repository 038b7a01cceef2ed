#pragma once
// The plugin registry: loads plugin libraries, checks their ABI version, refuses duplicate names,
// and makes components by name from validated parameter sublists.
#include <memory>
#include <string>
#include <vector>

#include "plexus/plugin.hpp"

namespace plexus {

struct ComponentEntry {
  ComponentDescriptor descriptor;
  std::string plugin;   ///< plugin name
  std::string version;  ///< plugin version
  std::string file;     ///< library path ("<core>" for built-ins)
};

class Registry {
 public:
  /// The process-wide registry, with core's built-ins (reference kernel) registered. It is never
  /// destroyed, so loaded libraries outlive every object they created.
  static Registry& global();

  /// Directories searched, in order: PLEXUS_PLUGIN_PATH (colon-separated), then the plugin folder
  /// next to libplexus_core (install: <libdir>/plexus/plugins; the build tree has the same shape).
  std::vector<std::string> search_path() const;
  /// Loads every "*.so" in the search path once. Idempotent.
  void load_default();
  /// What load_default() skipped and a user should hear about: PLEXUS_PLUGIN_PATH entries that
  /// do not exist or are not directories.
  std::vector<std::string> warnings() const;
  /// Loads one plugin library. Throws plexus::Error for an unloadable file (with the loader's
  /// message), a file without the entry points, another ABI version, or a duplicate name.
  void load_file(const std::string& path);
  /// Registers a component compiled into the caller (tests, core built-ins).
  void add(ComponentDescriptor d, const std::string& plugin, const std::string& version, const std::string& file);

  const ComponentEntry* find(ComponentKind kind, const std::string& name) const;
  /// Throws InputError naming the kind, the nearest name and all available names.
  const ComponentEntry& get(ComponentKind kind, const std::string& name) const;
  std::vector<const ComponentEntry*> list(ComponentKind kind) const;
  std::vector<std::string> names(ComponentKind kind) const;

  /// Validates `sublist` (path for messages) against the component's valid parameters, fills the
  /// defaults, and makes the component.
  std::unique_ptr<CommStrategy> make_comm(const std::string& name, ParameterList& sublist, const std::string& path) const;
  std::unique_ptr<Kernel> make_kernel(const std::string& name, ParameterList& sublist, const std::string& path) const;
  std::unique_ptr<Solver> make_solver(const std::string& name, ParameterList& sublist, const std::string& path) const;
  std::unique_ptr<Collectives> make_collectives(const std::string& name, ParameterList& sublist,
                                                const std::string& path) const;

 private:
  Registry();
  struct Impl;
  Impl* impl_;
};

}  // namespace plexus
