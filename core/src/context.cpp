#include "plexus/context.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <utility>

#include "plexus/comm_strategy.hpp"
#include "plexus/error.hpp"
#include "plexus/memory.hpp"

namespace plexus {

// ---- the pool -------------------------------------------------------------------------------

namespace {
std::uint64_t next_epoch() {
  static std::atomic<std::uint64_t> counter{0};
  return ++counter;
}
}  // namespace

CommPool::CommPool() : epoch_(next_epoch()) {}

CommPool::~CommPool() {
  // No MPI here: a destructor may run while unwinding after an error on another rank, or after
  // MPI_Finalize. Communicators not released are left to MPI_Finalize.
  if (!comms_.empty())
    std::fprintf(stderr, "plexus: %zu pooled communicator(s) were not released before the pool was destroyed\n",
                 comms_.size());
}

MPI_Comm CommPool::dup(MPI_Comm parent, const std::string& purpose) {
  const Key key{parent, "dup " + purpose, 0, 0};
  if (auto it = index_.find(key); it != index_.end()) return it->second;
  MPI_Comm c = MPI_COMM_NULL;
  mpi::check(MPI_Comm_dup(parent, &c), "MPI_Comm_dup");
  comms_.push_back(c);
  index_.emplace(key, c);
  return c;
}

MPI_Comm CommPool::split(MPI_Comm parent, int color, int key_, const std::string& purpose) {
  const Key key{parent, "split " + purpose, color, key_};
  if (auto it = index_.find(key); it != index_.end()) return it->second;
  MPI_Comm c = MPI_COMM_NULL;
  mpi::check(MPI_Comm_split(parent, color, key_, &c), "MPI_Comm_split");
  comms_.push_back(c);
  index_.emplace(key, c);
  return c;
}

void CommPool::release() {
  for (auto it = comms_.rbegin(); it != comms_.rend(); ++it)
    if (*it != MPI_COMM_NULL) mpi::check(MPI_Comm_free(&*it), "MPI_Comm_free");
  comms_.clear();
  index_.clear();
  epoch_ = next_epoch();
}

void CommPool::forget() noexcept {
  comms_.clear();
  index_.clear();
}

// ---- reports --------------------------------------------------------------------------------

OperationReport OperationReport::of(const MultiplyReport& r) {
  OperationReport o;
  o.operation = "multiply";
  o.component = r.strategy;
  o.seconds = r.seconds;
  o.flops = r.flops;
  o.traffic = r.traffic;
  o.peak_buffer_bytes = r.peak_buffer_bytes;
  o.peak_memory_bytes = r.peak_memory_bytes;
  o.peak_device_bytes = r.peak_device_bytes;
  o.extra.reserve(r.extra.size() + 4);  // room for the four below: the copy is one allocation
  o.extra = r.extra;
  o.extra["ticks"] = r.ticks;
  o.extra["kernel_seconds"] = r.kernel_seconds;
  o.extra["products"] = static_cast<double>(r.products);
  o.extra["skipped_products"] = static_cast<double>(r.skipped_products);
  if (auto it = r.extra.find("predicted_bytes_received"); it != r.extra.end()) o.predicted["bytes_received"] = it->second;
  return o;
}

void OperationReport::accumulate(const OperationReport& other) {
  count += other.count;
  seconds += other.seconds;
  flops += other.flops;
  for (std::size_t k = 0; k < traffic.size(); ++k) traffic[k] += other.traffic[k];
  peak_buffer_bytes = std::max(peak_buffer_bytes, other.peak_buffer_bytes);
  peak_memory_bytes = std::max(peak_memory_bytes, other.peak_memory_bytes);
  peak_device_bytes = std::max(peak_device_bytes, other.peak_device_bytes);
  predicted.add(other.predicted);
  extra.add(other.extra);
}

std::int64_t OperationReport::bytes_received() const {
  std::int64_t s = 0;
  for (const auto& t : traffic) s += t.bytes_received + t.index_bytes_received;
  return s;
}

// ---- one operation, recorded ---------------------------------------------------------------

OperationRecorder::OperationRecorder(Context& ctx, std::string operation, std::string component)
    : ctx_(ctx), progress_(operation + " (" + component + ")") {
  report_.operation = std::move(operation);
  report_.component = std::move(component);
  memory::reset_peak(memory::Category::CommBuffer);
  memory::reset_peak_total();
  memory::reset_peak_total(MemorySpace::Device);
  t0_ = mpi::now();
}

OperationReport OperationRecorder::done() {
  if (done_) throw Error("OperationRecorder", "operation '" + report_.operation + "' recorded twice");
  done_ = true;
  report_.seconds = mpi::now() - t0_;
  for (int r = 0; r < mpi::kRoles; ++r) report_.traffic[r] += traffic_.all_counts()[r];
  report_.peak_buffer_bytes = memory::peak(memory::Category::CommBuffer);
  report_.peak_memory_bytes = memory::peak_total();
  report_.peak_device_bytes = memory::peak_total(MemorySpace::Device);
  ctx_.record(report_);
  return report_;
}

// ---- the context ----------------------------------------------------------------------------

Context::Context(MPI_Comm comm, std::shared_ptr<MultiplyAlgorithm> multiply, std::shared_ptr<Kernel> kernel)
    : multiply_(std::move(multiply)), kernel_(std::move(kernel)) {
  if (!multiply_) throw Error("Context", "no multiply algorithm given");
  if (!kernel_) throw Error("Context", "no kernel given");
  comm_ = pool_.dup(comm, "context");
  if (CommStrategy* s = strategy()) s->collectives().bind(pool_);
  mpi_collectives_.bind(pool_);
}

Context::~Context() = default;

int Context::rank() const { return mpi::rank(comm_); }
int Context::size() const { return mpi::size(comm_); }

namespace {
// `r` added to the total of its kind (operation and component) in `totals`, or a new total.
void add_to_totals(std::vector<OperationReport>& totals, const OperationReport& r) {
  auto total = std::find_if(totals.begin(), totals.end(), [&](const OperationReport& t) {
    return t.operation == r.operation && t.component == r.component;
  });
  if (total == totals.end())
    totals.push_back(r);
  else
    total->accumulate(r);
}
}  // namespace

void Context::record(OperationReport r) {
  add_to_totals(totals_, r);
  // Every open scope gets its copy; closed ones are dropped here.
  scopes_.erase(std::remove_if(scopes_.begin(), scopes_.end(), [](const auto& w) { return w.expired(); }),
                scopes_.end());
  for (const auto& w : scopes_)
    if (auto scope = w.lock()) scope->collect(r);
  if (log_capacity_ == 0) return;
  if (log_.size() >= log_capacity_) log_.pop_front();
  log_.push_back(std::move(r));
}

void Context::clear_log() {
  log_.clear();
  totals_.clear();
}

std::int64_t Context::recorded() const {
  std::int64_t n = 0;
  for (const OperationReport& t : totals_) n += t.count;
  return n;
}

void Context::set_log_capacity(std::size_t n) {
  log_capacity_ = n;
  while (log_.size() > n) log_.pop_front();
}

LogScope::LogScope(Context& ctx, StepDetail detail) : state_(std::make_shared<State>()) {
  state_->detail = detail;
  ctx.scopes_.push_back(state_);
}

void LogScope::State::collect(const OperationReport& r) {
  if (detail == StepDetail::Totals)
    add_to_totals(ops, r);
  else
    ops.push_back(r);
}

std::vector<OperationReport> LogScope::take() {
  std::vector<OperationReport> out;
  out.swap(state_->ops);
  return out;
}

CommStrategy* Context::strategy() const { return dynamic_cast<CommStrategy*>(multiply_.get()); }

Collectives& Context::collectives() {
  if (collectives_) return *collectives_;
  if (CommStrategy* s = strategy()) return s->collectives();
  return mpi_collectives_;
}

const Collectives& Context::collectives() const {
  if (collectives_) return *collectives_;
  if (CommStrategy* s = strategy()) return s->collectives();
  return mpi_collectives_;
}

void Context::set_collectives(std::shared_ptr<Collectives> c) {
  if (!c) throw Error("Context::set_collectives", "no collectives given");
  c->bind(pool_);
  collectives_ = std::move(c);
}

std::shared_ptr<const Grid> Context::grid(int nprows, int npcols, int nlayers) {
  if (comm_ == MPI_COMM_NULL) throw Error("Context::grid", "the context was released");
  auto& g = grids_[{nprows, npcols, nlayers}];
  if (!g) g = Grid::create(pool_, comm_, nprows, npcols, nlayers);
  return g;
}

void Context::release() {
  grids_.clear();
  pool_.release();
  comm_ = MPI_COMM_NULL;
}

}  // namespace plexus
