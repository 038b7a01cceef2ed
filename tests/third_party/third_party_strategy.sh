#!/usr/bin/env bash
# The plugin author's path, checked end to end with examples/third_party_strategy.
#
# Mode `install`: installs this plexus build into a scratch prefix; checks that <prefix>/share/plexus
# holds the docs and the examples, and that the installed example is the one in the source tree;
# builds the installed copy of the example (what a user copies) with find_package(plexus) alone;
# checks that the installed program and the installed conformance suite take the plugin: listed by
# `plexus plugins`, conformant on 1, 3 and 4 ranks, and agreeing with Cannon in `plexus compare`,
# whose model column the plugin feeds.
#
# Mode `build-tree`: builds the example from the source tree against the build tree's package
# (-DCMAKE_PREFIX_PATH=<build>, no install), and checks that the build tree's program lists it and
# the build tree's conformance suite passes it on one rank.
#
# Both modes check that the code shown in docs/plugin-guide.md is the example's allgather.cpp.
# Usage: third_party_strategy.sh install|build-tree BUILD_DIR SOURCE_DIR WORK_DIR MPIEXEC
set -euo pipefail
mode=$1 build=$2 source=$3 work=$4 mpiexec=$5
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work"

# The fenced block between the guide's marker comments must be the example file, byte for byte.
check_guide() {  # GUIDE EXAMPLE_CPP
  local begin='<!-- begin examples/third_party_strategy/allgather.cpp -->'
  local end='<!-- end examples/third_party_strategy/allgather.cpp -->'
  grep -qxF "$begin" "$1" || fail "$1 has no line '$begin'"
  grep -qxF "$end" "$1" || fail "$1 has no line '$end'"
  awk -v b="$begin" -v e="$end" '$0 == e { on = 0 } on { print } $0 == b { on = 1 }' "$1" |
    sed '1{/^```cpp$/d}; ${/^```$/d}' > "$work/guide-allgather.cpp"
  diff -u "$2" "$work/guide-allgather.cpp" > "$work/guide.diff" ||
    { cat "$work/guide.diff"; fail "the strategy in $1 differs from $2 (copy the file into the guide)"; }
  echo "the guide shows $2 unchanged"
}

conformance() {  # BIN RANKS: the multiply conformance suite on the allgather strategy alone
  PLEXUS_CONFORMANCE_ONLY=allgather "$mpiexec" -n "$2" --oversubscribe "$1" \
    > "$work/conformance_np$2.log" 2>&1 || { cat "$work/conformance_np$2.log"; fail "conformance on $2 ranks"; }
  grep -q "multiply algorithms under test: allgather$" "$work/conformance_np$2.log" ||
    fail "the suite did not run allgather alone"
  tail -n 3 "$work/conformance_np$2.log"
}

plugins_lists_allgather() {  # PLEXUS_PROGRAM
  "$1" plugins | tee "$work/plugins.txt"
  grep -q "^comm allgather .*plugin example_allgather" "$work/plugins.txt" || fail "$1 plugins does not list allgather"
}

case "$mode" in
install)
  prefix=$work/prefix
  cmake --install "$build" --prefix "$prefix" > "$work/install.log"
  share=$prefix/share/plexus
  for f in docs/plugin-guide.md docs/user-guide.md docs/building.md examples/h2o.xml \
           examples/third_party_strategy/CMakeLists.txt examples/third_party_strategy/allgather.cpp; do
    [ -f "$share/$f" ] || fail "the install has no $share/$f"
  done
  for f in CMakeLists.txt allgather.cpp; do
    cmp "$source/examples/third_party_strategy/$f" "$share/examples/third_party_strategy/$f" ||
      fail "the installed examples/third_party_strategy/$f is not the source tree's"
  done
  check_guide "$share/docs/plugin-guide.md" "$share/examples/third_party_strategy/allgather.cpp"
  for p in plexus plexus-multiply-conformance plexus-kernel-conformance plexus-collectives-conformance; do
    [ -x "$prefix/bin/$p" ] || fail "the install has no $prefix/bin/$p (the plugin guide runs it)"
  done
  # Built from the installed copy, as a user does (a copy: the install is the user's to keep clean).
  cp -r "$share/examples/third_party_strategy" "$work/example"
  cmake -S "$work/example" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
    > "$work/configure.log"
  grep -qF "plexus_DIR:PATH=$prefix/" "$work/build/CMakeCache.txt" ||
    fail "the example found another plexus: $(grep '^plexus_DIR' "$work/build/CMakeCache.txt")"
  cmake --build "$work/build" > "$work/build.log"
  export PLEXUS_PLUGIN_PATH=$work/build
  plugins_lists_allgather "$prefix/bin/plexus"
  for n in 1 3 4; do conformance "$prefix/bin/plexus-multiply-conformance" "$n"; done
  cd "$work"
  "$mpiexec" -n 4 --oversubscribe "$prefix/bin/plexus" compare --strategies cannon,allgather \
    --set Problem/Blocks=24 --set multiply/Repetitions=1 --json compare.json
  grep -q '"allgather"' compare.json || fail "compare.json has no allgather row"
  # The strategy reports predicted_bytes_received, so compare's model column is filled for it.
  python3 -c 'import json, sys
rows = [r for r in json.load(open("compare.json"))["rows"] if r["strategy"] == "allgather"]
sys.exit(0 if rows and isinstance(rows[0]["model_volume_per_rank_max"], (int, float)) else 1)' ||
    fail "compare.json has no model volume for allgather"
  echo "third-party strategy: built from the installed example against the installed SDK, conformant, agrees with cannon"
  ;;
build-tree)
  check_guide "$source/docs/plugin-guide.md" "$source/examples/third_party_strategy/allgather.cpp"
  cmake -S "$source/examples/third_party_strategy" -B "$work/build" -DCMAKE_PREFIX_PATH="$build" \
    -DCMAKE_BUILD_TYPE=Release > "$work/configure.log"
  grep -qF "plexus_DIR:PATH=$build/" "$work/build/CMakeCache.txt" ||
    fail "the example found another plexus: $(grep '^plexus_DIR' "$work/build/CMakeCache.txt")"
  cmake --build "$work/build" > "$work/build.log"
  export PLEXUS_PLUGIN_PATH=$work/build
  plugins_lists_allgather "$build/bin/plexus"
  conformance "$build/bin/plexus-multiply-conformance" 1
  echo "third-party strategy: built against the build tree's package, listed, conformant on 1 rank"
  ;;
*)
  fail "unknown mode '$mode' (install or build-tree)"
  ;;
esac
