#pragma once
// A host backend's session (HostKernel::begin), where core's LocalProduct can reach it: its dense
// ticks (local_product_dense.cpp) compute into scratch through the kernel's process() on host
// pointers and add the result into C's blocks, which only this session's C area holds.
#include <algorithm>
#include <cstdint>
#include <utility>

#include "plexus/kernel.hpp"

namespace plexus {

// A host backend's accumulation: C stays in the area it was handed, the panels are read in place.
class HostSession final : public KernelSession {
 public:
  HostSession(HostKernel& kernel, MatrixData c, int slots)
      : kernel_(kernel), c_(std::move(c)), slots_(slots), writes_first_(kernel.first_product_writes()) {}

  void grow(std::int64_t values) override {
    const auto old = static_cast<std::int64_t>(c_.size());
    if (values <= old) return;
    // Room for later ticks too: a tick rarely creates the last blocks of C.
    if (values > static_cast<std::int64_t>(c_.capacity()))
      c_.reserve(std::max(static_cast<std::size_t>(values), c_.capacity() * 3 / 2));
    c_.resize(static_cast<std::size_t>(values));  // tracked vectors leave new doubles unset
    // A kernel whose first products write gets them unset: each new block's first product
    // overwrites it (StackEntry::first), so zeroing would only be a pass over memory.
    if (writes_first_) return;
    double* fresh = c_.data() + old;
    const std::int64_t n = values - old;
#pragma omp parallel for num_threads(slots_) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) fresh[i] = 0.0;
  }

  /// Room for `values` doubles of C without a move (a hint: never shrinks, sets no values).
  void reserve(std::int64_t values) {
    if (values > static_cast<std::int64_t>(c_.capacity())) c_.reserve(static_cast<std::size_t>(values));
  }
  std::int64_t capacity() const { return static_cast<std::int64_t>(c_.capacity()); }
  /// C's area back to its first `values` doubles (the capacity stays): the room a tick's threads
  /// were given beyond the blocks they placed (LocalProduct's slabs, local_product_slabs.cpp).
  void truncate(std::int64_t values) {
    if (values < static_cast<std::int64_t>(c_.size())) c_.resize(static_cast<std::size_t>(values));
  }

  void stage(const PanelView& a, const PanelView& b) override {
    a_ = a.data;
    b_ = b.data;
  }

  void process(const StackEntry* stack, std::int64_t n, int) override {
    if (n > 0) kernel_.process(stack, n, a_, b_, c_.data());
  }

  void unstage() override { a_ = b_ = nullptr; }

  MatrixData finish() override { return std::move(c_); }

  /// The backend, and C's value area as it is now (valid until the next grow()).
  HostKernel& kernel() { return kernel_; }
  double* values() { return c_.data(); }
  /// The staged panels' values (stage(); null after unstage()).
  const double* a() const { return a_; }
  const double* b() const { return b_; }
  /// Whether the kernel's first product into a block writes it (else grow() zeroes new values).
  bool writes_first() const { return writes_first_; }
  /// C's value area exchanged for `values`: the old one is returned (LocalProduct's last tick
  /// takes C's area out while its threads' kernels write into work areas, and puts it back).
  MatrixData exchange(MatrixData values) {
    std::swap(c_, values);
    return values;
  }

 private:
  HostKernel& kernel_;
  MatrixData c_;
  int slots_;
  bool writes_first_;
  const double* a_ = nullptr;
  const double* b_ = nullptr;
};

// One thread's work area in the last tick's filter (LocalProduct::filter_last_tick): the thread's
// stacks are computed here, on the panels the host session staged, and the blocks it keeps are
// copied out of it (into C's own area or the thread's). An area per thread, so that each grows as
// its rows need (one shared area would move under the other threads' kernels).
class WorkAreaSession final : public KernelSession {
 public:
  WorkAreaSession(HostSession& host, std::int64_t values) : host_(host) {
    area_.reserve(static_cast<std::size_t>(values));  // from the memory pool's warm blocks, as a rule
  }

  void grow(std::int64_t values) override {
    const auto old = static_cast<std::int64_t>(area_.size());
    if (values <= old) return;
    area_.resize(static_cast<std::size_t>(values));  // unset, as HostSession::grow leaves them
    if (!host_.writes_first()) std::fill(area_.begin() + old, area_.end(), 0.0);
  }
  /// The area's first `values` doubles taken again from its start: zeroed for a kernel whose first
  /// products add (its new blocks must find zeros, as grow() leaves them).
  void reuse(std::int64_t values) {
    if (!host_.writes_first()) std::fill_n(area_.data(), std::min<std::int64_t>(values, size()), 0.0);
  }
  void stage(const PanelView&, const PanelView&) override {}  // the host session's panels
  void process(const StackEntry* stack, std::int64_t n, int) override {
    if (n > 0) host_.kernel().process(stack, n, host_.a(), host_.b(), area_.data());
  }
  void unstage() override {}
  MatrixData finish() override { return std::move(area_); }

  const double* values() const { return area_.data(); }
  std::int64_t size() const { return static_cast<std::int64_t>(area_.size()); }

 private:
  HostSession& host_;
  MatrixData area_;
};

}  // namespace plexus
