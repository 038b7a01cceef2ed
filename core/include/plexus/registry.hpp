#pragma once
// The plugin registry: loads plugin libraries, checks their ABI version, refuses duplicate names,
// and makes components by name from validated parameter sublists.
#include <memory>
#include <string>
#include <vector>

#include "plexus/descriptor.hpp"

namespace plexus {

struct ComponentEntry {
  ComponentDescriptor descriptor;
  std::string plugin;   ///< plugin name
  std::string version;  ///< plugin version
  std::string file;     ///< library path ("<core>" for built-ins)
};

/// A plugin file load_default() found but could not load, and why.
struct LoadFailure {
  std::string file;
  std::string reason;
};
/// "; note: N plugin files were not loaded ('a.so', ...; see the warnings above): ..." or "".
std::string load_failures_note(const std::vector<LoadFailure>& failures);

class Registry {
 public:
  /// The process-wide registry, with core's built-ins (reference kernel) registered. It is never
  /// destroyed, so loaded libraries outlive every object they created.
  static Registry& global();

  /// Directories searched, in order: PLEXUS_PLUGIN_PATH (colon-separated), then the plugin folder
  /// next to libplexus_core (install: <libdir>/plexus/plugins; the build tree has the same shape).
  std::vector<std::string> search_path() const;
  /// Loads every "*.so" in the search path once. Idempotent. A file that cannot be loaded (not a
  /// plexus plugin, another ABI version, a name already taken, ...) is skipped with a warning and
  /// listed by load_failures(): the other plugins stay usable. A name offered by two plugins
  /// (other than core's built-ins, which always win) cannot be selected: get() says why.
  void load_default();
  /// What load_default() skipped and a user should hear about: PLEXUS_PLUGIN_PATH entries that
  /// do not exist or are not directories, and plugin files it could not load.
  std::vector<std::string> warnings() const;
  /// The plugin files load_default() could not load.
  std::vector<LoadFailure> load_failures() const;
  /// Loads one plugin library. Throws plexus::Error for an unloadable file (with the loader's
  /// message), a file without the entry points, another ABI version, or a duplicate name.
  void load_file(const std::string& path);
  /// Registers a component compiled into the caller (tests, core built-ins).
  void add(ComponentDescriptor d, const std::string& plugin, const std::string& version, const std::string& file);

  const ComponentEntry* find(ComponentKind kind, const std::string& name) const;
  /// Throws InputError naming the kind, the nearest name, all available names and the plugin
  /// files that could not be loaded; or, for a name two plugins offer, both files.
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
