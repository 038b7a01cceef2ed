#!/usr/bin/env bash
# Runs a command (an `mpiexec ... plexus ...` line) over an emulated, bandwidth-limited network:
# inside a network namespace of its own whose loopback is shaped by a token-bucket filter, with
# Open MPI told to move every byte between ranks over TCP on that loopback (two-sided messages
# through the tcp BTL, one-sided MPI_Rget/MPI_Put through UCX's tcp transport). On one machine
# ranks otherwise talk through shared memory, which hides what the papers measure over networks.
# See bench/README.md, "An emulated network".
#
#   bench/shaped_network.sh [options] -- COMMAND [ARGS...]
#
# The namespace is removed when the command ends, also on error or interrupt. Exit status: the
# command's; 2 for bad options; 77 when the emulation cannot be set up here (not root, no ip or
# tc, no network namespaces), so that tests skip.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: bench/shaped_network.sh [options] -- COMMAND [ARGS...]

Runs COMMAND (e.g. mpiexec -n 4 build/bin/plexus compare ...) in a network namespace of its own
whose loopback is shaped by a token-bucket filter (tc tbf), with Open MPI using TCP over that
loopback only, so that every byte between ranks crosses the shaped link (the shared-link model:
all ranks share one link of the given rate).

With --nodes N, each of N simulated nodes is a namespace of its own with one link (a veth pair)
to a bridge, shaped in both directions; Open MPI starts every rank inside its node's namespace
(consecutive ranks share a node: rank r of P is on node r*N/P). Ranks on one node talk over
that node's loopback, unshaped, as through a node's memory; ranks on different nodes cross both
nodes' links. COMMAND itself (mpiexec) runs where the harness runs. Open MPI only.

Options:
  --rate RATE       the link's rate, as tc writes it: 100mbit, 1gbit, 10gbit, 500kbit, ...
                    or 'none' (TCP over loopback, unshaped: the baseline). Default 1gbit
  --burst SIZE      the token bucket's size (tc units: 64kb, 1mb, or bytes); at least the MTU.
                    Default: the larger of 32kb and rate x 1 ms
  --queue-ms MS     the longest a packet may wait in the filter's queue before it is dropped
                    (tc tbf latency; not an added delay). Default 100
  --mtu BYTES       the loopback's MTU (sets the packet size on the link). Default 1500
  --nodes N         N simulated nodes, each with its own shaped link (1..64; see above).
                    Default: one shared link
  --stats FILE      write the filter's counters after the command as JSON: bytes and packets
                    that crossed the link, drops, overlimits, and the settings; with --nodes,
                    the sums over the nodes' outgoing links plus each node's bytes out and in
  --quiet           no lines of its own on standard error (errors still are)
  -h, --help        this text

Environment given to COMMAND (any of them already set is kept):
  OMPI_MCA_pml=ob1 OMPI_MCA_btl=tcp,self OMPI_MCA_btl_tcp_if_include=lo
  OMPI_MCA_osc=ucx UCX_TLS=tcp,self UCX_NET_DEVICES=lo
  with --nodes: eth0 instead of lo (each node's link), and OMPI_MCA_orte_fork_agent (starts a
  rank in its node: bench/on_node.sh), PMIX_MCA_ptl_tcp_remote_connections=1 and
  PMIX_MCA_ptl_tcp_if_include (the ranks reach mpiexec's PMIx server over the bridge)
  (Open MPI 4.1's default one-sided component on one machine is 'sm', whose windows are shared
  memory; 'pt2pt' refuses MPI_THREAD_MULTIPLE, which plexus asks for; 'rdma' needs an RDMA BTL.)

Needs root (or CAP_NET_ADMIN), iproute2 (ip, tc) and network namespaces; exits 77 with a
message when any is missing.

Examples:
  sudo bench/shaped_network.sh --rate 1gbit --stats link.json -- \
      mpiexec -n 4 build/bin/plexus compare --strategies cannon,rma25d --set Problem/Blocks=80
  bench/shaped_network.sh --rate none -- mpiexec -n 4 build/bin/plexus run examples/h2o.xml
EOF
}

rate=1gbit
burst=""
queue_ms=100
mtu=1500
stats=""
quiet=0
nodes=""

die() {
  echo "shaped_network: $*" >&2
  exit 2
}
cannot() {
  echo "shaped_network: cannot emulate a network here: $*" >&2
  exit 77
}
say() {
  [ "$quiet" = 1 ] || echo "shaped_network: $*" >&2
}

while [ $# -gt 0 ]; do
  case "$1" in
    --rate) [ $# -ge 2 ] || die "--rate needs a value (e.g. 1gbit)"; rate="$2"; shift 2 ;;
    --burst) [ $# -ge 2 ] || die "--burst needs a value (e.g. 64kb)"; burst="$2"; shift 2 ;;
    --queue-ms) [ $# -ge 2 ] || die "--queue-ms needs a value"; queue_ms="$2"; shift 2 ;;
    --mtu) [ $# -ge 2 ] || die "--mtu needs a value"; mtu="$2"; shift 2 ;;
    --stats) [ $# -ge 2 ] || die "--stats needs a file name"; stats="$2"; shift 2 ;;
    --nodes) [ $# -ge 2 ] || die "--nodes needs a number"; nodes="$2"; shift 2 ;;
    --quiet) quiet=1; shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    *) die "unknown option '$1' (the command comes after --; see --help)" ;;
  esac
done
[ $# -gt 0 ] || die "no command given (bench/shaped_network.sh [options] -- COMMAND ...; see --help)"

# Every option checked before anything is set up.
[[ "$queue_ms" =~ ^[0-9]+$ && "$queue_ms" -ge 1 ]] || die "--queue-ms '$queue_ms' is not a whole number of milliseconds >= 1"
[[ "$mtu" =~ ^[0-9]+$ && "$mtu" -ge 576 && "$mtu" -le 65536 ]] || die "--mtu '$mtu' is not a number of bytes in [576, 65536]"
[ -z "$nodes" ] || [[ "$nodes" =~ ^[0-9]+$ && "$nodes" -ge 1 && "$nodes" -le 64 ]] ||
  die "--nodes '$nodes' is not a number of nodes in [1, 64]"

# tc's size and rate units, in bytes and bytes per second (tc: b/k/kb = 1024, m/mb; bit, kbit, mbit, gbit
# are 1000-based, and kbps/mbps/gbps are bytes).
to_bytes() {
  local v="$1" n u
  [[ "$v" =~ ^([0-9]+)([a-zA-Z]*)$ ]] || return 1
  n=${BASH_REMATCH[1]}
  u=${BASH_REMATCH[2],,}
  case "$u" in
    "" | b) echo "$n" ;;
    k | kb) echo $((n * 1024)) ;;
    m | mb) echo $((n * 1024 * 1024)) ;;
    *) return 1 ;;
  esac
}
rate_bytes() {
  local v="$1" n u
  [[ "$v" =~ ^([0-9]+)([a-zA-Z]+)$ ]] || return 1
  n=${BASH_REMATCH[1]}
  u=${BASH_REMATCH[2],,}
  case "$u" in
    bit) echo $((n / 8)) ;;
    kbit) echo $((n * 1000 / 8)) ;;
    mbit) echo $((n * 1000000 / 8)) ;;
    gbit) echo $((n * 1000000000 / 8)) ;;
    bps) echo "$n" ;;
    kbps) echo $((n * 1000)) ;;
    mbps) echo $((n * 1000000)) ;;
    gbps) echo $((n * 1000000000)) ;;
    *) return 1 ;;
  esac
}

shaped=1
if [ "$rate" = none ]; then
  shaped=0
  [ -z "$burst" ] || die "--burst has no meaning with --rate none"
else
  rbytes=$(rate_bytes "$rate") || die "--rate '$rate' is not a rate tc reads (e.g. 100mbit, 1gbit, 10gbit, or none)"
  [ "$rbytes" -gt 0 ] || die "--rate '$rate' is zero"
  if [ -z "$burst" ]; then
    burst_bytes=$((rbytes / 1000))  # 1 ms at the rate
    [ "$burst_bytes" -ge 32768 ] || burst_bytes=32768
  else
    burst_bytes=$(to_bytes "$burst") || die "--burst '$burst' is not a size tc reads (e.g. 64kb, 1mb, 100000)"
  fi
  # A packet larger than the bucket never passes: the bucket holds at least one full frame.
  [ "$burst_bytes" -ge $((mtu + 14)) ] ||
    die "--burst ($burst_bytes bytes) is smaller than one frame of the MTU ($mtu + 14 bytes): no packet would pass"
fi

# What the emulation needs, checked before anything is made.
[ "$(id -u)" -eq 0 ] || cannot "it needs root (network namespaces and tc); run it with sudo"
command -v ip >/dev/null 2>&1 || cannot "'ip' (iproute2) is not installed; scripts/install-deps.sh installs it"
command -v tc >/dev/null 2>&1 || cannot "'tc' (iproute2) is not installed; scripts/install-deps.sh installs it"

# The filter's counters of one qdisc line: "Sent B bytes P pkt (dropped D, overlimits O requeues R)".
read_counters() {  # namespace device -> "bytes packets dropped overlimits", or nothing
  local line
  line=$(ip netns exec "$1" tc -s qdisc show dev "$2" | grep -m1 'Sent ' || true)
  if [[ "$line" =~ Sent\ ([0-9]+)\ bytes\ ([0-9]+)\ pkt\ \(dropped\ ([0-9]+),\ overlimits\ ([0-9]+) ]]; then
    echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]} ${BASH_REMATCH[3]} ${BASH_REMATCH[4]}"
  fi
}
# A shaped (tbf) or only counted (pfifo) queue on a device of a namespace.
add_queue() {
  if [ "$shaped" = 1 ]; then
    ip netns exec "$1" tc qdisc add dev "$2" root tbf rate "$rate" burst "$burst_bytes" latency "${queue_ms}ms"
  else
    ip netns exec "$1" tc qdisc add dev "$2" root pfifo
  fi
}
# Open MPI's and UCX's transports over the given device (each variable already set is kept).
export_mpi_env() {
  export OMPI_MCA_pml="${OMPI_MCA_pml:-ob1}"
  export OMPI_MCA_btl="${OMPI_MCA_btl:-tcp,self}"
  export OMPI_MCA_btl_tcp_if_include="${OMPI_MCA_btl_tcp_if_include:-$1}"
  export OMPI_MCA_osc="${OMPI_MCA_osc:-ucx}"
  export UCX_TLS="${UCX_TLS:-tcp,self}"
  export UCX_NET_DEVICES="${UCX_NET_DEVICES:-$1}"
}
# Runs the command and sets `status`. In the background, so that INT and TERM are handled at
# once (bash defers a trap while a foreground command runs): the command gets the signal, then
# the cleanup runs. Its stdin is kept; the --nodes lock (fd 9) stays with this script, not with
# what the command leaves running.
run_command() {
  set +e
  "$@" <&0 9>&- &
  child=$!
  trap 'kill -INT "$child" 2>/dev/null; wait "$child"; exit 130' INT
  trap 'kill -TERM "$child" 2>/dev/null; wait "$child"; exit 143' TERM
  wait "$child"
  status=$?
  trap 'exit 130' INT
  trap 'exit 143' TERM
  set -e
}
# Writes the --stats JSON (when asked for): bytes packets dropped overlimits, then any further
# "key": value pairs (already formatted, starting with ", "), then the settings and the status.
write_stats() {
  [ -n "$stats" ] || return 0
  local rate_json
  if [ "$shaped" = 1 ]; then
    rate_json="\"$rate\", \"rate_bytes_per_second\": $rbytes, \"burst_bytes\": $burst_bytes"
  else
    rate_json="null, \"rate_bytes_per_second\": null, \"burst_bytes\": null"
  fi
  printf '{"bytes": %s, "packets": %s, "dropped": %s, "overlimits": %s, "rate": %s, "queue_ms": %s, "mtu": %s%s, "command_status": %s}\n' \
    "$1" "$2" "$3" "$4" "$rate_json" "$queue_ms" "$mtu" "${5:-}" "$status" >"$stats.tmp.$$"
  mv "$stats.tmp.$$" "$stats"
}

if [ -n "$nodes" ]; then
  # Per node: namespaces plexus-nodeK-PID with eth0 (10.231.0.K+1/24), veth to a bridge in
  # plexus-switch-PID, and a veth from here to the bridge (10.231.0.254), over which the ranks
  # reach mpiexec's PMIx server (PMIx connects by TCP; a rank's own loopback is its node's).
  prefix="plexus-node"
  sw="plexus-switch-$$"
  up="pxup$$"
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  [ -x "$here/on_node.sh" ] || cannot "$here/on_node.sh (which starts a rank in its node) is missing"
  command -v flock >/dev/null 2>&1 || cannot "'flock' (util-linux) is not installed"
  # One --nodes run at a time on a machine (they share 10.231.0.0/24 and the route to it): a
  # second one waits here for the first to end.
  lock="${PLEXUS_NET_LOCK:-/run/lock/plexus-shaped-network-nodes.lock}"
  exec 9>"$lock" || cannot "cannot open the lock file $lock"
  if ! flock -n 9; then
    say "another --nodes run holds $lock: waiting for it"
    flock 9
  fi
  # What a run killed without its cleanup (SIGKILL, a CTest timeout) left behind: its PID is dead.
  for left in $(ip netns list | awk '{print $1}' | grep -E '^plexus-(switch|node[0-9]+)-[0-9]+$' || true); do
    kill -0 "${left##*-}" 2>/dev/null || { ip netns del "$left" 2>/dev/null || true; }
  done
  for left in $(ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E '^(pxup[0-9]+|pxa[0-9]+\.[0-9]+)$' || true); do
    owner=${left#pxup}
    owner=${owner#*.}
    kill -0 "$owner" 2>/dev/null || { ip link del "$left" 2>/dev/null || true; }
  done
  if ip -4 -o addr show | grep -q ' 10\.231\.0\.' || ip -4 route show 10.231.0.0/24 | grep -q .; then
    cannot "the address range 10.231.0.0/24 the simulated nodes use is already in use here"
  fi
  cleanup_nodes() {
    local k
    for ((k = 0; k < nodes; ++k)); do
      ip netns del "$prefix$k-$$" 2>/dev/null || true
      ip link del "pxa$k.$$" 2>/dev/null || true  # a pair not yet moved into its namespace
    done
    ip netns del "$sw" 2>/dev/null || true
    ip link del "$up" 2>/dev/null || true
  }
  trap cleanup_nodes EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  # Any step of the set-up that fails ends the run here (exit 77, cleaned up), not with ip's status.
  trap 'cannot "setting up the simulated nodes failed (line $LINENO)"' ERR
  ip netns add "$sw" 2>/dev/null || cannot "'ip netns add' failed (no network namespaces in this kernel or container?)"
  ip netns exec "$sw" true 2>/dev/null || cannot "'ip netns exec' cannot enter the namespace it made (no mount privileges?)"
  ip netns exec "$sw" ip link add br0 type bridge 2>/dev/null || cannot "cannot make a bridge (no bridge support in this kernel?)"
  ip netns exec "$sw" ip link set br0 up
  for ((k = 0; k < nodes; ++k)); do
    node="$prefix$k-$$"
    ip netns add "$node"
    ip link add "pxa$k.$$" type veth peer name "pxb$k.$$" 2>/dev/null || cannot "cannot make a veth pair (no veth support?)"
    ip link set "pxa$k.$$" netns "$node"
    ip link set "pxb$k.$$" netns "$sw"
    ip netns exec "$node" ip link set "pxa$k.$$" name eth0
    ip netns exec "$node" ip link set eth0 mtu "$mtu"
    ip netns exec "$node" ip addr add "10.231.0.$((k + 1))/24" dev eth0
    ip netns exec "$node" ip link set eth0 up
    ip netns exec "$node" ip link set lo up
    ip netns exec "$sw" ip link set "pxb$k.$$" mtu "$mtu"
    ip netns exec "$sw" ip link set "pxb$k.$$" master br0
    ip netns exec "$sw" ip link set "pxb$k.$$" up
    # Both directions of the node's link: out of the node (its eth0) and into it (the bridge's port).
    add_queue "$node" eth0 || cannot "tc cannot put a queue on a node's link (sch_tbf missing?)"
    add_queue "$sw" "pxb$k.$$" || cannot "tc cannot put a queue on the bridge's port"
  done
  ip link add "$up" type veth peer name "pxu.$$" 2>/dev/null || cannot "cannot make a veth pair (no veth support?)"
  ip link set "pxu.$$" netns "$sw"
  ip netns exec "$sw" ip link set "pxu.$$" master br0
  ip netns exec "$sw" ip link set "pxu.$$" up
  ip addr add 10.231.0.254/24 dev "$up"
  ip link set "$up" up
  trap - ERR
  if [ "$shaped" = 1 ]; then
    say "$nodes nodes, each link shaped to $rate both ways (bucket $burst_bytes bytes, queue ${queue_ms} ms), MTU $mtu"
  else
    say "$nodes nodes, links unshaped (counted only), MTU $mtu"
  fi

  export PLEXUS_NET_NODES="$nodes" PLEXUS_NET_NODE_PREFIX="$prefix" PLEXUS_NET_NODE_SUFFIX="-$$"
  export OMPI_MCA_orte_fork_agent="$here/on_node.sh"
  export PMIX_MCA_ptl_tcp_remote_connections=1 PMIX_MCA_ptl_tcp_if_include=10.231.0.0/24
  export_mpi_env eth0
  run_command "$@"

  total_bytes=0 total_packets=0 total_dropped=0 total_over=0 outs="" ins=""
  for ((k = 0; k < nodes; ++k)); do
    read -r ob op od oo <<<"$(read_counters "$prefix$k-$$" eth0)"
    read -r ib _ id _ <<<"$(read_counters "$sw" "pxb$k.$$")"
    if [ -z "${ob:-}" ] || [ -z "${ib:-}" ]; then
      echo "shaped_network: could not read the counters of node $k's link" >&2
      [ "$status" -ne 0 ] || status=1
      exit "$status"
    fi
    total_bytes=$((total_bytes + ob)) total_packets=$((total_packets + op))
    total_dropped=$((total_dropped + od + id)) total_over=$((total_over + oo))
    outs="$outs${outs:+, }$ob" ins="$ins${ins:+, }$ib"
  done
  say "the nodes' links carried $total_bytes bytes out in $total_packets packets (dropped $total_dropped); per node out [$outs], in [$ins]"
  write_stats "$total_bytes" "$total_packets" "$total_dropped" "$total_over" \
    ", \"nodes\": $nodes, \"node_bytes_out\": [$outs], \"node_bytes_in\": [$ins]"
  exit "$status"
fi

ns="plexus-net-$$"
cleanup() {
  ip netns del "$ns" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

ip netns add "$ns" 2>/dev/null || cannot "'ip netns add' failed (no network namespaces in this kernel or container?)"
ip netns exec "$ns" true 2>/dev/null || cannot "'ip netns exec' cannot enter the namespace it made (no mount privileges?)"
ip netns exec "$ns" ip link set lo mtu "$mtu" || cannot "cannot set the loopback's MTU in the namespace"
ip netns exec "$ns" ip link set lo up || cannot "cannot bring the namespace's loopback up"
if [ "$shaped" = 1 ]; then
  ip netns exec "$ns" tc qdisc add dev lo root tbf rate "$rate" burst "$burst_bytes" latency "${queue_ms}ms" ||
    cannot "tc cannot put a token-bucket filter (tbf) on the loopback (sch_tbf missing?)"
  say "namespace $ns: loopback shaped to $rate (bucket $burst_bytes bytes, queue ${queue_ms} ms), MTU $mtu"
else
  ip netns exec "$ns" tc qdisc add dev lo root pfifo_fast 2>/dev/null ||
    ip netns exec "$ns" tc qdisc add dev lo root pfifo ||
    cannot "tc cannot put a counting queue (pfifo) on the loopback"
  say "namespace $ns: loopback unshaped (counted only), MTU $mtu"
fi

export_mpi_env lo
run_command ip netns exec "$ns" "$@"

counters=$(read_counters "$ns" lo)
if [ -n "$counters" ]; then
  read -r bytes packets dropped overlimits <<<"$counters"
  say "the link carried $bytes bytes in $packets packets (dropped $dropped, overlimits $overlimits)"
  write_stats "$bytes" "$packets" "$dropped" "$overlimits"
else
  echo "shaped_network: could not read the filter's counters (tc -s qdisc printed: $(ip netns exec "$ns" tc -s qdisc show dev lo 2>&1 | grep -m1 'Sent ' || echo nothing))" >&2
  [ "$status" -ne 0 ] || status=1
fi
exit "$status"
