#pragma once
// Cannon's images on their way through the ticks (cannon.cpp): the images an operand starts with,
// and the queue of buffers they rotate through.
#include <cstdint>
#include <vector>

#include "plexus/memory.hpp"
#include "plexus/panel.hpp"

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

}  // namespace plexus::cannon
