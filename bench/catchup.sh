#!/usr/bin/env bash
# Where a restarted follower stops catching up (issue 39, item 1):
#
#   bench/catchup.sh fixed|sized RECORDS...
#
# For each RECORDS (e.g. 50000 100000 200000) it starts three `arbiter
# serve` on 127.0.0.1 (fsync on) with small snapshot settings
# (--snapshot-threshold 2048 --snapshot-interval 1s --trailing-logs 16),
# loads RECORDS nodes of 256-byte values, then, with 64 clients writing
# throughout, SIGKILLs the follower a3, restarts it 10 s later and times
# how long it takes to catch up: its applied index reaching the index the
# leader had applied when the previous poll (every 0.5 s) read it. It
# prints one line per size: snapshot bytes, the write rate during the
# test, the trailing logs the leader kept, the snapshots a3 restored and
# the catch-up time, or "never" after CATCHUP_LIMIT (default 120 s).
#
#   fixed  --max-trailing-logs 16: the trailing logs stay at 16, the
#          behaviour before catch-up by design (RELIABILITY.md)
#   sized  the default: the leader sizes trailing logs from the write rate
#          and the measured restore time (cluster/catchup.go)
#
# Environment: CATCHUP_LIMIT (seconds, default 120), CATCHUP_CLIENTS
# (default 64), ARBITER_SERVE (another build to serve with).
set -euo pipefail
mode=${1:?usage: bench/catchup.sh fixed|sized RECORDS...}
shift
[ $# -gt 0 ] || { echo "usage: bench/catchup.sh fixed|sized RECORDS..." >&2; exit 2; }
case $mode in
fixed) extra=(--max-trailing-logs 16) ;;
sized) extra=() ;;
*) echo "mode must be fixed or sized, not $mode" >&2; exit 2 ;;
esac
limit=${CATCHUP_LIMIT:-120}
clients=${CATCHUP_CLIENTS:-64}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/arbiter-catchup-XXXXXX)
pids=()
load_pid=
stop_all() {
  [ -n "$load_pid" ] && kill "$load_pid" 2>/dev/null || true
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
  load_pid=
}
trap 'stop_all; rm -rf "$work"' EXIT
(cd "$root" && go build -o "$work/arbiter" ./cmd/arbiter)
A=$work/arbiter
S=${ARBITER_SERVE:-$A}
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
flags=(--snapshot-threshold 2048 --snapshot-interval 1s --trailing-logs 16 "${extra[@]}")
addrs=http://127.0.0.1:28001,http://127.0.0.1:28002

# field URL NAME: a number from the node's /v1/cluster/status (the first
# "NAME": N in it; the names used here are unique in the document).
field() { curl -sf --max-time 2 "$1/v1/cluster/status" | grep -o "\"$2\": *[0-9]*" | head -1 | grep -o '[0-9]*$'; }

# leader_url: the API address of the node that leads now.
# (status gives host:port; a scheme is added for comparisons and --addr).
leader_url() { echo "http://$(curl -sf --max-time 2 http://127.0.0.1:28001/v1/cluster/status | grep -o '"leader_api_addr": *"[^"]*"' | cut -d'"' -f4 | sed 's,^http://,,')"; }

for records in "$@"; do
  dir=$work/run-$records
  mkdir -p "$dir"
  start_arbiter_cluster "$S" "$dir" "${flags[@]}" || { echo "cluster did not start" >&2; exit 1; }
  # a3 must be a follower: the bootstrap node a1 leads unless it lost an
  # election; the test kills a3 and reads the leader through a1.
  loaded=0 run=0
  while [ "$loaded" -lt "$records" ]; do
    run=$((run + 1))
    out=$("$A" bench --addr "$addrs,http://127.0.0.1:28003" --op create --value-bytes 256 --clients 64 \
      --duration 10s --warmup 0s --prefix "load-$run" -o json)
    ops=$(echo "$out" | grep -o '"ops": *[0-9]*' | head -1 | grep -o '[0-9]*$')
    loaded=$((loaded + ops))
  done
  # Writes throughout, through a1 and a2 only (a3 goes away).
  "$A" bench --addr "$addrs" --op create --value-bytes 256 --clients "$clients" --duration "$((limit + 60))s" \
    --warmup 0s --prefix "live-$records" -o json >"$dir/live.json" 2>"$dir/live.err" &
  load_pid=$!
  sleep 5
  leader=$(leader_url)
  [ "$leader" != http://127.0.0.1:28003 ] || { echo "a3 leads: run again" >&2; exit 1; }
  a3=${pids[2]}
  kill -KILL "$a3"; wait "$a3" 2>/dev/null || true
  sleep 10
  before=$(field "$leader" applied_index)
  "$S" serve --id a3 --data-dir "$dir/arb3" --raft-addr 127.0.0.1:27003 --http-addr 127.0.0.1:28003 \
    --log-level warn "${flags[@]}" >>"$dir/arb3.log" 2>&1 &
  pids[2]=$!
  began=$(date +%s%N)
  target=$(field "$leader" applied_index)
  caught=never
  while [ $((($(date +%s%N) - began) / 1000000000)) -lt "$limit" ]; do
    sleep 0.5
    mine=$(field http://127.0.0.1:28003 applied_index || echo 0)
    if [ "${mine:-0}" -ge "$target" ]; then
      caught="$(((($(date +%s%N) - began) / 1000000)))ms"
      break
    fi
    target=$(field "$leader" applied_index || echo "$target")
  done
  after=$(field "$leader" applied_index)
  elapsed=$((($(date +%s%N) - began) / 1000000))
  rate=$(((after - before) * 1000 / (elapsed > 0 ? elapsed : 1)))
  echo "mode=$mode records=$loaded snapshot_bytes=$(field "$leader" last_snapshot_bytes) writes_per_s=$rate" \
    "trailing_logs=$(field "$leader" trailing_logs) a3_restores=$(field http://127.0.0.1:28003 snapshot_restores || echo '?')" \
    "caught_up=$caught"
  stop_all
done
