#include "wire.hpp"

#include <algorithm>

#include "plexus/error.hpp"

namespace plexus::nboverlap {

void start_reduction(Transport& tr, const Panel& partial, const BlockLayout& layout, const std::vector<int>& rows,
                     MPI_Comm rrow, int root, const PartPlan& plan, Reduction& red, Role role) {
  const int np = mpi::size(rrow), me = mpi::rank(rrow);
  // The members' patterns: packed index words, gathered.
  std::vector<std::int64_t> words;
  partial.pack_index(words);
  const int mine = static_cast<int>(words.size());
  std::vector<int> counts(static_cast<std::size_t>(np)), displs(static_cast<std::size_t>(np), 0);
  mpi::check(MPI_Allgather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, rrow), "MPI_Allgather");
  for (int q = 1; q < np; ++q)
    displs[static_cast<std::size_t>(q)] =
        displs[static_cast<std::size_t>(q - 1)] + counts[static_cast<std::size_t>(q - 1)];
  CommBuffer<std::int64_t> all(static_cast<std::size_t>(displs.back() + counts.back()));
  const double t0 = mpi::now();
  mpi::check(
      MPI_Allgatherv(words.data(), mine, MPI_INT64_T, all.data(), counts.data(), displs.data(), MPI_INT64_T, rrow),
      "MPI_Allgatherv");
  tr.traffic().add_wait(role, mpi::now() - t0);
  for (int q = 0; q < np; ++q)
    if (q != me) {
      tr.traffic().add_sent(role, Payload::Index, 8 * std::int64_t{mine}, 1);
      tr.traffic().add_received(role, Payload::Index, 8 * std::int64_t{counts[static_cast<std::size_t>(q)]}, 1);
    }
  // The union, row by row (every member holds the same rows).
  std::vector<std::vector<int>> cols(rows.size());
  for (int q = 0; q < np; ++q) {
    const std::int64_t* w = all.data() + displs[static_cast<std::size_t>(q)];
    const PanelView v = PanelView::from_packed(w, counts[static_cast<std::size_t>(q)], nullptr);
    for (int r = 0; r < v.nrows; ++r)
      for (std::int64_t b = v.row_ptr[r]; b < v.row_ptr[r + 1]; ++b)
        cols[static_cast<std::size_t>(r)].push_back(static_cast<int>(v.cols[b]));
  }
  IndexArray row_ids(rows.begin(), rows.end()), row_ptr(1, 0), ucols, offsets;
  std::int64_t nvalues = 0;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    auto& c = cols[r];
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
    for (int col : c) {
      ucols.push_back(col);
      offsets.push_back(nvalues);
      nvalues += std::int64_t{layout.rows.size(rows[r])} * layout.cols.size(col);
    }
    row_ptr.push_back(static_cast<std::int64_t>(ucols.size()));
  }
  const Panel pattern = Panel::adopt(std::move(row_ids), std::move(row_ptr), std::move(ucols), std::move(offsets),
                                     MatrixData(static_cast<std::size_t>(nvalues), 0.0));
  red.sum.role = role;
  red.sum.fill(pattern, plan);  // index and zero values
  red.root = root;
  // My blocks on the union.
  red.mine.assign(static_cast<std::size_t>(nvalues), 0.0);
  const PanelView u = pattern.view(), v = partial.view();
  for (int r = 0; r < v.nrows; ++r) {
    std::int64_t ub = u.row_ptr[r];
    for (std::int64_t b = v.row_ptr[r]; b < v.row_ptr[r + 1]; ++b) {
      while (u.cols[ub] != v.cols[b]) ++ub;
      const std::int64_t n = std::int64_t{layout.rows.size(static_cast<int>(v.row_ids[r]))} *
                             layout.cols.size(static_cast<int>(v.cols[b]));
      std::copy(v.data + v.offsets[b], v.data + v.offsets[b] + n, red.mine.data() + u.offsets[ub]);
    }
  }
  for (int e = 1; e < red.sum.elements(); ++e) tr.reduce(red.mine, red.sum, e, rrow, root);
}

namespace {

// The header (sizes) and every element of w to dest, element e with request req[e]; ready(e) is
// waited before element e is sent.
void post(Transport& tr, const Wire& w, int dest, MPI_Comm comm, int tag, std::int64_t* header, MPI_Request* hreq,
          MPI_Request* req, const std::function<void(int)>& ready) {
  header[0] = static_cast<std::int64_t>(w.index.size());
  header[1] = static_cast<std::int64_t>(w.values.size());
  mpi::check(MPI_Isend(header, 2, MPI_INT64_T, dest, kTagHeader + tag, comm, hreq), "MPI_Isend");
  tr.traffic().add_sent(w.role, Payload::Index, 16, 1);
  for (int e = 0; e < w.elements(); ++e) {
    if (ready) ready(e);
    tr.send_to(w, e, dest, comm, tag, &req[e]);
  }
}

}  // namespace

void send_panel(Transport& tr, Wire& w, int dest, MPI_Comm comm, int tag, std::int64_t* header, MPI_Request* hreq,
                const std::function<void(int)>& ready) {
  post(tr, w, dest, comm, tag, header, hreq, w.req.data(), ready);
}

void recv_panel(Transport& tr, Wire& w, int src, MPI_Comm comm, int tag, const PartPlan& plan) {
  std::int64_t header[2] = {0, 0};
  const double t0 = mpi::now();
  mpi::check(MPI_Recv(header, 2, MPI_INT64_T, src, kTagHeader + tag, comm, MPI_STATUS_IGNORE), "MPI_Recv");
  tr.traffic().add_wait(w.role, mpi::now() - t0);
  tr.traffic().add_received(w.role, Payload::Index, 16, 1);
  w.size(header[0], header[1], plan);
  for (int e = 0; e < w.elements(); ++e) tr.recv(w, e, src, comm, tag);
}

void wait_header(MPI_Request* r) { mpi::check(MPI_Wait(r, MPI_STATUS_IGNORE), "MPI_Wait"); }

void post_panel(Transport& tr, const Wire& w, int dest, MPI_Comm comm, int tag, Outgoing& o,
                const std::function<void(int)>& ready) {
  o.req.assign(static_cast<std::size_t>(w.elements()), MPI_REQUEST_NULL);
  post(tr, w, dest, comm, tag, o.header, &o.hreq, o.req.data(), ready);
}

void finish_panel(Transport& tr, const Wire& w, Outgoing& o) {
  for (auto& r : o.req) tr.wait(&r, w.role);
  wait_header(&o.hreq);
}

}  // namespace plexus::nboverlap
