// The plugin registry: Boost.DLL loading, ABI and duplicate checks, components by name.
#include "plexus/registry.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <boost/dll/shared_library.hpp>
#include <boost/filesystem.hpp>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <system_error>
#include <utility>

#include "plexus/error.hpp"
#include "plexus/kernel.hpp"
#include "plexus/parameters.hpp"
#include "plexus/solver.hpp"

namespace plexus {

const char* kind_name(ComponentKind k) {
  switch (k) {
    case ComponentKind::Comm:
      return "comm";
    case ComponentKind::Kernel:
      return "kernel";
    case ComponentKind::Distribution:
      return "distribution";
    case ComponentKind::Solver:
      return "solver";
    case ComponentKind::Collectives:
      return "collectives";
  }
  return "unknown";
}

Solver::~Solver() = default;
void Solver::check(const Context&) const {}

void SolverResult::keep(MultiplyReport r, StepDetail detail) {
  if (detail == StepDetail::Totals)
    step_totals.add(r);
  else
    reports.push_back(std::move(r));
}

StepTotals SolverResult::steps() const {
  StepTotals all;
  for (const MultiplyReport& r : reports) all.add(r);
  all.append(step_totals);
  return all;
}

namespace {

namespace fs = boost::filesystem;

const char* kind_phrase(ComponentKind k) {
  switch (k) {
    case ComponentKind::Comm:
      return "communication strategy";
    case ComponentKind::Kernel:
      return "kernel";
    case ComponentKind::Distribution:
      return "distribution";
    case ComponentKind::Solver:
      return "solver";
    case ComponentKind::Collectives:
      return "collectives component";
  }
  return "component";
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out += sep;
    out += v[i];
  }
  return out;
}

std::string canonical_or_same(const std::string& path) {
  boost::system::error_code ec;
  fs::path p = fs::canonical(path, ec);
  return ec ? path : p.string();
}

// The directory of the library that holds this function (libplexus_core.so).
std::string core_library_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&core_library_dir), &info) == 0 || info.dli_fname == nullptr) return {};
  fs::path p(canonical_or_same(info.dli_fname));
  return p.parent_path().string();
}

ParameterListPtr empty_list() { return Teuchos::rcp(new ParameterList()); }

// A plugin refused because components of its are taken: which ones.
class DuplicateError final : public Error {
 public:
  DuplicateError(const std::string& where, const std::string& what,
                 std::vector<std::pair<ComponentKind, std::string>> names)
      : Error(where, what), names_(std::move(names)) {}
  const std::vector<std::pair<ComponentKind, std::string>>& names() const { return names_; }

 private:
  std::vector<std::pair<ComponentKind, std::string>> names_;
};

}  // namespace

struct Registry::Impl {
  mutable std::recursive_mutex mutex;
  std::deque<ComponentEntry> entries;                 // stable addresses: find() hands out pointers
  std::vector<boost::dll::shared_library> libraries;  // never unloaded
  std::set<std::string> loaded_files;                 // canonical paths
  bool defaults_loaded = false;
  std::vector<std::string> warnings;
  std::vector<LoadFailure> failures;  // files load_default() could not load
  // Names offered by two plugins: (kind, name) -> what says so. Neither is chosen silently.
  std::map<std::pair<int, std::string>, std::string> contested;
};

Registry::Registry() : impl_(new Impl) {
  ComponentDescriptor ref;
  ref.kind = ComponentKind::Kernel;
  ref.name = "reference";
  ref.summary = "plain loops, one thread: the correctness oracle (always available)";
  ref.valid_parameters = [] { return empty_list(); };
  ref.make_kernel = [](const ParameterList&) -> std::unique_ptr<Kernel> { return std::make_unique<ReferenceKernel>(); };
  add(std::move(ref), "core", PLEXUS_VERSION, "<core>");
  ComponentDescriptor mpi;
  mpi.kind = ComponentKind::Collectives;
  mpi.name = "mpi";
  mpi.summary = "plain MPI nonblocking collectives (MPI_Iallreduce, MPI_Ibcast, ...): the reference every "
                "collectives component is tested against (always available)";
  mpi.valid_parameters = [] { return empty_list(); };
  mpi.make_collectives = [](const ParameterList&) -> std::unique_ptr<Collectives> {
    return std::make_unique<MpiCollectives>();
  };
  add(std::move(mpi), "core", PLEXUS_VERSION, "<core>");
}

Registry& Registry::global() {
  static Registry* registry = new Registry();  // leaked on purpose: plugins outlive everything
  return *registry;
}

std::string load_failures_note(const std::vector<LoadFailure>& failures) {
  if (failures.empty()) return {};
  std::string files;
  for (const auto& f : failures) files += (files.empty() ? "'" : ", '") + f.file + "'";
  return "; note: " + std::to_string(failures.size()) + " plugin file" + (failures.size() == 1 ? " was" : "s were") +
         " not loaded (" + files + "; see the warnings above): what " + (failures.size() == 1 ? "it" : "they") +
         " would offer cannot be selected";
}

namespace {
// The entries of PLEXUS_PLUGIN_PATH, in order.
std::vector<std::string> env_plugin_dirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("PLEXUS_PLUGIN_PATH")) {
    std::string s(env);
    std::size_t start = 0;
    while (start <= s.size()) {
      auto colon = s.find(':', start);
      std::string dir = s.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (!dir.empty()) dirs.push_back(dir);
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  return dirs;
}
}  // namespace

std::vector<std::string> Registry::search_path() const {
  std::vector<std::string> dirs = env_plugin_dirs();
  const std::string core = core_library_dir();
  if (!core.empty()) dirs.push_back((fs::path(core) / PLEXUS_PLUGIN_SUBDIR_FROM_LIB).string());
  return dirs;
}

void Registry::load_default() {
  std::lock_guard lock(impl_->mutex);
  if (impl_->defaults_loaded) return;
  std::set<std::string> seen_dirs;
  const std::vector<std::string> dirs = search_path();
  const std::size_t from_env = env_plugin_dirs().size();  // the first entries of the search path
  for (std::size_t i = 0; i < dirs.size(); ++i) {
    const std::string& dir = dirs[i];
    boost::system::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      if (i < from_env)
        impl_->warnings.push_back("PLEXUS_PLUGIN_PATH: '" + dir + "' " +
                                  (fs::exists(dir, ec) ? "is not a directory" : "does not exist") +
                                  "; it is skipped (the path lists folders of plugins, separated by ':')");
      continue;
    }
    const std::string canon = canonical_or_same(dir);
    if (!seen_dirs.insert(canon).second) continue;
    std::vector<std::string> files;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const fs::path& p = it->path();
      if (p.extension() == ".so" && fs::is_regular_file(p, ec)) files.push_back(p.string());
    }
    std::sort(files.begin(), files.end());
    // A file that cannot be used is a warning, not the end of the program: a foreign library in
    // a plugin folder must not stop the plugins beside it. What it would have offered cannot be
    // selected, and a selection says why (get(), load_failures()).
    for (const auto& f : files) {
      try {
        load_file(f);
      } catch (const DuplicateError& e) {
        std::string names;
        for (const auto& [kind, name] : e.names()) {
          const ComponentEntry* prev = find(kind, name);
          if (prev != nullptr && prev->file == "<core>") continue;  // core's built-ins stay usable
          impl_->contested[{static_cast<int>(kind), name}] = e.what();
          names += (names.empty() ? "" : ", ") + std::string(kind_name(kind)) + " '" + name + "'";
        }
        impl_->failures.push_back({f, e.what()});
        impl_->warnings.push_back(std::string(e.what()) + (names.empty() ? std::string()
                                                                         : "; selecting " + names +
                                                                               " is an error until one of the two "
                                                                               "files is removed"));
      } catch (const Error& e) {
        impl_->failures.push_back({f, e.what()});
        impl_->warnings.push_back(std::string("plugin file skipped: ") + e.what());
      }
    }
  }
  impl_->defaults_loaded = true;
}

std::vector<LoadFailure> Registry::load_failures() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->failures;
}

std::vector<std::string> Registry::warnings() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->warnings;
}

void Registry::load_file(const std::string& path) {
  std::lock_guard lock(impl_->mutex);
  boost::system::error_code ec;
  if (!fs::exists(path, ec)) throw Error(path, "cannot load plugin '" + path + "': no such file");
  const std::string canon = canonical_or_same(path);
  if (impl_->loaded_files.count(canon)) return;

  boost::dll::shared_library lib;
  try {
    lib.load(canon, boost::dll::load_mode::rtld_lazy | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    throw Error(path, "cannot load plugin '" + path + "': " + e.what());
  }
  if (!lib.has("plexus_plugin_abi_version") || !lib.has("plexus_plugin_descriptor"))
    throw Error(path, "'" + path +
                          "' is not a plexus plugin: it exports no plexus_plugin_abi_version / "
                          "plexus_plugin_descriptor (use PLEXUS_PLUGIN in the plugin)");
  int abi = 0;
  try {
    abi = lib.get_alias<int()>("plexus_plugin_abi_version")();
  } catch (const std::exception& e) {
    throw Error(path, "cannot read the ABI version of plugin '" + path + "': " + e.what());
  }
  if (abi != kAbiVersion)
    throw Error(path, "plugin '" + path + "' was built for plexus plugin ABI version " + std::to_string(abi) +
                          ", but this plexus has ABI version " + std::to_string(kAbiVersion) +
                          "; rebuild the plugin against this plexus");
  const PluginDescriptor* desc = nullptr;
  try {
    desc = &lib.get_alias<const PluginDescriptor&()>("plexus_plugin_descriptor")();
  } catch (const std::exception& e) {
    throw Error(path, "cannot read the descriptor of plugin '" + path + "': " + e.what());
  }
  // Check every component before registering any, so a refused plugin leaves no trace.
  std::set<std::pair<int, std::string>> own;
  std::vector<std::pair<ComponentKind, std::string>> taken;
  std::string first_taken;
  for (const auto& c : desc->components) {
    if (c.name.empty()) throw Error(path, "plugin '" + path + "' has a " + kind_name(c.kind) + " without a name");
    if (!own.insert({static_cast<int>(c.kind), c.name}).second)
      throw Error(path,
                  std::string("plugin '") + path + "' declares the " + kind_name(c.kind) + " '" + c.name + "' twice");
    if (const ComponentEntry* prev = find(c.kind, c.name)) {
      if (taken.empty())
        first_taken = std::string("duplicate ") + kind_name(c.kind) + " '" + c.name + "': plugin '" + desc->name +
                      "' in '" + path + "' provides it, but plugin '" + prev->plugin + "' in '" + prev->file +
                      "' already did";
      taken.emplace_back(c.kind, c.name);
    }
  }
  if (!taken.empty()) {
    std::string more;
    for (std::size_t i = 1; i < taken.size(); ++i)
      more += std::string(", ") + kind_name(taken[i].first) + " '" + taken[i].second + "'";
    throw DuplicateError(path,
                         first_taken + (more.empty() ? "" : " (so are" + more + ")") + "; refusing '" + path + "'",
                         std::move(taken));
  }
  for (const auto& c : desc->components) add(c, desc->name, desc->version, canon);
  impl_->libraries.push_back(std::move(lib));
  impl_->loaded_files.insert(canon);
}

void Registry::add(ComponentDescriptor d, const std::string& plugin, const std::string& version,
                   const std::string& file) {
  std::lock_guard lock(impl_->mutex);
  if (const ComponentEntry* prev = find(d.kind, d.name))
    throw Error(file, std::string("duplicate ") + kind_name(d.kind) + " '" + d.name + "': '" + file +
                          "' provides it, but plugin '" + prev->plugin + "' in '" + prev->file + "' already did");
  impl_->entries.push_back(ComponentEntry{std::move(d), plugin, version, file});
}

const ComponentEntry* Registry::find(ComponentKind kind, const std::string& name) const {
  std::lock_guard lock(impl_->mutex);
  for (const auto& e : impl_->entries)
    if (e.descriptor.kind == kind && e.descriptor.name == name) return &e;
  return nullptr;
}

const ComponentEntry& Registry::get(ComponentKind kind, const std::string& name) const {
  {
    std::lock_guard lock(impl_->mutex);
    if (auto it = impl_->contested.find({static_cast<int>(kind), name}); it != impl_->contested.end())
      throw InputError(std::string(kind_name(kind)) + " " + name,
                       std::string("the ") + kind_phrase(kind) + " '" + name +
                           "' is offered by two plugins, and plexus does not choose one silently: " + it->second +
                           "; remove one of the two files from the plugin path");
  }
  if (const ComponentEntry* e = find(kind, name)) return *e;
  const auto available = names(kind);
  std::string msg = std::string("unknown ") + kind_phrase(kind) + " '" + name + "'";
  const std::string near = nearest(name, available);
  if (!near.empty()) msg += "; did you mean '" + near + "'?";
  msg += available.empty() ? std::string(" (none is available; is PLEXUS_PLUGIN_PATH right?)")
                           : " (available: " + join(available, ", ") + ")";
  msg += load_failures_note(load_failures());
  throw InputError(std::string(kind_name(kind)) + " " + name, msg);
}

std::vector<const ComponentEntry*> Registry::list(ComponentKind kind) const {
  std::lock_guard lock(impl_->mutex);
  std::vector<const ComponentEntry*> out;
  for (const auto& e : impl_->entries)
    if (e.descriptor.kind == kind) out.push_back(&e);
  std::sort(out.begin(), out.end(),
            [](const ComponentEntry* a, const ComponentEntry* b) { return a->descriptor.name < b->descriptor.name; });
  return out;
}

std::vector<std::string> Registry::names(ComponentKind kind) const {
  std::vector<std::string> out;
  for (const auto* e : list(kind)) out.push_back(e->descriptor.name);
  return out;
}

namespace {

ParameterListPtr valid_of(const ComponentEntry& e) {
  if (!e.descriptor.valid_parameters) return empty_list();
  auto v = e.descriptor.valid_parameters();
  return v.is_null() ? empty_list() : v;
}

template <class Factory>
void require_factory(const ComponentEntry& e, const Factory& f) {
  if (!f)
    throw Error(e.file, std::string(kind_name(e.descriptor.kind)) + " '" + e.descriptor.name + "' of plugin '" +
                            e.plugin + "' has no factory");
}

}  // namespace

namespace {
// Validates the sublist against the component's valid parameters (defaults filled in), then
// calls the factory of its kind.
template <class T, class Factory>
std::unique_ptr<T> make_component(const ComponentEntry& e, const Factory& factory, ParameterList& sublist,
                                  const std::string& path) {
  validate_and_fill(sublist, *valid_of(e), path);
  if (e.descriptor.unavailable) {
    const std::string why = e.descriptor.unavailable();
    if (!why.empty())
      throw UnavailableError(path, std::string(kind_name(e.descriptor.kind)) + " '" + e.descriptor.name + "' (plugin " +
                                       e.plugin + ") cannot be used on this machine: " + why);
  }
  require_factory(e, factory);
  auto made = factory(sublist);
  PLEXUS_CHECK(made != nullptr, std::string(kind_name(e.descriptor.kind)) + " '" + e.descriptor.name +
                                    "' factory returned nothing");
  return made;
}
}  // namespace

std::unique_ptr<CommStrategy> Registry::make_comm(const std::string& name, ParameterList& sublist,
                                                  const std::string& path) const {
  const ComponentEntry& e = get(ComponentKind::Comm, name);
  return make_component<CommStrategy>(e, e.descriptor.make_comm, sublist, path);
}

std::unique_ptr<Kernel> Registry::make_kernel(const std::string& name, ParameterList& sublist,
                                              const std::string& path) const {
  const ComponentEntry& e = get(ComponentKind::Kernel, name);
  return make_component<Kernel>(e, e.descriptor.make_kernel, sublist, path);
}

std::unique_ptr<Collectives> Registry::make_collectives(const std::string& name, ParameterList& sublist,
                                                        const std::string& path) const {
  const ComponentEntry& e = get(ComponentKind::Collectives, name);
  return make_component<Collectives>(e, e.descriptor.make_collectives, sublist, path);
}

std::unique_ptr<Solver> Registry::make_solver(const std::string& name, ParameterList& sublist,
                                              const std::string& path) const {
  const ComponentEntry& e = get(ComponentKind::Solver, name);
  return make_component<Solver>(e, e.descriptor.make_solver, sublist, path);
}

}  // namespace plexus
