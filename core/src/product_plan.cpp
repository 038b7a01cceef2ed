#include "product_plan.hpp"

#include <algorithm>
#include <utility>

#include "plexus/local_multiply.hpp"

namespace plexus {
namespace plan {

namespace {
template <class T>
std::int64_t bytes_of(const Vec<T>& v) {
  return static_cast<std::int64_t>(v.capacity() * sizeof(T));
}
template <class T>
bool equal(const Vec<T>& v, const T* p, std::int64_t n) {
  return static_cast<std::int64_t>(v.size()) == n && (n == 0 || std::equal(v.begin(), v.end(), p));
}

// The copied index as a view without values, so that PanelView::same_index compares it.
PanelView view_of_copy(const IndexCopy& c) {
  PanelView v;
  v.nrows = static_cast<int>(c.row_ids.size());
  v.nblocks = static_cast<std::int64_t>(c.cols.size());
  v.data_size = c.data_size;
  v.row_ids = c.row_ids.data();
  v.row_ptr = c.row_ptr.data();
  v.cols = c.cols.data();
  v.offsets = c.offsets.data();
  return v;
}
}  // namespace

IndexCopy::IndexCopy(const PanelView& v) : data_size(v.data_size), held_(v.held_index()) {
  if (held()) return;
  row_ids.assign(v.row_ids, v.row_ids + v.nrows);
  row_ptr.assign(v.row_ptr, v.row_ptr + v.nrows + 1);
  cols.assign(v.cols, v.cols + v.nblocks);
  offsets.assign(v.offsets, v.offsets + v.nblocks);
}

IndexCopy::IndexCopy(IndexCopy&& o) noexcept
    : data_size(o.data_size),
      row_ids(std::move(o.row_ids)),
      row_ptr(std::move(o.row_ptr)),
      cols(std::move(o.cols)),
      offsets(std::move(o.offsets)),
      held_(o.held_.exchange(nullptr)) {}

IndexCopy& IndexCopy::operator=(IndexCopy&& o) noexcept {
  data_size = o.data_size;
  row_ids = std::move(o.row_ids);
  row_ptr = std::move(o.row_ptr);
  cols = std::move(o.cols);
  offsets = std::move(o.offsets);
  held_.store(o.held_.exchange(nullptr));
  return *this;
}

bool IndexCopy::same(const PanelView& v) const {
  if (data_size != v.data_size) return false;
  if (std::shared_ptr<const PanelIndex> h = held()) {
    const PanelIndex& x = *h;
    // The held index is the view's: nobody changes it while it is held.
    if (v.shows(x)) return true;
    if (!x.view(nullptr, data_size).same_index(v)) return false;
    // Equal: hold the view's object from now on, where the plan's size stays what ProductPlans
    // counted (the arrays' capacities may differ). Another thread may have swapped in the
    // meantime; either object serves.
    if (std::shared_ptr<const PanelIndex> theirs = v.held_index(); theirs && theirs->bytes() == x.bytes())
      held_.compare_exchange_strong(h, std::move(theirs), std::memory_order_acq_rel);
    return true;
  }
  return view_of_copy(*this).same_index(v);
}

std::int64_t IndexCopy::bytes() const {
  const std::shared_ptr<const PanelIndex> h = held();
  return (h ? h->bytes() : 0) + bytes_of(row_ids) + bytes_of(row_ptr) + bytes_of(cols) + bytes_of(offsets);
}

std::int64_t ThreadTick::bytes() const { return bytes_of(entries) + bytes_of(stacks) + bytes_of(added); }

namespace {
// A copy of block sizes: its sizes (int) and offsets (int64).
std::int64_t bytes_of(const BlockSizes& s) { return 12 * static_cast<std::int64_t>(s.count()) + 8; }
}  // namespace

std::int64_t TickRecord::bytes() const {
  std::int64_t n = a.bytes() + b.bytes() + static_cast<std::int64_t>(sizeof(TickRecord));
  for (const auto& t : threads) n += t.bytes() + static_cast<std::int64_t>(sizeof(ThreadTick));
  return n;  // without k, which ticks share (ProductPlan::bytes counts it)
}

bool TickRecord::same_input(const PanelView& a_view, const BlockSizes& k_sizes, const PanelView& b_view) const {
  return *k == k_sizes && a.same(a_view) && b.same(b_view);
}

PlanKey::PlanKey(const KeyView& v) : layout(v.layout), host(v.host), first_row(v.first_row) {
  row_ids.assign(v.start.row_ids, v.start.row_ids + v.start.nrows);
  start_row_ptr.assign(v.start.row_ptr, v.start.row_ptr + v.start.nrows + 1);
  start_cols.assign(v.start.cols, v.start.cols + v.start.nblocks);
}

bool PlanKey::matches(const KeyView& v) const {
  return host == v.host && first_row == v.first_row && equal(row_ids, v.start.row_ids, v.start.nrows) &&
         equal(start_row_ptr, v.start.row_ptr, v.start.nrows + 1) && equal(start_cols, v.start.cols, v.start.nblocks) &&
         layout == v.layout;
}

std::int64_t PlanKey::bytes() const {
  return bytes_of(row_ids) + bytes_of(start_row_ptr) + bytes_of(start_cols) +
         static_cast<std::int64_t>(first_row.size() * sizeof(int)) + bytes_of(layout.rows) + bytes_of(layout.cols);
}

std::int64_t ProductPlan::bytes() const {
  // What the plan's arrays hold (their capacity; the memory tracker's pool may round a request
  // up). A tick shared with another plan (the first ticks of a product that left a plan) is
  // counted in both, so the plans' total is at least what they hold together.
  std::int64_t n = key.bytes() + (c_index ? c_index->bytes() : 0) + static_cast<std::int64_t>(sizeof(ProductPlan));
  const BlockSizes* k = nullptr;
  for (const auto& t : ticks) {
    n += t->bytes();
    if (t->k.get() != k) n += bytes_of(*(k = t->k.get()));
  }
  return n;
}

}  // namespace plan

ProductPlans::ProductPlans(std::int64_t max_bytes) : max_bytes_(std::max<std::int64_t>(max_bytes, 0)) {}

ProductPlans::~ProductPlans() = default;

void ProductPlans::set_max_bytes(std::int64_t bytes) {
  const std::lock_guard<std::mutex> lock(mutex_);
  max_bytes_ = std::max<std::int64_t>(bytes, 0);
  trim();
}

std::int64_t ProductPlans::max_bytes() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return max_bytes_;
}

std::size_t ProductPlans::size() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return plans_.size();
}

std::int64_t ProductPlans::bytes() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

std::int64_t ProductPlans::declined() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return declined_;
}

void ProductPlans::clear() {
  const std::lock_guard<std::mutex> lock(mutex_);
  plans_.clear();
  bytes_ = 0;
}

std::vector<ProductPlans::PlanPtr> ProductPlans::candidates(const plan::KeyView& key, std::int64_t& lookup) {
  const std::lock_guard<std::mutex> lock(mutex_);
  lookup = ++lookups_;
  std::vector<PlanPtr> found;
  for (auto h = plans_.rbegin(); h != plans_.rend(); ++h)
    if (h->plan->key.matches(key)) found.push_back(h->plan);
  return found;
}

bool ProductPlans::in_use(const Held& h) const {
  const std::int64_t span = h.reuse > 0 ? h.reuse : static_cast<std::int64_t>(plans_.size()) + 1;
  return lookups_ - h.last_use <= 2 * span;
}

bool ProductPlans::keep(PlanPtr plan, std::int64_t lookup) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const std::int64_t n = plan->bytes();
  if (n > max_bytes_) return false;
  // Room from the plans no longer in use, the least recently used first; none is dropped unless
  // they make enough.
  std::vector<std::size_t> drop;
  std::int64_t room = max_bytes_ - bytes_;
  for (std::size_t i = 0; i < plans_.size() && room < n; ++i)
    if (!in_use(plans_[i])) {
      drop.push_back(i);
      room += plans_[i].plan->bytes();
    }
  if (room < n) {
    ++declined_;
    return false;
  }
  for (auto i = drop.rbegin(); i != drop.rend(); ++i) {
    bytes_ -= plans_[*i].plan->bytes();
    plans_.erase(plans_.begin() + static_cast<std::ptrdiff_t>(*i));
  }
  bytes_ += n;
  plans_.push_back(Held{std::move(plan), lookup, 0});
  return true;
}

void ProductPlans::touch(const PlanPtr& plan, std::int64_t lookup) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto h = std::find_if(plans_.begin(), plans_.end(), [&](const Held& x) { return x.plan == plan; });
  if (h == plans_.end()) return;
  if (lookup > h->last_use) {
    h->reuse = lookup - h->last_use;
    h->last_use = lookup;
  }
  std::rotate(h, h + 1, plans_.end());
}

void ProductPlans::trim() {
  std::size_t drop = 0;
  while (drop < plans_.size() && bytes_ > max_bytes_) bytes_ -= plans_[drop++].plan->bytes();
  plans_.erase(plans_.begin(), plans_.begin() + static_cast<std::ptrdiff_t>(drop));
}

}  // namespace plexus
