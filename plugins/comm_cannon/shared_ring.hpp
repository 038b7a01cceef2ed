#pragma once
// Fused ticks on a ring of two processes on one node (cannon.cpp, SharedWindow): the two tick-0
// images meet in one MPI shared-memory window instead of travelling as messages. Each rank copies
// its image into its own segment; the segments lie one after the other, so the local product reads
// both images where they are, as one value area. A message carries each image's index (or nothing,
// where both indices are known from the last multiply), and it tells the peer that the segment is
// written. The window is made once per ring and size, kept across multiplies, and freed with the
// strategy.
#include <mpi.h>
#include <spdlog/fmt/fmt.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "plexus/log.hpp"
#include "plexus/memory.hpp"
#include "plexus/mpi.hpp"
#include "plexus/progress.hpp"

namespace plexus::cannon {

class SharedRing {
 public:
  SharedRing() = default;
  ~SharedRing() { free(); }
  SharedRing(const SharedRing&) = delete;
  SharedRing& operator=(const SharedRing&) = delete;

  // Whether the window serves `ring` with segments of at least `values` values: the communicator
  // it was made over, still alive (a handle that MPI hands out again for another one does not
  // match, since the freed one's attribute told this ring it is gone).
  bool fits(MPI_Comm ring, std::int64_t values) const {
    return win_ != MPI_WIN_NULL && comm_.is(ring) && capacity_ >= values;
  }
  // Whether `ring` is two processes on one node that can share a window: MPI_Comm_split_type, and
  // then a window of one value made and freed, since MPI may be unable to make one although the
  // processes share a node (Open MPI with only its UCX one-sided component, OMPI_MCA_osc=ucx:
  // MPI_ERR_INTERN). Collective over the ring the first time a communicator is asked about, so
  // its ranks must ask together. The answer is kept as an attribute of the communicator, not by
  // its handle: a handle that MPI hands out again for another communicator, on one rank of a ring
  // and not the other, would otherwise leave one rank asking alone (a hang).
  static bool shares_node(MPI_Comm ring) {
    int* answer = nullptr;
    int found = 0;
    mpi::check(MPI_Comm_get_attr(ring, node_key(), &answer, &found), "MPI_Comm_get_attr");
    if (found != 0) return *answer != 0;
    bool together = false;
    if (mpi::size(ring) == 2) {
      MPI_Comm node = MPI_COMM_NULL;
      mpi::check(MPI_Comm_split_type(ring, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
      together = mpi::size(node) == 2;
      mpi::check(MPI_Comm_free(&node), "MPI_Comm_free");
    }
    if (together) {
      MPI_Win probe = MPI_WIN_NULL;
      double* mine = nullptr;
      together = allocate(ring, 1, &mine, &probe);
      if (together) mpi::check(MPI_Win_free(&probe), "MPI_Win_free");
    }
    remember(ring, together);
    return together;
  }
  // Makes the window over `ring` with segments of `values` values (a larger one than a window it
  // replaces). Collective over the ring, whose ranks must call it together. false, and no window,
  // where the ring shares no window (shares_node()), MPI cannot make this one, or its segments do
  // not make one area (the latter two remembered by shares_node(), as both ranks see them alike).
  bool create(MPI_Comm ring, std::int64_t values) {
    free();
    if (!shares_node(ring)) return false;
    values = std::max<std::int64_t>(values, 1);
    // shares_node() made one already; should this one fail all the same (its size), the ring goes
    // by messages from now on.
    double* mine = nullptr;
    if (!allocate(ring, values, &mine, &win_)) {
      win_ = MPI_WIN_NULL;
      remember(ring, false);
      return false;
    }
    memory::on_allocate(memory::Category::CommBuffer, static_cast<std::size_t>(values) * sizeof(double));
    capacity_ = values;
    share_measured_ = false;
    comm_.watch(ring);
    me_ = mpi::rank(ring);
    double* seg[2] = {nullptr, nullptr};
    for (int q = 0; q < 2; ++q) {
      MPI_Aint size = 0;
      int unit = 0;
      mpi::check(MPI_Win_shared_query(win_, q, &size, &unit, &seg[q]), "MPI_Win_shared_query");
    }
    mpi::check(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_), "MPI_Win_lock_all");
    // MPI allocates the segments contiguously unless told otherwise (alloc_shared_noncontig); the
    // second must start at or after the end of the first, in whole values. Both ranks see the
    // same layout, so both decide alike.
    const auto gap = reinterpret_cast<std::uintptr_t>(seg[1]) - reinterpret_cast<std::uintptr_t>(seg[0]);
    if (seg[1] < seg[0] + values || gap % sizeof(double) != 0) {
      free();
      remember(ring, false);  // it would come out alike next time
      return false;
    }
    base_ = seg[0];
    peer_offset_ = me_ == 0 ? static_cast<std::int64_t>(seg[1] - seg[0]) : 0;
    mine_offset_ = me_ == 0 ? 0 : static_cast<std::int64_t>(seg[1] - seg[0]);
    return true;
  }
  // MPI_Win_free is collective: never while the stack unwinds (the peer may be inside a multiply
  // and never join it); the window is then left to the end of the process.
  void free() {
    if (win_ == MPI_WIN_NULL) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && !progress::unwinding()) {
      MPI_Win_unlock_all(win_);
      MPI_Win_free(&win_);
    }
    memory::on_release(memory::Category::CommBuffer, static_cast<std::size_t>(capacity_) * sizeof(double));
    win_ = MPI_WIN_NULL;
    comm_.forget();
    base_ = nullptr;
    capacity_ = 0;
    share_measured_ = false;
  }

  MPI_Win win() const { return win_; }
  int peer() const { return 1 - me_; }
  // The area's start (rank 0's segment), and where each segment starts in it, in values.
  const double* base() const { return base_; }
  // The whole area, both segments and what lies between them, for a matrix both ranks write into
  // (a dense B: FusedOperand::dense), and its values.
  double* area() const { return base_; }
  std::int64_t area_values() const { return std::max(mine_offset_, peer_offset_) + capacity_; }
  double* mine() const { return base_ + mine_offset_; }
  std::int64_t mine_offset() const { return mine_offset_; }
  std::int64_t peer_offset() const { return peer_offset_; }
  std::int64_t capacity() const { return capacity_; }
  // The share of the window's resident memory that lies on huge pages (memory::huge_page_share:
  // shared memory gets them only where the system allows, docs/user-guide.md, "Shared windows on
  // huge pages"), measured once per window, at the first call after the window was used (its
  // pages are touched then); NaN where the system does not say. Called by the strategy's one
  // thread (the cache is not synchronised).
  double huge_page_share() const {
    if (!share_measured_) {
      huge_share_ = memory::huge_page_share(base_);
      share_measured_ = true;
    }
    return huge_share_;
  }

 private:
  // The attribute key of shares_node()'s answers, and an answer kept.
  static int node_key() {
    static const int key = [] {
      int k = MPI_KEYVAL_INVALID;
      mpi::check(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &k, nullptr),
                 "MPI_Comm_create_keyval");
      return k;
    }();
    return key;
  }
  // MPI_Win_allocate_shared with errors returned, not fatal; whether both ranks have their window.
  // A failure inside the call on one rank only may leave the other waiting in it; where one rank
  // has its window and the other not, that one is left unfreed (freeing is collective). The one
  // such failure seen, Open MPI's backing file without room, is looked for first (room_for).
  static bool allocate(MPI_Comm ring, std::int64_t values, double** mine, MPI_Win* win) {
    const std::int64_t bytes = values * static_cast<std::int64_t>(sizeof(double));
    std::string why;
    int room = room_for(bytes, why) ? 1 : 0;
    mpi::check(MPI_Allreduce(MPI_IN_PLACE, &room, 1, MPI_INT, MPI_MIN, ring), "MPI_Allreduce");
    if (room == 0) {
      static bool said = false;  // once a process, by the ring's first rank where it has no room
      if (!said && !why.empty() && mpi::rank(ring) == 0) plexus::log().warn("{}", why);
      said = said || !why.empty();
      return false;
    }
    MPI_Errhandler was = MPI_ERRHANDLER_NULL;
    mpi::check(MPI_Comm_get_errhandler(ring, &was), "MPI_Comm_get_errhandler");
    mpi::check(MPI_Comm_set_errhandler(ring, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    const int rc =
        MPI_Win_allocate_shared(static_cast<MPI_Aint>(bytes), sizeof(double), MPI_INFO_NULL, ring, mine, win);
    mpi::check(MPI_Comm_set_errhandler(ring, was), "MPI_Comm_set_errhandler");
    mpi::check(MPI_Errhandler_free(&was), "MPI_Errhandler_free");
    int made = rc == MPI_SUCCESS ? 1 : 0;
    mpi::check(MPI_Allreduce(MPI_IN_PLACE, &made, 1, MPI_INT, MPI_MIN, ring), "MPI_Allreduce");
    return made != 0;
  }
  // Whether the file system that holds Open MPI's shared windows (its osc/sm component's
  // backing_directory, /dev/shm unless set) has room for a window of `bytes` per rank. When one
  // rank cannot create the window's backing file, Open MPI 4.1 returns an error there and leaves
  // the other rank waiting inside MPI_Win_allocate_shared: a hang, not an error (a 4 MiB tmpfs
  // and 8 MB images; containers give /dev/shm 64 MB by default). Counted generously, since the
  // node's other rings may be making theirs at the same time: a segment rounded up to 2 MiB for
  // each of two windows per rank of the node (OMPI_COMM_WORLD_LOCAL_SIZE), and 4 MiB more. Where
  // too little is free, the ring goes by messages (`why` says so). Other MPI libraries, or a
  // directory that cannot be asked: true (MPI decides). PLEXUS_TEST_WINDOW_ROOM_MB pretends the
  // free space, not the directory (tests, with any MPI library).
  static bool room_for(std::int64_t bytes, std::string& why) {
    std::string dir = "the shared-memory directory";
#if defined(OPEN_MPI)
    dir = backing_directory();
#endif
    std::int64_t free_bytes = -1;
    if (const char* test = std::getenv("PLEXUS_TEST_WINDOW_ROOM_MB"); test != nullptr && std::atoll(test) >= 0) {
      free_bytes = std::atoll(test) * 1000000;
    } else {
#if defined(OPEN_MPI)
      struct statvfs fs {};
      if (::statvfs(dir.c_str(), &fs) != 0) return true;
      free_bytes = static_cast<std::int64_t>(fs.f_bavail) * static_cast<std::int64_t>(fs.f_frsize);
#else
      return true;
#endif
    }
    constexpr std::int64_t kHuge = std::int64_t{2} << 20;
    const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    const std::int64_t ranks = std::max<std::int64_t>(2, local != nullptr ? std::atoll(local) : 2);
    const std::int64_t need = 2 * ranks * ((bytes + kHuge - 1) / kHuge * kHuge) + 2 * kHuge;
    if (free_bytes >= need) return true;
    why = fmt::format(
        "cannon: {} has {:.1f} MB free, too little for shared windows ({:.1f} MB counted for {} ranks on the node); "
        "fused ticks go by messages (docs/user-guide.md, \"Shared windows on huge pages\": osc_sm_backing_directory)",
        dir, 1e-6 * static_cast<double>(free_bytes), 1e-6 * static_cast<double>(need), ranks);
    return false;
  }
#if defined(OPEN_MPI)
  // Open MPI's osc_sm_backing_directory where the user set it (the environment, mpirun's --mca,
  // the parameter files: mpi::open_mpi_parameter, which does not go through the MPI tool
  // interface and its 0.2 s), else Open MPI's default on Linux.
  static const std::string& backing_directory() {
    static const std::string dir = [] {
      std::string d = mpi::open_mpi_parameter("osc_sm_backing_directory");
      return d.empty() ? std::string("/dev/shm") : d;
    }();
    return dir;
  }
#endif
  static void remember(MPI_Comm ring, bool together) {
    static int yes = 1, no = 0;
    mpi::check(MPI_Comm_set_attr(ring, node_key(), together ? &yes : &no), "MPI_Comm_set_attr");
  }

  MPI_Win win_ = MPI_WIN_NULL;
  mpi::CommWatch comm_;  // the ring the window was made over, while it lives
  double* base_ = nullptr;
  std::int64_t capacity_ = 0, mine_offset_ = 0, peer_offset_ = 0;
  int me_ = 0;
  mutable bool share_measured_ = false;
  mutable double huge_share_ = 0;
};

}  // namespace plexus::cannon
