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
