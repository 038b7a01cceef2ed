#!/usr/bin/env bash
# bench/shaped_network.sh leaves nothing behind: the command runs in a namespace of the harness's
# own making (plexus-net-PID), its exit status comes back, and the namespace is gone afterwards,
# also when the command fails. Exit 77 (skipped) when the harness cannot emulate a network here.
set -uo pipefail
harness="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The command records the namespace it runs in, then fails with status 3.
"$harness" --rate 100mbit --stats "$work/link.json" -- sh -c "ip netns identify \$\$ > '$work/ns'; exit 3"
status=$?
[ "$status" -ne 77 ] || exit 77
[ "$status" -eq 3 ] || { echo "cleanup_check: the harness returned $status, not the command's 3"; exit 1; }
ns=$(cat "$work/ns")
case "$ns" in
  plexus-net-*) ;;
  *) echo "cleanup_check: the command ran in namespace '$ns', not one of the harness's (plexus-net-*)"; exit 1 ;;
esac
if ip netns list | grep -qw "$ns"; then
  echo "cleanup_check: namespace $ns is still there after the command ended"
  exit 1
fi
grep -q '"command_status": 3' "$work/link.json" || { echo "cleanup_check: the stats file does not record status 3"; exit 1; }
echo "cleanup_check: the command ran in $ns, its status 3 came back, and $ns is gone"

# With --nodes: the node and switch namespaces and the link to the bridge are gone afterwards,
# also when the command fails.
"$harness" --nodes 2 --rate 100mbit --stats "$work/nodes.json" -- sh -c "exit 4"
status=$?
[ "$status" -ne 77 ] || exit 77
[ "$status" -eq 4 ] || { echo "cleanup_check: with --nodes the harness returned $status, not the command's 4"; exit 1; }
if ip netns list | grep -q "plexus-node.*-\|plexus-switch-"; then
  echo "cleanup_check: namespaces left after --nodes: $(ip netns list | grep 'plexus-')"
  exit 1
fi
if ip -br link | grep -q '^pxup'; then
  echo "cleanup_check: the link to the bridge is still there after --nodes"
  exit 1
fi
grep -q '"nodes": 2' "$work/nodes.json" && grep -q '"command_status": 4' "$work/nodes.json" ||
  { echo "cleanup_check: the --nodes stats file does not record 2 nodes and status 4"; exit 1; }
echo "cleanup_check: with --nodes 2 the status 4 came back and every namespace and link is gone"

# TERM while the command runs: the command gets it, the harness exits 143 and leaves nothing.
"$harness" --quiet --nodes 2 --rate 100mbit -- sleep 60 &
pid=$!
for _ in $(seq 100); do  # until the nodes exist (at most 10 s)
  ip netns list | grep -q "plexus-switch-$pid" && break
  sleep 0.1
done
kill -TERM "$pid"
wait "$pid"
status=$?
[ "$status" -eq 143 ] || { echo "cleanup_check: after TERM the harness returned $status, not 143"; exit 1; }
if ip netns list | grep -q -- "-$pid\b" || ip -br link | grep -q "^pxup$pid"; then
  echo "cleanup_check: namespaces or links of run $pid left after TERM"
  exit 1
fi
echo "cleanup_check: TERM ended the --nodes run with 143 and every namespace and link is gone"
