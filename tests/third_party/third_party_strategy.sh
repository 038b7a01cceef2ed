#!/usr/bin/env bash
# Installs this plexus build into a scratch prefix, builds examples/third_party_strategy against
# it with find_package(plexus) alone, and checks that the installed program and the installed
# conformance suite take the plugin: listed by `plexus plugins`, conformant on 1, 3 and 4 ranks,
# and agreeing with Cannon in `plexus compare`.
# Usage: third_party_strategy.sh BUILD_DIR EXAMPLE_DIR WORK_DIR MPIEXEC
set -euo pipefail
build=$1 example=$2 work=$3 mpiexec=$4
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" > "$work/install.log"
cmake -S "$example" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release > "$work/configure.log"
cmake --build "$work/build" > "$work/build.log"
export PLEXUS_PLUGIN_PATH=$work/build
"$prefix/bin/plexus" plugins | tee "$work/plugins.txt"
grep -q "allgather" "$work/plugins.txt" || { echo "FAIL: plexus plugins does not list allgather"; exit 1; }
for n in 1 3 4; do
  PLEXUS_CONFORMANCE_ONLY=allgather "$mpiexec" -n "$n" --oversubscribe "$prefix/bin/plexus-multiply-conformance" \
    > "$work/conformance_np$n.log" 2>&1 || { cat "$work/conformance_np$n.log"; echo "FAIL: conformance on $n ranks"; exit 1; }
  grep -q "multiply algorithms under test: allgather$" "$work/conformance_np$n.log" ||
    { echo "FAIL: the suite did not run allgather alone"; exit 1; }
  tail -n 3 "$work/conformance_np$n.log"
done
cd "$work"
"$mpiexec" -n 4 --oversubscribe "$prefix/bin/plexus" compare --strategies cannon,allgather \
  --set Problem/Blocks=24 --set multiply/Repetitions=1 --json compare.json
grep -q '"allgather"' compare.json || { echo "FAIL: compare.json has no allgather row"; exit 1; }
echo "third-party strategy: built against the installed SDK, conformant, agrees with cannon"
