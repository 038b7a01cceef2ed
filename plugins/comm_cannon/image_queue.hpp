#pragma once
// Cannon's images on their way through the ticks (cannon.cpp): the images an operand starts with,
// the queue of buffers they rotate through, and the one area both ticks' images share when the two
// ticks of a V = 2 schedule go in one pass.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "plexus/local_multiply.hpp"
#include "plexus/memory.hpp"
#include "plexus/panel.hpp"
#include "shared_ring.hpp"

namespace plexus::cannon {

// One image in a fixed-capacity buffer: packed index words and values.
using ImageBuffer = PackedPanel;

// The images an operand starts the ticks with, one per slot, or (`local`) none built: its only
// image is its local panel as it is (see pre_shift in cannon.cpp).
struct Images {
  std::vector<Panel> built;
  bool local = false;
};

// One moving operand through the ticks: a queue of images (its front is multiplied and sent on)
// and a spare buffer that receives the next. An image in the queue is an owned buffer, or
// kLocalPanel: the local panel itself, sent from where it is with its index packed once. It never
// receives, so when it leaves the front a fresh buffer takes its place as the spare.
constexpr int kLocalPanel = -1;
struct OperandQueue {
  std::vector<ImageBuffer> buf;
  std::vector<int> queue;  // buffer indices, front first
  int spare = -1;
  PanelView local;
  CommBuffer<std::int64_t> local_index;
  std::int64_t words = 0, values = 0;  // every owned buffer's capacity

  PanelView front() const {
    return queue.front() == kLocalPanel ? local : buf[static_cast<std::size_t>(queue.front())].view();
  }
  // The front leaves: the received image joins the back, and the sent buffer receives next (a
  // new one in place of the local panel, if another shift follows).
  void rotate(bool more_shifts) {
    const int front = queue.front();
    queue.erase(queue.begin());
    queue.push_back(spare);
    spare = front;
    if (front == kLocalPanel && more_shifts) spare = add_buffer();
  }
  int add_buffer() {
    buf.emplace_back().reserve(words, values);
    return static_cast<int>(buf.size()) - 1;
  }
};

// Both images' index over the fused area (FusedOperand::both), kept by the operand's routes from
// one multiply to the next with what it was made from: the same images at the same places give
// the same index, which is then neither merged again nor, as a product plan holds it, compared
// again (PanelView::index).
//
// It also holds the index object of the local panel whose packing starts `from` (a Panel's index,
// which the panel copies before any change while it is held). A later multiply of this route whose
// local panel shows the very same object, or another whose packing equals the kept one (the same
// rows, blocks, offsets and value count: an iteration that makes its matrices anew with unchanged
// patterns), on every rank of the grid (cannon's agreed_routes) knows both packed indices without
// sending them: its own is the kept one, and so is the peer's, which replayed the same route with a
// panel equal to its own kept one.
struct KeptMerge {
  IndexArray from;                          // tick 0's packed index, the received one, mine, theirs, size
  std::int64_t front_words = 0;             // how `from` divides
  std::shared_ptr<const PanelIndex> index;  // never changed once made (a plan may hold it): replaced
  std::shared_ptr<const PanelIndex> local;  // the local panel's index that `from` begins with, or null

  // Whether `panel` (this rank's) is the panel whose packed index `from` begins with: the same
  // index object, or one with the same words (compared only where the object differs).
  bool knows(const PanelView& panel) const {
    if (!index) return false;
    if (this->local && panel.shows(*this->local)) return true;
    if (front_words != PanelView::packed_words(panel.nrows, panel.nblocks) ||
        static_cast<std::int64_t>(from.size()) < front_words)
      return false;
    return PanelView::from_packed(from.data(), front_words, nullptr).same_index(panel);
  }
  // `index`'s dense layout (DenseLayout::of), worked out once per index: null where it is not
  // dense. The same on both ranks of the ring: their indices hold the same blocks.
  const std::shared_ptr<const DenseLayout>& dense_layout(const BlockLayout& layout) {
    if (index && !dense_checked) {
      std::optional<DenseLayout> d = DenseLayout::of(index->view(nullptr, 0), layout);
      dense = d ? std::make_shared<const DenseLayout>(std::move(*d)) : nullptr;
      dense_checked = true;
    }
    return dense;
  }
  // Where the two images lay in the area when `index` was made: this rank's and the peer's.
  std::int64_t mine_at() const { return from.size() >= 3 ? from[from.size() - 3] : -1; }
  std::int64_t theirs_at() const { return from.size() >= 3 ? from[from.size() - 2] : -1; }

  std::shared_ptr<const DenseLayout> dense;
  bool dense_checked = false;
};

// One moving operand when a schedule of two ticks (V = 2) multiplies both in one pass (cannon's
// FuseTicks): this rank's local panel, which serves as its tick-0 image (no pre-shift), and the
// peer's, side by side in one value area, so that a single local product takes both. By messages
// the area is `values`: the local panel is sent from where it is and copied to the head while it
// travels, and the peer's lands after it. Through a shared window (`shared`, shared_ring.hpp) the
// area is the window: the local panel is copied into this rank's segment, and the peer's is read
// from its own. The panel's whole value area is copied, gaps and all, so its offsets still hold.
struct FusedOperand {
  PanelView front;                       // tick 0's image: the local panel, then its copy in the area
  CommBuffer<std::int64_t> front_index;  // its packed index, as sent (unless known)
  CommBuffer<std::int64_t> recv_index;   // the received image's packed index (unless known)
  CommBuffer<double> values;             // messages: [tick 0's values | the received values]
  const SharedRing* shared = nullptr;    // or the shared window
  bool copy_pending = false;             // tick 0's values are still to be copied into the area
  KeptMerge* kept = nullptr;             // both images' index over the area, once received
  // Both packed indices known from the kept merge (KeptMerge::knows on every rank): none is sent;
  // through a window an empty message still says that the segment is written.
  bool known = false;
  const std::int64_t* front_words = nullptr;  // tick 0's packed index: front_index, or the kept one
  std::int64_t front_count = 0;
  const std::int64_t* recv_words = nullptr;  // the received image's: recv_index, or the kept one
  std::shared_ptr<const PanelIndex> front_held;  // the local panel's index object, if the view shows one
  std::int64_t signal = 0;                       // the empty message's buffer
  // Through a window, B's images written as one dense matrix (cannon.cpp decides, on every rank of
  // the ring alike): this rank's blocks go to their places in it, and the peer's come to theirs.
  std::shared_ptr<const DenseLayout> dense;
  const BlockLayout* dense_blocks = nullptr;

  // The local panel as tick 0's image, and room for the largest image of the ring (`words`,
  // `max_values`, the same on both of its ranks).
  void allocate(const PanelView& local, std::int64_t words, std::int64_t max_values, const SharedRing* window,
                KeptMerge& merge, bool indices_known) {
    kept = &merge;
    front = local;
    shared = window;
    copy_pending = true;
    known = indices_known;
    if (known) {
      front_words = merge.from.data();
      front_count = merge.front_words;
      recv_words = merge.from.data() + merge.front_words;
      // The panel's own index object from now on (where it has one), so that the next multiply
      // knows it without comparing.
      front_held = local.held_index() ? local.held_index() : merge.local;
    } else {
      front_index.resize(static_cast<std::size_t>(PanelView::packed_words(local.nrows, local.nblocks)));
      local.pack_to(front_index.data());
      front_words = front_index.data();
      front_count = static_cast<std::int64_t>(front_index.size());
      recv_index.resize(static_cast<std::size_t>(std::max<std::int64_t>(words, 3)));
      recv_words = recv_index.data();
      front_held = local.held_index();
    }
    if (shared == nullptr)
      values.resize(static_cast<std::size_t>(local.data_size + std::max<std::int64_t>(max_values, 1)));
  }
  double* head() { return shared != nullptr ? shared->mine() : values.data(); }
  double* recv_values() { return values.data() + front.data_size; }
  std::int64_t recv_capacity() const { return static_cast<std::int64_t>(values.size()) - front.data_size; }
  // The values of the peer's image (once received or known).
  std::int64_t recv_values_count() const { return recv_words[2]; }
  // Tick 0's values (the local panel's whole value area) into the area, a piece at a time with
  // `poll` after each, so that a shift in flight moves on meanwhile.
  void copy_front(const std::function<void()>& poll) {
    if (!copy_pending) return;
    if (dense != nullptr) {
      dense->copy_in(front, *dense_blocks, shared->area(), poll);
      copy_pending = false;
      return;
    }
    constexpr std::int64_t kPiece = std::int64_t{1} << 17;  // 1 MiB
    double* const to = head();
    for (std::int64_t at = 0; at < front.data_size; at += kPiece) {
      std::copy(front.data + at, front.data + std::min(front.data_size, at + kPiece), to + at);
      poll();
    }
    front.data = to;
    copy_pending = false;
  }
  // Both images as one panel (once the receives are complete and tick 0's values copied).
  PanelView both() {
    const double* area = shared != nullptr ? shared->base() : values.data();
    const std::int64_t mine = shared != nullptr ? shared->mine_offset() : 0;
    const std::int64_t theirs = shared != nullptr ? shared->peer_offset() : front.data_size;
    const PanelView head_view = PanelView::from_packed(front_words, front_count, area + mine);
    const std::int64_t rw = PanelView::packed_words(recv_words[0], recv_words[1]);
    const PanelView recv = PanelView::from_packed(recv_words, rw, area + theirs);
    const std::int64_t size = std::max(mine + head_view.data_size, theirs + recv.data_size);
    const std::int64_t fw = front_count;
    const std::int64_t places[3] = {mine, theirs, size};
    KeptMerge& k = *kept;
    // Known indices are the kept ones: only where the images lie may differ (another window).
    const bool sized = k.index && k.front_words == fw && static_cast<std::int64_t>(k.from.size()) == fw + rw + 3;
    const bool same = sized && std::equal(places, places + 3, k.from.data() + fw + rw) &&
                      (known || (std::equal(front_words, front_words + fw, k.from.data()) &&
                                 std::equal(recv_words, recv_words + rw, k.from.data() + fw)));
    if (!same) {
      // The words may be the kept ones (known): the new record is made beside them.
      IndexArray from(front_words, front_words + fw);
      from.insert(from.end(), recv_words, recv_words + rw);
      from.insert(from.end(), places, places + 3);
      k.index.reset();  // should the merge throw, nothing stale is kept
      k.local.reset();
      k.dense.reset();
      k.dense_checked = false;
      const IndexArray words = merged_index(head_view, mine, recv, theirs, size);
      k.index =
          PanelIndex::copy_of(PanelView::from_packed(words.data(), static_cast<std::int64_t>(words.size()), nullptr));
      k.from = std::move(from);
      k.front_words = fw;
    }
    k.local = front_held;
    return k.index->view(area, size);
  }
};

}  // namespace plexus::cannon
