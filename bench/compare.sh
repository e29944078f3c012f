#!/usr/bin/env bash
# Compare Arbiter's create-if-absent with etcd's transactional
# create-if-absent on this machine: 3 loopback nodes each, fsync on, the
# same load generator, runs interleaved (etcd, arbiter, etcd, arbiter, ...)
# so that both see the same machine noise. After each run it prints the
# CPU the three servers spent per operation. At the end it prints the
# medians of the rounds as a table (bench/compareplot), and draws them as an
# SVG chart when COMPARE_SVG names a file.
#
#   bench/compare.sh [rounds] [duration] [clients]
#   bench/compare.sh 3 10s 1,16,64
#   COMPARE_SVG=docs/compare-etcd.svg bench/compare.sh 3 8s 1,4,16,64,256
#
# etcd is the version bench/etcd/go.mod names (3.7.3). ARBITER_ARGS adds
# flags to every arbiter serve (ARBITER_ARGS="--log-store bolt": the other
# log store); ARBITER_BENCH_ARGS to arbiter bench (ARBITER_BENCH_ARGS="--op
# create-json": the public JSON API instead of cluster.Remote's binary
# protocol); ETCD_LOAD_ARGS to etcdload (ETCD_LOAD_ARGS=--http: JSON to
# etcd's HTTP gateway instead of gRPC). The like-for-like comparison of
# the two JSON APIs, as an independent HTTP client sees them:
#   ARBITER_BENCH_ARGS="--op create-json" ETCD_LOAD_ARGS=--http bench/compare.sh 3 8s 1,64
set -euo pipefail
rounds=${1:-3}
duration=${2:-10s}
clients=${3:-1,16,64}
root=$(cd "$(dirname "$0")/.." && pwd)
svg=${COMPARE_SVG:+$(realpath -m "$COMPARE_SVG")}
work=$(mktemp -d /tmp/arbiter-compare-XXXXXX)
bin=$work/bin
mkdir -p "$bin"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "building into $bin"
(cd "$root" && go build -o "$bin/arbiter" ./cmd/arbiter)
(cd "$root/bench/etcd" && go build -o "$bin/" ./cmd/...)
(cd "$root" && go build -o "$bin/compareplot" ./bench/compareplot)

# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"

start_etcd() {
  local cluster="e1=http://127.0.0.1:23801,e2=http://127.0.0.1:23802,e3=http://127.0.0.1:23803"
  refuse_taken http://127.0.0.1:23791 http://127.0.0.1:23792 http://127.0.0.1:23793 || return 1
  for i in 1 2 3; do
    "$bin/etcd" --name "e$i" --data-dir "$work/etcd$i" \
      --listen-peer-urls "http://127.0.0.1:2380$i" --initial-advertise-peer-urls "http://127.0.0.1:2380$i" \
      --listen-client-urls "http://127.0.0.1:2379$i" --advertise-client-urls "http://127.0.0.1:2379$i" \
      --initial-cluster "$cluster" --initial-cluster-state new --log-level error \
      >"$work/etcd$i.log" 2>&1 &
    pids+=($!)
  done
  for i in 1 2 3; do wait_http "http://127.0.0.1:2379$i/health" || return 1; done
}

start_arbiter() {
  # ARBITER_ARGS: extra serve flags, split on spaces as before.
  # shellcheck disable=SC2086
  start_arbiter_cluster "$bin/arbiter" "$work" ${ARBITER_ARGS:-}
}

# measured "SERVER_PIDS" LOAD_COMMAND...: runs one load run and prints its
# result, then the CPU the servers spent per operation over the measured
# window (after the warmup), summed over the three of them.
warmup_s=2
duration_s=${duration%s}
measured() {
  local servers=$1
  shift
  "$@" --warmup "${warmup_s}s" >"$work/out" &
  local load=$!
  sleep "$warmup_s"
  local t0 t1
  t0=$(cpu_ticks $servers)
  sleep "$duration_s"
  t1=$(cpu_ticks $servers)
  wait "$load"
  cat "$work/out"
  local ops
  ops=$(grep -o 'ops=[0-9]*' "$work/out" | tail -1 | cut -d= -f2)
  awk -v ticks=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" -v ops="${ops:-0}" \
    'BEGIN { if (ops > 0) printf "  server CPU: %.0f us per operation (%.1f s over the window, three members)\n", ticks / hz / ops * 1e6, ticks / hz }'
}

case $duration in
*[0-9]s) ;;
*) echo "duration must be whole seconds, such as 10s" >&2; exit 2 ;;
esac
start_etcd
etcd_pids="${pids[*]:0:3}"
start_arbiter
arbiter_pids="${pids[*]:3:3}"
echo "3 etcd members and 3 arbiter nodes are up; $rounds rounds of $duration per client count"
for r in $(seq 1 "$rounds"); do
  for c in ${clients//,/ }; do
    echo "== round $r, $c clients: etcd" | tee -a "$work/log"
    # shellcheck disable=SC2086
    measured "$etcd_pids" "$bin/etcdload" --endpoints 127.0.0.1:23791,127.0.0.1:23792,127.0.0.1:23793 --clients "$c" --duration "$duration" ${ETCD_LOAD_ARGS:-} | tee -a "$work/log"
    echo "== round $r, $c clients: arbiter" | tee -a "$work/log"
    # shellcheck disable=SC2086
    measured "$arbiter_pids" "$bin/arbiter" bench --addr http://127.0.0.1:28001,http://127.0.0.1:28002,http://127.0.0.1:28003 --clients "$c" --duration "$duration" ${ARBITER_BENCH_ARGS:-} | tee -a "$work/log"
  done
done
echo "== medians of the rounds"
"$bin/compareplot" ${svg:+-svg "$svg"} <"$work/log"
if [ -n "$svg" ]; then echo "chart written to $svg"; fi
