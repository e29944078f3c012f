#!/usr/bin/env bash
# What overlapping the leader's fsync with replication would buy one
# client (issue 42). hashicorp/raft's leader writes and fsyncs its log
# before it sends the entry to a follower, so a one-client create waits
# for two fsyncs in sequence (docs/commit-path.md); etcd's raft sends
# while its leader writes, and pays about max(leader fsync, round trip +
# follower fsync). A leader started with --unsafe-no-fsync pays no fsync
# of its own, so its one-client latency bounds from below what the
# overlapped order could reach: a measurement for deciding whether a
# change to raft's dispatchLogs is worth making, never a setting to run
# (a crash of that leader can lose acknowledged writes).
#
#   go build -o /tmp/arb ./cmd/arbiter
#   bench/leaderfsync.sh /tmp/arb [rounds] [seconds] [staged]
#
# staged, if given, is a build of bench/raftstage.sh (the leader
# replicating while it writes, fsync everywhere): each round then
# measures it too, between the two others.
#
# Each round starts a fresh 3-node cluster twice on 127.0.0.1 (raft
# 47101-47103, API 48101-48103), once with fsync everywhere and once with
# the bootstrap node (the leader) not syncing, and runs `arbiter bench
# --clients 1` at the leader for the given seconds on each. Compare the
# p50 of the two lines of each round, then the medians over rounds.
set -euo pipefail
bin=$1 rounds=${2:-3} secs=${3:-6} staged=${4:-}
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
pids=() out=""
stop() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
  [ -z "$out" ] || rm -rf "$out"
}
trap stop EXIT

one() { # one LABEL BIN [N1 ARGS...]
  local label=$1 bin=$2 i
  shift 2
  out=$(mktemp -d /tmp/arbiter-leaderfsync-XXXX)
  refuse_taken http://127.0.0.1:48101 http://127.0.0.1:48102 http://127.0.0.1:48103
  for i in 1 2 3; do
    local args=(serve --id "n$i" --data-dir "$out/n$i" --raft-addr "127.0.0.1:4710$i" --http-addr "127.0.0.1:4810$i" --log-level warn)
    if [ "$i" = 1 ]; then args+=(--bootstrap "$@"); else args+=(--join http://127.0.0.1:48101); fi
    "$bin" "${args[@]}" >"$out/n$i.log" 2>&1 &
    pids+=($!)
    wait_http "http://127.0.0.1:4810$i/readyz"
  done
  wait_voters http://127.0.0.1:48101
  printf '%-22s ' "$label"
  "$bin" bench --addr http://127.0.0.1:48101 --clients 1 --duration "${secs}s" --warmup 1s 2>&1 | grep 'ops/s='
  stop
}

for r in $(seq 1 "$rounds"); do
  echo "round $r"
  one "fsync everywhere" "$bin"
  [ -z "$staged" ] || one "staged dispatch" "$staged"
  one "leader without fsync" "$bin" --unsafe-no-fsync
done
