#pragma once
// The transport of the rma25d strategy: the MPI windows that expose a rank's A and B pieces, the
// fetch buffers, and the MPI_Rget of the fetches that the schedule (rma25d_schedule.hpp) lists.
// The algorithm is explained at the top of rma25d.cpp.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "plexus/matrix.hpp"
#include "plexus/memory.hpp"
#include "plexus/mpi.hpp"
#include "plexus/panel.hpp"
#include "plexus/progress.hpp"
#include "rma25d_schedule.hpp"

namespace plexus_rma25d {

using plexus::CommBuffer;
using plexus::DistMatrix;
using plexus::Panel;
using plexus::PanelView;
using plexus::mpi::Payload;
using plexus::mpi::Role;
using plexus::mpi::Traffic;

// A fetch buffer and the views of the pieces it holds.
struct FetchBuffer {
  CommBuffer<std::int64_t> index;
  CommBuffer<double> data;
  std::vector<std::vector<PanelView>> panels;  // per panel held, its pieces
  std::vector<std::pair<std::int64_t, std::int64_t>> placed;  // (word offset, value offset) of each piece
};

// Memory MPI allocates for a window (MPI_Win_allocate), counted as a communication buffer.
template <class T>
struct WindowBuffer {
  T* ptr = nullptr;
  std::int64_t count = 0;
  MPI_Win win = MPI_WIN_NULL;
  std::size_t size() const { return static_cast<std::size_t>(count); }
  T* data() const { return ptr; }
  void create(MPI_Comm comm, std::int64_t n) {
    free();
    n = std::max<std::int64_t>(n, 1);
    plexus::mpi::check(MPI_Win_allocate(static_cast<MPI_Aint>(n * static_cast<std::int64_t>(sizeof(T))),
                                        sizeof(T), MPI_INFO_NULL, comm, &ptr, &win),
                       "MPI_Win_allocate");
    count = n;
    plexus::memory::on_allocate(plexus::memory::Category::CommBuffer, static_cast<std::size_t>(n) * sizeof(T));
    plexus::mpi::check(MPI_Win_lock_all(MPI_MODE_NOCHECK, win), "MPI_Win_lock_all");
  }
  void free() {
    if (win == MPI_WIN_NULL) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    // MPI_Win_free is collective: never while the stack unwinds (the other ranks may be inside a
    // multiply and never join it); the window is then left to the end of the process.
    if (!finalized && !plexus::progress::unwinding()) {
      MPI_Win_unlock_all(win);
      MPI_Win_free(&win);
    }
    plexus::memory::on_release(plexus::memory::Category::CommBuffer, static_cast<std::size_t>(count) * sizeof(T));
    win = MPI_WIN_NULL;
    ptr = nullptr;
    count = 0;
  }
};

// A matrix's local panel, grouped by k-group into pieces, exposed through two windows (index
// words and values), created once and reused while the pieces fit.
struct Exposed {
  WindowBuffer<std::int64_t> index;
  WindowBuffer<double> data;
  MPI_Win win_index() const { return index.win; }
  MPI_Win win_data() const { return data.win; }
  void free_windows() {
    index.free();
    data.free();
  }
  void create(MPI_Comm comm, std::int64_t words, std::int64_t values) {
    free_windows();
    index.create(comm, words);
    data.create(comm, values);
  }
};

// The pieces of a local panel by k-group (rows with blocks only), before they go to the window:
// which of the panel's blocks each piece holds, in (row, col) order, and the piece's size. The
// values stay where they are until expose() copies them into the window, once.
struct Staged {
  PanelView panel;  // the local panel (its matrix outlives the multiply)
  std::vector<std::vector<std::int64_t>> blocks;  // per k-group: the panel's blocks
  std::vector<std::vector<int>> block_rows;       // per k-group: each block's CSR row in the panel
  std::vector<std::int64_t> rows, values;         // per k-group: its rows and values
  std::int64_t words = 0, values_total = 0;       // of every piece together, packed
};

Staged stage(const DistMatrix& M, const Geometry& geo, bool is_a);

// Writes the staged pieces into the window buffers (each piece's packed index and its values);
// returns this rank's directory entries.
std::vector<std::int64_t> expose(const Staged& s, const plexus::BlockLayout& layout, Exposed& e);

// Posts the Rgets of `fetches` into `buf`, the pieces appended after what it holds (wpos and vpos:
// the word and value offsets where the next piece goes, advanced past each).
void post_fetch(const std::vector<Fetch>& fetches, const Exposed& e, Role role, FetchBuffer& buf, std::int64_t& wpos,
                std::int64_t& vpos, Traffic& traffic);

// After the Rgets completed: the views of the pieces, grouped per panel (counts per panel).
void make_views(FetchBuffer& buf, const std::vector<int>& pieces_per_panel);

}  // namespace plexus_rma25d
