#!/usr/bin/env bash
# A/B of two arbiter builds on a 3-node loopback cluster: the servers' CPU
# and heap allocations per operation, ops/s and latency of `arbiter bench
# --op create`, the largest peak RSS of the three servers (VmHWM, MiB) and
# the machine's 1-minute load average at the end of the run, the builds
# alternating (A, B, A, B, ...) on fresh clusters so that both see the
# same machine noise. Prints each run, then the median over the pairs of
# B's CPU per operation against A's in the same pair.
#
#   bench/cpuab.sh OLD_BINARY NEW_BINARY [pairs] [clients] [seconds]
#   go build -o /tmp/a ./cmd/arbiter   # at the baseline
#   go build -o /tmp/b ./cmd/arbiter   # at the change
#   bench/cpuab.sh /tmp/a /tmp/b 5 64 8
#
# ADDRS names the nodes the load goes to (default: all three, so two thirds
# of the calls go through a follower); ARBITER_BENCH_ARGS adds flags to
# arbiter bench (ARBITER_BENCH_ARGS="--op create-json": the public JSON API);
# BENCH_BIN names the binary that runs arbiter bench (default: each build
# drives itself), so that an older build can be driven with a newer op. Uses ports 27001-27003 and
# 28001-28003, as bench/compare.sh does: do not run both at once;
# CPUAB_PORT_SHIFT=100 moves them to 27101-27103 and 28101-28103 (to run
# beside bench/big.sh or another cluster on the usual ones). To give
# serve flags to one side only, make that side a wrapper script that
# execs the binary (exec, so that the PID measured is the server's).
set -euo pipefail
a=$1
b=$2
pairs=${3:-5}
clients=${4:-64}
secs=${5:-8}
port_shift=${CPUAB_PORT_SHIFT:-0} # read by lib.sh's start_arbiter_cluster
nodes=()
for i in 1 2 3; do nodes+=("http://127.0.0.1:$((28000 + port_shift + i))"); done
addrs=${ADDRS:-$(
  IFS=,
  echo "${nodes[*]}"
)}
work=$(mktemp -d /tmp/arbiter-cpuab-XXXXXX)
pids=()
stop_nodes() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
}
trap 'stop_nodes; rm -rf "$work"' EXIT

# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"

# max_rss_mib PID...: the largest peak resident set (VmHWM of
# /proc/PID/status) among the processes, in MiB.
max_rss_mib() {
  local p
  for p in "$@"; do awk '/^VmHWM:/ { print $2 }' "/proc/$p/status"; done | sort -n | tail -1 | awk '{ printf "%.0f\n", $1 / 1024 }'
}

# run BINARY: one fresh cluster, one bench run; prints "cpu_us ops_per_s p50
# p99 mallocs_per_op rss_mib load1", the CPU and allocations summed over the
# three servers, the largest server's peak RSS, the load average.
run() {
  local bin=$1 dir
  dir=$(mktemp -d "$work/run-XXXX")
  start_arbiter_cluster "$bin" "$dir" || { stop_nodes; return 1; }
  # shellcheck disable=SC2086
  "${BENCH_BIN:-$bin}" bench --addr "$addrs" --clients "$clients" --duration "$((secs + 1))s" --warmup 2s ${ARBITER_BENCH_ARGS:-} >"$dir/out" 2>&1 &
  local load=$! t0=0 t1=0 m0=0 m1=0 rss=0 load1=0
  sleep 2
  t0=$(cpu_ticks "${pids[@]}")
  m0=$(mallocs "${nodes[@]}")
  sleep "$secs"
  t1=$(cpu_ticks "${pids[@]}")
  m1=$(mallocs "${nodes[@]}")
  wait "$load" || { cat "$dir/out" >&2; return 1; }
  rss=$(max_rss_mib "${pids[@]}")
  read -r load1 _ </proc/loadavg
  stop_nodes
  local line
  line=$(grep 'ops/s=' "$dir/out" | tail -1)
  awk -v line="$line" -v ticks=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" -v secs="$secs" -v allocs=$((m1 - m0)) -v rss="$rss" -v load1="$load1" 'BEGIN {
    n = split(line, f, /[ =]+/)
    for (i = 1; i < n; i++) v[f[i]] = f[i + 1]
    ops = v["ops/s"] * secs
    printf "%.0f %d %s %s %.0f %s %s\n", ticks / hz / ops * 1e6, v["ops/s"], v["p50"], v["p99"], allocs / ops, rss, load1
  }'
}

ratios=()
for r in $(seq 1 "$pairs"); do
  ra=$(run "$a")
  echo "pair $r A: cpu_us_per_op ops_per_s p50 p99 mallocs_per_op rss_mib load1 = $ra"
  rb=$(run "$b")
  echo "pair $r B: cpu_us_per_op ops_per_s p50 p99 mallocs_per_op rss_mib load1 = $rb"
  ratios+=("$(awk -v x="${ra%% *}" -v y="${rb%% *}" 'BEGIN { printf "%.3f", y / x }')")
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{ r[NR] = $1 } END {
  m = (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
  printf "B/A CPU per operation, median of %d pairs: %.2fx\n", NR, m
}'
