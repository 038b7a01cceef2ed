// `plexus model`: a dry run of each strategy's schedule on a grid of given panel sizes.
#include <mpi.h>
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "app_job.hpp"
#include "plexus/model.hpp"
#include "plexus/output.hpp"
#include "plexus/registry.hpp"

namespace plexus::app {

const char* const kModelHelp =
    "Usage: plexus model --strategies S1,S2,... --grid PRxPC --bytes SA[,SB[,SC]] [--json FILE]\n"
    "\n"
    "Dry run of a multiply: for every rank of a PR x PC grid whose local panels of A, B and C hold\n"
    "SA, SB and SC bytes (spread evenly over the k indices), each strategy's own schedule predicts the\n"
    "ticks, the bytes of A and B every rank receives, the bytes of C it sends, and the buffer\n"
    "footprint. Nothing is allocated or sent; one process is enough for any grid. The table gives the\n"
    "maximum over ranks and each row's volume relative to the first row.\n"
    "\n"
    "Options:\n"
    "  --strategies LIST  comma-separated specs name[:Key=Value...], e.g. cannon,rma25d:Layers=4\n"
    "  --grid PRxPC       the process grid, e.g. 20x20\n"
    "  --bytes SA,SB,SC   local panel sizes; suffixes K, M, G (powers of 1024), e.g. 64M,64M,173M\n"
    "                     (SB and SC default to SA)\n"
    "  --json FILE        write the rows as JSON\n"
    "\n"
    "Example (the paper's H2O-DFT-LS at 400 nodes, S_C = 2.7 S_A):\n"
    "  plexus model --strategies rma25d:Layers=1,rma25d:Layers=4 --grid 20x20 --bytes 100M,100M,270M\n";

namespace {

// Bounds of `plexus model`: it predicts every rank's schedule, so time grows with the grid.
constexpr long kMaxModelRanks = 4096;                  // 64 x 64: rma25d's model of every rank takes ~13 s there
constexpr double kMaxModelBytes = 1125899906842624.0;  // 1 PiB per local panel

std::int64_t parse_size(const std::string& text, const char* option) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  double unit = 1;
  const std::string suffix = end ? std::string(end) : std::string();
  if (suffix == "K" || suffix == "KiB")
    unit = 1024.0;
  else if (suffix == "M" || suffix == "MiB")
    unit = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "GiB")
    unit = 1024.0 * 1024 * 1024;
  else if (!suffix.empty() && suffix != "B")
    unit = -1;  // an unknown suffix
  if (text.empty() || end == text.c_str() || unit < 0 || !(v >= 0) || !std::isfinite(v))
    throw UsageError(option, std::string(option) + ": '" + text + "' is not a size (e.g. 1048576, 64K, 100M, 2G)");
  if (v * unit > kMaxModelBytes)
    throw UsageError(option, std::string(option) + ": '" + text + "' is more than the model takes (1 PiB per panel)");
  return static_cast<std::int64_t>(v * unit);
}

// A grid dimension of `--grid`: digits only, 1 .. kMaxModelRanks.
long parse_grid_dimension(const std::string& text, const std::string& grid) {
  const bool digits = !text.empty() && text.size() <= 9 &&
                      std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  const long v = digits ? std::stol(text) : 0;
  if (v < 1) throw UsageError("--grid", "--grid needs PRxPC with positive numbers, got '" + grid + "'");
  return v;
}

}  // namespace

int command_model(const Options& o, int rank, int size) {
  struct ModelRow {
    std::string label, note;
    int ticks = 0;
    std::int64_t a = 0, b = 0, c = 0, total = 0, buffer = 0;
    double total_avg = 0;
    bool modeled = true;  // false: the strategy has no dry-run model (shown as "-")
  };
  std::vector<ModelRow> rows;
  ModelSpec spec;
  int exit_code = 0;
  const bool ok = setup_phase(
      [&] {
        agreed([&] { check_outputs(o, rank); });
        const auto x = o.grid.find('x');
        if (x == std::string::npos)
          throw UsageError("--grid", "--grid needs PRxPC with positive numbers, got '" + o.grid + "'");
        const long pr = parse_grid_dimension(o.grid.substr(0, x), o.grid);
        const long pc = parse_grid_dimension(o.grid.substr(x + 1), o.grid);
        if (pr * pc > kMaxModelRanks)
          throw UsageError("--grid", "--grid " + o.grid + " has " + std::to_string(pr * pc) +
                                         " ranks; the model takes at most " + std::to_string(kMaxModelRanks) +
                                         " (it predicts every rank of the grid)");
        spec.nprows = static_cast<int>(pr);
        spec.npcols = static_cast<int>(pc);
        const auto sizes = spec_list("--bytes", o.bytes);
        if (sizes.size() > 3) throw UsageError("--bytes", "--bytes takes at most three sizes SA,SB,SC");
        spec.bytes_a = parse_size(sizes[0], "--bytes");
        spec.bytes_b = sizes.size() > 1 ? parse_size(sizes[1], "--bytes") : spec.bytes_a;
        spec.bytes_c = sizes.size() > 2 ? parse_size(sizes[2], "--bytes") : spec.bytes_a;
        load_plugins(rank);
        for (const auto& text : o.strategies) {
          const Spec sp = parse_spec(text, "--strategies");
          ParameterList params(sp.name);
          for (const auto& a : sp.assignments) apply_override(params, a);
          auto strategy = Registry::global().make_comm(sp.name, params, "Communication/" + sp.name);
          ModelRow row;
          row.label = text;
          double sum = 0;
          for (int r = 0; r < spec.nprows && row.modeled; ++r)
            for (int c = 0; c < spec.npcols && row.modeled; ++c) {
              const auto m = strategy->model(spec, r, c);
              if (!m) {
                row.modeled = false;
                row.note = "no dry-run model";
                break;
              }
              row.note = m->note;
              row.ticks = std::max(row.ticks, m->ticks);
              row.a = std::max(row.a, m->bytes_a);
              row.b = std::max(row.b, m->bytes_b);
              row.c = std::max(row.c, m->bytes_c);
              row.total = std::max(row.total, m->bytes_a + m->bytes_b + m->bytes_c);
              row.buffer = std::max(row.buffer, m->buffer_bytes);
              sum += static_cast<double>(m->bytes_a + m->bytes_b + m->bytes_c);
            }
          row.total_avg = sum / (double(spec.nprows) * spec.npcols);
          rows.push_back(row);
        }
      },
      rank, size, exit_code);
  if (!ok) return exit_code;
  if (rank != 0) return 0;
  std::ostringstream os;
  os << "dry-run model: grid " << spec.nprows << "x" << spec.npcols << ", local panels A "
     << format_bytes(double(spec.bytes_a)) << ", B " << format_bytes(double(spec.bytes_b)) << ", C "
     << format_bytes(double(spec.bytes_c)) << " (per rank, max over ranks; A and B received, C sent)\n\n";
  const std::vector<std::string> head = {"strategy", "model",      "ticks", "A/rank", "B/rank",
                                         "C/rank",   "total/rank", "ratio", "buffers"};
  std::vector<std::vector<std::string>> cells;
  // Ratios are to the first strategy with a model.
  const auto base = std::find_if(rows.begin(), rows.end(), [](const ModelRow& r) { return r.modeled; });
  const double base_total = base != rows.end() ? double(base->total) : 0.0;
  for (const auto& r : rows) {
    if (!r.modeled) {
      cells.push_back({r.label, r.note, "-", "-", "-", "-", "-", "-", "-"});
      continue;
    }
    cells.push_back({r.label, r.note, std::to_string(r.ticks), format_bytes(double(r.a)), format_bytes(double(r.b)),
                     format_bytes(double(r.c)), format_bytes(double(r.total)),
                     fmt::format("{:.3f}", base_total > 0 ? double(r.total) / base_total : 0.0),
                     format_bytes(double(r.buffer))});
  }
  os << format_table(head, cells, false);
  std::cout << os.str() << std::flush;
  if (!o.json.empty()) {
    nlohmann::json root;
    root["grid"] = {spec.nprows, spec.npcols};
    root["bytes"] = {spec.bytes_a, spec.bytes_b, spec.bytes_c};
    RunMetadata m;
    m.command = "model";
    m.ranks = size;
    m.grid = std::to_string(spec.nprows) + "x" + std::to_string(spec.npcols);  // the modelled grid
    root["metadata"] = metadata_json(m);
    root["rows"] = nlohmann::json::array();
    for (const auto& r : rows) {
      if (!r.modeled) {  // the same keys, null figures
        nlohmann::json j = {{"strategy", r.label}};
        for (const char* k : {"model", "ticks", "bytes_a_max", "bytes_b_max", "bytes_c_max", "total_max", "total_avg",
                              "buffer_bytes_max"})
          j[k] = nullptr;
        root["rows"].push_back(std::move(j));
        continue;
      }
      root["rows"].push_back({{"strategy", r.label},
                              {"model", r.note},
                              {"ticks", r.ticks},
                              {"bytes_a_max", r.a},
                              {"bytes_b_max", r.b},
                              {"bytes_c_max", r.c},
                              {"total_max", r.total},
                              {"total_avg", json_number(r.total_avg)},
                              {"buffer_bytes_max", r.buffer}});
    }
    output::write_text(o.json, root.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", "--json");
  }
  return 0;
}

}  // namespace plexus::app
