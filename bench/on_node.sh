#!/usr/bin/env bash
# Open MPI's fork agent for bench/shaped_network.sh --nodes N (set as OMPI_MCA_orte_fork_agent by
# the harness): starts a rank inside its simulated node's network namespace. Consecutive ranks
# share a node: rank r of P is on node r*N/P. Not meant to be run by hand.
set -euo pipefail
: "${PLEXUS_NET_NODES:?bench/on_node.sh runs under bench/shaped_network.sh --nodes N only}"
: "${OMPI_COMM_WORLD_RANK:?bench/on_node.sh is the fork agent of Open MPI (no OMPI_COMM_WORLD_RANK)}"
node=$((OMPI_COMM_WORLD_RANK * PLEXUS_NET_NODES / OMPI_COMM_WORLD_SIZE))
exec ip netns exec "${PLEXUS_NET_NODE_PREFIX}${node}${PLEXUS_NET_NODE_SUFFIX}" "$@"
