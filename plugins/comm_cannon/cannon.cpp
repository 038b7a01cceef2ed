// Cannon's algorithm as DBCSR does it, for any PR x PC grid.
//
// The k dimension (block columns of A = block rows of B) is cut into V = lcm(PR, PC) k-groups.
// An "image" is the part of a local panel in one k-group: A(pr, g) holds the blocks of A in my
// process row with k in group g; B(g, pc) those of B in my process column. Each process holds
// a = V/PC images of A and b = V/PR images of B in FIFO queues. Seen from a process row, the A
// queues form a ring of V slots (process pc holds slots pc*a .. pc*a+a-1); at tick t the front
// image of process (pr, pc) is A(pr, g) and of B is B(g, pc) with
//     g(pr, pc, t) = (pc*a + pr*b + t) mod V,
// so the fronts match and over V ticks every k-group is multiplied once. After each tick but the
// last, the front A image moves to the left neighbour's queue back (MPI_Isend left, MPI_Irecv
// from the right, double-buffered, overlapping the local multiply) and B's front moves up.
// The pre-shift puts every image into the slot it holds at t = 0.
//
// Routes. An iteration multiplies operands of the same patterns again and again. Where every rank
// finds its operands as in one of the last few multiplies (the same local index, distribution,
// block sizes and grid), which one MPI_Allreduce over the grid establishes, the pre-shift replays
// that multiply's routes: only the values move (one MPI_Alltoallv per operand that changes rank,
// none where no block does), without the counts' MPI_Alltoall, the index's MPI_Alltoallv and the
// ring sizes' MPI_Allgather, and the images are made from the recorded block lists. Four sync
// points per moving operand become one, and one for the whole multiply is added.
//
// The local panel as the image. An operand that stays home in one slot (B on a PR x 1 grid with
// B's rows dealt like A's columns, A on 1 x PC, and A in process row 0 of a grid with PR dividing
// PC, since A's k-groups follow its own columns) would get an image that is a copy of its local
// panel, packed into a buffer by a second copy. Its panel serves instead, while its values have
// no gaps: multiplied at tick 0 and sent from where it is (its index packed once), so only the
// images it receives take buffers.
//
// Fused ticks (FuseTicks). Where there are two ticks (V = 2: 2 x 1, 1 x 2 and 2 x 2 grids) they
// can go in one pass: the one shift is posted, the received image lands next to tick 0's in one
// value area, and one local product takes both. C's blocks are then read and written once instead
// of once per tick (on H2O-like blocks of 23 the products ran about 20 % faster), at the price of
// the shift's overlap with the products and, where tick 0's image is the local panel, a copy of it.
// Each C block then sums its products in ascending k, as on one rank. Fused ticks need no
// pre-shift: the two ranks of a ring hold all of their row's A (column's B) between them, and one
// pass multiplies all of it, so each local panel is its rank's tick-0 image. A ring of two
// processes on one node (SharedWindow) shares one MPI window instead of messages: each rank copies
// its panel into its own segment, and the product reads the peer's where it is; only the index
// travels as a message. A replayed multiply whose moving panels show, on every rank, the index
// objects its routes kept from the last time sends no index at all (agreed_routes).
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "image_queue.hpp"
#include "plexus/error.hpp"
#include "plexus/exchange.hpp"
#include "plexus/memory.hpp"
#include "plexus/mpi.hpp"
#include "plexus/multiply.hpp"
#include "plexus/plugin.hpp"
#include "plexus/timers.hpp"
#include "routes.hpp"
#include "schedule.hpp"
#include "ticks.hpp"

namespace {

using plexus::DistMatrix;
using plexus::Error;
using plexus::Panel;
using plexus::PanelView;
using plexus::mpi::Role;
using plexus::mpi::Traffic;

using plexus::cannon::agreed_routes;
using plexus::cannon::FusedOperand;
using plexus::cannon::Images;
using plexus::cannon::kKeptRoutes;
using plexus::cannon::kLocalPanel;
using plexus::cannon::make_grid_plan;
using plexus::cannon::OperandQueue;
using plexus::cannon::OperandRoute;
using plexus::cannon::Plan;
using plexus::cannon::ring_sizes;
using plexus::cannon::RingSizes;
using plexus::cannon::Routes;
using plexus::cannon::run_fused;
using plexus::cannon::run_ticks;
using plexus::cannon::SharedRing;

// FuseTicks: whether the two ticks of a V = 2 schedule go in one pass. `Auto` fuses
// - on a 2 x 2 grid always: both operands move, and fusing saves the pre-shift and one of the two
//   shifts, each a point where the ranks wait for each other (S-E-like blocks of 6 at 1 % on four
//   ranks: 0.44 -> 0.27 ms a multiply through shared windows, 0.32 ms by messages);
// - on 2 x 1 and 1 x 2 grids where the ring that moves shares a window (two processes on one
//   node): fusing gained or tied on every class measured (0.72 -> 0.64 ms on blocks of 13 at 20 %);
// - else by messages where the largest image on the moving ring holds at least kFuseValues values
//   on every rank: H2O-like images (7.8 MiB) gained, while small ones tied or lost (S-E-like
//   0.2 MiB: the shift's latency is no longer hidden behind tick 0's products). The threshold lies
//   between them; not tuned beyond that.
enum class Fuse { Auto, Always, Never };
constexpr std::int64_t kFuseValues = std::int64_t{1} << 17;  // 1 MiB of values

class Cannon final : public plexus::CommStrategy {
 public:
  Cannon(Fuse fuse, bool shared_window) : fuse_(fuse), shared_window_(shared_window) {}
  std::string name() const override { return "cannon"; }

  // The schedule: pre-shift, then V ticks multiplying the front images while they travel.
  Panel run(plexus::MultiplyTask& task) override {
    const DistMatrix &A = task.a(), &B = task.b();
    const Plan& plan = make_plan(A);
    plexus::LocalProduct& product = task.c_accumulator();
    plexus::MultiplyReport& report = task.report();
    report.ticks = plan.V;
    report.extra["virtual_grid"] = plan.V;
    report.extra["images_a"] = plan.a;
    report.extra["images_b"] = plan.b;
    report.extra["fused_ticks"] = 0.0;
    report.extra["shared_window"] = 0.0;
    report.extra["routes_replayed"] = 0.0;  // a 1x1 grid keeps no routes
    report.extra["indices_known"] = 0.0;
    report.extra["dense_b_window"] = 0.0;
    Traffic preshift, ticks;
    if (plan.V == 1) {  // 1x1 grid: the local panels are the only images, multiplied in place
      task.filter_in_last_tick();  // one tick, whose C is the result: it may filter C as it goes
      product.multiply(A.local().view(), A.layout(), B.local().view(), B.layout());
      report_schedule(report, preshift, ticks, 0, 0);
      return product.finish();
    }
    // An operand whose ring is one process long (A when PC = 1, B when PR = 1) never moves: its
    // local panel serves every tick as it is (the other operand's image picks the k-group, as
    // the local product forms only the products whose k both panels hold), so it is neither
    // pre-shifted nor packed.
    OperandQueue a_q, b_q;
    plexus::timers::Scoped pre_timer("cannon: pre-shift");
    // An earlier multiply's routes serve again when every rank finds its operands as then;
    // otherwise this multiply's are recorded in place of the least recently used. The agreement
    // (an MPI_Allreduce over the grid) also tells every rank that the others' previous multiplies
    // are over, which fused ticks through a shared window rely on (run_fused).
    const auto [agreed, indices_known, dense_b] = agreed_routes(routes_, A, B, plan, product, b_ring_);
    const bool replay = agreed >= 0;
    report.extra["routes_replayed"] = replay ? 1.0 : 0.0;
    report.extra["indices_known"] = indices_known ? 1.0 : 0.0;
    Routes& routes = routes_[static_cast<std::size_t>(replay ? agreed : least_recently_used())];
    if (!replay) {  // recorded afresh below; a failure leaves none, and no merge of the slot's earlier routes
      routes.valid = false;
      routes.a.merge.local.reset();
      routes.b.merge.local.reset();
    }
    routes.used = ++clock_;
    // Fused ticks need no pre-shift: the two ranks of a ring hold all of their row's A (column's
    // B) between them, whatever the k-groups, and one pass multiplies all of it, so each rank's
    // local panel serves as its tick-0 image. Decided on the local panels, before any block moves.
    if (!replay) routes.fused = fuses_on_panels(plan, A, B, routes);
    const bool fused = routes.fused;
    Images a_img, b_img;
    if (!fused && plan.PC > 1) a_img = pre_shift(A, plan, /*is_a=*/true, preshift, routes.a, replay);
    if (!fused && plan.PR > 1) b_img = pre_shift(B, plan, /*is_a=*/false, preshift, routes.b, replay);
    pre_timer.stop();
    plexus::timers::Scoped buffer_timer("cannon: sizes and buffers");
    // The data bytes the schedule will bring here: the pre-shift's and the ticks'.
    if (!replay) {
      if (!fused) {
        routes.a.sizes = ring_sizes(image_sizes(a_img, A), plan, true, A.grid().row_comm());
        routes.b.sizes = ring_sizes(image_sizes(b_img, B), plan, false, A.grid().col_comm());
      }
      routes.PR = plan.PR;
      routes.PC = plan.PC;
      routes.pr = plan.pr;
      routes.pc = plan.pc;
      routes.valid = true;
    }
    const RingSizes& a_sizes = routes.a.sizes;
    const RingSizes& b_sizes = routes.b.sizes;
    const std::int64_t pre_a = plan.PC > 1 ? routes.a.planned_recv : 0;
    const std::int64_t pre_b = plan.PR > 1 ? routes.b.planned_recv : 0;
    const std::int64_t predicted_a = 8 * (pre_a + a_sizes.shift_values);
    const std::int64_t predicted_b = 8 * (pre_b + b_sizes.shift_values);
    // A ring of two processes goes through its shared window where it has one that fits (the
    // same on both ranks of the ring: made together, for the ring's largest image).
    const SharedRing* a_win =
        fused && plan.PC == 2 && a_ring_.fits(A.grid().row_comm(), a_sizes.values) ? &a_ring_ : nullptr;
    const SharedRing* b_win =
        fused && plan.PR == 2 && b_ring_.fits(A.grid().col_comm(), b_sizes.values) ? &b_ring_ : nullptr;
    report.extra["fused_ticks"] = fused ? 1.0 : 0.0;
    report.extra["shared_window"] = a_win != nullptr || b_win != nullptr ? 1.0 : 0.0;
    report.extra["dense_b_window"] = fused && dense_b && b_win != nullptr ? 1.0 : 0.0;
    FusedOperand a_f, b_f;
    if (fused) {
      if (plan.PC > 1)
        a_f.allocate(A.local().view(), a_sizes.words, a_sizes.values, a_win, routes.a.merge, indices_known);
      if (plan.PR > 1)
        b_f.allocate(B.local().view(), b_sizes.words, b_sizes.values, b_win, routes.b.merge, indices_known);
      if (dense_b && b_win != nullptr) {
        b_f.dense = routes.b.merge.dense_layout(B.layout());
        b_f.dense_blocks = &B.layout();
      }
    } else {
      if (plan.PC > 1) allocate_buffers(a_img, A, a_sizes, plan.a, a_q);
      if (plan.PR > 1) allocate_buffers(b_img, B, b_sizes, plan.b, b_q);
    }
    buffer_timer.stop();
    if (fused) {
      task.filter_in_last_tick();  // one pass is the only tick
      run_fused(plan, A, B, a_f, b_f, product, ticks);
    } else
      run_ticks(plan, A, B, a_q, b_q, product, ticks);
    // The largest share of the windows used on small pages (where the system says), so that the
    // summary's maximum over ranks shows the worst rank.
    double small = -1;
    for (const SharedRing* w : {a_win, b_win})
      if (w != nullptr && std::isfinite(w->huge_page_share())) small = std::max(small, 1.0 - w->huge_page_share());
    if (small >= 0) report.extra["window_small_pages"] = small;
    task.traffic().absorb(preshift);
    task.traffic().absorb(ticks);
    report_schedule(report, preshift, ticks, predicted_a, predicted_b);
    return product.finish();
  }

  // The schedule's figures: bytes sent in the pre-shift and the ticks, and the bytes predicted.
  static void report_schedule(plexus::MultiplyReport& report, const Traffic& preshift, const Traffic& ticks,
                              std::int64_t predicted_a, std::int64_t predicted_b) {
    report.extra["preshift_bytes_a"] = static_cast<double>(preshift.counts(Role::A).bytes_sent);
    report.extra["preshift_bytes_b"] = static_cast<double>(preshift.counts(Role::B).bytes_sent);
    report.extra["shift_bytes_a"] = static_cast<double>(ticks.counts(Role::A).bytes_sent);
    report.extra["shift_bytes_b"] = static_cast<double>(ticks.counts(Role::B).bytes_sent);
    report.extra["predicted_bytes_a"] = static_cast<double>(predicted_a);
    report.extra["predicted_bytes_b"] = static_cast<double>(predicted_b);
    report.extra["predicted_bytes_received"] = static_cast<double>(predicted_a + predicted_b);
  }

  // Dry run: panels spread evenly over the V k-groups, A's and B's k distributed alike
  // (group g on A process column g mod PC and B process row g mod PR), values only.
  std::optional<plexus::ModelPrediction> model(const plexus::ModelSpec& spec, int pr, int pc) const override {
    const Plan p = make_grid_plan(spec.nprows, spec.npcols, pr, pc);
    const std::int64_t img_a = spec.bytes_a * p.PC / p.V, img_b = spec.bytes_b * p.PR / p.V;
    plexus::ModelPrediction m;
    m.ticks = p.V;
    // Received in the ticks: V-1 images along each ring longer than one process.
    m.bytes_a = p.PC > 1 ? (p.V - 1) * img_a : 0;
    m.bytes_b = p.PR > 1 ? (p.V - 1) * img_b : 0;
    // The pre-shift: the images of my row (column) that are at home elsewhere come to me (none when
    // the ticks are fused: the local panels serve as the images). The model cannot know where the
    // ranks run, so it takes messages, not shared windows.
    const bool fused = fuses(p, img_a / 8, img_b / 8, false, false);
    for (int g = 0; g < p.V && !fused; ++g) {
      int slot = 0;
      if (g % p.PC != pc && p.a_home(g, slot) == pc) m.bytes_a += img_a;
      if (g % p.PR != pr && p.b_home(g, slot) == pr) m.bytes_b += img_b;
    }
    // Buffers (allocate_buffers): one per image and a receive buffer, but a single one for an operand
    // whose only image is its local panel (one slot, at home at tick 0) when it shifts once (V = 2).
    // Fused ticks by messages (FusedOperand): room for two images, tick 0's and the received one.
    auto buffers = [&](int slots, bool home) { return fused ? 2 : slots == 1 && home && p.V == 2 ? 1 : slots + 1; };
    m.buffer_bytes = (p.PC > 1 ? buffers(p.a, p.pr * p.b % p.V == 0) * img_a : 0) +
                     (p.PR > 1 ? buffers(p.b, p.pc * p.a % p.V == 0) * img_b : 0);
    m.note = "V=" + std::to_string(p.V) + (fused ? ", fused" : "");
    return m;
  }

 private:
  Fuse fuse_;
  bool shared_window_;
  SharedRing a_ring_, b_ring_;  // the shared windows of fused ticks on rings of two on one node

  // Whether this multiply's ticks go in one pass, agreed over the grid (every rank of a ring must
  // take the same path, and a ring makes its shared window together), only where V = 2 and
  // FuseTicks may fuse: the local panels' sizes along each moving ring (one MPI_Allgather each),
  // then one MPI_Allreduce; the shared windows made where they do not fit yet. A multiply that
  // fuses records its routes here: the panels' keys (with the sizes of their value areas, which
  // travel as they are) and the ring sizes (nothing is exchanged before the ticks).
  bool fuses_on_panels(const Plan& plan, const DistMatrix& A, const DistMatrix& B, Routes& routes) {
    if (plan.V != 2 || fuse_ == Fuse::Never) return false;
    const plexus::Grid& grid = A.grid();
    const MPI_Comm row = grid.row_comm(), col = grid.col_comm();
    const Images local{{}, true};
    const RingSizes a = ring_sizes(image_sizes(local, A), plan, true, row);
    const RingSizes b = ring_sizes(image_sizes(local, B), plan, false, col);
    // Whether each moving ring would share a window (asked of the ring's two ranks together).
    const bool a_window = shared_window_ && plan.PC == 2 && SharedRing::shares_node(row);
    const bool b_window = shared_window_ && plan.PR == 2 && SharedRing::shares_node(col);
    // Against fusing, A's windows to make, B's: the largest over the grid.
    int vote[3] = {fuses(plan, a.values, b.values, a_window, b_window) ? 0 : 1,
                   a_window && !a_ring_.fits(row, a.values) ? 1 : 0, b_window && !b_ring_.fits(col, b.values) ? 1 : 0};
    plexus::mpi::check(MPI_Allreduce(MPI_IN_PLACE, vote, 3, MPI_INT, MPI_MAX, grid.plane_comm()), "MPI_Allreduce");
    if (vote[0] != 0) return false;
    if (vote[1] != 0) a_ring_.create(row, a.values);
    if (vote[2] != 0) b_ring_.create(col, b.values);
    auto record = [&](OperandRoute& route, const DistMatrix& M, MPI_Comm comm, const RingSizes& sizes) {
      route.keep_key(M, plan.kgroup, comm);
      route.fused_values = M.local().view().data_size;
      route.planned_recv = 0;
      route.sizes = sizes;
    };
    if (plan.PC > 1) record(routes.a, A, row, a);
    if (plan.PR > 1) record(routes.b, B, col, b);
    return true;
  }

  // Whether the ticks go in one pass (FuseTicks), given the largest image on A's and on B's ring
  // (in values; the same on every rank of a ring) and whether each ring shares a window.
  bool fuses(const Plan& plan, std::int64_t a_values, std::int64_t b_values, bool a_window, bool b_window) const {
    if (plan.V != 2 || fuse_ == Fuse::Never) return false;
    if (fuse_ == Fuse::Always || (plan.PR == 2 && plan.PC == 2)) return true;
    return (plan.PC == 1 || a_window || a_values >= kFuseValues) &&
           (plan.PR == 1 || b_window || b_values >= kFuseValues);
  }

  // Earlier multiplies' routes. Every rank records, replays and replaces alike (each choice is
  // collective), so an entry's position means the same multiply on every rank.
  std::array<Routes, kKeptRoutes> routes_;
  Plan plan_;                    // the last schedule made (make_plan)
  std::vector<int> plan_cdist_;  // the column map it was made for
  bool plan_made_ = false;
  std::uint64_t clock_ = 0;

  // An entry without routes, or else the one replayed or recorded longest ago.
  int least_recently_used() const {
    int pick = 0;
    for (int e = 0; e < kKeptRoutes; ++e) {
      const Routes& r = routes_[static_cast<std::size_t>(e)];
      if (!r.valid) return e;
      if (r.used < routes_[static_cast<std::size_t>(pick)].used) pick = e;
    }
    return pick;
  }

  // The virtual grid and the k-groups. A k index keeps its A process column: group g holds
  // k with col_dist(k) = g mod PC, dealt in order over the V/PC groups of that column.
  // The schedule for A's grid and column map: the last one made serves again while they stay
  // (an iteration's multiplies), so a multiply makes none of its arrays.
  const Plan& make_plan(const DistMatrix& A) {
    const auto& g = A.grid();
    const auto& cdist = A.distribution().col_dist();
    Plan& p = plan_;
    if (plan_made_ && p.PR == g.nprows() && p.PC == g.npcols() && p.pr == g.myprow() && p.pc == g.mypcol() &&
        plan_cdist_ == cdist)
      return p;
    plan_made_ = false;
    p = make_grid_plan(g.nprows(), g.npcols(), g.myprow(), g.mypcol());
    p.kgroup.resize(cdist.size());
    p.group_rows.assign(static_cast<std::size_t>(p.V), {});
    std::vector<int> seen(static_cast<std::size_t>(p.PC), 0);
    for (std::size_t k = 0; k < cdist.size(); ++k) {
      const int c = cdist[k];
      p.kgroup[k] = c + p.PC * (seen[static_cast<std::size_t>(c)]++ % p.a);
      p.group_rows[static_cast<std::size_t>(p.kgroup[k])].push_back(static_cast<int>(k));
    }
    plan_cdist_ = cdist;
    plan_made_ = true;
    return p;
  }

  // Sends every local block to the process and slot holding its image at tick 0. For A the
  // exchange is within my process row, for B within my process column; none when no block
  // changes rank (stays_home).
  // route.planned_recv: the values this rank will receive, known from the exchanged counts before
  // any data moves (the schedule's prediction of the pre-shift). With `replay`, the route an earlier
  // multiply recorded is followed (agreed_routes found it fits on every rank); otherwise the
  // exchange is made in full and recorded in `route`.
  //
  // When the operand stays home in a single slot whose rows are the local panel's, and its values
  // have no gaps, the image would be a copy of the local panel: none is made (`local`), and the
  // ticks multiply and send the panel itself.
  static Images pre_shift(const DistMatrix& M, const Plan& plan, bool is_a, Traffic& traffic, OperandRoute& route,
                          bool replay) {
    const MPI_Comm comm = is_a ? M.grid().row_comm() : M.grid().col_comm();
    const int nslots = is_a ? plan.a : plan.b;
    const Role role = is_a ? Role::A : Role::B;
    const PanelView v = M.local().view();
    const auto& layout = M.layout();
    auto values_of = [&](int i, int j) { return std::int64_t{layout.rows.size(i)} * layout.cols.size(j); };
    // Destination of a block: its k-group's ring position at tick 0; the tag is the slot there.
    auto home = [&](int i, int j, int& slot) {
      const int g = plan.kgroup[static_cast<std::size_t>(is_a ? j : i)];
      return is_a ? plan.a_home(g, slot) : plan.b_home(g, slot);
    };
    // The blocks of this rank's images by (slot, row, col), their values at `values` + offset.
    plexus::ExchangedBlocks got;
    const double* values = nullptr;
    if (!replay) route.stays_home = stays_home(M, plan, is_a);
    auto rows_of_slot = [&](int s) -> const std::vector<int>& {
      return is_a ? M.distribution().local_rows() : plan.group_rows[static_cast<std::size_t>(plan.group_of_b_slot(s))];
    };
    if (!route.stays_home && replay) {
      got = plexus::exchange_values(v, layout, comm, route.exchange, traffic, role);
      values = got.values.data();
    } else if (!route.stays_home) {
      got = plexus::exchange_blocks(v, layout, comm, home, traffic, role, &route.exchange);
      route.planned_recv = got.values_from_others;
      values = got.values.data();
    } else {
      // No block changes rank: no exchange (and none of its collectives). The blocks are taken
      // from the local panel in its (row, col) order, slot by slot; the route keeps each block's
      // index in the panel, since a panel of the same index may keep its values elsewhere, so the
      // offsets are read each time.
      if (!replay) {
        route.planned_recv = 0;
        std::vector<std::vector<plexus::ExchangedBlocks::Block>> by_slot(static_cast<std::size_t>(nslots));
        for (int r = 0; r < v.nrows; ++r)
          for (std::int64_t q = v.row_ptr[r]; q < v.row_ptr[r + 1]; ++q) {
            const int i = static_cast<int>(v.row_ids[r]), j = static_cast<int>(v.cols[q]);
            int slot = 0;
            home(i, j, slot);
            by_slot[static_cast<std::size_t>(slot)].push_back({slot, i, j, q});
          }
        route.exchange = {};
        for (auto& blocks : by_slot)
          route.exchange.blocks.insert(route.exchange.blocks.end(), blocks.begin(), blocks.end());
      }
      // One slot over the panel's own rows, and values without gaps: the panel is the image.
      // Decided afresh each time (a panel of the same index may now have gaps), so the block
      // list above is recorded either way.
      if (nslots == 1 && is_whole_image(v, layout, rows_of_slot(0))) {
        if (!replay) route.keep_key(M, plan.kgroup, comm);
        return Images{{}, true};
      }
      got.blocks.assign(route.exchange.blocks.begin(), route.exchange.blocks.end());
      for (auto& blk : got.blocks) blk.offset = v.offsets[blk.offset];
      values = v.data;
    }
    if (!replay) route.keep_key(M, plan.kgroup, comm);
    std::vector<Panel> images;
    images.reserve(static_cast<std::size_t>(nslots));
    for (int s = 0; s < nslots; ++s) images.emplace_back(rows_of_slot(s));
    // Each image sized once (appending would grow it by reallocation, copying and touching fresh
    // pages every time).
    std::vector<std::int64_t> nblocks(static_cast<std::size_t>(nslots), 0), nvalues(nblocks);
    for (const auto& blk : got.blocks) {
      ++nblocks[static_cast<std::size_t>(blk.tag)];
      nvalues[static_cast<std::size_t>(blk.tag)] += values_of(blk.row, blk.col);
    }
    for (int s = 0; s < nslots; ++s)
      images[static_cast<std::size_t>(s)].reserve(nblocks[static_cast<std::size_t>(s)],
                                                  nvalues[static_cast<std::size_t>(s)]);
    // The blocks come by (slot, row, col): each image's rows are found by walking its row list.
    int slot = -1, r = 0;
    for (const auto& blk : got.blocks) {
      Panel& p = images[static_cast<std::size_t>(blk.tag)];
      if (blk.tag != slot) {
        slot = blk.tag;
        r = 0;
      }
      while (r < p.nrows() && p.row_id(r) < blk.row) ++r;
      if (r == p.nrows() || p.row_id(r) != blk.row)
        throw Error("cannon", "pre-shift delivered block (" + std::to_string(blk.row) + ", " + std::to_string(blk.col) +
                                  ") to the wrong image");
      p.append_block(r, blk.col, values + blk.offset, static_cast<int>(values_of(blk.row, blk.col)));
    }
    return Images{std::move(images), false};
  }

  // Whether a panel is, as it is, the image over `rows` that its blocks would make: the same rows,
  // and values without gaps (so that sending its value area sends its blocks' values and no more).
  static bool is_whole_image(const PanelView& v, const plexus::BlockLayout& layout, const std::vector<int>& rows) {
    if (static_cast<std::size_t>(v.nrows) != rows.size() ||
        !std::equal(rows.begin(), rows.end(), v.row_ids, [](int a, std::int64_t b) { return a == b; }))
      return false;
    std::int64_t values = 0;
    for (int r = 0; r < v.nrows; ++r) {
      const std::int64_t m = layout.rows.size(static_cast<int>(v.row_ids[r]));
      for (std::int64_t q = v.row_ptr[r]; q < v.row_ptr[r + 1]; ++q)
        values += m * layout.cols.size(static_cast<int>(v.cols[q]));
    }
    return values == v.data_size;
  }

  // Whether every block of the operand is at its tick-0 home already: each k's owner along the
  // ring (A: the process column of block column k; B: the process row of block row k) is where
  // its k-group starts (e.g. B on a PR x 1 grid, block-cyclic). Decided from the distribution
  // and the plan alone, so every rank of the ring gives the same answer and skips the same
  // collectives.
  static bool stays_home(const DistMatrix& M, const Plan& plan, bool is_a) {
    const std::vector<int>& owner = is_a ? M.distribution().col_dist() : M.distribution().row_dist();
    for (std::size_t k = 0; k < owner.size(); ++k) {
      int slot = 0;
      const int g = plan.kgroup[k];
      if ((is_a ? plan.a_home(g, slot) : plan.b_home(g, slot)) != owner[k]) return false;
    }
    return true;
  }

  // Each image's (values, index words), slot by slot.
  static std::vector<std::int64_t> image_sizes(const Images& img, const DistMatrix& M) {
    if (img.local) {
      const PanelView v = M.local().view();
      return {v.data_size, PanelView::packed_words(v.nrows, v.nblocks)};
    }
    std::vector<std::int64_t> mine;
    for (const Panel& p : img.built) {
      mine.push_back(p.data_size());
      mine.push_back(PanelView::packed_words(p.nrows(), p.nblocks()));
    }
    return mine;
  }

  // Every buffer of a moving operand gets the capacity of the largest image on its ring, so a
  // receive never overflows: one per image (the queue) and one receive buffer. The local panel
  // as the only image needs no buffer of its own, only its packed index.
  static void allocate_buffers(Images& img, const DistMatrix& M, const RingSizes& cap, int slots, OperandQueue& q) {
    q.words = cap.words;
    q.values = cap.values;
    q.buf.reserve(static_cast<std::size_t>(slots) + 1);  // never reallocated: transfers point into the buffers
    if (img.local) {
      q.local = M.local().view();
      q.local_index.resize(static_cast<std::size_t>(PanelView::packed_words(q.local.nrows, q.local.nblocks)));
      q.local.pack_to(q.local_index.data());
      q.queue = {kLocalPanel};
      q.spare = q.add_buffer();
      return;
    }
    for (int s = 0; s < slots; ++s) {
      q.queue.push_back(q.add_buffer());
      q.buf.back().pack(img.built[static_cast<std::size_t>(s)]);
      Panel().data().swap(img.built[static_cast<std::size_t>(s)].data());  // release the image's values early
    }
    q.spare = q.add_buffer();
  }
};

plexus::ParameterListPtr cannon_parameters() {
  auto p = Teuchos::rcp(new plexus::ParameterList("cannon"));
  plexus::declare_choice(
      *p, "FuseTicks", "auto", {"auto", "always", "never"},
      "where there are two ticks (V = 2: 2x1, 1x2 and 2x2 grids), multiply both in one pass once the one shift has "
      "arrived: C is read and written once instead of twice, and each C block sums in ascending k as on one rank, "
      "but the shift no longer overlaps the products, and by messages a local panel sent as tick 0's image is "
      "copied next to the received one (one image's memory more). auto: on 2x2 grids (no pre-shift then, and "
      "one shift instead of two); on 2x1 and 1x2 grids where the ring that moves is two processes on one node "
      "and SharedWindow is on, or else where the largest image on it holds at least 1 MiB. Other grids never "
      "fuse");
  plexus::declare_bool(
      *p, "SharedWindow", true,
      "fused ticks on a ring of two processes on one node exchange their images through an MPI shared-memory "
      "window instead of messages: each rank copies its image into its segment, and the local product reads the "
      "peer's where it is. The window holds the ring's largest image per rank and is kept across multiplies "
      "(plexus model counts the buffers of fused ticks by messages)");
  return p;
}

Fuse fuse_of(const std::string& s) { return s == "always" ? Fuse::Always : s == "never" ? Fuse::Never : Fuse::Auto; }

const plexus::PluginDescriptor& describe() {
  static const plexus::PluginDescriptor d = [] {
    plexus::PluginDescriptor p;
    p.name = "comm_cannon";
    p.version = "1.0.0";
    plexus::ComponentDescriptor c;
    c.kind = plexus::ComponentKind::Comm;
    c.name = "cannon";
    c.summary =
        "Cannon's algorithm as in DBCSR: virtual grid V = lcm(PR,PC), pre-shift, V ticks of double-buffered "
        "Isend/Irecv of A (left) and B (up) images overlapping the local multiply; the two ticks of a 2x1, 1x2 or "
        "2x2 grid fused into one pass (FuseTicks).";
    c.valid_parameters = cannon_parameters;
    c.make_comm = [](const plexus::ParameterList& params) {
      return std::make_unique<Cannon>(fuse_of(params.get<std::string>("FuseTicks")), params.get<bool>("SharedWindow"));
    };
    p.components.push_back(std::move(c));
    return p;
  }();
  return d;
}

}  // namespace

PLEXUS_PLUGIN(describe)
