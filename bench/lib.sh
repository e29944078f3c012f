# Shared by bench/compare.sh and bench/cpuab.sh (source it; it sets no
# options of its own): a 3-node arbiter cluster on 127.0.0.1 and the CPU
# its processes spend. bench/ops.sh and bench/memory.sh use its
# refuse_taken, cpu_ticks, snapshots and gc_cycles. The caller keeps the PIDs it starts in the array
# pids and stops them.

# wait_http URL: until URL answers 2xx, up to 30 s.
wait_http() {
  for _ in $(seq 1 300); do curl -sf "$1" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "timed out waiting for $1" >&2; return 1
}

# refuse_taken URL...: fails if anything already answers at one of the
# URLs (a node left running by an earlier run): the new node could not
# bind its port, and the old one would answer /readyz in its place.
refuse_taken() {
  local u
  for u in "$@"; do
    if curl -s -o /dev/null --max-time 1 "$u/readyz"; then
      echo "something already answers at $u: stop it first (a node of an earlier run left running?)" >&2
      return 1
    fi
  done
}

# wait_voters URL: until the joiners are voters (they join as non-voters).
wait_voters() {
  for _ in $(seq 1 200); do
    curl -sf "$1/v1/cluster/status" | grep -q '"voter":false' || return 0
    sleep 0.1
  done
  echo "timed out waiting for three voters at $1" >&2; return 1
}

# start_arbiter_cluster BINARY DIR [serve flags...]: nodes a1 (bootstrap),
# a2 and a3 with raft on 127.0.0.1:2700N and the API on 127.0.0.1:2800N,
# data and logs in DIR; appends their PIDs to pids and returns once the
# three are voters. A caller that sets port_shift (a shell variable, not
# the environment) moves all six ports up by that much, to run beside a
# cluster on the usual ones (bench/cpuab.sh's CPUAB_PORT_SHIFT).
start_arbiter_cluster() {
  local bin=$1 dir=$2 i r=$((27000 + ${port_shift:-0})) h=$((28000 + ${port_shift:-0}))
  shift 2
  # Explicit returns: callers run this inside $(...), where set -e is off.
  refuse_taken "http://127.0.0.1:$((h + 1))" "http://127.0.0.1:$((h + 2))" "http://127.0.0.1:$((h + 3))" || return 1
  "$bin" serve --id a1 --data-dir "$dir/arb1" --raft-addr "127.0.0.1:$((r + 1))" --http-addr "127.0.0.1:$((h + 1))" --bootstrap --log-level warn "$@" >"$dir/arb1.log" 2>&1 &
  pids+=($!)
  wait_http "http://127.0.0.1:$((h + 1))/readyz" || return 1
  for i in 2 3; do
    "$bin" serve --id "a$i" --data-dir "$dir/arb$i" --raft-addr "127.0.0.1:$((r + i))" --http-addr "127.0.0.1:$((h + i))" \
      --join "http://127.0.0.1:$((h + 1))" --log-level warn "$@" >"$dir/arb$i.log" 2>&1 &
    pids+=($!)
  done
  for i in 2 3; do wait_http "http://127.0.0.1:$((h + i))/readyz" || return 1; done
  wait_voters "http://127.0.0.1:$((h + 1))"
}

# cpu_ticks PID...: user plus system CPU time of the processes, in clock
# ticks (fields 14 and 15 of /proc/PID/stat; the names here hold no spaces).
cpu_ticks() {
  local t=0 f p
  for p in "$@"; do
    read -r -a f <"/proc/$p/stat"
    t=$((t + f[13] + f[14]))
  done
  echo "$t"
}

# mallocs URL...: the heap allocations the nodes at URL... have made since
# they started, summed (go_memstats_mallocs_total of each /metrics). Unlike
# CPU time, the count per operation hardly moves with the machine's load.
mallocs() {
  local u
  for u in "$@"; do curl -sf "$u/metrics"; done | awk '/^go_memstats_mallocs_total/ { n += $2 } END { printf "%.0f\n", n }'
}

# snapshots URL...: the raft snapshots the nodes at URL... have written
# or loaded (a lagging follower's install) since they started, summed
# (arbiter_snapshot_persist_duration_seconds_count and
# arbiter_snapshot_restore_duration_seconds_count of each /metrics): a
# window in which one ran paid for the whole state, whatever its load.
snapshots() {
  local u
  for u in "$@"; do curl -sf "$u/metrics"; done |
    awk '/^arbiter_snapshot_(persist|restore)_duration_seconds_count/ { n += $2 } END { printf "%.0f\n", n }'
}

# gc_cycles URL...: the garbage collections the nodes at URL... have
# finished since they started, summed (go_gc_duration_seconds_count): a
# collection marks the whole live heap, which a long-lived bench cluster
# makes large.
gc_cycles() {
  local u
  for u in "$@"; do curl -sf "$u/metrics"; done | awk '/^go_gc_duration_seconds_count/ { n += $2 } END { printf "%.0f\n", n }'
}

