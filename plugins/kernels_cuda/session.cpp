#include "session.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

#include "plexus/error.hpp"
#include "plexus/memory.hpp"
#include "resources.hpp"

namespace plexus_cuda {

using plexus::Error;
using plexus::StackEntry;
namespace memory = plexus::memory;

// The device reads core's stack entries through DeviceEntry: the same layout.
static_assert(sizeof(DeviceEntry) == sizeof(StackEntry));
static_assert(offsetof(DeviceEntry, m) == offsetof(StackEntry, m) &&
              offsetof(DeviceEntry, n) == offsetof(StackEntry, n) &&
              offsetof(DeviceEntry, k) == offsetof(StackEntry, k) &&
              offsetof(DeviceEntry, a) == offsetof(StackEntry, a) &&
              offsetof(DeviceEntry, b) == offsetof(StackEntry, b) &&
              offsetof(DeviceEntry, c) == offsetof(StackEntry, c));

void declare_options(plexus::ParameterList& valid) {
  plexus::declare_int(valid, "Threads", 0,
                      "host threads that build stacks of small products, each owning whole C block rows "
                      "(0: omp_get_max_threads())",
                      0, 4096);
  plexus::declare_int(valid, "Streams", 4, "compute streams: the threads' batches of products run concurrently on them",
                      1, 64);
  plexus::declare_int(valid, "BatchSize", 30000,
                      "stack entries a thread collects before it sends them to the device and launches their "
                      "products (DBCSR's default stack size is 30000)",
                      1, 10000000);
}

Options read_options(const plexus::ParameterList& p) {
  Options o;
  o.threads = p.get<int>("Threads");
  o.streams = p.get<int>("Streams");
  o.batch = p.get<int>("BatchSize");
  return o;
}

namespace {
// Position of a block size in kSmmSizes, or -1; sizes up to the largest specialised one.
constexpr int kMaxSmmSize = 64;
constexpr std::array<int, kMaxSmmSize + 1> size_index() {
  std::array<int, kMaxSmmSize + 1> index{};
  for (auto& i : index) i = -1;
  for (int i = 0; i < kSmmSizeCount; ++i) index[static_cast<std::size_t>(kSmmSizes[i])] = i;
  return index;
}
constexpr std::array<int, kMaxSmmSize + 1> kSizeIndex = size_index();
static_assert(kSmmSizes[kSmmSizeCount - 1] <= kMaxSmmSize);
}  // namespace

int shape_of(int m, int n, int k) {
  if (m < 0 || n < 0 || k < 0 || m > kMaxSmmSize || n > kMaxSmmSize || k > kMaxSmmSize) return kGenericShape;
  const int im = kSizeIndex[static_cast<std::size_t>(m)];
  const int in = kSizeIndex[static_cast<std::size_t>(n)];
  const int ik = kSizeIndex[static_cast<std::size_t>(k)];
  if (im < 0 || in < 0 || ik < 0) return kGenericShape;
  return (im * kSmmSizeCount + in) * kSmmSizeCount + ik;
}

int node_local_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
                          "PALS_LOCAL_RANKID", "FLUX_TASK_LOCAL_ID"}) {
    const char* value = std::getenv(var);
    if (value == nullptr || *value == '\0') continue;
    char* end = nullptr;
    const long rank = std::strtol(value, &end, 10);
    if (*end == '\0' && rank >= 0 && rank < (1L << 30)) return static_cast<int>(rank);
  }
  return 0;
}

int choose_device(const std::string& spec, int count, int local_rank, const std::string& where) {
  if (count <= 0) throw plexus::InputError(where, "no CUDA device on this node");
  if (spec == "auto") return local_rank % count;
  char* end = nullptr;
  const long id = spec.empty() ? -1 : std::strtol(spec.c_str(), &end, 10);
  if (spec.empty() || *end != '\0' || id < 0)
    throw plexus::InputError(where, "'" + spec + "' is not a device: give 'auto' or a device number");
  if (id >= count)
    throw plexus::InputError(where, "device " + spec + " asked for, but this node has " + std::to_string(count) +
                                        " CUDA device" +
                                        (count == 1 ? " (0)" : "s (0 to " + std::to_string(count - 1) + ")"));
  return static_cast<int>(id);
}

std::string bytes_text(std::int64_t bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char text[32];
  if (u == 0)
    std::snprintf(text, sizeof text, "%" PRId64 " B", bytes);
  else
    std::snprintf(text, sizeof text, "%.2f %s", v, units[u]);
  return text;
}

namespace detail {

class DeviceSession final : public plexus::KernelSession {
 public:
  DeviceSession(std::shared_ptr<Device> device, std::shared_ptr<ResourcePool> pool, const Options& o, int threads,
                plexus::MatrixData c, int slots, std::string who)
      : device_ptr_(std::move(device)),
        device_(*device_ptr_),
        pool_(std::move(pool)),
        who_(std::move(who)),
        batch_(o.batch),
        threads_(threads),
        res_(take_resources(slots)),
        copy_(res_->copy),
        compute_(res_->compute),
        c_(res_->c),
        panels_(res_->panels),
        norm_tasks_host_(res_->norm_tasks_host),
        norm_tasks_(res_->norm_tasks),
        norm_out_(res_->norm_out),
        norm_out_host_(res_->norm_out_host),
        norms_done_(res_->norms_done) {
    nlanes_ = slots;
    // C is uploaded once and stays on the device until finish(). An area kept from an earlier
    // session holds its values: beyond this C it is zeroed.
    c_size_ = static_cast<std::int64_t>(c.size());
    if (!reserve_c(c_size_, false)) {
      const auto capacity = static_cast<std::int64_t>(c_.bytes() / sizeof(double));
      if (capacity > c_size_) device_.zero(c_.as<double>() + c_size_, bytes_of(capacity - c_size_), copy_->get());
    }
    transfer_c(c.data(), true);
    device_.synchronize(copy_->get());  // `c` is freed when the constructor returns
  }

  ~DeviceSession() override {
    // Outstanding work ends before the buffers are reused or freed (freeing waits for the device
    // anyway); its errors were or will not be reported. Resources whose streams could not be
    // waited for are freed, not kept.
    bool idle = false;
    try {
      wait_all();
      idle = true;
    } catch (...) {
    }
    if (idle) pool_->give_back(std::move(res_));
  }

  void grow(std::int64_t values) override {
    require(!finished_, "grow() after finish()");
    if (values <= c_size_) return;
    device_.make_current();
    // Values beyond c_size_ are kept zero (a fresh buffer's tail is zeroed), so growing within
    // the capacity costs nothing.
    reserve_c(values, true);
    c_size_ = values;
  }

  void stage(const plexus::PanelView& a, const plexus::PanelView& b) override {
    require(!finished_, "stage() after finish()");
    require(!staged_, "stage() twice without unstage()");
    device_.make_current();
    const int p = static_cast<int>(tick_ & 1);
    PanelSet& set = panels_[static_cast<std::size_t>(p)];
    // The pinned copies of this set were sent two ticks ago; its device copies are read by that
    // tick's products until their streams pass set.done.
    if (set.used) device_.synchronize(set.copied->get());
    std::size_t need = 0;  // device bytes the panels' buffers must grow by
    if (set.dev_a.bytes() < bytes_of(a.data_size)) need += bytes_of(a.data_size);
    if (set.dev_b.bytes() < bytes_of(b.data_size)) need += bytes_of(b.data_size);
    if (need > 0) make_room(need, p);
    reserve(set.host_a, device_, bytes_of(a.data_size), memory::Category::Other, "", who_);
    reserve(set.host_b, device_, bytes_of(b.data_size), memory::Category::Other, "", who_);
    reserve(set.dev_a, device_, bytes_of(a.data_size), memory::Category::DeviceBuffer, "the A panel of a tick", who_);
    reserve(set.dev_b, device_, bytes_of(b.data_size), memory::Category::DeviceBuffer, "the B panel of a tick", who_);
    parallel_copy(set.host_a.as<double>(), a.data, a.data_size, threads_);
    parallel_copy(set.host_b.as<double>(), b.data, b.data_size, threads_);
    const Stream copy = copy_->get();
    if (set.used)
      for (auto& e : set.done) device_.wait(copy, e.get());
    if (a.data_size > 0)
      device_.copy_to_device(set.dev_a.as<double>(), set.host_a.as<double>(), bytes_of(a.data_size), copy);
    if (b.data_size > 0)
      device_.copy_to_device(set.dev_b.as<double>(), set.host_b.as<double>(), bytes_of(b.data_size), copy);
    device_.record(set.copied->get(), copy);
    for (auto& s : compute_) device_.wait(s.get(), set.copied->get());
    set.used = true;
    current_ = p;
    a_ = a;
    b_ = b;
    staged_ = true;
  }

  bool norms(const plexus::BlockLayout& a_layout, const plexus::BlockLayout& b_layout, double* a_norms,
             double* b_norms) override {
    require(staged_, "norms() without staged panels");
    device_.make_current();
    const std::int64_t na = a_.nblocks, nb = b_.nblocks, n = na + nb;
    if (n == 0) return true;
    reserve(norm_tasks_host_, device_, sizeof(NormTask) * static_cast<std::size_t>(n), memory::Category::Other, "",
            who_);
    reserve(norm_tasks_, device_, sizeof(NormTask) * static_cast<std::size_t>(n), memory::Category::DeviceBuffer,
            "the block norms' tasks", who_);
    reserve(norm_out_, device_, bytes_of(n), memory::Category::DeviceBuffer, "the block norms", who_);
    reserve(norm_out_host_, device_, bytes_of(n), memory::Category::Other, "", who_);
    NormTask* tasks = norm_tasks_host_.as<NormTask>();
    fill_tasks(a_, a_layout, tasks);
    fill_tasks(b_, b_layout, tasks + na);
    // On the copy stream, behind the panels' copies; the previous call's buffers are free (it
    // waited for its results).
    const Stream copy = copy_->get();
    const PanelSet& set = panels_[static_cast<std::size_t>(current_)];
    device_.copy_to_device(norm_tasks_.as<NormTask>(), tasks, sizeof(NormTask) * static_cast<std::size_t>(n), copy);
    device_.launch_norms(norm_tasks_.as<NormTask>(), na, set.dev_a.as<double>(), norm_out_.as<double>(), copy);
    device_.launch_norms(norm_tasks_.as<NormTask>() + na, nb, set.dev_b.as<double>(), norm_out_.as<double>() + na,
                         copy);
    device_.copy_to_host(norm_out_host_.as<double>(), norm_out_.as<double>(), bytes_of(n), copy);
    device_.record(norms_done_->get(), copy);
    device_.synchronize(norms_done_->get());
    if (na > 0) std::memcpy(a_norms, norm_out_host_.as<double>(), bytes_of(na));
    if (nb > 0) std::memcpy(b_norms, norm_out_host_.as<double>() + na, bytes_of(nb));
    return true;
  }

  void process(const StackEntry* stack, std::int64_t n, int slot) override {
    require(staged_, "process() without staged panels");
    require(slot >= 0 && slot < nlanes_, "process() from slot " + std::to_string(slot));
    Lane& lane = this->lane(slot);
    require(!lane.busy.exchange(true), "two process() calls at once in one slot");
    struct Free {
      std::atomic<bool>& busy;
      ~Free() { busy = false; }
    } free_lane{lane.busy};
    device_.make_current();  // this thread may not have used the device yet
    for (std::int64_t i = 0; i < n; ++i) {
      const StackEntry& e = stack[i];
      if (e.m <= 0 || e.n <= 0 || e.k <= 0) continue;
      lane.pending.push_back(DeviceEntry{e.m, e.n, e.k, e.a, e.b, e.c});
      if (static_cast<std::int64_t>(lane.pending.size()) >= batch_) flush(lane, slot);
    }
  }

  void unstage() override {
    require(staged_, "unstage() without stage()");
    staged_ = false;  // also when a flush below fails: the tick is over either way
    ++tick_;
    device_.make_current();
    for (int l = 0; l < nlanes_; ++l) flush(lane(l), l);
    PanelSet& set = panels_[static_cast<std::size_t>(current_)];
    for (std::size_t s = 0; s < compute_.size(); ++s) device_.record(set.done[s].get(), compute_[s].get());
  }

  plexus::MatrixData finish() override {
    require(!staged_, "finish() with panels still staged");
    require(!finished_, "finish() twice");
    finished_ = true;
    device_.make_current();
    wait_all();
    plexus::MatrixData out(static_cast<std::size_t>(c_size_));
    transfer_c(out.data(), false);
    return out;
  }

 private:
  static std::size_t bytes_of(std::int64_t values) { return static_cast<std::size_t>(values) * sizeof(double); }

  void require(bool ok, const std::string& what) const {
    if (!ok) throw Error(who_, "session contract broken: " + what);
  }

  static void fill_tasks(const plexus::PanelView& v, const plexus::BlockLayout& layout, NormTask* tasks) {
    for (int r = 0; r < v.nrows; ++r) {
      const std::int64_t m = layout.rows.size(static_cast<int>(v.row_ids[r]));
      for (std::int64_t b = v.row_ptr[r]; b < v.row_ptr[r + 1]; ++b)
        tasks[b] = NormTask{v.offsets[b], m * layout.cols.size(static_cast<int>(v.cols[b]))};
    }
  }

  /// C's device area holds at least `values` values, zero beyond c_size_ (keeping the first
  /// c_size_ when `keep`). True when it took a new area; false when the area held was large
  /// enough (and was left as it is).
  bool reserve_c(std::int64_t values, bool keep) {
    if (c_.bytes() >= bytes_of(std::max<std::int64_t>(values, 1))) return false;
    // Half as much again: C grows by the blocks each tick creates, and every reallocation waits
    // for all work and copies C once.
    values = std::max<std::int64_t>(values, 1);
    wait_all();
    if (!keep) c_.reset();  // an area kept from an earlier session: its values are not needed
    make_room(bytes_of(values), staged_ ? current_ : -1);
    Buffer bigger = Buffer::make(device_, bytes_of(values), memory::Category::DeviceMatrix,
                                 "C's local blocks (" + std::to_string(values) + " values)", who_,
                                 keep ? bytes_of(c_size_ / 2) : 0);
    const auto capacity = static_cast<std::int64_t>(bigger.bytes() / sizeof(double));
    const Stream copy = copy_->get();
    const std::int64_t kept = keep ? c_size_ : 0;
    if (kept > 0) device_.copy_on_device(bigger.as<double>(), c_.as<double>(), bytes_of(kept), copy);
    device_.zero(bigger.as<double>() + kept, bytes_of(capacity - kept), copy);
    device_.synchronize(copy);
    c_ = std::move(bigger);
    return true;
  }

  /// When the device has less than `bytes` free: frees what the kernel keeps that no work of this
  /// session needs. First the idle sets of other sessions; then, after waiting for this
  /// session's streams, its own device buffers other than C and the panel set `keep_set` (-1:
  /// none), which later calls allocate again as they need them; last, C's area where it is
  /// larger than C. Kept memory must never make a multiply fail that would fit on its own.
  void make_room(std::size_t bytes, int keep_set) {
    auto fits = [&] { return static_cast<std::int64_t>(bytes) <= device_.memory().free; };
    if (fits() || (pool_->drop_idle() && fits())) return;
    wait_all();
    for (int s = 0; s < 2; ++s)
      if (s != keep_set) {
        panels_[static_cast<std::size_t>(s)].dev_a.reset();
        panels_[static_cast<std::size_t>(s)].dev_b.reset();
      }
    for (auto& l : res_->lanes)
      for (auto& d : l->dev) d.reset();
    norm_tasks_.reset();
    norm_out_.reset();
    // C's area, kept from a larger C, shrinks to this C.
    const std::size_t c_bytes = bytes_of(std::max<std::int64_t>(c_size_, 1));
    if (fits() || c_.bytes() <= c_bytes || static_cast<std::int64_t>(c_bytes) > device_.memory().free) return;
    Buffer smaller = Buffer::make(device_, c_bytes, memory::Category::DeviceMatrix, "C's local blocks", who_);
    if (c_size_ > 0) device_.copy_on_device(smaller.as<double>(), c_.as<double>(), bytes_of(c_size_), copy_->get());
    device_.synchronize(copy_->get());
    c_ = std::move(smaller);
  }

  /// Copies C between the device and `host` (pageable memory) on the copy stream, and waits
  /// for it. A large C goes in chunks through two page-locked buffers, so that one chunk's
  /// transfer overlaps the host's copy of the other, both faster than from pageable memory.
  void transfer_c(double* host, bool to_device) {
    if (c_size_ == 0) return;
    const Stream copy = copy_->get();
    constexpr std::int64_t kChunk = std::int64_t{1} << 20;  // values (8 MiB)
    if (c_size_ < kChunk / 4) {
      if (to_device)
        device_.copy_to_device(c_.as<double>(), host, bytes_of(c_size_), copy);
      else
        device_.copy_to_host(host, c_.as<double>(), bytes_of(c_size_), copy);
      device_.synchronize(copy);
      return;
    }
    const std::int64_t chunk = std::min(kChunk, c_size_), chunks = (c_size_ + chunk - 1) / chunk;
    for (std::int64_t q = 0; q < std::min<std::int64_t>(chunks, 2); ++q)
      reserve(res_->bounce[static_cast<std::size_t>(q)], device_, bytes_of(chunk), memory::Category::Other, "", who_);
    auto at = [&](std::int64_t i) { return i * chunk; };
    auto size = [&](std::int64_t i) { return std::min(chunk, c_size_ - at(i)); };
    auto buffer = [&](std::int64_t i) { return res_->bounce[static_cast<std::size_t>(i & 1)].as<double>(); };
    auto event = [&](std::int64_t i) { return res_->bounced[static_cast<std::size_t>(i & 1)]->get(); };
    if (to_device) {
      for (std::int64_t i = 0; i < chunks; ++i) {
        if (i >= 2) device_.synchronize(event(i));  // chunk i - 2's copy has read the buffer
        parallel_copy(buffer(i), host + at(i), size(i), threads_);
        device_.copy_to_device(c_.as<double>() + at(i), buffer(i), bytes_of(size(i)), copy);
        device_.record(event(i), copy);
      }
      device_.synchronize(copy);
      return;
    }
    auto fetch = [&](std::int64_t i) {
      device_.copy_to_host(buffer(i), c_.as<double>() + at(i), bytes_of(size(i)), copy);
      device_.record(event(i), copy);
    };
    fetch(0);
    for (std::int64_t i = 0; i < chunks; ++i) {
      if (i + 1 < chunks) fetch(i + 1);  // its buffer's last chunk (i - 1) was copied out below
      device_.synchronize(event(i));
      parallel_copy(host + at(i), buffer(i), size(i), threads_);
    }
  }

  /// Sends a lane's collected entries, grouped by shape, and launches their products on the
  /// lane's stream.
  void flush(Lane& lane, int slot) {
    const auto n = static_cast<std::int64_t>(lane.pending.size());
    if (n == 0) return;
    const Stream stream = compute_[static_cast<std::size_t>(slot) % compute_.size()].get();
    const int q = lane.next;
    if (lane.done[static_cast<std::size_t>(q)] == nullptr)
      lane.done[static_cast<std::size_t>(q)] = std::make_unique<OwnedEvent>(device_, device_.create_event());
    OwnedEvent& done = *lane.done[static_cast<std::size_t>(q)];
    if (lane.used[static_cast<std::size_t>(q)]) device_.synchronize(done.get());  // its buffers are free
    // Room for this flush's entries, grown in powers of two up to a whole batch: a large BatchSize
    // (one launch per shape and tick) then costs no more pinned and device memory than the ticks
    // use (1,000,000 entries are 40 MB per buffer, four buffers per thread slot).
    std::int64_t room = 1024;
    while (room < n) room *= 2;
    const std::size_t bytes = sizeof(DeviceEntry) * static_cast<std::size_t>(std::min(room, batch_));
    Buffer& host = lane.host[static_cast<std::size_t>(q)];
    Buffer& dev = lane.dev[static_cast<std::size_t>(q)];
    reserve(host, device_, bytes, memory::Category::Other, "", who_);
    reserve(dev, device_, bytes, memory::Category::DeviceBuffer, "a batch of stack entries", who_);
    // Counting sort by shape: one launch per shape present.
    std::array<std::int64_t, kSmmShapes + 2> first{};
    lane.shape.resize(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      const DeviceEntry& e = lane.pending[static_cast<std::size_t>(i)];
      const int s = shape_of(e.m, e.n, e.k);
      lane.shape[static_cast<std::size_t>(i)] = s;
      ++first[static_cast<std::size_t>(s) + 1];
    }
    for (int s = 0; s <= kSmmShapes; ++s) first[static_cast<std::size_t>(s) + 1] += first[static_cast<std::size_t>(s)];
    std::array<std::int64_t, kSmmShapes + 1> at{};
    std::copy(first.begin(), first.end() - 1, at.begin());
    DeviceEntry* sorted = host.as<DeviceEntry>();
    for (std::int64_t i = 0; i < n; ++i)
      sorted[at[static_cast<std::size_t>(lane.shape[static_cast<std::size_t>(i)])]++] =
          lane.pending[static_cast<std::size_t>(i)];
    lane.pending.clear();
    device_.copy_to_device(dev.as<DeviceEntry>(), sorted, sizeof(DeviceEntry) * static_cast<std::size_t>(n), stream);
    const PanelSet& set = panels_[static_cast<std::size_t>(current_)];
    for (int s = 0; s <= kSmmShapes; ++s) {
      const std::int64_t count = first[static_cast<std::size_t>(s) + 1] - first[static_cast<std::size_t>(s)];
      if (count > 0)
        device_.launch_products(s, dev.as<DeviceEntry>() + first[static_cast<std::size_t>(s)], count,
                                set.dev_a.as<double>(), set.dev_b.as<double>(), c_.as<double>(), stream);
    }
    device_.record(done.get(), stream);
    lane.used[static_cast<std::size_t>(q)] = true;
    lane.next = 1 - q;
  }

  void wait_all() {
    for (auto& s : compute_) device_.synchronize(s.get());
    if (copy_) device_.synchronize(copy_->get());
  }

  /// The kernel's idle resources, or new ones; every slot has a lane with nothing pending.
  std::unique_ptr<detail::DeviceResources> take_resources(int slots) {
    if (slots < 1) throw Error(who_, "begin() with " + std::to_string(slots) + " thread slots");
    device_.make_current();
    auto r = pool_->take();
    if (r->lanes.size() < static_cast<std::size_t>(slots)) r->lanes.resize(static_cast<std::size_t>(slots));
    for (auto& l : r->lanes) {
      if (l == nullptr) l = std::make_unique<Lane>();
      l->pending.clear();
    }
    return r;
  }
  Lane& lane(int slot) { return *res_->lanes[static_cast<std::size_t>(slot)]; }

  std::shared_ptr<Device> device_ptr_;
  Device& device_;
  std::shared_ptr<ResourcePool> pool_;
  std::string who_;
  std::int64_t batch_;
  int threads_;                                   // the kernel's host threads (copies through page-locked memory)
  std::unique_ptr<detail::DeviceResources> res_;  // given back to pool_ at the end
  // The parts of res_ (references into it).
  std::unique_ptr<OwnedStream>& copy_;
  std::vector<OwnedStream>& compute_;
  Buffer& c_;
  std::int64_t c_size_ = 0;
  std::array<PanelSet, 2>& panels_;
  int nlanes_ = 0;
  Buffer &norm_tasks_host_, &norm_tasks_, &norm_out_, &norm_out_host_;
  std::unique_ptr<OwnedEvent>& norms_done_;
  plexus::PanelView a_, b_;
  std::int64_t tick_ = 0;
  int current_ = 0;
  bool staged_ = false, finished_ = false;
};

}  // namespace detail

DeviceKernel::DeviceKernel(std::string name, std::shared_ptr<Device> device, Options options)
    : name_(std::move(name)),
      device_(std::move(device)),
      options_(options),
      pool_(std::make_shared<ResourcePool>(device_, options_.streams)) {
  threads_ = options_.threads > 0 ? options_.threads : omp_get_max_threads();
  if (threads_ < 1) threads_ = 1;
}

DeviceKernel::~DeviceKernel() = default;

std::unique_ptr<plexus::KernelSession> DeviceKernel::begin(plexus::MatrixData c, int slots) {
  return std::make_unique<detail::DeviceSession>(device_, pool_, options_, threads_, std::move(c), slots,
                                                 "kernel " + name_);
}

}  // namespace plexus_cuda
