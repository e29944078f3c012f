#!/usr/bin/env bash
# Heap allocations per operation of one arbiter build on a 3-node loopback
# cluster, per node and summed, with each node's allocation profile of the
# measured window (issue 42). Unlike CPU time, the count hardly moves with
# the machine's load, so one run of one build is a figure to compare.
#
#   go build -o /tmp/arb ./cmd/arbiter
#   bench/allocs.sh /tmp/arb [clients] [seconds] [outdir]
#   ARBITER_BENCH_ARGS="--op create-json" bench/allocs.sh /tmp/arb
#   go tool pprof -sample_index=alloc_objects -top -base OUT/n1.before OUT/n1.after
#
# Prints "node mallocs_per_op" for each node (n1 is the bootstrap node, the
# leader unless an election moved it) and their sum. The operations are
# the log entries the cluster applied in the window (n1's
# arbiter_applied_index; a tick or two among them), not ops/s times the
# window, which a run whose rate changes miscounts. GODEBUG memprofilerate
# (MEMPROFILERATE, default 4096 bytes) makes the profiles fine enough to
# break a create's allocations down by stage; the count comes from
# go_memstats_mallocs_total, which every allocation moves whatever the
# rate. Uses ports 37001-37003 (raft), 38001-38003 (API) and 39001-39003
# (pprof), apart from bench/cpuab.sh's.
set -euo pipefail
bin=$1
clients=${2:-64}
secs=${3:-8}
out=${4:-$(mktemp -d /tmp/arbiter-allocs-XXXXXX)}
rate=${MEMPROFILERATE:-4096}
mkdir -p "$out"
pids=()
stop_nodes() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
}
trap 'stop_nodes; rm -rf "$out/data"' EXIT

# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"

api=(http://127.0.0.1:38001 http://127.0.0.1:38002 http://127.0.0.1:38003)
refuse_taken "${api[@]}"
for i in 1 2 3; do
  args=(serve --id "n$i" --data-dir "$out/data/n$i" --raft-addr "127.0.0.1:3700$i" --http-addr "127.0.0.1:3800$i"
    --pprof-addr "127.0.0.1:3900$i" --log-level warn)
  if [ "$i" = 1 ]; then args+=(--bootstrap); else args+=(--join http://127.0.0.1:38001); fi
  GODEBUG=memprofilerate=$rate "$bin" "${args[@]}" >"$out/n$i.log" 2>&1 &
  pids+=($!)
  wait_http "http://127.0.0.1:3800$i/readyz"
done
wait_voters http://127.0.0.1:38001

# shellcheck disable=SC2086
"$bin" bench --addr "$(IFS=,; echo "${api[*]}")" --clients "$clients" --duration "$((secs + 1))s" --warmup 2s ${ARBITER_BENCH_ARGS:-} >"$out/bench.out" 2>&1 &
load=$!
sleep 2
applied() { curl -sf "$1/metrics" | awk '/^arbiter_applied_index/ { printf "%.0f\n", $2 }'; }
# sample NAME: each node's allocation count into the array NAME and its
# allocation profile into $out/n<i>.NAME.
sample() {
  local -n counts=$1
  local i
  counts=()
  for i in 1 2 3; do
    counts+=("$(mallocs "${api[i-1]}")")
    curl -sf -o "$out/n$i.$1" "http://127.0.0.1:3900$i/debug/pprof/allocs"
  done
}
a0=$(applied "${api[0]}")
sample before
sleep "$secs"
a1=$(applied "${api[0]}")
sample after
wait "$load" || { cat "$out/bench.out" >&2; exit 1; }
line=$(grep 'ops/s=' "$out/bench.out" | tail -1)
ops=$((a1 - a0))
echo "$line"
echo "entries applied in the window: $ops"
sum=0
for i in 1 2 3; do
  d=$((after[i-1] - before[i-1]))
  sum=$((sum + d))
  awk -v n="n$i" -v d="$d" -v ops="$ops" 'BEGIN { printf "%s %.1f\n", n, d / ops }'
done
awk -v d="$sum" -v ops="$ops" 'BEGIN { printf "sum %.1f\n", d / ops }'
echo "profiles in $out (n*.before, n*.after)"
