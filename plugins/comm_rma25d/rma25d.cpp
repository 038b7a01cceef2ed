// The 2.5D multiply with MPI one-sided communication (Lazzaro, VandeVondele, Hutter, Schuett,
// PASC'17, Algorithm 2), on the unchanged 2D layout of A and B.
//
// Geometry. The PR x PC grid is cut into groups of sr x sc processes that together compute the
// sr*sc = L C panels of the group: square grids sr = sc = sqrt(L); a wide grid (PC > PR) has
// sr = 1, sc = L = PC/PR; a tall one sr = L, sc = 1. The k dimension is cut into
// G = lcm(lcm(PR,PC), L) k-groups (each inside one process column of A); group member ell takes
// the groups g = ell (mod L): T = G/L ticks. In a tick the member fetches with MPI_Rget the sr
// A panels A(r0+i, g) and the sc B panels B(g, c0+j) and multiplies every pair into its L partial
// C panels. At the end the L-1 partial panels that belong to other members go to them
// (Isend/Irecv), and each member adds the partial panels it receives to its own. The group is
// the fibre of the grid's layered view (Grid::layered(sr, sc)): its communicator comes from the
// grid's pool; the strategy owns no communicator.
//
// Volume per process (data): sum over its ticks of sr*|A(., g)| + sc*|B(g, .)|, plus (L-1)
// partial C panels. For dense matrices on a square grid this is Equation (7) of the paper,
// V/sqrt(L)*(S_A+S_B) + (L-1)*S_C; on a non-square grid it is V/L*(S_A+S_B) + (L-1)*S_C.
//
// Buffers: the windows (copies of the local A and B panels), 2 A fetch buffers (A panels
// stream through them), B: 2 sets of sc panels when sr = 1 or sc = 1, else sc single panels;
// L-1 partial C panels and one receive buffer. That is L+6 panels on a non-square grid and
// L+sqrt(L)+4 on a square one, the paper's counts.
//
// Windows and their buffers live in the strategy object and are reused by later multiplies;
// they are re-created only when a panel outgrows its buffer on some rank, which is decided by an
// MPI_Iallreduce overlapped with the set-up. Passive target: MPI_Win_lock_all once.
#include <algorithm>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "plexus/error.hpp"
#include "plexus/log.hpp"
#include "plexus/memory.hpp"
#include "plexus/mpi.hpp"
#include "plexus/multiply.hpp"
#include "plexus/multiply_support.hpp"
#include "plexus/plugin.hpp"
#include "plexus/progress.hpp"
#include "rma25d_schedule.hpp"
#include "rma25d_windows.hpp"

namespace plexus_rma25d {  // plexus's names used here are declared in rma25d_windows.hpp

constexpr int kTagCIndex = 7201, kTagCData = 7202;

class Rma25d final : public plexus::CommStrategy {
 public:
  Rma25d(int layers, bool strict) : layers_(layers), strict_(strict) {}
  ~Rma25d() override {
    a_win_.free_windows();
    b_win_.free_windows();
  }
  std::string name() const override { return "rma25d"; }

  Panel run(plexus::MultiplyTask& task) override {
    const DistMatrix &A = task.a(), &B = task.b(), &C = task.c();
    const auto& grid = A.grid();
    const Geometry geo = make_geometry(grid.nprows(), grid.npcols(), grid.myprow(), grid.mypcol(),
                                       layers_for(grid.nprows(), grid.npcols(), grid.rank()), A.distribution().col_dist());
    MPI_Comm comm = grid.comm();
    // My group is the fibre of the grid's layered view (member q has rank q); its communicators
    // come from the grid's pool, made once per shape and freed with the pool, never here.
    const auto view = grid.layered(geo.sr, geo.sc);

    // Set-up: stage the pieces of A and B, and decide with a non-blocking reduction, overlapped
    // with the rest of the set-up, whether windows must grow.
    Staged sa = stage(A, geo, true), sb = stage(B, geo, false);
    // A communicator other than the windows' (or theirs freed since: a handle that MPI hands out
    // again does not count as theirs). Decided together all the same, as a rank's sizes may not.
    const bool new_comm = !window_comm_.is(comm);
    int renew = (new_comm || sa.words > static_cast<std::int64_t>(a_win_.index.size()) ||
                 sa.values_total > static_cast<std::int64_t>(a_win_.data.size()) ||
                 sb.words > static_cast<std::int64_t>(b_win_.index.size()) ||
                 sb.values_total > static_cast<std::int64_t>(b_win_.data.size()))
                    ? 1
                    : 0;
    MPI_Request grow_req = MPI_REQUEST_NULL;
    plexus::mpi::check(MPI_Iallreduce(MPI_IN_PLACE, &renew, 1, MPI_INT, MPI_MAX, comm, &grow_req), "MPI_Iallreduce");

    // Rows of the C panels of my group, per process row r0 + i.
    std::vector<std::vector<int>> rows_of(static_cast<std::size_t>(geo.sr));
    for (int i = 0; i < static_cast<int>(C.distribution().row_dist().size()); ++i) {
      const int r = C.distribution().row_dist()[static_cast<std::size_t>(i)] - geo.r0;
      if (r >= 0 && r < geo.sr) rows_of[static_cast<std::size_t>(r)].push_back(i);
    }

    plexus::mpi::check(MPI_Wait(&grow_req, MPI_STATUS_IGNORE), "MPI_Wait");
    if (renew) {
      a_win_.create(comm, sa.words, sa.values_total);
      b_win_.create(comm, sb.words, sb.values_total);
      window_comm_.watch(comm);
      ++window_creations_;
    }
    // Expose: copy the pieces into the windows, then publish the directory (non-blocking).
    std::vector<std::int64_t> mine = expose(sa, A.layout(), a_win_);
    std::vector<std::int64_t> mine_b = expose(sb, B.layout(), b_win_);
    mine.insert(mine.end(), mine_b.begin(), mine_b.end());
    for (MPI_Win w : {a_win_.win_index(), a_win_.win_data(), b_win_.win_index(), b_win_.win_data()})
      plexus::mpi::check(MPI_Win_sync(w), "MPI_Win_sync");
    Directory dir;
    dir.G = geo.G;
    dir.words.resize(static_cast<std::size_t>(grid.size()) * mine.size());
    MPI_Request dir_req = MPI_REQUEST_NULL;
    plexus::mpi::check(MPI_Iallgather(mine.data(), static_cast<int>(mine.size()), MPI_INT64_T, dir.words.data(),
                                      static_cast<int>(mine.size()), MPI_INT64_T, comm, &dir_req),
                       "MPI_Iallgather");

    // Meanwhile: the accumulators. My own panel starts from beta*C; the other L-1 start empty.
    const int me = (geo.pr - geo.r0) * geo.sc + (geo.pc - geo.c0);
    std::vector<plexus::LocalProduct*> products;
    for (int i = 0; i < geo.sr; ++i)
      for (int j = 0; j < geo.sc; ++j)
        products.push_back(i * geo.sc + j == me ? &task.c_accumulator()
                                                : &task.partial_accumulator(rows_of[static_cast<std::size_t>(i)]));
    plexus::mpi::check(MPI_Wait(&dir_req, MPI_STATUS_IGNORE), "MPI_Wait");

    Traffic traffic;
    const Capacities cap = capacities(geo, dir);
    // Ticks; each partial panel of another member is sent as soon as it is final.
    Reducer reducer(geo, C.layout(), me, view->fibre_comm());
    run_ticks(geo, dir, cap, A, B, products, traffic, [&](int q) {
      if (q != me) reducer.send(q, products[static_cast<std::size_t>(q)]->finish());
    });
    // Windows and fetch buffers, at their peak (they are freed before the reduction).
    const std::int64_t tick_buffers = plexus::memory::peak(plexus::memory::Category::CommBuffer);
    ReduceBuffers reduced;
    Panel result = reducer.finish(products[static_cast<std::size_t>(me)]->finish(), traffic, reduced);
    task.traffic().absorb(traffic);

    plexus::MultiplyReport& report = task.report();
    report.ticks = geo.T;
    // The paper's buffer footprint: every buffer counted as allocated (the receive buffer is
    // allocated after the fetch buffers are freed, so the simultaneous peak, peak_buffer_bytes, is lower).
    const std::int64_t measured_buffers = tick_buffers + reduced.partial_bytes + reduced.receive_bytes;
    const Prediction pred =
        predict(geo, dir, cap,
                Sizes{static_cast<std::int64_t>(a_win_.data.size() + b_win_.data.size()),
                      static_cast<std::int64_t>(a_win_.index.size() + b_win_.index.size()), result.data_size(),
                      PanelView::packed_words(result.nrows(), result.nblocks())});
    report.extra["layers"] = geo.L;
    report.extra["k_groups"] = geo.G;
    report.extra["window_creations"] = window_creations_;
    report.extra["predicted_bytes_a"] = static_cast<double>(pred.bytes_a);
    report.extra["predicted_bytes_b"] = static_cast<double>(pred.bytes_b);
    report.extra["predicted_bytes_c"] = static_cast<double>(pred.bytes_c);
    report.extra["predicted_buffer_values_bytes"] = static_cast<double>(pred.buffer_values_bytes);
    report.extra["predicted_buffer_bytes"] = static_cast<double>(pred.buffer_bytes);
    report.extra["measured_buffer_bytes"] = static_cast<double>(measured_buffers);
    report.extra["predicted_bytes_received"] = static_cast<double>(pred.bytes_a + pred.bytes_b + pred.bytes_c);
    return result;
  }

 private:
  // Layers for this grid: the requested L if the paper allows it, else 1 (with a warning) or an
  // error with StrictLayers.
  int layers_for(int PR, int PC, int rank) {
    const auto valid = valid_layers(PR, PC);
    if (std::find(valid.begin(), valid.end(), layers_) != valid.end()) return layers_;
    const std::string msg = "Layers=" + std::to_string(layers_) + " is not valid on the " + std::to_string(PR) + "x" +
                            std::to_string(PC) + " grid (valid: " + list_of(valid) + ")";
    if (strict_) throw plexus::InputError("Communication/rma25d/Layers", msg + "; StrictLayers=true");
    if (!warned_ && rank == 0) plexus::log().warn("rma25d: {}; using Layers=1", msg);  // the same on every rank
    warned_ = true;
    return 1;
  }

  struct Capacities {
    std::int64_t a_words = 0, a_values = 0;  // one A fetch buffer
    std::int64_t b_words = 0, b_values = 0;  // one B set (sc panels when double-buffered, else one panel)
  };

  // The largest A panel and B set any rank will fetch, from the directory.
  static Capacities capacities(const Geometry& geo, const Directory& dir) {
    Capacities c;
    for (int g = 0; g < geo.G; ++g) {
      for (int r = 0; r < geo.PR; ++r) {
        const auto f = a_fetches(geo, dir, r, g);
        c.a_words = std::max(c.a_words, words_of(f));
        c.a_values = std::max(c.a_values, values_of(f));
      }
      // A B set: the sc panels of one group of columns, or one panel.
      const int width = geo.b_double_buffered() ? geo.sc : 1;
      for (int c0 = 0; c0 < geo.PC; c0 += width) {
        std::int64_t w = 0, v = 0;
        for (int j = 0; j < width; ++j) {
          const auto f = b_fetches(geo, dir, g, c0 + j);
          w += words_of(f);
          v += values_of(f);
        }
        c.b_words = std::max(c.b_words, w);
        c.b_values = std::max(c.b_values, v);
      }
    }
    return c;
  }

  // T ticks; in each, the sr A panels stream through two buffers (the next one is fetched while
  // the current one is multiplied) against the tick's sc B panels.
  // In the last tick my own panel's products come last and on_final(q) is called as soon as
  // panel q has all its products, so the partial panels travel while my own is multiplied.
  void run_ticks(const Geometry& geo, const Directory& dir, const Capacities& cap, const DistMatrix& A,
                 const DistMatrix& B, const std::vector<plexus::LocalProduct*>& products,
                 Traffic& traffic, const std::function<void(int)>& on_final) const {
    const int i_me = geo.pr - geo.r0, j_me = geo.pc - geo.c0;
    // The fetches in flight progress while the products run (without a hardware RDMA path, an
    // MPI_Rget moves only inside MPI calls, the target's included).
    const plexus::ProgressScope progress(products, [&traffic] {
      traffic.test(Role::A);
      traffic.test(Role::B);
    });
    auto ordered = [](int n, int last, bool move_last) {
      std::vector<int> order;
      for (int x = 0; x < n; ++x)
        if (!move_last || x != last) order.push_back(x);
      if (move_last) order.push_back(last);
      return order;
    };
    const std::vector<int> rows_plain = ordered(geo.sr, i_me, false), rows_last = ordered(geo.sr, i_me, true);
    const std::vector<int> cols_plain = ordered(geo.sc, j_me, false), cols_last = ordered(geo.sc, j_me, true);
    auto row_of_step = [&](int step) {
      const int t = step / geo.sr;
      return (t + 1 == geo.T ? rows_last : rows_plain)[static_cast<std::size_t>(step % geo.sr)];
    };
    const Exposed& aw = a_win_;
    const Exposed& bw = b_win_;
    std::vector<FetchBuffer> abuf(2), bset(static_cast<std::size_t>(geo.b_double_buffered() ? 2 : geo.sc));
    for (auto& b : abuf) {
      b.index.resize(static_cast<std::size_t>(std::max<std::int64_t>(cap.a_words, 1)));
      b.data.resize(static_cast<std::size_t>(std::max<std::int64_t>(cap.a_values, 1)));
    }
    for (auto& b : bset) {
      b.index.resize(static_cast<std::size_t>(std::max<std::int64_t>(cap.b_words, 1)));
      b.data.resize(static_cast<std::size_t>(std::max<std::int64_t>(cap.b_values, 1)));
    }
    std::vector<int> a_pieces(2, 0);
    std::vector<std::vector<int>> b_pieces(bset.size());
    // Fetches the B panels of tick t: into set t%2 (double-buffered) or panel j into buffer j.
    auto fetch_b = [&](int t) {
      const int g = geo.group_of_tick(t);
      if (geo.b_double_buffered()) {
        FetchBuffer& set = bset[static_cast<std::size_t>(t % 2)];
        std::int64_t wpos = 0, vpos = 0;
        auto& counts = b_pieces[static_cast<std::size_t>(t % 2)];
        counts.clear();
        for (int j = 0; j < geo.sc; ++j) {
          const auto f = b_fetches(geo, dir, g, geo.c0 + j);
          post_fetch(f, bw, Role::B, set, wpos, vpos, traffic);
          counts.push_back(static_cast<int>(f.size()));
        }
      } else {
        for (int j = 0; j < geo.sc; ++j) {
          std::int64_t wpos = 0, vpos = 0;
          const auto f = b_fetches(geo, dir, g, geo.c0 + j);
          post_fetch(f, bw, Role::B, bset[static_cast<std::size_t>(j)], wpos, vpos, traffic);
          b_pieces[static_cast<std::size_t>(j)] = {static_cast<int>(f.size())};
        }
      }
    };
    auto fetch_a = [&](int step) {
      const int t = step / geo.sr, i = row_of_step(step);
      FetchBuffer& buf = abuf[static_cast<std::size_t>(step % 2)];
      std::int64_t wpos = 0, vpos = 0;
      const auto f = a_fetches(geo, dir, geo.r0 + i, geo.group_of_tick(t));
      post_fetch(f, aw, Role::A, buf, wpos, vpos, traffic);
      a_pieces[static_cast<std::size_t>(step % 2)] = static_cast<int>(f.size());
    };

    const int steps = geo.T * geo.sr;
    fetch_b(0);
    fetch_a(0);
    std::vector<const std::vector<PanelView>*> b_views(static_cast<std::size_t>(geo.sc));
    for (int step = 0; step < steps; ++step) {
      const int t = step / geo.sr, i = row_of_step(step);
      const bool first_of_tick = step % geo.sr == 0, last_of_tick = step % geo.sr == geo.sr - 1;
      const bool last_tick = t + 1 == geo.T;
      traffic.waitall(Role::A);
      FetchBuffer& a = abuf[static_cast<std::size_t>(step % 2)];
      make_views(a, {a_pieces[static_cast<std::size_t>(step % 2)]});
      if (first_of_tick) {
        traffic.waitall(Role::B);
        if (geo.b_double_buffered()) {
          FetchBuffer& set = bset[static_cast<std::size_t>(t % 2)];
          make_views(set, b_pieces[static_cast<std::size_t>(t % 2)]);
          for (int j = 0; j < geo.sc; ++j) b_views[static_cast<std::size_t>(j)] = &set.panels[static_cast<std::size_t>(j)];
          if (t + 1 < geo.T) fetch_b(t + 1);  // into the other set, overlapping this tick
        } else {
          for (int j = 0; j < geo.sc; ++j) {
            make_views(bset[static_cast<std::size_t>(j)], b_pieces[static_cast<std::size_t>(j)]);
            b_views[static_cast<std::size_t>(j)] = &bset[static_cast<std::size_t>(j)].panels[0];
          }
        }
      }
      if (step + 1 < steps) fetch_a(step + 1);  // into the other A buffer, overlapping this step
      for (int j : (last_tick && i == i_me ? cols_last : cols_plain)) {
        auto& product = *products[static_cast<std::size_t>(i * geo.sc + j)];
        for (const PanelView& ap : a.panels[0])
          for (const PanelView& bp : *b_views[static_cast<std::size_t>(j)]) product.multiply(ap, A.layout(), bp, B.layout());
        if (last_tick) on_final(i * geo.sc + j);
      }
      // Single-buffered B: the next tick's panels are fetched once this tick's are used.
      if (!geo.b_double_buffered() && last_of_tick && !last_tick) fetch_b(t + 1);
    }
  }

  struct ReduceBuffers {
    std::int64_t partial_bytes = 0;  // the L-1 partial panels sent away (values and packed index)
    std::int64_t receive_bytes = 0;  // the receive buffer (values and index words)
  };

  // The reduction of partial C panels to their owners: send() as each panel is final, then
  // finish() receives the partials of my panel into one buffer and adds them.
  class Reducer {
   public:
    // group: the members of my group, member q (the owner of panel q) being rank q.
    Reducer(const Geometry& geo, const plexus::BlockLayout& layout, int me, MPI_Comm group)
        : geo_(geo), layout_(layout), me_(me), comm_(group), partial_(geo.L), index_(geo.L) {}

    int owner(int q) const { return q; }

    void send(int q, Panel p) {
      const MPI_Comm comm = comm_;
      auto& idx = index_[static_cast<std::size_t>(q)];
      p.pack_index(idx);
      held_.partial_bytes += 8 * (p.data_size() + static_cast<std::int64_t>(idx.size()));
      partial_[static_cast<std::size_t>(q)] = std::move(p);
      const Panel& kept = partial_[static_cast<std::size_t>(q)];
      // Waited for only in finish(): a rank that waited for its sends before receiving would
      // wait for ranks doing the same.
      sends_.isend(idx.data(), static_cast<std::int64_t>(idx.size()), MPI_INT64_T, owner(q), kTagCIndex, comm, Role::C,
                   Payload::Index);
      sends_.isend(kept.data().data(), kept.data_size(), MPI_DOUBLE, owner(q), kTagCData, comm, Role::C, Payload::Data);
    }

    // Returns my panel with the partial panels of the other members added; `held` gets the sizes.
    Panel finish(Panel mine, Traffic& traffic, ReduceBuffers& held) {
      const MPI_Comm comm = comm_;
      std::vector<int> members;
      for (int q = 0; q < geo_.L; ++q)
        if (q != me_) members.push_back(owner(q));
      if (!members.empty()) {
        // One receive buffer, sized for the largest partial panel sent to me.
        std::vector<int> words(members.size()), values(members.size());
        for (std::size_t m = 0; m < members.size(); ++m) {
          MPI_Status st;
          plexus::mpi::check(MPI_Probe(members[m], kTagCIndex, comm, &st), "MPI_Probe");
          plexus::mpi::check(MPI_Get_count(&st, MPI_INT64_T, &words[m]), "MPI_Get_count");
          plexus::mpi::check(MPI_Probe(members[m], kTagCData, comm, &st), "MPI_Probe");
          plexus::mpi::check(MPI_Get_count(&st, MPI_DOUBLE, &values[m]), "MPI_Get_count");
        }
        CommBuffer<std::int64_t> rindex(static_cast<std::size_t>(std::max(1, *std::max_element(words.begin(), words.end()))));
        CommBuffer<double> rdata(static_cast<std::size_t>(std::max(1, *std::max_element(values.begin(), values.end()))));
        held_.receive_bytes = 8 * static_cast<std::int64_t>(rindex.size() + rdata.size());
        for (std::size_t m = 0; m < members.size(); ++m) {
          traffic.irecv(rindex.data(), static_cast<std::int64_t>(rindex.size()), MPI_INT64_T, members[m], kTagCIndex,
                        comm, Role::C, Payload::Index);
          traffic.irecv(rdata.data(), static_cast<std::int64_t>(rdata.size()), MPI_DOUBLE, members[m], kTagCData, comm,
                        Role::C, Payload::Data);
          traffic.waitall(Role::C);
          const PanelView v = PanelView::from_packed(rindex.data(), words[m], rdata.data());
          mine = plexus::add_panels(mine.view(), 1.0, v, 1.0, layout_);
        }
      }
      sends_.waitall(Role::C);
      traffic.absorb(sends_);
      held = held_;
      return mine;
    }

   private:
    const Geometry& geo_;
    const plexus::BlockLayout& layout_;
    int me_;
    MPI_Comm comm_;
    Traffic sends_;
    std::vector<Panel> partial_;
    std::vector<std::vector<std::int64_t>> index_;
    ReduceBuffers held_;
  };

  struct Prediction {
    std::int64_t bytes_a = 0, bytes_b = 0, bytes_c = 0;  // data bytes received (A, B) and sent (C)
    std::int64_t buffer_values_bytes = 0;  // the model's buffers, values only
    std::int64_t buffer_bytes = 0;         // with index, as the memory tracker counts them
  };

  // Sizes the prediction needs besides the schedule: the windows and the C panel (S_C).
  struct Sizes {
    std::int64_t window_values = 0, window_words = 0;  // both windows together
    std::int64_t c_values = 0, c_words = 0;            // S_C, values and packed index words
  };

  // The same schedule, summed instead of executed. The model takes every partial C panel to be
  // the size of this rank's final C panel (the paper's S_C).
  static Prediction predict(const Geometry& geo, const Directory& dir, const Capacities& cap, const Sizes& z) {
    Prediction p;
    for (int t = 0; t < geo.T; ++t) {
      const int g = geo.group_of_tick(t);
      for (int i = 0; i < geo.sr; ++i) p.bytes_a += 8 * values_of(a_fetches(geo, dir, geo.r0 + i, g));
      for (int j = 0; j < geo.sc; ++j) p.bytes_b += 8 * values_of(b_fetches(geo, dir, g, geo.c0 + j));
    }
    p.bytes_c = 8 * (geo.L - 1) * z.c_values;
    const int nb = geo.b_double_buffered() ? 2 : geo.sc;
    const std::int64_t c_buffers = geo.L > 1 ? geo.L : 0;  // L-1 partial panels and one receive buffer
    p.buffer_values_bytes = 8 * (z.window_values + 2 * std::max<std::int64_t>(cap.a_values, 1) +
                                 nb * std::max<std::int64_t>(cap.b_values, 1) + c_buffers * z.c_values);
    p.buffer_bytes = p.buffer_values_bytes + 8 * (z.window_words + 2 * std::max<std::int64_t>(cap.a_words, 1) +
                                                  nb * std::max<std::int64_t>(cap.b_words, 1) + c_buffers * z.c_words);
    return p;
  }

 public:
  // Dry run: every rank's panels spread evenly over the k-groups, B aligned with A (the piece of
  // k-group g of B column c on process row g mod PR), values only.
  std::optional<plexus::ModelPrediction> model(const plexus::ModelSpec& spec, int prow, int pcol) const override {
    const int PR = spec.nprows, PC = spec.npcols;
    const auto valid = valid_layers(PR, PC);
    const bool ok = std::find(valid.begin(), valid.end(), layers_) != valid.end();
    const int L = ok ? layers_ : 1;
    const int G = std::lcm(std::lcm(PR, PC), L);
    std::vector<int> cdist(static_cast<std::size_t>(G));
    for (int k = 0; k < G; ++k) cdist[static_cast<std::size_t>(k)] = k % PC;  // one k index per k-group
    const Geometry geo = make_geometry(PR, PC, prow, pcol, L, cdist);
    Directory dir;
    dir.G = G;
    dir.words.assign(static_cast<std::size_t>(PR) * PC * 2 * G * kPieceWords, 0);
    const std::int64_t a_piece = spec.bytes_a / 8 * PC / G, b_piece = spec.bytes_b / 8 * PR / G;
    for (int r = 0; r < PR; ++r)
      for (int c = 0; c < PC; ++c)
        for (int k = 0; k < G; ++k) {
          const int g = geo.kgroup[static_cast<std::size_t>(k)];
          auto* w = dir.words.data() + (static_cast<std::int64_t>(geo.rank(r, c)) * 2 * G) * kPieceWords;
          if (k % PC == c) w[static_cast<std::size_t>(g * kPieceWords + 3)] = a_piece;
          if (k % PR == r) w[static_cast<std::size_t>((G + g) * kPieceWords + 3)] = b_piece;
        }
    const Prediction p = predict(geo, dir, capacities(geo, dir),
                                 Sizes{(spec.bytes_a + spec.bytes_b) / 8, 0, spec.bytes_c / 8, 0});
    plexus::ModelPrediction m;
    m.ticks = geo.T;
    m.bytes_a = p.bytes_a;
    m.bytes_b = p.bytes_b;
    m.bytes_c = p.bytes_c;
    m.buffer_bytes = p.buffer_values_bytes;
    m.note = "L=" + std::to_string(L) + (ok ? "" : " (Layers=" + std::to_string(layers_) + " invalid here)");
    return m;
  }

 private:
  int layers_;
  bool strict_;
  bool warned_ = false;
  plexus::mpi::CommWatch window_comm_;  // the communicator the windows were made over, while it lives
  int window_creations_ = 0;
  Exposed a_win_, b_win_;
};

plexus::ParameterListPtr rma25d_parameters() {
  auto p = Teuchos::rcp(new plexus::ParameterList("rma25d"));
  plexus::declare_int(*p, "Layers", 1,
                      "L, the number of layers: on a square grid a perfect square whose root divides PR; on a "
                      "non-square grid max/min of the grid dimensions (when max is a multiple of min and at most "
                      "min^2). An invalid L falls back to 1 with a warning naming the valid values",
                      1, 1 << 20);
  plexus::declare_bool(*p, "StrictLayers", false, "an invalid Layers is an error instead of a fallback to 1");
  return p;
}

const plexus::PluginDescriptor& describe() {
  static const plexus::PluginDescriptor d = [] {
    plexus::PluginDescriptor p;
    p.name = "comm_rma25d";
    p.version = "1.0.0";
    plexus::ComponentDescriptor c;
    c.kind = plexus::ComponentKind::Comm;
    c.name = "rma25d";
    c.summary =
        "DBCSR's 2.5D multiply (PASC'17): A and B stay in their 2D layout, exposed through MPI windows reused "
        "across multiplies; panels fetched with MPI_Rget under MPI_Win_lock_all; L layers, L-1 partial C panels "
        "reduced to their owners with point-to-point messages.";
    c.valid_parameters = rma25d_parameters;
    c.make_comm = [](const plexus::ParameterList& params) {
      return std::make_unique<Rma25d>(params.get<int>("Layers"), params.get<bool>("StrictLayers"));
    };
    p.components.push_back(std::move(c));
    return p;
  }();
  return d;
}

}  // namespace plexus_rma25d

PLEXUS_PLUGIN(plexus_rma25d::describe)
