#!/usr/bin/env bash
# Memory per record and restart time (issue 11), over a real process:
#
#   bench/memory.sh [records] [value-bytes] [log-store]
#
# starts one `arbiter serve` node (fsync off: loading is not what is
# measured), creates [records] nodes (default 1,000,000), each with a
# string property of [value-bytes] bytes of JSON (default 256), with
# `arbiter bench --op create` at 64 clients, and reads the process's RSS
# and Go heap from /metrics. It then stops the node with SIGTERM (a
# graceful stop snapshots the log tail), starts it again on the same data
# directory, times the start to /readyz and reads RSS and heap again five
# seconds later: the restart figures are the ones to compare (no
# load-time garbage, no log to replay). Prints one line per stage.
#
# Environment:
#   MEMORY_GOMEMLIMIT=<limit>  also start once more under that Go memory
#                              limit (BENCHMARKS.md: 1000MiB keeps a
#                              million records under 1 KB of RSS each)
#   MEMORY_KEEP=<dir>          keep the loaded data directory there (it
#                              must not exist), to profile restarts by hand
#   ARBITER_SERVE=<binary>     serve with another build (an older commit,
#                              as a baseline); the load still comes from
#                              this tree's `arbiter bench`
#   MEMORY_LOAD_RUN=<duration> length of each load run (default 20s)
set -euo pipefail
records=${1:-1000000}
value=${2:-256}
store=${3:-wal} # the default of a new data directory (log.DefaultStore)
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/arbiter-memory-XXXXXX)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  wait 2>/dev/null || true
  if [ -n "${MEMORY_KEEP:-}" ]; then mv "$work/data" "$MEMORY_KEEP"; fi
  rm -rf "$work"
}
trap cleanup EXIT
(cd "$root" && go build -o "$work/arbiter" ./cmd/arbiter)
A=$work/arbiter
S=${ARBITER_SERVE:-$A}
url=http://127.0.0.1:8391
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh" # refuse_taken

start() { # [NAME=value...] -- [serve flags...]
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  refuse_taken "$url" || return 1
  env "${envs[@]}" "$S" serve --id m1 --data-dir "$work/data" --raft-addr 127.0.0.1:7391 --http-addr 127.0.0.1:8391 \
    --unsafe-no-fsync --log-level warn "$@" >>"$work/serve.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 1200); do curl -sf "$url/readyz" >/dev/null 2>&1 && return 0; sleep 0.05; done
  echo "timed out waiting for $url/readyz" >&2; cat "$work/serve.log" >&2; return 1
}

metric() { curl -sf "$url/metrics" | awk -v m="$1" '$1 == m {printf "%.0f", $2}'; }

report() { # stage
  local rss heap
  rss=$(metric process_resident_memory_bytes)
  heap=$(metric go_memstats_heap_inuse_bytes)
  echo "$1: records=$records rss=$((rss / 1048576))MiB heap_inuse=$((heap / 1048576))MiB rss_per_record=$((rss / records))B heap_per_record=$((heap / records))B"
}

restart() { # label [NAME=value...]
  local label=$1 began ready
  shift
  began=$(date +%s%N)
  start "$@"
  ready=$(date +%s%N)
  echo "restart ($label) to /readyz: $(((ready - began) / 1000000)) ms (data dir $(du -sh "$work/data" | cut -f1))"
  sleep 5
  report "after restart ($label)"
}

start -- --bootstrap --log-store "$store"
loaded=0
run=0
while [ "$loaded" -lt "$records" ]; do
  run=$((run + 1))
  out=$("$A" bench --addr "$url" --op create --value-bytes "$value" --clients 64 --duration "${MEMORY_LOAD_RUN:-20s}" --warmup 0s \
    --prefix "mem-$run" -o json)
  ops=$(echo "$out" | grep -o '"ops": *[0-9]*' | head -1 | grep -o '[0-9]*$')
  errors=$(echo "$out" | grep -o '"errors": *[0-9]*' | head -1 | grep -o '[0-9]*$')
  if [ "${errors:-0}" != 0 ]; then echo "load: $errors errors: $out" >&2; exit 1; fi
  loaded=$((loaded + ops))
  echo "loaded $loaded"
done
records=$loaded
report "after load"
began=$(date +%s%N)
kill -TERM "$pid"; wait "$pid" || true
echo "graceful stop: $((($(date +%s%N) - began) / 1000000)) ms"
restart "GOMEMLIMIT unset" GOMEMLIMIT=off
if [ -n "${MEMORY_GOMEMLIMIT:-}" ]; then
  kill -KILL "$pid"; wait "$pid" 2>/dev/null || true
  restart "GOMEMLIMIT=$MEMORY_GOMEMLIMIT" GOMEMLIMIT="$MEMORY_GOMEMLIMIT"
fi
