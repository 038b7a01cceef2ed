#pragma once
// Thin MPI layer. All traffic of communication strategies goes through `Traffic`, which counts
// bytes and messages per matrix role (A, B, C) and times the waits.
#include <mpi.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plexus/memory.hpp"

namespace plexus::mpi {

/// Throws plexus::Error naming the MPI call when rc != MPI_SUCCESS.
void check(int rc, const char* call);

int rank(MPI_Comm comm);
int size(MPI_Comm comm);

/// Knows one communicator as an object, not by its handle. After watch(c), is(c) holds while c
/// lives; once c is freed, is() never holds again, not even for a new communicator to which MPI
/// hands out the same handle (on some ranks only, which would otherwise make ranks that keep
/// resources per communicator decide differently). It sets an attribute of its own key on c,
/// whose delete callback marks c gone; forget() and the destructor drop it. Local calls only.
/// Not copyable or movable: MPI keeps its address.
class CommWatch {
 public:
  CommWatch() = default;
  ~CommWatch();
  CommWatch(const CommWatch&) = delete;
  CommWatch& operator=(const CommWatch&) = delete;
  /// Watches `comm` instead of the communicator watched before.
  void watch(MPI_Comm comm);
  /// Stops watching: is() holds for nothing.
  void forget();
  bool is(MPI_Comm comm) const { return alive_ && comm_ == comm; }

 private:
  static int gone(MPI_Comm comm, int key, void* self, void* extra);
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool alive_ = false;
  int key_ = MPI_KEYVAL_INVALID;
};

/// The role of the data in a message: which matrix it belongs to, or other (set-up, reductions).
enum class Role : int { A = 0, B = 1, C = 2, Other = 3 };
inline constexpr int kRoles = 4;
const char* role_name(Role r);

/// What a message carries: block values or index (block coordinates and offsets).
enum class Payload : int { Data = 0, Index = 1 };

struct RoleCounts {
  std::int64_t bytes_sent = 0;        ///< data bytes sent
  std::int64_t bytes_received = 0;    ///< data bytes received
  std::int64_t index_bytes_sent = 0;  ///< index bytes sent
  std::int64_t index_bytes_received = 0;
  std::int64_t messages_sent = 0;
  std::int64_t messages_received = 0;
  /// Of the data and index bytes sent (received): those whose peer is this rank itself (a send to
  /// itself, an MPI_Rget from its own part of a window). Counted in the figures above too, as the
  /// published volume models count them, but they cross no network.
  std::int64_t local_bytes_sent = 0;
  std::int64_t local_bytes_received = 0;
  double wait_seconds = 0.0;  ///< time spent waiting for this role's transfers
  RoleCounts& operator+=(const RoleCounts& o);
};

/// Counted point-to-point and collective operations for one rank. A strategy owns one per
/// operation (multiply, circulate, ...) and copies the counts into its report.
class Traffic {
 public:
  struct Request {
    MPI_Request req = MPI_REQUEST_NULL;
    Role role = Role::Other;
    Payload payload = Payload::Data;
    int elem_bytes = 1;
    bool receive = false;
    int self = -1;  ///< a receive: this rank's rank in the communicator (a message from it is local)
  };

  /// Posts MPI_Isend; counted when posted.
  void isend(const void* buf, std::int64_t count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
             Role role, Payload payload = Payload::Data);
  /// Posts MPI_Irecv of at most `capacity` elements; counted on completion with the actual size.
  void irecv(void* buf, std::int64_t capacity, MPI_Datatype type, int source, int tag, MPI_Comm comm,
             Role role, Payload payload = Payload::Data);
  /// Posts MPI_Rget of `count` elements at displacement `disp` (in elements) of `target`'s part of
  /// `win`; counted as received by this rank when posted (one-sided: the target counts nothing).
  void rget(void* buf, std::int64_t count, MPI_Datatype type, int target, std::int64_t disp, MPI_Win win, Role role,
            Payload payload = Payload::Data);
  /// Waits for every pending request of `role`; the wait time goes to `role`.
  void waitall(Role role);
  /// Lets MPI progress the pending requests of `role` without waiting (one MPI_Testall): returns
  /// true, and counts them as waitall() would, once all of them are complete. A strategy calls it
  /// while it computes, so that large transfers (Open MPI's rendezvous protocol moves data only
  /// inside MPI calls) advance meanwhile (LocalProduct::set_progress).
  bool test(Role role);
  /// Number of posted, not yet completed requests.
  std::size_t pending() const { return requests_.size(); }

  /// Counted MPI_Alltoallv (byte displacements computed from counts): used for pre-shifts and
  /// redistribution. counts are in elements of `type`.
  void alltoallv(const void* sendbuf, const std::vector<int>& sendcounts, void* recvbuf,
                 const std::vector<int>& recvcounts, MPI_Datatype type, MPI_Comm comm, Role role,
                 Payload payload = Payload::Data);

  /// Adds to the counts of a role by hand (for collectives whose volume is known).
  void add_sent(Role role, Payload payload, std::int64_t bytes, std::int64_t messages);
  void add_received(Role role, Payload payload, std::int64_t bytes, std::int64_t messages);
  void add_wait(Role role, double seconds) { counts_[static_cast<int>(role)].wait_seconds += seconds; }

  /// Adds another Traffic's counts (its requests must be complete).
  void absorb(const Traffic& other);

  const RoleCounts& counts(Role r) const { return counts_[static_cast<int>(r)]; }
  const std::array<RoleCounts, kRoles>& all_counts() const { return counts_; }
  void reset();

 private:
  std::vector<std::size_t> requests_of(Role role);                  // their positions; raw_ holds their handles
  void completed(Role role, const std::vector<std::size_t>& mine);  // counted, then forgotten
  std::vector<Request> requests_;
  std::vector<MPI_Request> raw_;
  std::vector<MPI_Status> statuses_;
  std::array<RoleCounts, kRoles> counts_{};
};

/// MPI datatype of a C++ type.
template <class T>
MPI_Datatype datatype();
template <>
inline MPI_Datatype datatype<double>() { return MPI_DOUBLE; }
template <>
inline MPI_Datatype datatype<int>() { return MPI_INT; }
template <>
inline MPI_Datatype datatype<std::int64_t>() { return MPI_INT64_T; }
template <>
inline MPI_Datatype datatype<char>() { return MPI_CHAR; }

/// Seconds since an arbitrary origin (MPI_Wtime).
inline double now() { return MPI_Wtime(); }

/// An Open MPI MCA parameter's value where the user set it, in Open MPI 4.1's order of precedence:
/// OMPI_MCA_<name> in the environment (mpirun's --mca sets it there too); else the first of
/// mpirun's --tune files that sets it (OMPI_MCA_mca_base_envar_file_prefix lists them,
/// comma-separated; command-line words, `-mca <name> <value>` or `--mca`); else the first of Open
/// MPI's parameter files that sets it (those OMPI_MCA_mca_base_param_files lists, comma-separated,
/// else $HOME/.openmpi/mca-params.conf and the openmpi-mca-params.conf of the sysconfdir this
/// build's Open MPI reported). Empty where none sets it (or to empty): the caller knows the
/// default. Read here, not through the MPI tool interface: MPI_T_init_thread makes Open MPI 4.1
/// open every component to register its variables, about 0.2 s a process (docs/performance.md,
/// "A window's directory without the MPI tool interface"). No MPI call; any MPI library (the
/// names are Open MPI's). (mpirun's --am files are not read: Open MPI 4.1.4 did not apply one
/// either when tried.)
std::string open_mpi_parameter(const std::string& name);
/// The same from a given environment value (null: not set), --tune files and parameter files, in
/// their order of precedence (the first that sets `name` wins; within a file, the last setting).
/// A file that cannot be read sets nothing.
std::string open_mpi_parameter(const std::string& name, const char* env_value,
                               const std::vector<std::string>& tune_files, const std::vector<std::string>& files);
/// The same without --tune files.
std::string open_mpi_parameter(const std::string& name, const char* env_value, const std::vector<std::string>& files);
/// The parameter files open_mpi_parameter(name) reads, in their order of precedence.
std::vector<std::string> open_mpi_parameter_files();
/// The --tune files open_mpi_parameter(name) reads, in their order of precedence.
std::vector<std::string> open_mpi_tune_files();

/// An Open MPI boolean parameter's value as Open MPI 4.1 reads it: leading white space skipped, a
/// whole number is true unless 0 (empty is 0), else t/true/enabled/yes/y or f/false/disabled/no/n;
/// nullopt for anything else (Open MPI refuses it).
std::optional<bool> open_mpi_bool(std::string_view value);
/// Whether Open MPI's ranks yield their core while they wait (mpi_yield_when_idle), as MPI_Init
/// decides it: where the user set mpi_yield_when_idle true, or where mpirun set mpi_oversubscribe
/// for a job with more ranks than slots (Open MPI then turns yielding on by itself). False where
/// neither: with a rankfile or a cpu set that puts several ranks on a core, mpirun counts no
/// oversubscription, and a rank that waits spins through its core-mate's time slices. True in a
/// build against another MPI library (nothing known). Read as open_mpi_parameter reads; no MPI call.
bool open_mpi_waits_yield();

}  // namespace plexus::mpi
