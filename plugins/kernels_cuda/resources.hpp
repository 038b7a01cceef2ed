#pragma once
// What the `cuda` kernel's sessions hold on a device (session.cpp): counted buffers, owned
// streams and events, a tick's panel set, a thread slot's batch lane, and the DeviceResources
// that a kernel keeps between multiplies in its ResourcePool. No CUDA header here (the tests run
// it on an emulated device).
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "device.hpp"
#include "plexus/memory.hpp"
#include "smm.hpp"

namespace plexus_cuda {
namespace detail {

/// Device or pinned memory of a session, counted by the memory tracker while held.
class Buffer {
 public:
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept { swap(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    Buffer(std::move(o)).swap(*this);
    return *this;
  }
  ~Buffer() { reset(); }

  /// Device memory (checked against what the device has free, with a message saying what did
  /// not fit) or pinned host memory.
  /// `spare` more bytes are taken when the device has them (room to grow).
  static Buffer make(Device& device, std::size_t bytes, plexus::memory::Category category, const std::string& what,
                     const std::string& who, std::size_t spare = 0);

  void reset() noexcept {
    if (p_ == nullptr) return;
    device_->release(p_, pinned_);
    plexus::memory::on_release(category_, bytes_);
    p_ = nullptr;
    bytes_ = 0;
  }
  template <class T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void swap(Buffer& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(device_, o.device_);
    std::swap(bytes_, o.bytes_);
    std::swap(category_, o.category_);
    std::swap(pinned_, o.pinned_);
  }
  void* p_ = nullptr;
  Device* device_ = nullptr;
  std::size_t bytes_ = 0;
  plexus::memory::Category category_ = plexus::memory::Category::DeviceBuffer;
  bool pinned_ = false;
};

/// A buffer of at least `bytes`: reallocated (larger by a quarter, so slowly growing panels do
/// not reallocate every tick) when it is smaller. Releasing waits for the device's work.
void reserve(Buffer& b, Device& device, std::size_t bytes, plexus::memory::Category category, const std::string& what,
             const std::string& who);

/// A stream or an event of a device, destroyed with its owner.
template <class Handle>
class Owned {
 public:
  Owned(Device& device, Handle h) : device_(&device), h_(h) {}
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  Owned(Owned&& o) noexcept : device_(o.device_), h_(std::exchange(o.h_, nullptr)) {}
  Owned& operator=(Owned&&) = delete;
  ~Owned() {
    if (h_ != nullptr) device_->destroy(h_);
  }
  Handle get() const { return h_; }

 private:
  Device* device_;
  Handle h_;
};

using OwnedStream = Owned<Stream>;
using OwnedEvent = Owned<Event>;

/// memcpy of `values` doubles with `threads` threads: one thread copies at a fraction of the
/// host's memory bandwidth, and the copies into and out of page-locked memory delay every
/// tick's transfer and C's.
void parallel_copy(double* dst, const double* src, std::int64_t values, int threads);

/// A tick's panels: pinned and device copies of A and B, and the events that order their reuse.
struct PanelSet {
  Buffer host_a, host_b, dev_a, dev_b;
  std::unique_ptr<OwnedEvent> copied;  // after the panels' copies (compute streams wait for it)
  std::vector<OwnedEvent> done;        // per compute stream, after the tick's products
  bool used = false;
};

/// A thread slot's batches: entries collected on the host, sent through two pinned buffers and
/// two device buffers in turn (one is filled while the other's products run).
struct Lane {
  std::vector<DeviceEntry> pending;
  std::array<Buffer, 2> host, dev;
  std::array<std::unique_ptr<OwnedEvent>, 2> done;  // after the products that read dev[q]
  std::array<bool, 2> used{};
  std::vector<int> shape;
  int next = 0;
  std::atomic<bool> busy{false};
};

/// What a session holds on the device: streams, events, C's area, the panels' and the stacks'
/// buffers. Allocating page-locked memory and device memory, and freeing them (each free waits
/// for the whole device), cost more than a small multiply's products, so a session takes these
/// from its kernel's pool and gives them back, idle, at its end: the next multiply reuses them
/// as they are (buffers grow when a larger one is needed). Idle means every stream has passed
/// all its work; a session that could not wait for its streams frees them instead.
struct DeviceResources {
  DeviceResources(Device& device, int streams);
  // Declared before the buffers and events, destroyed after them.
  std::unique_ptr<OwnedStream> copy;
  std::vector<OwnedStream> compute;
  Buffer c;
  std::array<PanelSet, 2> panels;
  std::vector<std::unique_ptr<Lane>> lanes;  // one per thread slot (a Lane has an atomic flag)
  Buffer norm_tasks_host, norm_tasks, norm_out, norm_out_host;
  std::unique_ptr<OwnedEvent> norms_done;
  std::array<Buffer, 2> bounce;                        // page-locked: C's transfers in chunks
  std::array<std::unique_ptr<OwnedEvent>, 2> bounced;  // after a chunk's copy
};

}  // namespace detail

/// A kernel's idle DeviceResources (more than one only where sessions overlapped).
class ResourcePool {
 public:
  ResourcePool(std::shared_ptr<Device> device, int streams) : device_(std::move(device)), streams_(streams) {}
  ~ResourcePool();
  ResourcePool(const ResourcePool&) = delete;
  ResourcePool& operator=(const ResourcePool&) = delete;

  /// An idle set, or a new one.
  std::unique_ptr<detail::DeviceResources> take();
  /// Frees the idle sets (for a session that needs their device memory); false when there were none.
  bool drop_idle();
  /// Keeps `r` for the next session. Never throws: what cannot be kept is freed.
  void give_back(std::unique_ptr<detail::DeviceResources> r) noexcept;

 private:
  std::shared_ptr<Device> device_;  // outlives the resources, which hold references to it
  int streams_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<detail::DeviceResources>> idle_;
};

}  // namespace plexus_cuda
