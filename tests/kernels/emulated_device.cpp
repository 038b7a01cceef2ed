// Test-only local backend "cuda-emulated": the `cuda` kernel's session (plugins/kernels_cuda/
// session.cpp) on an emulated device, so its pipeline and its device code are tested on every
// build, without a GPU.
//
// The device keeps "device" memory in host memory (filled with NaN when allocated, as device
// memory is not zeroed) and runs nothing when asked: every operation goes into its stream's
// queue and runs only when the host waits for it (synchronize: just what the wait needs;
// release: everything, streams interleaved in a seeded random order within what events allow),
// as late as CUDA may run it. A copy from host
// memory therefore reads its source when it runs, not when it was issued: a session that reuses
// a buffer before waiting for the copy that reads it gets wrong results. Every copy and every
// product is checked to lie inside an allocation, every specialised launch to get entries of its
// shape; kernels run thread by thread through the thread functions nvcc compiles (smm.hpp).
// A failed operation is reported by the next wait, as CUDA reports asynchronous errors.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "device.hpp"
#include "plexus/error.hpp"
#include "plexus/parameters.hpp"
#include "plexus/plugin.hpp"
#include "session.hpp"
#include "smm.hpp"

namespace {

using plexus::Error;
using plexus_cuda::DeviceEntry;
using plexus_cuda::NormTask;

struct HostAdd {
  void operator()(double* p, double v) const { *p += v; }
};
struct HostSqrt {
  double operator()(double x) const { return std::sqrt(x); }
};

class EmulatedDevice final : public plexus_cuda::Device {
 public:
  EmulatedDevice(std::int64_t capacity, unsigned seed) : capacity_(capacity), rng_(seed) {}
  ~EmulatedDevice() override {
    for (auto& [p, a] : allocations_) ::operator delete(p);
  }

  std::string describe() const override { return "emulated device"; }
  plexus_cuda::DeviceMemory memory() override {
    std::lock_guard lock(mu_);
    return {capacity_ - device_bytes_, capacity_};
  }
  void make_current() override {}

  void* allocate(std::size_t bytes) override { return allocate_any(bytes, false); }
  void* allocate_pinned(std::size_t bytes) override { return allocate_any(bytes, true); }
  void release(void* p, bool pinned) noexcept override {
    std::lock_guard lock(mu_);
    try {
      drain_all();  // cudaFree and cudaFreeHost wait for the device
    } catch (...) {
    }
    auto it = allocations_.find(static_cast<char*>(p));
    if (it == allocations_.end() || it->second.pinned != pinned) {
      failure_ = "release() of memory that is not a live " + std::string(pinned ? "pinned" : "device") + " allocation";
      return;
    }
    if (!pinned) device_bytes_ -= static_cast<std::int64_t>(it->second.bytes);
    ::operator delete(it->first);
    allocations_.erase(it);
  }

  plexus_cuda::Stream create_stream() override {
    std::lock_guard lock(mu_);
    streams_.push_back(std::make_unique<StreamState>());
    return reinterpret_cast<plexus_cuda::Stream>(streams_.back().get());
  }
  void destroy(plexus_cuda::Stream s) noexcept override {
    std::lock_guard lock(mu_);
    // cudaStreamDestroy lets queued work finish; it runs at the next wait. Keep the state.
    (void)s;
  }
  plexus_cuda::Event create_event() override {
    std::lock_guard lock(mu_);
    events_.push_back(std::make_unique<EventState>());
    return reinterpret_cast<plexus_cuda::Event>(events_.back().get());
  }
  void destroy(plexus_cuda::Event) noexcept override {}

  void copy_to_device(void* dst, const void* src, std::size_t bytes, plexus_cuda::Stream s) override {
    copy(dst, src, bytes, s, Where::Device, Where::Host, "copy to the device");
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes, plexus_cuda::Stream s) override {
    copy(dst, src, bytes, s, Where::Host, Where::Device, "copy to the host");
  }
  void copy_on_device(void* dst, const void* src, std::size_t bytes, plexus_cuda::Stream s) override {
    copy(dst, src, bytes, s, Where::Device, Where::Device, "copy on the device");
  }
  void zero(void* dst, std::size_t bytes, plexus_cuda::Stream s) override {
    enqueue(s, [this, dst, bytes] {
      check_range(dst, bytes, Where::Device, "zero");
      std::memset(dst, 0, bytes);
    });
  }

  void record(plexus_cuda::Event e, plexus_cuda::Stream s) override {
    std::lock_guard lock(mu_);
    StreamState& st = state(s);
    EventState& ev = *reinterpret_cast<EventState*>(e);
    ev.stream = &st;
    ev.position = st.issued;
  }
  void wait(plexus_cuda::Stream s, plexus_cuda::Event e) override {
    std::lock_guard lock(mu_);
    const EventState ev = *reinterpret_cast<EventState*>(e);  // what the event captured now
    StreamState& st = state(s);
    st.queue.push_back(Op{nullptr, ev});
    ++st.issued;
  }
  void synchronize(plexus_cuda::Event e) override {
    std::lock_guard lock(mu_);
    const EventState ev = *reinterpret_cast<EventState*>(e);
    if (ev.stream != nullptr) run_until(*ev.stream, ev.position);
    report();
  }
  void synchronize(plexus_cuda::Stream s) override {
    std::lock_guard lock(mu_);
    StreamState& st = state(s);
    run_until(st, st.issued);
    report();
  }

  void launch_products(int shape, const DeviceEntry* stack, std::int64_t count, const double* a, const double* b,
                       double* c, plexus_cuda::Stream s) override {
    enqueue(s, [=, this] { run_products(shape, stack, count, a, b, c); });
  }
  void launch_norms(const NormTask* tasks, std::int64_t count, const double* data, double* out,
                    plexus_cuda::Stream s) override {
    enqueue(s, [=, this] { run_norms(tasks, count, data, out); });
  }

 private:
  enum class Where { Host, Device };
  struct Allocation {
    std::size_t bytes;
    bool pinned;
  };
  struct StreamState;
  struct EventState {
    StreamState* stream = nullptr;  // never recorded: complete
    std::uint64_t position = 0;     // complete once the stream has run this many operations
  };
  struct Op {
    std::function<void()> run;  // empty: a wait for `after`
    EventState after;
  };
  struct StreamState {
    std::deque<Op> queue;
    std::uint64_t issued = 0, done = 0;
  };

  static StreamState& state(plexus_cuda::Stream s) { return *reinterpret_cast<StreamState*>(s); }
  static bool complete(const EventState& e) { return e.stream == nullptr || e.stream->done >= e.position; }

  void* allocate_any(std::size_t bytes, bool pinned) {
    std::lock_guard lock(mu_);
    if (!pinned && device_bytes_ + static_cast<std::int64_t>(bytes) > capacity_)
      throw Error("emulated device", "out of memory: " + std::to_string(bytes) + " bytes asked for, " +
                                         std::to_string(capacity_ - device_bytes_) + " free");
    char* p = static_cast<char*>(::operator new(bytes == 0 ? 1 : bytes));
    // Neither cudaMalloc nor cudaMallocHost zeroes: NaN where a session would read unset values.
    // (One fill, not a copy per value: the conformance suite's emulated-device cases under the
    // sanitizers took 48.8 s instead of 50.7.)
    std::fill_n(reinterpret_cast<double*>(p), bytes / sizeof(double), std::numeric_limits<double>::quiet_NaN());
    allocations_[p] = Allocation{bytes, pinned};
    if (!pinned) device_bytes_ += static_cast<std::int64_t>(bytes);
    return p;
  }

  void enqueue(plexus_cuda::Stream s, std::function<void()> run) {
    std::lock_guard lock(mu_);
    StreamState& st = state(s);
    st.queue.push_back(Op{std::move(run), EventState{}});
    ++st.issued;
  }

  void copy(void* dst, const void* src, std::size_t bytes, plexus_cuda::Stream s, Where to, Where from,
            const char* what) {
    enqueue(s, [=, this] {
      check_range(dst, bytes, to, what);
      check_range(src, bytes, from, what);
      std::memmove(dst, src, bytes);
    });
  }

  /// [p, p + bytes) lies in one live allocation: device memory for Where::Device; for Where::Host,
  /// pinned memory (the session's staging buffers) or memory that is not the device's.
  void check_range(const void* p, std::size_t bytes, Where where, const std::string& what) const {
    const char* c = static_cast<const char*>(p);
    auto it = allocations_.upper_bound(const_cast<char*>(c));
    const bool inside = it != allocations_.begin() && c + bytes <= std::prev(it)->first + std::prev(it)->second.bytes;
    if (where == Where::Device) {
      if (!inside || std::prev(it)->second.pinned)
        throw Error("emulated device", what + ": " + std::to_string(bytes) + " bytes not inside device memory");
    } else if (inside && !std::prev(it)->second.pinned) {
      throw Error("emulated device", what + ": host side is device memory");
    }
  }

  /// Runs what a wait needs and nothing more: the operations of stream `s` up to `position`, and
  /// before a wait for an event, the operations of the event's stream up to it. Everything else
  /// stays queued, as late as CUDA may run it.
  void run_until(StreamState& s, std::uint64_t position) {
    while (s.done < position) {
      const Op& head = s.queue.front();
      if (!head.run && !complete(head.after)) run_until(*head.after.stream, head.after.position);
      run_head(s);
    }
  }

  void run_head(StreamState& s) {
    Op op = std::move(s.queue.front());
    s.queue.pop_front();
    if (op.run) {
      try {
        op.run();
      } catch (const std::exception& e) {
        if (failure_.empty()) failure_ = e.what();
      }
    }
    ++s.done;
  }

  /// Runs every queued operation, the streams interleaved in a random order.
  void drain_all() {
    while (true) {
      std::vector<StreamState*> ready;
      bool any = false;
      for (auto& s : streams_) {
        if (s->queue.empty()) continue;
        any = true;
        const Op& head = s->queue.front();
        if (head.run || complete(head.after)) ready.push_back(s.get());
      }
      if (!any) return;
      if (ready.empty()) throw Error("emulated device", "deadlock: every stream waits for an event that cannot come");
      run_head(*ready[std::uniform_int_distribution<std::size_t>(0, ready.size() - 1)(rng_)]);
    }
  }

  /// Throws the first failure of an operation (CUDA reports asynchronous errors at a wait).
  void report() {
    if (failure_.empty()) return;
    std::string f;
    std::swap(f, failure_);
    throw Error("emulated device", f);
  }

  void run_products(int shape, const DeviceEntry* stack, std::int64_t count, const double* a, const double* b,
                    double* c) const {
    check_range(stack, sizeof(DeviceEntry) * static_cast<std::size_t>(count), Where::Device, "stack of a launch");
    for (std::int64_t i = 0; i < count; ++i) {
      const DeviceEntry& e = stack[i];
      if (shape != plexus_cuda::kGenericShape &&
          (e.m != plexus_cuda::smm_m(shape) || e.n != plexus_cuda::smm_n(shape) || e.k != plexus_cuda::smm_k(shape)))
        throw Error("emulated device", "an entry of shape " + std::to_string(e.m) + "x" + std::to_string(e.n) + "x" +
                                           std::to_string(e.k) + " in the launch of shape id " + std::to_string(shape));
      check_range(a + e.a, sizeof(double) * static_cast<std::size_t>(e.m) * static_cast<std::size_t>(e.k),
                  Where::Device, "A block of a product");
      check_range(b + e.b, sizeof(double) * static_cast<std::size_t>(e.k) * static_cast<std::size_t>(e.n),
                  Where::Device, "B block of a product");
      check_range(c + e.c, sizeof(double) * static_cast<std::size_t>(e.m) * static_cast<std::size_t>(e.n),
                  Where::Device, "C block of a product");
    }
    auto specialised = [&]<int M, int N, int K>() {
      using T = plexus_cuda::Tile<M, N, K>;
      std::vector<double> shared(T::kShared);
      const std::int64_t blocks = plexus_cuda::smm_blocks<M, N, K>(count);
      for (std::int64_t blk = 0; blk < blocks; ++blk) {
        std::fill(shared.begin(), shared.end(), std::numeric_limits<double>::quiet_NaN());
        for (int t = 0; t < T::kThreads; ++t)
          plexus_cuda::smm_load<M, N, K>(static_cast<int>(blk), t, stack, count, a, b, shared.data());
        for (int t = 0; t < T::kThreads; ++t)
          plexus_cuda::smm_compute<M, N, K>(static_cast<int>(blk), t, stack, count, shared.data(), c, HostAdd{});
      }
    };
    if (!plexus_cuda::dispatch_shape(shape, specialised))
      for (std::int64_t blk = 0; blk < count; ++blk)
        for (int t = 0; t < plexus_cuda::kGenericThreads; ++t)
          plexus_cuda::smm_generic(static_cast<int>(blk), t, stack, a, b, c, HostAdd{});
  }

  void run_norms(const NormTask* tasks, std::int64_t count, const double* data, double* out) const {
    check_range(tasks, sizeof(NormTask) * static_cast<std::size_t>(count), Where::Device, "norm tasks");
    check_range(out, sizeof(double) * static_cast<std::size_t>(count), Where::Device, "norms");
    std::vector<double> partial(plexus_cuda::kNormThreads);
    for (std::int64_t blk = 0; blk < count; ++blk) {
      check_range(data + tasks[blk].offset, sizeof(double) * static_cast<std::size_t>(tasks[blk].size), Where::Device,
                  "block of a norm");
      std::fill(partial.begin(), partial.end(), std::numeric_limits<double>::quiet_NaN());
      for (int t = 0; t < plexus_cuda::kNormThreads; ++t)
        plexus_cuda::norm_partial(static_cast<int>(blk), t, tasks, data, partial.data());
      for (int t = 0; t < plexus_cuda::kNormThreads; ++t)
        plexus_cuda::norm_finish(static_cast<int>(blk), t, partial.data(), out, HostSqrt{});
    }
  }

  std::mutex mu_;
  std::int64_t capacity_;
  std::int64_t device_bytes_ = 0;
  std::mt19937 rng_;
  std::map<char*, Allocation> allocations_;
  std::vector<std::unique_ptr<StreamState>> streams_;
  std::vector<std::unique_ptr<EventState>> events_;
  std::string failure_;
};

const plexus::PluginDescriptor& describe() {
  static const plexus::PluginDescriptor d = [] {
    plexus::PluginDescriptor p;
    p.name = "test_kernel_cuda_emulated";
    p.version = "1.0.0";
    plexus::ComponentDescriptor k;
    k.kind = plexus::ComponentKind::Kernel;
    k.name = "cuda-emulated";
    k.summary =
        "test backend: the cuda kernel's session and device code on an emulated device (host memory, "
        "operations deferred and reordered as CUDA may)";
    k.valid_parameters = [] {
      auto v = Teuchos::rcp(new plexus::ParameterList("cuda-emulated"));
      plexus_cuda::declare_options(*v);
      plexus::declare_int(*v, "MemoryMB", 1024, "device memory of the emulated device (MiB)", 1, 1 << 20);
      plexus::declare_int(*v, "Seed", 1, "order in which the emulated device interleaves its streams", 0, 1 << 30);
      return v;
    };
    k.make_kernel = [](const plexus::ParameterList& l) -> std::unique_ptr<plexus::Kernel> {
      auto device = std::make_shared<EmulatedDevice>(std::int64_t{l.get<int>("MemoryMB")} << 20,
                                                     static_cast<unsigned>(l.get<int>("Seed")));
      return std::make_unique<plexus_cuda::DeviceKernel>("cuda-emulated", std::move(device),
                                                         plexus_cuda::read_options(l));
    };
    p.components.push_back(std::move(k));
    return p;
  }();
  return d;
}

}  // namespace

PLEXUS_PLUGIN(describe)
