# bench/lib.sh — shell functions the benchmark scripts share (sourced, not run).

# busy_percent: the % of all CPUs' time not idle over the next 3 s (/proc/stat: idle + iowait
# count as idle), printed as a whole number: a benchmark's check that the machine was quiet.
busy_percent() {
  local a b
  a=$(awk '/^cpu / { print $2+$3+$4+$5+$6+$7+$8+$9, $5+$6 }' /proc/stat)
  sleep 3
  b=$(awk '/^cpu / { print $2+$3+$4+$5+$6+$7+$8+$9, $5+$6 }' /proc/stat)
  awk -v a="$a" -v b="$b" 'BEGIN { split(a, x, " "); split(b, y, " ");
    t = y[1] - x[1]; printf "%.0f", (t > 0 ? 100 * (t - (y[2] - x[2])) / t : 0) }'
}
