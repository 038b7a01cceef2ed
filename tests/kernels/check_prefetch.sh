#!/bin/sh
# Every register kernel of the cpu plugin and its libxsmm stack loop must keep their software
# prefetch instructions. GCC deletes a call to a helper it keeps out of line when the helper does
# nothing but prefetch (__builtin_prefetch counts as no side effect), which happened twice without
# any result changing: only the speed did. Usage: check_prefetch.sh PLUGIN.so
set -eu
plugin=$1
command -v objdump >/dev/null 2>&1 || { echo "objdump not found (binutils)"; exit 1; }
objdump -d --no-show-raw-insn -C "$plugin" | awk '
/^[0-9a-f]+ <.*>:$/ { cur = ""; if ($0 ~ /run_avx512<|run_avx2<|xsmm_stack\(/) { cur = $0; seen[cur] = 0; n++ } next }
cur != "" && /\tprefetch/ { seen[cur] = 1 }
END {
  bad = 0
  for (f in seen) if (!seen[f]) { print "no prefetch instruction in " f; bad++ }
  printf "%d functions checked, %d without a prefetch instruction\n", n, bad
  if (n == 0) { print "none of the functions to check was found (symbols stripped, or renamed?)"; exit 1 }
  exit bad > 0
}'
