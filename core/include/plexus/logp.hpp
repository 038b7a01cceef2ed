#pragma once
// LogP / LogGP parameters of the current ranks, measured as Kielmann, Bal and Verstoep's logp-mpi
// (PLogP) does, and the LogGP models of the collectives a solver uses (Hoefler et al.'s model of
// ABINIT's band-by-band CG: t_red, Eq. 22, one MPI_Allreduce; t_a2a, Eq. 23, one MPI_Alltoall).
// docs/logp.md gives the method, the derivations and the limits.
//
// LogGP (Alexandrov et al.): a message of k bytes from one rank to another costs
//   o_s                 the sender's processor (the send call),
//   (k - 1) G           the bytes after the first, leaving at G seconds per byte,
//   L                   the latency through the network,
//   o_r                 the receiver's processor (the receive call),
// so t_msg(k) = o_s + (k - 1) G + L + o_r; and one rank starts two messages at least g apart.
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace plexus::logp {

/// What was measured for one message size (seconds; medians over the repetitions).
struct Sample {
  double bytes = 0;
  double rtt = 0;  ///< ping-pong round trip of `bytes` each way
  double o_s = 0;  ///< the send call, with the network idle
  double o_r = 0;  ///< the receive call, once the message has surely arrived
  double g = 0;    ///< the gap between messages of a train of back-to-back sends
};

/// LogGP parameters: seconds, and seconds per byte for G.
struct Parameters {
  double L = 0, o_s = 0, o_r = 0, g = 0, G = 0;
  int ranks = 0;                   ///< size of the communicator measured on (0: unknown)
  std::string source;              ///< "measured", or the JSON file they were read from
  std::vector<Sample> samples;     ///< the measured curve (empty when read from a file without one)
  std::vector<std::string> notes;  ///< what was clamped or replaced while deriving the parameters
  double o() const { return 0.5 * (o_s + o_r); }
};

struct MeasureOptions {
  /// Timed repetitions per message size and quantity (after one uncounted warm-up); medians are kept.
  int repetitions = 20;
  /// The largest message size; the sizes are 1, 4, 16, ... (powers of 4) up to it, and it.
  std::int64_t max_bytes = std::int64_t(1) << 20;
  /// Messages in the shorter of the two trains that give g(k) (capped to about 4 MiB per train, at
  /// least 4 messages).
  int train = 32;
  /// Called on rank 0 after each message size (done, total); empty: nothing is told.
  std::function<void(int done, int total)> on_progress;
};

/// The message sizes measure() uses for `max_bytes` (1, 4, 16, ... and max_bytes itself).
std::vector<std::int64_t> message_sizes(std::int64_t max_bytes);

/// Measures L, o_s, o_r, g and G between ranks 0 and 1 of `comm` and returns the same Parameters on
/// every rank (collective over comm; the other ranks wait). Plain MPI point-to-point on a duplicate
/// of comm, not the counting layer (whose bookkeeping would be part of the times).
///
/// Per message size k (sizes from message_sizes(), one warm-up and `repetitions` timed rounds):
///   RTT(k)  ping-pong: 0 sends k, 1 answers with k;
///   o_s(k)  time of MPI_Send on 0, after which 1 answers with an empty message (the network is idle
///           before every timed send);
///   o_r(k)  1 asks for a message (empty), busy-waits 2 RTT(k) on MPI_Wtime so that it has surely
///           arrived, then times MPI_Recv;
///   g(k)    trains of n and 2n back-to-back MPI_Sends, each ended by an empty reply:
///           g(k) = (T(2n) - T(n)) / n, which cancels the start and the reply.
/// Then o_s = o_s(1), o_r = o_r(1), g = g(1), L = RTT(1)/2 - o_s - o_r (clamped at 0, with a note),
/// G = least-squares slope of g(k) against k over the three largest sizes (at least two; when it is
/// not positive, g(k_max)/k_max, with a note).
///
/// On one rank there is nothing to measure: every parameter is 0, ranks = 1, and a note says so (the
/// models give 0 for one rank whatever the parameters). Throws InputError for repetitions < 1,
/// max_bytes < 1 or train < 1 (the same on every rank).
Parameters measure(MPI_Comm comm, const MeasureOptions& options = {});

// ---- models: pure functions; P ranks, k bytes; 0 for P <= 1 -----------------------------------

/// One message of k bytes from one rank to another: t_msg(k) = o_s + (k - 1)+ G + L + o_r, where
/// (k - 1)+ = max(k - 1, 0).
double message_seconds(const Parameters& p, double bytes);

/// Round trip (ping-pong, k bytes each way): 2 t_msg(k). RTT(1) = 2 (o_s + L + o_r) is how L is
/// measured, so this is a check of the fit at other sizes.
double pingpong_seconds(const Parameters& p, double bytes);

/// The rounds of Open MPI's recursive-doubling allreduce on P ranks: floor(log2 P), plus 2 when P is
/// not a power of two (the first 2 (P - 2^floor(log2 P)) ranks pair up: one message before the
/// doubling rounds, one after to hand back the result). 0 for P <= 1.
int allreduce_rounds(int ranks);

/// "Eq. 22", t_red: an MPI_Allreduce of k bytes on P ranks by recursive doubling, which Open MPI
/// 4.1 runs for the small vectors of dot products on P < 32 and 64 <= P < 128 (docs/logp.md):
///   t_red(P, k) = R(P) t_msg(k),   R(P) = allreduce_rounds(P),
/// each round a sendrecv with a partner whose data the next round needs, so the rounds do not
/// overlap. The local reduction (k/8 additions) is left out. For large k Open MPI switches to the
/// ring or Rabenseifner's algorithm, which this overestimates; for small k on 128 ranks or more it
/// reduces and broadcasts, which this underestimates.
double allreduce_seconds(const Parameters& p, int ranks, double bytes);

/// "Eq. 23", t_a2a: an MPI_Alltoall with k bytes for every pair of P ranks, each rank sending P - 1
/// messages and receiving P - 1 (Open MPI 4.1: linear, all posted at once, or pairwise):
///   t_a2a(P, k) = (P - 2) max(g + (k - 1)+ G, o_s + o_r) + t_msg(k).
/// Consecutive messages of one rank are at least g + (k - 1) G apart on the network and o_s + o_r
/// apart on its processor (one send and one receive per partner); the last one costs a whole
/// message. P = 2 gives t_msg(k), one exchange.
double alltoall_seconds(const Parameters& p, int ranks, double bytes_per_pair);

// ---- files ------------------------------------------------------------------------------------

/// {"L", "o_s", "o_r", "g", "G" (seconds, seconds per byte), "ranks", "units", "samples", "notes"}.
nlohmann::json to_json(const Parameters& p);
/// The parameters of a JSON object as to_json() writes it (extra keys are ignored; samples and notes
/// are optional). Throws InputError(source, ...) naming the key that is missing, not a number,
/// negative or not finite.
Parameters from_json(const nlohmann::json& j, const std::string& source);
/// from_json() of a file (as `plexus logp --json FILE` writes it). Throws InputError naming the
/// file: cannot be read, not JSON, or what from_json() finds wrong.
Parameters read_file(const std::string& path);

}  // namespace plexus::logp
