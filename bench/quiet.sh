# Sourced by the benchmark scripts: wait for a quiet machine before a timed run.
#   busy                 mean runnable tasks over 5 s (4th field of /proc/loadavg, 1 s apart),
#                        the sampler itself left out
#   wait_quiet NAME      waits (30 s at a time) until busy < $max_busy, for up to $wait_minutes;
#                        prints the last busy figure on stdout; NAME prefixes its messages
busy() {
  local sum=0 r
  for _ in 1 2 3 4 5; do
    read -r _ _ _ r _ < /proc/loadavg  # a builtin: only this shell runs while it reads
    sum=$((sum + ${r%%/*} - 1))
    sleep 1
  done
  awk -v s="$sum" 'BEGIN { printf "%.2f", s / 5 }'
}

wait_quiet() {
  local name="$1" deadline=$((SECONDS + 60 * wait_minutes)) b
  while :; do
    b=$(busy)
    if awk -v b="$b" -v m="$max_busy" 'BEGIN { exit !(b < m) }'; then echo "$b"; return 0; fi
    if [ $SECONDS -ge $deadline ]; then
      echo "$name: the machine stayed busy ($b runnable) for $wait_minutes min; measuring anyway" >&2
      echo "$b"
      return 0
    fi
    echo "$name: busy ($b runnable tasks, load $(cut -d' ' -f1 /proc/loadavg)); waiting" >&2
    sleep 30
  done
}
