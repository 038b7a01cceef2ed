// Huang and Chow's "overlapping communication with communication" (IPDPS'19) as a plugin:
// the nboverlap collectives (every operation in NDup parts on duplicated communicators).
#include "plexus/plugin.hpp"

#include <limits>
#include <memory>

#include "collectives.hpp"
#include "mesh3d.hpp"

namespace {

using plexus::nboverlap::PartPlan;

void declare_parts(plexus::ParameterList& p) {
  plexus::declare_int(p, "NDup", 4,
                      "N_DUP: an operation's data is cut into up to NDup parts, part c on the c-th duplicate of the "
                      "communicator, all posted at once (1: the plain nonblocking collective)",
                      1, 64);
  plexus::declare_int(p, "MinPartBytes", 16 * 1024,
                      "no part smaller than this many bytes: fewer parts for small data (the paper's n_t >= 16 KB; "
                      "0: always NDup parts, at most one per value)",
                      0, std::numeric_limits<int>::max());
}

PartPlan plan_of(const plexus::ParameterList& p) {
  return PartPlan{p.get<int>("NDup"), static_cast<std::int64_t>(p.get<int>("MinPartBytes"))};
}

plexus::ParameterListPtr strategy_parameters() {
  auto p = Teuchos::rcp(new plexus::ParameterList("nboverlap"));
  declare_parts(*p);
  plexus::declare_choice(
      *p, "Variant", "optimized", {"original", "baseline", "optimized"},
      "SymmSquareCube algorithm of the paper: original (Alg. 3, GTFock), baseline (Alg. 4), "
      "optimized (Alg. 5: pipelined in NDup parts; with NDup = 1 it is the baseline). The 3D multiply "
      "is pipelined under optimized, one part otherwise");
  plexus::declare_int(*p, "ActiveRanks", 0,
                      "ranks taking part: the largest cube p^3 <= ActiveRanks (0: <= the number of ranks); the "
                      "others wait (MPI_Ibarrier, MPI_Test, 10 ms sleeps) and their blocks move to the active ranks",
                      0, std::numeric_limits<int>::max());
  plexus::declare_int(
      *p, "Replication", 0,
      "0: the 3D mesh p x p x p (Algorithms 3/4/5); c >= 1: the 2.5D mesh q x q x c, the largest q with "
      "q^2 c active ranks (Algorithm 6: each layer runs its share of Cannon's q steps, the partial "
      "products summed along the fibre); every layer needs a step (q >= c, so c^3 ranks): with "
      "fewer ranks the largest c that fits is used, with a warning",
      0, 64);
  return p;
}

plexus::ParameterListPtr collectives_parameters() {
  auto p = Teuchos::rcp(new plexus::ParameterList("nboverlap"));
  declare_parts(*p);
  return p;
}

const plexus::PluginDescriptor& describe() {
  static const plexus::PluginDescriptor d = [] {
    plexus::PluginDescriptor p;
    p.name = "comm_nboverlap";
    p.version = "1.0.0";
    plexus::ComponentDescriptor c;
    c.kind = plexus::ComponentKind::Comm;
    c.name = "nboverlap";
    c.summary =
        "Huang and Chow's 3D multiply on a p x p x p mesh of the active ranks (operands on the first plane): A "
        "along the fibre, B along the mesh rows, C reduced along the columns, in NDup pipelined parts; "
        "SymmSquareCube (D^2 and D^3 at once, Algorithms 3/4/5) for purification; idle ranks beyond p^3. With "
        "Replication = c, the 2.5D variant (Algorithm 6) on a q x q x c mesh.";
    c.valid_parameters = strategy_parameters;
    c.make_comm = [](const plexus::ParameterList& params) {
      plexus::nboverlap::MeshOptions o;
      o.plan = plan_of(params);
      o.variant = plexus::nboverlap::variant_of(params.get<std::string>("Variant"));
      o.active_ranks = params.get<int>("ActiveRanks");
      o.replication = params.get<int>("Replication");
      return std::make_unique<plexus::nboverlap::Mesh3D>(o);
    };
    p.components.push_back(std::move(c));
    plexus::ComponentDescriptor k;
    k.kind = plexus::ComponentKind::Collectives;
    k.name = "nboverlap";
    k.summary =
        "Huang and Chow's nonblocking overlap (IPDPS'19): allreduce, bcast, reduce, alltoall(v) and circulate cut "
        "into NDup parts on duplicated communicators, all parts in flight at once.";
    k.valid_parameters = collectives_parameters;
    k.make_collectives = [](const plexus::ParameterList& params) {
      return std::make_unique<plexus::nboverlap::NbOverlapCollectives>(plan_of(params));
    };
    p.components.push_back(std::move(k));
    return p;
  }();
  return d;
}

}  // namespace

PLEXUS_PLUGIN(describe)
