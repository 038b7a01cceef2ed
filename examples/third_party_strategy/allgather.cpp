// A complete multiply strategy written as a third party writes one: it includes only the plexus
// SDK and is built against an installed plexus (see CMakeLists.txt beside it).
//
// "allgather": every rank gathers the A panels of its process row and the B panels of its process
// column (MPI_Allgatherv of packed panels), then multiplies every pair of gathered pieces. Each k
// lies in exactly one A piece and one B piece, so every product is computed once. Simple, any
// PR x PC grid, and memory-hungry: for teaching, not for speed. Core's driver does everything
// else (validation, transposes, alpha, beta, aliasing, filtering, the report).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <plexus/comm_strategy.hpp>
#include <plexus/multiply.hpp>
#include <plexus/parameters.hpp>
#include <plexus/plugin.hpp>

namespace allgather_example {

using plexus::mpi::Payload;
using plexus::mpi::Role;

// Every rank's panel of comm, packed, gathered into `words` and `values`; returns their views.
std::vector<plexus::PanelView> gather_panels(const plexus::Panel& panel, MPI_Comm comm, Role role,
                                             plexus::mpi::Traffic& traffic, plexus::CommBuffer<std::int64_t>& words,
                                             plexus::CommBuffer<double>& values) {
  const int n = plexus::mpi::size(comm), me = plexus::mpi::rank(comm);
  std::vector<std::int64_t> index;
  panel.pack_index(index);
  const int mine[2] = {static_cast<int>(index.size()), static_cast<int>(panel.data_size())};
  std::vector<int> counts(2 * static_cast<std::size_t>(n)), wc(n), vc(n), wd(n, 0), vd(n, 0);
  plexus::mpi::check(MPI_Allgather(mine, 2, MPI_INT, counts.data(), 2, MPI_INT, comm), "MPI_Allgather");
  for (int q = 0; q < n; ++q) {
    wc[q] = counts[2 * q];
    vc[q] = counts[2 * q + 1];
    if (q > 0) {
      wd[q] = wd[q - 1] + wc[q - 1];
      vd[q] = vd[q - 1] + vc[q - 1];
    }
  }
  words.resize(static_cast<std::size_t>(wd[n - 1] + wc[n - 1]));
  values.resize(static_cast<std::size_t>(vd[n - 1] + vc[n - 1]));
  const double t0 = plexus::mpi::now();
  plexus::mpi::check(MPI_Allgatherv(index.data(), mine[0], MPI_INT64_T, words.data(), wc.data(), wd.data(),
                                    MPI_INT64_T, comm),
                     "MPI_Allgatherv");
  plexus::mpi::check(MPI_Allgatherv(panel.data().data(), mine[1], MPI_DOUBLE, values.data(), vc.data(), vd.data(),
                                    MPI_DOUBLE, comm),
                     "MPI_Allgatherv");
  traffic.add_wait(role, plexus::mpi::now() - t0);
  std::vector<plexus::PanelView> views;
  for (int q = 0; q < n; ++q) {
    if (q != me) {  // what a ring of messages would carry: my panel out, each other panel in
      traffic.add_sent(role, Payload::Data, 8 * std::int64_t{mine[1]}, 1);
      traffic.add_received(role, Payload::Data, 8 * std::int64_t{vc[q]}, 1);
      traffic.add_sent(role, Payload::Index, 8 * std::int64_t{mine[0]}, 0);
      traffic.add_received(role, Payload::Index, 8 * std::int64_t{wc[q]}, 0);
    }
    views.push_back(plexus::PanelView::from_packed(words.data() + wd[q], wc[q], values.data() + vd[q]));
  }
  return views;
}

class Allgather final : public plexus::CommStrategy {
 public:
  std::string name() const override { return "allgather"; }

  plexus::Panel run(plexus::MultiplyTask& task) override {
    const plexus::Grid& grid = task.a().grid();
    plexus::mpi::Traffic traffic;
    plexus::CommBuffer<std::int64_t> aw, bw;
    plexus::CommBuffer<double> av, bv;
    const auto a_pieces = gather_panels(task.a().local(), grid.row_comm(), Role::A, traffic, aw, av);
    const auto b_pieces = gather_panels(task.b().local(), grid.col_comm(), Role::B, traffic, bw, bv);
    plexus::LocalProduct& c = task.c_accumulator();
    for (const auto& a : a_pieces)
      for (const auto& b : b_pieces) c.multiply(a, task.a().layout(), b, task.b().layout());
    task.traffic().absorb(traffic);
    task.report().ticks = 1;
    task.report().extra["pieces"] = static_cast<double>(a_pieces.size() * b_pieces.size());
    // The "model" column of plexus compare: the dry-run model below, on this rank's panel sizes.
    const auto m = model({grid.nprows(), grid.npcols(), 8 * task.a().local().data_size(),
                          8 * task.b().local().data_size(), 0},
                         grid.myprow(), grid.mypcol());
    task.report().extra["predicted_bytes_received"] = static_cast<double>(m->bytes_a + m->bytes_b);
    return c.finish();
  }

  // Dry run (plexus model): a rank receives the PC-1 other A panels of its row and the PR-1 B panels
  // of its column, each assumed as large as its own.
  std::optional<plexus::ModelPrediction> model(const plexus::ModelSpec& s, int, int) const override {
    plexus::ModelPrediction m;
    m.ticks = 1;
    m.bytes_a = (s.npcols - 1) * s.bytes_a;
    m.bytes_b = (s.nprows - 1) * s.bytes_b;
    m.buffer_bytes = s.npcols * s.bytes_a + s.nprows * s.bytes_b;
    return m;
  }
};

const plexus::PluginDescriptor& describe() {
  static const plexus::PluginDescriptor d = [] {
    plexus::PluginDescriptor p;
    p.name = "example_allgather";
    p.version = "1.0.0";
    plexus::ComponentDescriptor c;
    c.kind = plexus::ComponentKind::Comm;
    c.name = "allgather";
    c.summary = "example: gathers A's row panels and B's column panels, multiplies every pair (any grid)";
    c.valid_parameters = [] { return Teuchos::rcp(new plexus::ParameterList("allgather")); };
    c.make_comm = [](const plexus::ParameterList&) { return std::make_unique<Allgather>(); };
    p.components.push_back(std::move(c));
    return p;
  }();
  return d;
}

}  // namespace allgather_example

PLEXUS_PLUGIN(allgather_example::describe)
