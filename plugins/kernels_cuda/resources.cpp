#include "resources.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "plexus/error.hpp"
#include "session.hpp"

namespace plexus_cuda {
namespace detail {

using plexus::Error;
namespace memory = plexus::memory;

Buffer Buffer::make(Device& device, std::size_t bytes, memory::Category category, const std::string& what,
                    const std::string& who, std::size_t spare) {
  Buffer b;
  const bool pinned = memory::space_of(category) == plexus::MemorySpace::Host;
  if (!pinned) {
    const DeviceMemory m = device.memory();
    if (static_cast<std::int64_t>(bytes + spare) <= m.free) bytes += spare;
    if (static_cast<std::int64_t>(bytes) > m.free)
      throw Error(who, what + " needs " + bytes_text(static_cast<std::int64_t>(bytes)) + " of device memory, but " +
                           device.describe() + " has " + bytes_text(m.free) + " free of " + bytes_text(m.total) +
                           " (this rank holds " + bytes_text(memory::current_total(plexus::MemorySpace::Device)) +
                           " of it; other processes on the device hold the rest): use more ranks or fewer ranks "
                           "per device");
  } else {
    bytes += spare;
  }
  b.p_ = pinned ? device.allocate_pinned(bytes) : device.allocate(bytes);
  b.device_ = &device;
  b.bytes_ = bytes;
  b.category_ = category;
  b.pinned_ = pinned;
  memory::on_allocate(category, bytes);
  return b;
}

void reserve(Buffer& b, Device& device, std::size_t bytes, memory::Category category, const std::string& what,
             const std::string& who) {
  if (bytes == 0) bytes = sizeof(double);
  if (b.bytes() >= bytes) return;
  b.reset();
  b = Buffer::make(device, bytes, category, what, who, bytes / 4);
}

void parallel_copy(double* dst, const double* src, std::int64_t values, int threads) {
  constexpr std::int64_t kChunk = std::int64_t{1} << 17;  // values (1 MiB)
  const std::int64_t chunks = (values + kChunk - 1) / kChunk;
  if (threads <= 1 || chunks < 4) {
    if (values > 0) std::memcpy(dst, src, static_cast<std::size_t>(values) * sizeof(double));
    return;
  }
  const int team = static_cast<int>(std::min<std::int64_t>(threads, chunks));
#pragma omp parallel for num_threads(team) schedule(static)
  for (std::int64_t i = 0; i < chunks; ++i) {
    const std::int64_t first = i * kChunk, n = std::min(kChunk, values - first);
    std::memcpy(dst + first, src + first, static_cast<std::size_t>(n) * sizeof(double));
  }
}

DeviceResources::DeviceResources(Device& device, int streams) {
  device.make_current();
  copy = std::make_unique<OwnedStream>(device, device.create_stream());
  for (int s = 0; s < streams; ++s) compute.emplace_back(device, device.create_stream());
  for (auto& set : panels) {
    set.copied = std::make_unique<OwnedEvent>(device, device.create_event());
    for (int s = 0; s < streams; ++s) set.done.emplace_back(device, device.create_event());
  }
  norms_done = std::make_unique<OwnedEvent>(device, device.create_event());
  for (auto& e : bounced) e = std::make_unique<OwnedEvent>(device, device.create_event());
}

}  // namespace detail

ResourcePool::~ResourcePool() {
  try {
    if (!idle_.empty()) device_->make_current();  // the frees below are the device's
  } catch (...) {
  }
}

std::unique_ptr<detail::DeviceResources> ResourcePool::take() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!idle_.empty()) {
      auto r = std::move(idle_.back());
      idle_.pop_back();
      return r;
    }
  }
  return std::make_unique<detail::DeviceResources>(*device_, streams_);
}

bool ResourcePool::drop_idle() {
  std::vector<std::unique_ptr<detail::DeviceResources>> dropped;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    dropped.swap(idle_);
  }
  return !dropped.empty();  // freed here, outside the lock
}

void ResourcePool::give_back(std::unique_ptr<detail::DeviceResources> r) noexcept {
  try {
    const std::lock_guard<std::mutex> lock(mutex_);
    idle_.push_back(std::move(r));
  } catch (...) {
  }
}

}  // namespace plexus_cuda
