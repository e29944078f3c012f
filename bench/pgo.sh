#!/usr/bin/env bash
# Refreshes cmd/arbiter/default.pgo, the CPU profile that `go build` uses
# for profile-guided optimization of the arbiter binary (Go picks up a
# default.pgo in the main package's directory by itself; -pgo=off builds
# without it):
#
#   bench/pgo.sh [seconds]
#
# It builds arbiter with -pgo=off, so that the new profile does not depend
# on the one it replaces, starts three nodes on 127.0.0.1 with serve's
# defaults (fsync on) and --pprof-addr each, and runs a representative
# load on them, one `arbiter bench` phase after the other: create over the
# binary protocol and create-json over the public JSON API, each with 64
# clients for [seconds] (default 10) and with 1 client for half of that,
# then a share of the other domains' calls (get, submit, lease, task) with
# 16 clients for a quarter of it each. During each phase's measured window
# (after bench's unmeasured setup and warmup) it takes a CPU profile of
# the three nodes at once: the leader's work and the followers' both
# count. The profiles of every phase and node are merged (`go tool pprof
# -proto`) into cmd/arbiter/default.pgo, which is written only once every
# phase has run. The load goes to all three nodes, as bench/cpuab.sh's,
# so that the forwarding of a follower is in the profile too.
#
# No default.pgo is committed: the one this script made on 2026-12-05 did
# not pay above the noise (BENCHMARKS.md, "profile-guided optimization"),
# and with one, every package arbiter links is built and cached twice,
# with and without the profile (go test of cmd/arbiter uses it too). To
# try again: run this, build with and without (-pgo=off), compare them
# with bench/cpuab.sh OFF ON, and commit the file only if it pays (else
# delete it: a default.pgo left in the checkout changes every build there).
#
# Run it on a quiet machine from the repository root's checkout it writes
# to. Uses ports 27201-27203 (raft), 28201-28203 (API) and 29201-29203
# (pprof); PGO_KEEP=DIR keeps the nodes' logs and the single profiles.
set -euo pipefail
secs=${1:-10}
case $secs in
'' | *[!0-9]*) echo "seconds must be a whole number" >&2; exit 2 ;;
esac
[ "$secs" -ge 4 ] || { echo "seconds must be 4 or more" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/arbiter-pgo-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -n "${PGO_KEEP:-}" ]; then mkdir -p "$PGO_KEEP" && cp -r "$work"/. "$PGO_KEEP"/; fi
  rm -rf "$work"
}
trap cleanup EXIT

# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh" # wait_http, refuse_taken, wait_voters

(cd "$root" && go build -pgo=off -o "$work/arbiter" ./cmd/arbiter)
A=$work/arbiter
api=(http://127.0.0.1:28201 http://127.0.0.1:28202 http://127.0.0.1:28203)
addrs="${api[0]},${api[1]},${api[2]}"

# The three nodes, as bench/lib.sh's start_arbiter_cluster starts them, but
# each with a pprof listener of its own.
refuse_taken "${api[@]}"
for i in 1 2 3; do
  if [ "$i" = 1 ]; then first=(--bootstrap); else first=(--join "${api[0]}"); fi
  "$A" serve --id "p$i" --data-dir "$work/p$i" --raft-addr "127.0.0.1:2720$i" --http-addr "127.0.0.1:2820$i" \
    --pprof-addr "127.0.0.1:2920$i" --log-level warn "${first[@]}" >"$work/p$i.log" 2>&1 &
  pids+=($!)
  [ "$i" != 1 ] || wait_http "${api[0]}/readyz"
done
for i in 2 3; do wait_http "${api[i - 1]}/readyz"; done
wait_voters "${api[0]}"

# phase NAME OP CLIENTS SECONDS: one bench run; a CPU profile of each node
# over its measured window, as $work/NAME-pN.pprof.
phase() {
  local name=$1 op=$2 clients=$3 s=$4 load i got=()
  "$A" bench --addr "$addrs" --op "$op" --clients "$clients" --duration "$((s + 1))s" --warmup 1s \
    --prefix "pgo-$name" --announce >"$work/$name.out" 2>"$work/$name.err" &
  load=$!
  # The op's setup (bench's own, bounded) is not profiled: wait for it.
  until grep -q '^bench: measuring' "$work/$name.err" 2>/dev/null; do
    kill -0 "$load" 2>/dev/null || { cat "$work/$name.err" >&2; return 1; }
    sleep 0.05
  done
  sleep 1 # the warmup
  for i in 1 2 3; do
    curl -sf --max-time "$((s + 30))" -o "$work/$name-p$i.pprof" "http://127.0.0.1:2920$i/debug/pprof/profile?seconds=$s" &
    got+=($!)
  done
  for i in "${got[@]}"; do wait "$i" || { echo "profile of $name failed" >&2; return 1; }; done
  wait "$load" || { cat "$work/$name.err" >&2; return 1; }
  echo "$name: $(grep 'ops/s=' "$work/$name.out" | tail -1)"
}

phase create-64 create 64 "$secs"
phase create-json-64 create-json 64 "$secs"
phase create-1 create 1 "$((secs / 2))"
phase create-json-1 create-json 1 "$((secs / 2))"
for op in get submit lease task; do phase "$op-16" "$op" 16 "$((secs / 4))"; done

(cd "$root" && go tool pprof -proto "$work"/*.pprof >"$work/merged.pgo")
mv "$work/merged.pgo" "$root/cmd/arbiter/default.pgo"
echo "wrote cmd/arbiter/default.pgo: $(wc -c <"$root/cmd/arbiter/default.pgo") bytes from $(find "$work" -name '*.pprof' | wc -l) profiles"
