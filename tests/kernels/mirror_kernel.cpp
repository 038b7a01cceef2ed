// Test-only local backend "mirror": a device backend without a device. It keeps C and the staged
// panels in memory of its own (host memory standing in for device memory, counted under the
// device categories of the tracker), never touches the host arrays it was handed after begin()
// and stage() have copied them, and checks the session contract on every call: the order of the
// calls, one call at a time per slot, and every stack entry inside the staged panels and C's
// area. What passes the conformance suites with it is ready for a real device backend.
//
// With FirstProductsWrite (the default) it also claims Kernel::first_product_writes(): C's growth
// is filled with NaN instead of zeros, a product marked `first` writes its block, and every mark is
// checked: an unmarked product must not find its block still NaN (new and not yet written). A
// product that core fails to mark fails the session; one marked wrongly overwrites the products
// before it, which the result shows. FirstProductsWrite=false: the grown values are zero and the
// marks are ignored, as a backend that does not opt in sees them.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "plexus/error.hpp"
#include "plexus/kernel.hpp"
#include "plexus/memory.hpp"
#include "plexus/parameters.hpp"
#include "plexus/plugin.hpp"

namespace {

using plexus::Error;
using plexus::StackEntry;
using DeviceMatrix = plexus::memory::vector<double, plexus::memory::Category::DeviceMatrix>;
using DeviceBuffer = plexus::memory::vector<double, plexus::memory::Category::DeviceBuffer>;

class MirrorSession final : public plexus::KernelSession {
 public:
  MirrorSession(plexus::MatrixData c, int slots, bool writes_first)
      : c_(c.begin(), c.end()), busy_(static_cast<std::size_t>(slots)), writes_first_(writes_first) {
    // `c` (the host copy) is released when this returns: C lives here from now on.
  }

  void grow(std::int64_t values) override {
    require(!finished_, "grow() after finish()");
    require(values >= static_cast<std::int64_t>(c_.size()), "grow() to fewer values than C holds");
    c_.resize(static_cast<std::size_t>(values), writes_first_ ? std::numeric_limits<double>::quiet_NaN() : 0.0);
  }

  void stage(const plexus::PanelView& a, const plexus::PanelView& b) override {
    require(!finished_, "stage() after finish()");
    require(!staged_, "stage() twice without unstage()");
    a_.assign(a.data, a.data + a.data_size);
    b_.assign(b.data, b.data + b.data_size);
    staged_ = true;
  }

  void process(const StackEntry* stack, std::int64_t n, int slot) override {
    require(staged_, "process() without staged panels");
    require(slot >= 0 && slot < static_cast<int>(busy_.size()), "process() from slot " + std::to_string(slot));
    require(!busy_[static_cast<std::size_t>(slot)].exchange(true), "two process() calls at once in one slot");
    for (std::int64_t s = 0; s < n; ++s) product(stack[s]);
    busy_[static_cast<std::size_t>(slot)] = false;
  }

  void unstage() override {
    require(staged_, "unstage() without stage()");
    staged_ = false;
    a_.clear();  // the capacity stays, as a device backend keeps its buffers
    b_.clear();
  }

  plexus::MatrixData finish() override {
    require(!staged_, "finish() with panels still staged");
    require(!finished_, "finish() twice");
    finished_ = true;
    plexus::MatrixData out(c_.begin(), c_.end());
    DeviceMatrix().swap(c_);
    DeviceBuffer().swap(a_);
    DeviceBuffer().swap(b_);
    return out;
  }

 private:
  static void require(bool ok, const std::string& what) {
    if (!ok) throw Error("mirror kernel", "session contract broken: " + what);
  }
  static bool inside(std::int64_t offset, std::int64_t values, std::size_t size) {
    return offset >= 0 && values >= 0 && offset + values <= static_cast<std::int64_t>(size);
  }
  void product(const StackEntry& e) {
    require(e.m >= 0 && e.n >= 0 && e.k >= 0, "negative block size");
    require(inside(e.a, std::int64_t{e.m} * e.k, a_.size()), "A block outside the staged panel");
    require(inside(e.b, std::int64_t{e.k} * e.n, b_.size()), "B block outside the staged panel");
    require(inside(e.c, std::int64_t{e.m} * e.n, c_.size()), "C block outside C's area");
    const double* A = a_.data() + e.a;
    const double* B = b_.data() + e.b;
    double* C = c_.data() + e.c;
    if (writes_first_ && e.m > 0 && e.n > 0) {
      // A new block is NaN until its first product, which must be marked. (A mark on a later
      // product overwrites the ones before it: the result shows that.)
      require(e.first != 0 || !std::isnan(C[0]), "a product into a new block before one marked first");
      if (e.first != 0) std::fill(C, C + std::int64_t{e.m} * e.n, 0.0);
    }
    for (int j = 0; j < e.n; ++j)
      for (int l = 0; l < e.k; ++l)
        for (int i = 0; i < e.m; ++i) C[i + std::int64_t{j} * e.m] += A[i + std::int64_t{l} * e.m] * B[l + std::int64_t{j} * e.k];
  }

  DeviceMatrix c_;
  DeviceBuffer a_, b_;
  std::vector<std::atomic<bool>> busy_;
  bool writes_first_;
  bool staged_ = false, finished_ = false;
};

class MirrorKernel final : public plexus::Kernel {
 public:
  MirrorKernel(int threads, bool writes_first) : threads_(threads), writes_first_(writes_first) {}
  std::string name() const override { return "mirror"; }
  int threads() const override { return threads_; }
  plexus::MemorySpace memory_space() const override { return plexus::MemorySpace::Device; }
  bool first_product_writes() const override { return writes_first_; }
  std::unique_ptr<plexus::KernelSession> begin(plexus::MatrixData c, int slots) override {
    if (slots < 1) throw Error("mirror kernel", "begin() with " + std::to_string(slots) + " slots");
    return std::make_unique<MirrorSession>(std::move(c), slots, writes_first_);
  }

 private:
  int threads_;
  bool writes_first_;
};

const plexus::PluginDescriptor& describe() {
  static const plexus::PluginDescriptor d = [] {
    plexus::PluginDescriptor p;
    p.name = "test_kernel_mirror";
    p.version = "1.0.0";
    plexus::ComponentDescriptor k;
    k.kind = plexus::ComponentKind::Kernel;
    k.name = "mirror";
    k.summary = "test backend: a device backend simulated in host memory, checking the session contract";
    k.valid_parameters = [] {
      auto v = Teuchos::rcp(new plexus::ParameterList("mirror"));
      plexus::declare_int(*v, "Threads", 2, "thread slots (stack builders)", 1, 64);
      plexus::declare_bool(*v, "FirstProductsWrite", true,
                           "claim first_product_writes(): C's growth is NaN, a product marked first writes its block, "
                           "and the marks are checked; false: growth is zero and the marks are ignored");
      return v;
    };
    k.make_kernel = [](const plexus::ParameterList& l) -> std::unique_ptr<plexus::Kernel> {
      return std::make_unique<MirrorKernel>(l.get<int>("Threads"), l.get<bool>("FirstProductsWrite"));
    };
    p.components.push_back(std::move(k));
    return p;
  }();
  return d;
}

}  // namespace

PLEXUS_PLUGIN(describe)
