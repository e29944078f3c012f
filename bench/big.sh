#!/usr/bin/env bash
# Large state on this machine (issue 39, item 2):
#
#   bench/big.sh [records] [value-bytes]
#
# Three `arbiter serve` on 127.0.0.1 hold [records] nodes (default
# 5,000,000) of [value-bytes] (default 256) each. The script prints one
# line per stage:
#
#   load      loads the records with `arbiter bench --op create` at 64
#             clients, the nodes started with --unsafe-no-fsync (loading is
#             not what is measured), then stops them with SIGTERM
#   restart   starts all three again, fsync on (as every later stage), and
#             times each from its start to /readyz (ready means caught up:
#             the node has applied what a leader had committed when it
#             started); RSS and Go heap per record 10 s after ready; then
#             one follower alone is stopped and started again, the other
#             two serving (restart-one): its start to /readyz
#   snapshot  the raft snapshot the leader takes (`arbiter snapshot`'s
#             duration figures from /metrics: persist count and time) and
#             `arbiter snapshot save` of the whole state to a file
#   install   a new follower: a3 is removed, its data directory wiped, and
#             a4 joins on its ports; the time from a4's start until it has
#             applied what the leader had applied at that start, and the
#             snapshots it installed
#   rejoin    64 clients write through a1 and a2 throughout; after 10 s
#             the follower a4 is SIGKILLed and restarted 10 s later; the
#             time from its restart to catching up (its applied index
#             reaching the leader's, polled every 0.5 s) and the cluster's
#             write rate (the leader's applied index, per second): the
#             median before the kill, the lowest one-second rate while a4
#             was away or catching up, the seconds in that time below
#             half the median before, and the median after
#
# Environment: BIG_LIMIT (seconds a stage may take, default 300),
# BIG_SAVE=DIR (copy the loaded, stopped nodes there; it must not exist),
# BIG_FROM=DIR (skip the load: start from copies of a BIG_SAVE directory,
# to measure another build on the same state; a copy holds each node's
# newest snapshot only, the one a start restores: 6.6 GB at 5M records
# instead of 12.6), BIG_ONE_SERVES="BIN1 BIN2 ..." (run restart-one once
# with each build in turn, e.g. old and new alternating; each line names
# its build), BIG_UNTIL=restart (stop after restart-one), BIG_LOG_LEVEL
# (the nodes' --log-level, default warn; info logs each restore's
# breakdown), BIG_KEEP=DIR (keep the
# work directory there at the end; it must not exist), ARBITER_SERVE
# (serve with another build), BIG_GOMEMLIMIT (GOMEMLIMIT of the nodes
# only; default unset. Without it a node loading at full speed holds
# about three times its live heap, the --gc-percent 200 default: 5 GB at
# 2.3M records. 4800MiB keeps 5M records within 1 KB each).
# Uses ports 27001-27003 and 28001-28003, as bench/compare.sh does.
set -euo pipefail
records=${1:-5000000}
value=${2:-256}
limit=${BIG_LIMIT:-300}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/arbiter-big-XXXXXX)
pids=()
load_pid=
stop_all() {
  local sig=${1:-TERM} p
  [ -n "$load_pid" ] && kill "$load_pid" 2>/dev/null || true
  for p in "${pids[@]}"; do kill "-$sig" "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
  load_pid=
}
cleanup() {
  stop_all KILL
  if [ -n "${BIG_KEEP:-}" ]; then mv "$work" "$BIG_KEEP"; else rm -rf "$work"; fi
}
trap cleanup EXIT
(cd "$root" && go build -o "$work/arbiter" ./cmd/arbiter)
A=$work/arbiter
S=${ARBITER_SERVE:-$A}
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"

now_ms() { echo $(($(date +%s%N) / 1000000)); }
# field URL NAME: a number from the node's /v1/cluster/status.
field() { curl -sf --max-time 2 "$1/v1/cluster/status" | grep -o "\"$2\": *[0-9]*" | awk 'NR == 1' | grep -o '[0-9]*$'; }
# metric URL NAME: a sample's value from the node's /metrics.
# (awk reads to the end: an early exit would fail curl's write, and pipefail the script.)
metric() { curl -sf --max-time 5 "$1/metrics" | awk -v n="$2" '$1 == n && !seen { printf "%.0f\n", $2; seen = 1 }'; }
metricf() { curl -sf --max-time 5 "$1/metrics" | awk -v n="$2" '$1 == n && !seen { print $2; seen = 1 }'; }
# (status gives host:port; a scheme is added for comparisons and --addr).
leader_url() { echo "http://$(curl -sf --max-time 2 http://127.0.0.1:28001/v1/cluster/status | grep -o '"leader_api_addr": *"[^"]*"' | cut -d'"' -f4 | sed 's,^http://,,')"; }
# serve ID N [flags...]: node ID on ports 2700N/2800N, data in $work/ID.
serve() {
  local id=$1 n=$2
  shift 2
  GOMEMLIMIT=${BIG_GOMEMLIMIT:-${GOMEMLIMIT:-}} "$S" serve --id "$id" --data-dir "$work/$id" --raft-addr "127.0.0.1:2700$n" --http-addr "127.0.0.1:2800$n" \
    --log-level "${BIG_LOG_LEVEL:-warn}" "$@" >>"$work/$id.log" 2>&1 &
  pids[n - 1]=$!
}
# ready_ms URL START_MS: milliseconds from START_MS until URL/readyz answers 200.
ready_ms() {
  local deadline=$(($(now_ms) + limit * 1000))
  until curl -sf --max-time 1 "$1/readyz" >/dev/null 2>&1; do
    [ "$(now_ms)" -lt "$deadline" ] || { echo "never ready: $1" >&2; return 1; }
    sleep 0.05
  done
  echo $(($(now_ms) - $2))
}
# caught_ms URL START_MS: milliseconds from START_MS until URL's applied
# index reaches the leader's as read just before (polled every 0.5 s).
caught_ms() {
  local url=$1 began=$2 leader target mine
  leader=$(leader_url)
  target=$(field "$leader" applied_index)
  while [ $(($(now_ms) - began)) -lt $((limit * 1000)) ]; do
    sleep 0.5
    mine=$(field "$url" applied_index || echo 0)
    if [ "${mine:-0}" -ge "$target" ]; then echo $(($(now_ms) - began)); return 0; fi
    target=$(field "$leader" applied_index || echo "$target")
  done
  echo never
}
rss_line() {
  local u=$1 rss heap
  rss=$(metric "$u" process_resident_memory_bytes)
  heap=$(metric "$u" go_memstats_heap_inuse_bytes)
  echo "rss_mib=$((rss >> 20)) rss_per_record=$((rss / loaded)) heap_per_record=$((heap / loaded))"
}
addrs=http://127.0.0.1:28001,http://127.0.0.1:28002,http://127.0.0.1:28003

# start3 [flags...]: a1 (bootstrap), a2 and a3, until the three are voters.
start3() {
  refuse_taken http://127.0.0.1:28001 http://127.0.0.1:28002 http://127.0.0.1:28003
  serve a1 1 --bootstrap "$@"
  wait_http http://127.0.0.1:28001/readyz
  serve a2 2 --join http://127.0.0.1:28001 "$@"
  serve a3 3 --join http://127.0.0.1:28001 "$@"
  wait_http http://127.0.0.1:28002/readyz
  wait_http http://127.0.0.1:28003/readyz
  wait_voters http://127.0.0.1:28001
}

# load (or a copy of a loaded state)
# copy_node SRC DST: a stopped node's data directory with its newest
# snapshot only (raft orders them by term, index, then time; a start
# restores the newest, and the older one is only its fallback).
copy_node() {
  local src=$1 dst=$2 e newest
  mkdir "$dst"
  for e in "$src"/* "$src"/.[!.]*; do
    [ -e "$e" ] && [ "$(basename "$e")" != snapshots ] && cp -a "$e" "$dst/"
  done
  if [ -d "$src/snapshots" ]; then
    mkdir "$dst/snapshots"
    newest=$(find "$src/snapshots" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort -t- -k1,1n -k2,2n -k3,3n | tail -1)
    [ -z "$newest" ] || cp -a "$src/snapshots/$newest" "$dst/snapshots/"
  fi
}
if [ -n "${BIG_FROM:-}" ]; then
  for n in 1 2 3; do copy_node "$BIG_FROM/a$n" "$work/a$n"; done
  loaded=$(cat "$BIG_FROM/records")
  echo "load records=$loaded from=$BIG_FROM"
else
  start3 --unsafe-no-fsync
  loaded=0 run=0 began=$(now_ms)
  while [ "$loaded" -lt "$records" ]; do
    run=$((run + 1))
    out=$("$A" bench --addr "$addrs" --op create --value-bytes "$value" --clients 64 \
      --duration 30s --warmup 0s --prefix "load-$run" -o json)
    ops=$(echo "$out" | grep -o '"ops": *[0-9]*' | awk 'NR == 1' | grep -o '[0-9]*$')
    loaded=$((loaded + ops))
  done
  echo "load records=$loaded value_bytes=$value seconds=$((($(now_ms) - began) / 1000))"
  stop_all TERM
  if [ -n "${BIG_SAVE:-}" ]; then
    mkdir "$BIG_SAVE"
    for n in 1 2 3; do cp -a "$work/a$n" "$BIG_SAVE/a$n"; done
    echo "$loaded" >"$BIG_SAVE/records"
  fi
fi

# restart: all three at once, as after a power cut's reboot
t0=$(now_ms)
serve a1 1; serve a2 2; serve a3 3
for n in 1 2 3; do
  ms=$(ready_ms "http://127.0.0.1:2800$n" "$t0")
  echo "restart node=a$n ready_ms=$ms"
done
sleep 10
for n in 1 2 3; do echo "restart node=a$n $(rss_line "http://127.0.0.1:2800$n")"; done
# one follower alone, the others serving: a rolling restart's step,
# once with each build of BIG_ONE_SERVES
for one in ${BIG_ONE_SERVES:-$S}; do
  f=2
  [ "$(leader_url)" != http://127.0.0.1:28002 ] || f=3
  kill -TERM "${pids[f - 1]}"; wait "${pids[f - 1]}" 2>/dev/null || true
  t0=$(now_ms)
  S=$one serve "a$f" "$f"
  line="restart-one node=a$f ready_ms=$(ready_ms "http://127.0.0.1:2800$f" "$t0")"
  [ -z "${BIG_ONE_SERVES:-}" ] || line="$line serve=$one load=$(cut -d' ' -f1 /proc/loadavg)"
  echo "$line"
  [ -z "${BIG_ONE_SERVES:-}" ] || sleep 10 # the restarted node settles (its collector, the disk)
done
[ "${BIG_UNTIL:-}" != restart ] || exit 0

# snapshot
leader=$(leader_url)
c0=$(metric "$leader" arbiter_snapshot_persist_duration_seconds_count)
s0=$(metricf "$leader" arbiter_snapshot_persist_duration_seconds_sum)
t0=$(now_ms)
"$A" snapshot save "$work/backup.snap" --addr "$leader" >/dev/null
save_ms=$(($(now_ms) - t0))
c1=$(metric "$leader" arbiter_snapshot_persist_duration_seconds_count)
s1=$(metricf "$leader" arbiter_snapshot_persist_duration_seconds_sum)
echo "snapshot save_ms=$save_ms backup_bytes=$(stat -c %s "$work/backup.snap") raft_snapshot_bytes=$(field "$leader" last_snapshot_bytes)" \
  "raft_persists=$((c1 - c0)) raft_persist_s=$(awk -v a="$s0" -v b="$s1" 'BEGIN { printf "%.2f", b - a }')"
rm -f "$work/backup.snap"

# install: a new follower a4 in a3's place
[ "$leader" != http://127.0.0.1:28003 ] || { "$A" member transfer-leader --addr "$leader" --to a1 >/dev/null; sleep 2; leader=$(leader_url); }
"$A" member remove a3 --addr "$leader" >/dev/null
kill -TERM "${pids[2]}"; wait "${pids[2]}" 2>/dev/null || true
rm -rf "$work/a3"
t0=$(now_ms)
serve a4 3 --join "$leader"
ms=$(caught_ms http://127.0.0.1:28003 "$t0")
echo "install node=a4 caught_up_ms=$ms restores=$(field http://127.0.0.1:28003 snapshot_restores || echo '?')" \
  "snapshot_bytes=$(field "$leader" last_snapshot_bytes)"
wait_voters "$leader"

# rejoin: a4 SIGKILLed under 64 clients, restarted 10 s later
"$A" bench --addr http://127.0.0.1:28001,http://127.0.0.1:28002 --op create --value-bytes "$value" --clients 64 \
  --duration "$((limit + 40))s" --warmup 0s --prefix live -o json >"$work/live.json" 2>"$work/live.err" &
load_pid=$!
rates=$work/rates
: >"$rates"
( prev=$(field "$leader" applied_index); while sleep 1; do cur=$(field "$leader" applied_index || echo "$prev"); echo "$(now_ms) $((cur - prev))" >>"$rates"; prev=$cur; done ) &
sampler=$!
sleep 10
killed=$(now_ms)
kill -KILL "${pids[2]}"; wait "${pids[2]}" 2>/dev/null || true
sleep 10
t0=$(now_ms)
serve a4 3
ms=$(caught_ms http://127.0.0.1:28003 "$t0")
caught=$(now_ms)
sleep 10
kill "$sampler" 2>/dev/null || true
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR ? a[int((NR + 1) / 2)] : 0) }'; }
before=$(awk -v k="$killed" '$1 < k { print $2 }' "$rates" | median)
during=$(awk -v k="$killed" -v c="$caught" '$1 >= k && $1 <= c { print $2 }' "$rates" | sort -n | awk 'NR == 1')
after=$(awk -v c="$caught" '$1 > c { print $2 }' "$rates" | median)
slow=$(awk -v k="$killed" -v c="$caught" -v b="$before" '$1 >= k && $1 <= c && $2 < b / 2 { n++ } END { print n + 0 }' "$rates")
echo "rejoin node=a4 caught_up_ms=$ms restores=$(field http://127.0.0.1:28003 snapshot_restores || echo '?')" \
  "writes_per_s_before=$before lowest_while_away=${during:-?} seconds_below_half=$slow after=$after"
