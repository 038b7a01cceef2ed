#!/usr/bin/env python3
"""The emulated network (bench/shaped_network.sh) carries what plexus counts.

Runs `plexus compare --strategies cannon,rma25d` twice through the harness on a shaped link, with
1 and with 3 rounds, and compares what the extra rounds added on the link (the token-bucket
filter's byte and packet counters) with what plexus counted for them: the bytes each rank
received from other ranks (network_bytes_per_rank_avg x ranks x multiplies, summed over the
rows). The difference of two runs cancels everything the runs share (MPI start-up, connection
set-up, the parameter broadcast, the result check).

On the link every packet carries its headers: 14 (Ethernet, as the loopback frames it) + 20
(IPv4) + 20 (TCP) + 12 (the TCP timestamp option, on by default) = 66 bytes. What is left, the
payload, must hold at least the counted bytes (else counted bytes did not cross the link: a
one-sided component that went through shared memory, say) and at most the counted bytes plus
the MPI and UCX protocol headers, measured at 0.4-0.8 % of the payload here: the test allows 2 %.

With `--nodes N` (given after the rank count) the harness simulates N nodes, each with its own
shaped link. With one rank per node every byte between ranks crosses two links, and the
bytes out of all nodes are checked as above. With fewer nodes than ranks, ranks of one node talk
over its loopback: the links must then carry some but not all of the counted bytes.

Exit 77 (skipped) when the harness cannot emulate a network here.
"""
import json
import os
import subprocess
import sys
import tempfile

HEADER_BYTES = 14 + 20 + 20 + 12
PROTOCOL_ALLOWANCE = 0.02


def run(harness, plexus, ranks, rounds, work, extra, nodes):
    stats = os.path.join(work, f"link{rounds}.json")
    result = os.path.join(work, f"compare{rounds}.json")
    cmd = [harness, "--rate", "1gbit", "--stats", stats] + (["--nodes", str(nodes)] if nodes else []) + ["--",
           "mpiexec", "-n", str(ranks), plexus, "compare", "--strategies", "cannon,rma25d",
           "--set", "Problem/Blocks=40", "--set", "Timing/WarmUp=0", "--set", f"Timing/Rounds={rounds}",
           "--set", "multiply/Repetitions=1", "--json", result, "--log-level", "warn"] + extra
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(p.stdout)
    if p.returncode == 77:
        sys.exit(77)
    if p.returncode != 0:
        sys.exit(f"the harness run failed with exit code {p.returncode}: {' '.join(cmd)}")
    with open(stats) as f:
        link = json.load(f)
    with open(result) as f:
        rows = json.load(f)["rows"]
    counted = sum(r["network_bytes_per_rank_avg"] * r["ranks"] * r["multiplies"] for r in rows)
    return link, counted


def main():
    harness, plexus, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3])
    extra, nodes = sys.argv[4:], 0
    if extra[:1] == ["--nodes"]:
        nodes, extra = int(extra[1]), extra[2:]
    with tempfile.TemporaryDirectory() as work:
        link1, counted1 = run(harness, plexus, ranks, 1, work, extra, nodes)
        link3, counted3 = run(harness, plexus, ranks, 3, work, extra, nodes)
    for link in (link1, link3):
        if link["rate"] != "1gbit" or link["command_status"] != 0 or link["dropped"] != 0:
            sys.exit(f"unexpected link record: {link}")
        if nodes and (link.get("nodes") != nodes or len(link["node_bytes_out"]) != nodes
                      or min(link["node_bytes_out"]) <= 0 or min(link["node_bytes_in"]) <= 0):
            sys.exit(f"unexpected per-node link record: {link}")
    wire = link3["bytes"] - link1["bytes"]
    packets = link3["packets"] - link1["packets"]
    payload = wire - HEADER_BYTES * packets
    counted = counted3 - counted1
    print(f"two more rounds: the link carried {wire} bytes in {packets} packets, {payload} bytes of payload; "
          f"plexus counted {counted:.0f} bytes between ranks; payload / counted = {payload / counted:.4f}")
    if counted <= 0:
        sys.exit("plexus counted no bytes between ranks: nothing to compare")
    if nodes and nodes < ranks:  # ranks of one node talk over its loopback
        # 4 ranks on 2 nodes, a 2x2 grid with ranks 0, 1 on node 0 and 2, 3 on node 1: grid rows
        # stay on a node, columns cross. Cannon's A shifts along rows (on the node) and its B
        # along columns (across), rma25d's fetches likewise: about half the bytes cross. Were one
        # kind of traffic kept off the links (one-sided through shared memory, say), the share
        # would fall well below.
        share = payload / counted
        if not 0.35 <= share <= 0.65:
            sys.exit(f"with {nodes} nodes for {ranks} ranks about half the counted bytes should cross the links, "
                     f"not {share:.3f} ({payload} of {counted:.0f})")
        return
    if payload < counted:
        sys.exit(f"the link carried less payload ({payload}) than plexus counted ({counted:.0f}): "
                 "counted bytes did not cross the shaped link")
    if payload > counted * (1 + PROTOCOL_ALLOWANCE):
        sys.exit(f"the link carried {payload / counted - 1:.2%} more payload than plexus counted "
                 f"(protocol headers allowed: {PROTOCOL_ALLOWANCE:.0%}): traffic that plexus does not count")


if __name__ == "__main__":
    main()
