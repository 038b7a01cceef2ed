// `plexus plugins`: every component the registry knows, with its plugin, file, availability and
// (--verbose, --json) its documented parameters.
#include <mpi.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "app_job.hpp"
#include "plexus/output.hpp"
#include "plexus/registry.hpp"

namespace plexus::app {

const char* const kPluginsHelp =
    "Usage: plexus plugins [--verbose] [--json FILE]\n"
    "\n"
    "Lists every component the registry knows: kind, name, plugin, version, file and summary, and\n"
    "why a component cannot run on this machine (e.g. a GPU kernel without a GPU).\n"
    "\n"
    "Options:\n"
    "  -v, --verbose   also list each component's documented parameters (type, default, range/choices)\n"
    "  --json FILE     also write all of it, parameters included, as JSON for tools ('-': standard\n"
    "                  output, instead of the listing)\n"
    "  -h, --help      this text\n"
    "\n"
    "Plugins are searched in PLEXUS_PLUGIN_PATH (colon-separated), then next to the plexus library.\n";

namespace {

/// A valid parameter list as JSON: one object per parameter or sublist, depth first.
nlohmann::json parameters_json(const ParameterListPtr& valid) {
  nlohmann::json out = nlohmann::json::array();
  if (valid.is_null()) return out;
  for (const ParameterInfo& p : parameter_infos(*valid)) {
    nlohmann::json j = {{"path", p.path}, {"sublist", p.sublist}, {"doc", p.doc}};
    if (!p.sublist) {
      j["type"] = p.type;
      j["default"] = p.default_text;
      if (!p.range.empty()) j["range"] = p.range;
      if (!p.choices.empty()) j["choices"] = p.choices;
    }
    out.push_back(std::move(j));
  }
  return out;
}

/// What `plexus plugins` lists, for tools: every component with its plugin, file, summary,
/// availability and documented parameters, and the program's own parameters.
std::string plugins_json() {
  auto& reg = Registry::global();
  nlohmann::json root;
  root["search_path"] = reg.search_path();
  root["load_failures"] = nlohmann::json::array();
  for (const auto& f : reg.load_failures()) root["load_failures"].push_back({{"file", f.file}, {"reason", f.reason}});
  root["components"] = nlohmann::json::array();
  for (ComponentKind kind : {ComponentKind::Comm, ComponentKind::Collectives, ComponentKind::Kernel,
                             ComponentKind::Distribution, ComponentKind::Solver}) {
    for (const ComponentEntry* e : reg.list(kind)) {
      nlohmann::json c = {{"kind", kind_name(kind)}, {"name", e->descriptor.name},
                          {"plugin", e->plugin},     {"version", e->version},
                          {"file", e->file},         {"summary", e->descriptor.summary},
                          {"available", true},       {"unavailable_reason", nullptr}};
      if (e->descriptor.unavailable) {
        const std::string why = e->descriptor.unavailable();
        if (!why.empty()) {
          c["available"] = false;
          c["unavailable_reason"] = why;
        }
      }
      if (kind == ComponentKind::Comm) {
        const ComponentEntry* coll = reg.find(ComponentKind::Collectives, e->descriptor.name);
        c["collectives"] = coll != nullptr && coll->plugin == e->plugin ? e->descriptor.name : std::string("mpi");
      }
      c["sublist"] = kind == ComponentKind::Comm     ? "Communication/" + e->descriptor.name
                     : kind == ComponentKind::Kernel ? "Kernel/" + e->descriptor.name
                                                     : e->descriptor.name;
      c["parameters"] =
          parameters_json(e->descriptor.valid_parameters ? e->descriptor.valid_parameters() : ParameterListPtr());
      root["components"].push_back(std::move(c));
    }
  }
  root["program_parameters"] = parameters_json(top_level_valid());
  RunMetadata m;
  m.command = "plugins";
  m.ranks = mpi::size(MPI_COMM_WORLD);
  root["metadata"] = metadata_json(m);
  return root.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace

int command_plugins(const Options& o, int rank, int size) {
  int exit_code = 0;
  if (!setup_phase(
          [&] {
            agreed([&] { check_outputs(o, rank); });  // an unwritable --json is found before the listing
            load_plugins(rank);
          },
          rank, size, exit_code))
    return exit_code;
  if (rank != 0) return 0;
  if (!o.json.empty()) {
    output::write_text(o.json, plugins_json(), "--json");
    if (o.json == "-") return 0;  // standard output holds the JSON alone
  }
  auto& reg = Registry::global();
  std::ostringstream os;
  os << "plugin search path:";
  for (const auto& d : reg.search_path()) os << " " << d;
  os << "\n";
  for (ComponentKind kind : {ComponentKind::Comm, ComponentKind::Collectives, ComponentKind::Kernel,
                             ComponentKind::Distribution, ComponentKind::Solver}) {
    for (const ComponentEntry* e : reg.list(kind)) {
      os << "\n"
         << kind_name(kind) << " " << e->descriptor.name << "  (plugin " << e->plugin << " " << e->version << ", "
         << e->file << ")\n";
      if (!e->descriptor.summary.empty()) os << "    " << e->descriptor.summary << "\n";
      if (e->descriptor.unavailable) {
        const std::string why = e->descriptor.unavailable();
        if (!why.empty()) os << "    unavailable here: " << why << "\n";
      }
      if (kind == ComponentKind::Comm) {
        // What a strategy provides follows from what its plugin registers: a multiply algorithm
        // (every comm component), and the collectives of the same name and plugin if any.
        const ComponentEntry* coll = reg.find(ComponentKind::Collectives, e->descriptor.name);
        os << "    provides: multiply"
           << (coll != nullptr && coll->plugin == e->plugin ? ", collectives '" + e->descriptor.name + "'"
                                                            : std::string(", collectives: core's 'mpi'"))
           << "\n";
      }
      if (o.verbose) {
        ParameterListPtr valid = e->descriptor.valid_parameters ? e->descriptor.valid_parameters() : ParameterListPtr();
        auto lines = valid.is_null() ? std::vector<std::string>() : describe_parameters(*valid, "      ");
        if (lines.empty()) {
          os << "    parameters: none\n";
        } else {
          os << "    parameters (sublist "
             << (kind == ComponentKind::Comm     ? "Communication/"
                 : kind == ComponentKind::Kernel ? "Kernel/"
                                                 : "")
             << e->descriptor.name << "):\n";
          for (const auto& l : lines) os << l << "\n";
        }
      }
    }
  }
  if (o.verbose) {
    os << "\nprogram parameters (top level; see also 'plexus run --help'):\n";
    for (const auto& l : describe_parameters(*top_level_valid(), "    ")) os << l << "\n";
  }
  std::cout << os.str() << std::flush;
  return 0;
}

}  // namespace plexus::app
