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
#
# COMPARE_AT says where the clients connect: spread (the default: client c
# to member c mod 3, so two thirds of them through a follower), leader
# (every client to the member that leads just before the run: each
# system's own leader, found through its status API) or follower (every
# client to one member that does not lead: each system pays its forwarding
# hop). Every run reads back each create it was told succeeded (bench's
# and etcdload's --verify, after the measured window) and the script
# stops if one is missing: no figure without that check.
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

# etcd_member ROLE: the client endpoint of etcd's leader (ROLE leader) or
# of a member that does not lead (follower), from each member's
# maintenance status (its own id and the leader's).
etcd_member() {
  local i st
  for i in 1 2 3; do
    st=$(curl -sf -X POST "http://127.0.0.1:2379$i/v3/maintenance/status" -d '{}') || continue
    local me leader
    me=$(grep -o '"member_id":"[0-9]*"' <<<"$st" | grep -o '[0-9]*')
    leader=$(grep -o '"leader":"[0-9]*"' <<<"$st" | grep -o '[0-9]*')
    if { [ "$1" = leader ] && [ "$me" = "$leader" ]; } || { [ "$1" = follower ] && [ "$me" != "$leader" ]; }; then
      echo "127.0.0.1:2379$i"; return 0
    fi
  done
  echo "no etcd $1 found" >&2; return 1
}

# arbiter_member ROLE: the API URL of Arbiter's leader or of a follower,
# from the first node's /v1/cluster/status.
arbiter_member() {
  local leader u
  leader=$(curl -sf http://127.0.0.1:28001/v1/cluster/status | grep -o '"leader_api_addr":"[^"]*"' | cut -d'"' -f4)
  [ -n "$leader" ] || { echo "no arbiter leader known" >&2; return 1; }
  case $leader in http*) ;; *) leader="http://$leader" ;; esac
  if [ "$1" = leader ]; then echo "$leader"; return 0; fi
  for u in http://127.0.0.1:28001 http://127.0.0.1:28002 http://127.0.0.1:28003; do
    [ "$u" != "$leader" ] && { echo "$u"; return 0; }
  done
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
  wait "$load" || true # a lost write fails the load: verified (after) says so
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
at=${COMPARE_AT:-spread}
case $at in
spread | leader | follower) ;;
*) echo "COMPARE_AT must be spread, leader or follower, not $at" >&2; exit 2 ;;
esac
echo "3 etcd members and 3 arbiter nodes are up; $rounds rounds of $duration per client count, clients at: $at"
# verified: fails the script when the run's read-back found a create
# missing (its output says "N missing" with N > 0).
verified() {
  if grep -q 'missing' "$work/out" && ! grep 'missing' "$work/out" | grep -q ' 0 missing'; then
    echo "an acknowledged create was lost: no figure from this run" >&2; exit 1
  fi
  grep -q ' 0 missing' "$work/out" || { echo "the run printed no verification" >&2; exit 1; }
}
for r in $(seq 1 "$rounds"); do
  for c in ${clients//,/ }; do
    etcd_eps=127.0.0.1:23791,127.0.0.1:23792,127.0.0.1:23793
    arb_urls=http://127.0.0.1:28001,http://127.0.0.1:28002,http://127.0.0.1:28003
    if [ "$at" != spread ]; then
      etcd_eps=$(etcd_member "$at")
      arb_urls=$(arbiter_member "$at")
    fi
    echo "== round $r, $c clients: etcd (at $etcd_eps)" | tee -a "$work/log"
    # shellcheck disable=SC2086
    measured "$etcd_pids" "$bin/etcdload" --endpoints "$etcd_eps" --clients "$c" --duration "$duration" --verify ${ETCD_LOAD_ARGS:-} | tee -a "$work/log"
    verified
    echo "== round $r, $c clients: arbiter (at $arb_urls)" | tee -a "$work/log"
    # shellcheck disable=SC2086
    measured "$arbiter_pids" "$bin/arbiter" bench --addr "$arb_urls" --clients "$c" --duration "$duration" --verify ${ARBITER_BENCH_ARGS:-} | tee -a "$work/log"
    verified
  done
done
echo "== medians of the rounds"
"$bin/compareplot" ${svg:+-svg "$svg"} <"$work/log"
if [ -n "$svg" ]; then echo "chart written to $svg"; fi
