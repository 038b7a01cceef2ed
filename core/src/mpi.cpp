#include "plexus/mpi.hpp"

#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plexus/error.hpp"
#include "plexus/input.hpp"
#include "plexus/progress.hpp"

namespace plexus::mpi {

void check(int rc, const char* call) {
  progress::point(call);  // the watchdog's heartbeat, and where a test injects a fault
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Error(call, std::string(call) + " failed: " + std::string(text, len));
}

int rank(MPI_Comm comm) {
  int r = 0;
  check(MPI_Comm_rank(comm, &r), "MPI_Comm_rank");
  return r;
}

int size(MPI_Comm comm) {
  int s = 0;
  check(MPI_Comm_size(comm, &s), "MPI_Comm_size");
  return s;
}

CommWatch::~CommWatch() {
  forget();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (key_ != MPI_KEYVAL_INVALID && finalized == 0) MPI_Comm_free_keyval(&key_);
}

void CommWatch::watch(MPI_Comm comm) {
  forget();
  if (key_ == MPI_KEYVAL_INVALID)
    check(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &CommWatch::gone, &key_, nullptr), "MPI_Comm_create_keyval");
  check(MPI_Comm_set_attr(comm, key_, this), "MPI_Comm_set_attr");
  comm_ = comm;
  alive_ = true;
}

void CommWatch::forget() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (alive_ && finalized == 0) MPI_Comm_delete_attr(comm_, key_);  // gone() runs
  alive_ = false;
  comm_ = MPI_COMM_NULL;
}

int CommWatch::gone(MPI_Comm /*comm*/, int /*key*/, void* self, void* /*extra*/) {
  static_cast<CommWatch*>(self)->alive_ = false;
  return MPI_SUCCESS;
}

const char* role_name(Role r) {
  switch (r) {
    case Role::A: return "A";
    case Role::B: return "B";
    case Role::C: return "C";
    case Role::Other: return "other";
  }
  return "?";
}

RoleCounts& RoleCounts::operator+=(const RoleCounts& o) {
  bytes_sent += o.bytes_sent;
  bytes_received += o.bytes_received;
  index_bytes_sent += o.index_bytes_sent;
  index_bytes_received += o.index_bytes_received;
  messages_sent += o.messages_sent;
  messages_received += o.messages_received;
  local_bytes_sent += o.local_bytes_sent;
  local_bytes_received += o.local_bytes_received;
  wait_seconds += o.wait_seconds;
  return *this;
}

namespace {
int type_size(MPI_Datatype type) {
  int s = 0;
  check(MPI_Type_size(type, &s), "MPI_Type_size");
  return s;
}
int checked_count(std::int64_t count, const char* what) {
  if (count < 0 || count > std::int64_t{2147483647})
    throw Error(what, std::string(what) + ": message of " + std::to_string(count) +
                          " elements exceeds the MPI count limit");
  return static_cast<int>(count);
}
}  // namespace

void Traffic::add_sent(Role role, Payload payload, std::int64_t bytes, std::int64_t messages) {
  auto& c = counts_[static_cast<int>(role)];
  (payload == Payload::Data ? c.bytes_sent : c.index_bytes_sent) += bytes;
  c.messages_sent += messages;
}

void Traffic::add_received(Role role, Payload payload, std::int64_t bytes, std::int64_t messages) {
  auto& c = counts_[static_cast<int>(role)];
  (payload == Payload::Data ? c.bytes_received : c.index_bytes_received) += bytes;
  c.messages_received += messages;
}

void Traffic::isend(const void* buf, std::int64_t count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                    Role role, Payload payload) {
  Request r;
  r.role = role;
  r.payload = payload;
  r.elem_bytes = type_size(type);
  check(MPI_Isend(buf, checked_count(count, "MPI_Isend"), type, dest, tag, comm, &r.req), "MPI_Isend");
  add_sent(role, payload, count * r.elem_bytes, 1);
  if (dest == rank(comm)) counts_[static_cast<int>(role)].local_bytes_sent += count * r.elem_bytes;
  requests_.push_back(r);
}

void Traffic::irecv(void* buf, std::int64_t capacity, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                    Role role, Payload payload) {
  Request r;
  r.role = role;
  r.payload = payload;
  r.elem_bytes = type_size(type);
  r.receive = true;
  r.self = rank(comm);
  check(MPI_Irecv(buf, checked_count(capacity, "MPI_Irecv"), type, source, tag, comm, &r.req), "MPI_Irecv");
  requests_.push_back(r);
}

void Traffic::rget(void* buf, std::int64_t count, MPI_Datatype type, int target, std::int64_t disp, MPI_Win win,
                   Role role, Payload payload) {
  Request r;
  r.role = role;
  r.payload = payload;
  r.elem_bytes = type_size(type);
  const int n = checked_count(count, "MPI_Rget");
  check(MPI_Rget(buf, n, type, target, static_cast<MPI_Aint>(disp), n, type, win, &r.req), "MPI_Rget");
  add_received(role, payload, count * r.elem_bytes, 1);
  MPI_Group group = MPI_GROUP_NULL;
  int self = MPI_UNDEFINED;
  check(MPI_Win_get_group(win, &group), "MPI_Win_get_group");
  const int rc = MPI_Group_rank(group, &self);
  MPI_Group_free(&group);
  check(rc, "MPI_Group_rank");
  if (target == self) counts_[static_cast<int>(role)].local_bytes_received += count * r.elem_bytes;
  requests_.push_back(r);  // receive = false: already counted
}

std::vector<std::size_t> Traffic::requests_of(Role role) {
  std::vector<std::size_t> mine;
  for (std::size_t i = 0; i < requests_.size(); ++i)
    if (requests_[i].role == role) mine.push_back(i);
  raw_.resize(mine.size());
  statuses_.resize(mine.size());
  for (std::size_t q = 0; q < mine.size(); ++q) raw_[q] = requests_[mine[q]].req;
  return mine;
}

void Traffic::completed(Role role, const std::vector<std::size_t>& mine) {
  for (std::size_t q = 0; q < mine.size(); ++q) {
    const auto& r = requests_[mine[q]];
    if (!r.receive) continue;
    int bytes = 0;
    check(MPI_Get_count(&statuses_[q], MPI_BYTE, &bytes), "MPI_Get_count");
    add_received(r.role, r.payload, bytes, 1);
    if (statuses_[q].MPI_SOURCE == r.self) counts_[static_cast<int>(r.role)].local_bytes_received += bytes;
  }
  std::size_t keep = 0;
  for (std::size_t i = 0; i < requests_.size(); ++i)
    if (requests_[i].role != role) requests_[keep++] = requests_[i];
  requests_.resize(keep);
}

void Traffic::waitall(Role role) {
  // Wait only for this role's requests, so each role's wait time is its own.
  const std::vector<std::size_t> mine = requests_of(role);
  if (mine.empty()) return;
  const double t0 = MPI_Wtime();
  check(MPI_Waitall(static_cast<int>(raw_.size()), raw_.data(), statuses_.data()), "MPI_Waitall");
  add_wait(role, MPI_Wtime() - t0);
  completed(role, mine);
}

bool Traffic::test(Role role) {
  const std::vector<std::size_t> mine = requests_of(role);
  if (mine.empty()) return true;
  int done = 0;
  check(MPI_Testall(static_cast<int>(raw_.size()), raw_.data(), &done, statuses_.data()), "MPI_Testall");
  if (done == 0) return false;  // MPI_Testall changed no request
  completed(role, mine);
  return true;
}

void Traffic::alltoallv(const void* sendbuf, const std::vector<int>& sendcounts, void* recvbuf,
                        const std::vector<int>& recvcounts, MPI_Datatype type, MPI_Comm comm, Role role,
                        Payload payload) {
  const int p = size(comm);
  const int me = rank(comm);
  if (static_cast<int>(sendcounts.size()) != p || static_cast<int>(recvcounts.size()) != p)
    throw Error("Traffic::alltoallv", "count vectors must have one entry per rank");
  std::vector<int> sdispl(p, 0), rdispl(p, 0);
  for (int i = 1; i < p; ++i) {
    sdispl[i] = sdispl[i - 1] + sendcounts[i - 1];
    rdispl[i] = rdispl[i - 1] + recvcounts[i - 1];
  }
  const double t0 = MPI_Wtime();
  check(MPI_Alltoallv(sendbuf, sendcounts.data(), sdispl.data(), type, recvbuf, recvcounts.data(), rdispl.data(),
                      type, comm),
        "MPI_Alltoallv");
  add_wait(role, MPI_Wtime() - t0);
  const int es = type_size(type);
  for (int i = 0; i < p; ++i) {
    if (i == me) continue;  // a rank's own part is a local copy, not traffic
    if (sendcounts[i] > 0) add_sent(role, payload, std::int64_t{sendcounts[i]} * es, 1);
    if (recvcounts[i] > 0) add_received(role, payload, std::int64_t{recvcounts[i]} * es, 1);
  }
}

void Traffic::absorb(const Traffic& other) {
  if (other.pending() > 0) throw Error("Traffic::absorb", "the other Traffic still has pending requests");
  for (int r = 0; r < kRoles; ++r) counts_[r] += other.counts_[r];
}

void Traffic::reset() {
  requests_.clear();
  counts_ = {};
}

namespace {

using input::trim;

// The value an Open MPI parameter file gives `name` ("name = value" lines, '#' starts a comment,
// the value possibly quoted), its last line that does; none where the file sets none or cannot
// be read.
std::optional<std::string> file_value(const std::string& path, const std::string& name) {
  std::ifstream in(path);
  std::optional<std::string> value;
  std::string line;
  while (std::getline(in, line)) {
    const std::string text = line.substr(0, line.find('#'));
    const std::size_t eq = text.find('=');
    if (eq == std::string::npos || trim(text.substr(0, eq)) != name) continue;
    std::string v = trim(text.substr(eq + 1));
    if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front())
      v = v.substr(1, v.size() - 2);
    value = std::move(v);
  }
  return value;
}

// The value a --tune file gives `name`: its words (white space apart, lines from a '#' on left
// out), `-mca <name> <value>` or `--mca`, the last that does; none where the file sets none or
// cannot be read. Other words (-x VAR=value, ...) are passed over.
std::optional<std::string> tune_value(const std::string& path, const std::string& name) {
  std::ifstream in(path);
  std::vector<std::string> words;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream text(line.substr(0, line.find('#')));
    for (std::string w; text >> w;) words.push_back(std::move(w));
  }
  std::optional<std::string> value;
  for (std::size_t i = 0; i + 2 < words.size(); ++i)
    if ((words[i] == "-mca" || words[i] == "--mca") && words[i + 1] == name) value = words[i + 2];
  return value;
}

// The comma-separated list in an environment variable, each entry trimmed, empty ones left out.
std::vector<std::string> listed_files(const char* list) {
  std::vector<std::string> files;
  std::string_view rest(list);
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    std::string one = trim(std::string(rest.substr(0, comma)));
    if (!one.empty()) files.push_back(std::move(one));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return files;
}

}  // namespace

std::string open_mpi_parameter(const std::string& name, const char* env_value,
                               const std::vector<std::string>& tune_files, const std::vector<std::string>& files) {
  if (env_value != nullptr && *env_value != '\0') return env_value;
  for (const std::string& f : tune_files)
    if (std::optional<std::string> v = tune_value(f, name)) return *v;
  for (const std::string& f : files)
    if (std::optional<std::string> v = file_value(f, name)) return *v;
  return {};
}

std::string open_mpi_parameter(const std::string& name, const char* env_value, const std::vector<std::string>& files) {
  return open_mpi_parameter(name, env_value, {}, files);
}

std::vector<std::string> open_mpi_tune_files() {
  const char* list = std::getenv("OMPI_MCA_mca_base_envar_file_prefix");
  return list != nullptr ? listed_files(list) : std::vector<std::string>{};
}

std::vector<std::string> open_mpi_parameter_files() {
  std::vector<std::string> files;
  for (const char* var : {"OMPI_MCA_mca_base_param_files", "OMPI_MCA_mca_param_files"}) {
    const char* list = std::getenv(var);
    if (list == nullptr || *list == '\0') continue;
    return listed_files(list);
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    files.emplace_back(home).append("/.openmpi/mca-params.conf");
  // (Appended, not built by operator+: GCC 12 warns of a bound it misreads in the latter.)
  if (const std::string_view sysconf = PLEXUS_OMPI_SYSCONFDIR; !sysconf.empty())
    files.emplace_back(sysconf).append("/openmpi-mca-params.conf");
  return files;
}

std::string open_mpi_parameter(const std::string& name) {
  const std::string var = "OMPI_MCA_" + name;
  return open_mpi_parameter(name, std::getenv(var.c_str()), open_mpi_tune_files(), open_mpi_parameter_files());
}

std::optional<bool> open_mpi_bool(std::string_view value) {
  const auto start = value.find_first_not_of(" \t\n\v\f\r");
  value = start == std::string_view::npos ? std::string_view{} : value.substr(start);
  const std::string text(value);
  char* end = nullptr;
  const long number = std::strtol(text.c_str(), &end, 10);
  if (*end == '\0') return number != 0;
  for (const char* word : {"true", "t", "enabled", "yes", "y"})
    if (text == word) return true;
  for (const char* word : {"false", "f", "disabled", "no", "n"})
    if (text == word) return false;
  return std::nullopt;
}

bool open_mpi_waits_yield() {
#ifdef OPEN_MPI
  for (const char* name : {"mpi_yield_when_idle", "mpi_oversubscribe"})
    if (open_mpi_bool(open_mpi_parameter(name)).value_or(false)) return true;
  return false;
#else
  return true;
#endif
}

}  // namespace plexus::mpi
