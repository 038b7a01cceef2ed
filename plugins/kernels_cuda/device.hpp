#pragma once
// What the `cuda` kernel's session needs of a device: memory, streams, events, copies and the
// launches of its kernels. CudaDevice (cuda_device.cpp) implements it on the CUDA runtime; the
// tests implement it on host memory with deferred, reordered execution (an emulated device), so
// the session's pipeline (double-buffered panels and stacks, events, C's growth, the memory
// checks) is tested on every build, without a GPU.
//
// The semantics are CUDA's: operations on one stream run in order, streams run concurrently,
// wait(stream, event) orders a stream after an event's operations, copies from host memory are
// asynchronous (the source must stay untouched until an event after the copy has completed),
// release() waits for all outstanding work first (as cudaFree and cudaFreeHost do).
#include <cstddef>
#include <cstdint>
#include <string>

#include "smm.hpp"

namespace plexus_cuda {

struct StreamTag;
struct EventTag;
using Stream = StreamTag*;
using Event = EventTag*;

/// Memory a device offers: free and total bytes.
struct DeviceMemory {
  std::int64_t free = 0, total = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  /// "device 0 (NVIDIA H100 80GB HBM3)".
  virtual std::string describe() const = 0;
  virtual DeviceMemory memory() = 0;
  /// Makes the device current for the calling thread (CUDA's current device is per thread); the
  /// session calls it at the start of every call that may come from a new thread.
  virtual void make_current() = 0;

  /// Device memory; throws plexus::Error when it cannot be had.
  virtual void* allocate(std::size_t bytes) = 0;
  /// Page-locked host memory (the source and target of asynchronous copies).
  virtual void* allocate_pinned(std::size_t bytes) = 0;
  /// Waits for all work of the device, then releases (device or pinned memory). Never throws.
  virtual void release(void* p, bool pinned) noexcept = 0;

  virtual Stream create_stream() = 0;
  virtual void destroy(Stream s) noexcept = 0;
  virtual Event create_event() = 0;
  virtual void destroy(Event e) noexcept = 0;

  /// Asynchronous copies on `s`: host to device, device to host, device to device.
  virtual void copy_to_device(void* dst, const void* src, std::size_t bytes, Stream s) = 0;
  virtual void copy_to_host(void* dst, const void* src, std::size_t bytes, Stream s) = 0;
  virtual void copy_on_device(void* dst, const void* src, std::size_t bytes, Stream s) = 0;
  /// Sets `bytes` of device memory to zero on `s`.
  virtual void zero(void* dst, std::size_t bytes, Stream s) = 0;

  virtual void record(Event e, Stream s) = 0;
  /// Later work on `s` waits for `e`'s operations.
  virtual void wait(Stream s, Event e) = 0;
  /// The host waits for `e`'s operations (for a stream's: all of them); then reports errors.
  virtual void synchronize(Event e) = 0;
  virtual void synchronize(Stream s) = 0;

  /// The products of `count` entries of one shape (smm.hpp) on `s`, adding into c atomically.
  virtual void launch_products(int shape, const DeviceEntry* stack, std::int64_t count, const double* a,
                               const double* b, double* c, Stream s) = 0;
  /// The norms of `count` tasks over `data` into out on `s`.
  virtual void launch_norms(const NormTask* tasks, std::int64_t count, const double* data, double* out, Stream s) = 0;
};

}  // namespace plexus_cuda
