#!/usr/bin/env bash
# Compare operations on the same cluster, interleaved round by round so
# that both see the same machine noise:
#
#   bench/ops.sh protocol [rounds] [duration] [clients]
#       raw create-if-absent vs the concept reservation protocol (reserve)
#       on one 3-node loopback cluster, open mode
#   bench/ops.sh lease [rounds] [duration] [clients]
#       capacity acquire-then-release with 1 cell and with 16 cells per
#       acquire on one 3-node loopback cluster
#   bench/ops.sh workitem [rounds] [duration] [clients]
#       work-item admission on one 3-node loopback cluster: SubmitWorkItem
#       with 1 client and with [clients] clients, and SubmitWorkItems of
#       128 items with 1 client (the batch's latency), next to raw
#       create-if-absent with [clients] clients as the round's baseline
#   bench/ops.sh auth [rounds] [duration] [clients]
#       create-if-absent on a 3-node cluster in open mode vs one that
#       authenticates every call with a bearer token (principals + peer
#       token between nodes), both on loopback
#   bench/ops.sh domains [rounds] [duration] [clients]
#       every domain's commands, each on its own (arbiter bench --op
#       submit, claim, complete, hold-reserve, hold-release, task,
#       acquire, release, channel-submit, publish), next to raw
#       create-if-absent, with 1 and with [clients] clients, on one 3-node
#       loopback cluster whose nodes write projection files. Each run
#       prints what bench prints and the CPU the three servers spent per
#       operation over the measured window (after the op's unmeasured
#       setup and a 2 s warmup); at the end, the medians of the rounds and
#       each op's ops/s against create's with as many clients. Each op
#       (create too) runs on a fresh cluster of its own, started for it
#       and removed after it: what one op's setup makes (bench's --pool,
#       sized by a calibration run) neither slows the next one nor adds
#       to its memory (on one cluster for every op, the nodes reached
#       8 GB each in a round and one was killed for memory); the servers'
#       RSS after each op is printed. duration is whole seconds. OPS_DOMAINS names
#       the ops to run after create (default: all of them), to measure
#       some of them again: OPS_DOMAINS="task publish" bench/ops.sh domains
set -euo pipefail
mode=${1:?protocol, lease, workitem, auth or domains}
rounds=${2:-3}
duration=${3:-10s}
clients=${4:-64}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/arbiter-ops-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
(cd "$root" && go build -o "$work/arbiter" ./cmd/arbiter)
A=$work/arbiter

# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh" # refuse_taken, cpu_ticks, snapshots, gc_cycles; its wait_http is replaced below

wait_http() { # url [token]
  for _ in $(seq 1 200); do curl -sf ${2:+-H "Authorization: Bearer $2"} "$1" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "timed out waiting for $1" >&2; return 1
}

start_cluster() { # name raft-base http-base [extra flags...; "{node}" in one becomes the node's name]
  local name=$1 raft=$2 http=$3; shift 3
  refuse_taken "http://127.0.0.1:${http}1" "http://127.0.0.1:${http}2" "http://127.0.0.1:${http}3"
  "$A" serve --id "${name}1" --data-dir "$work/${name}1" --raft-addr "127.0.0.1:${raft}1" --http-addr "127.0.0.1:${http}1" --bootstrap --log-level warn "${@//\{node\}/${name}1}" >"$work/${name}1.log" 2>&1 &
  pids+=($!)
  wait_http "http://127.0.0.1:${http}1/readyz"
  for i in 2 3; do
    "$A" serve --id "${name}$i" --data-dir "$work/${name}$i" --raft-addr "127.0.0.1:${raft}$i" --http-addr "127.0.0.1:${http}$i" \
      --join "http://127.0.0.1:${http}1" --log-level warn "${@//\{node\}/${name}$i}" >"$work/${name}$i.log" 2>&1 &
    pids+=($!)
  done
  for i in 2 3; do wait_http "http://127.0.0.1:${http}$i/readyz"; done
  # The joiners are non-voters until they have caught up: wait for them to
  # vote (the status route needs a token once principals are on).
  for _ in $(seq 1 200); do
    st=$(curl -sf ${tok:+-H "Authorization: Bearer $tok"} "http://127.0.0.1:${http}1/v1/cluster/status" || true)
    if [ -n "$st" ] && ! echo "$st" | grep -q '"voter":false'; then return 0; fi
    sleep 0.1
  done
  echo "timed out waiting for three voters at :${http}1" >&2; return 1
}

addrs() { echo "http://127.0.0.1:${1}1,http://127.0.0.1:${1}2,http://127.0.0.1:${1}3"; }

case $mode in
protocol)
  start_cluster p 3700 3800
  for r in $(seq 1 "$rounds"); do
    echo "== round $r: create"
    "$A" bench --addr "$(addrs 3800)" --op create --clients "$clients" --duration "$duration" | tail -n +2
    echo "== round $r: reserve"
    "$A" bench --addr "$(addrs 3800)" --op reserve --clients "$clients" --duration "$duration" | tail -n +2
  done
  ;;
lease)
  start_cluster l 3700 3800
  for r in $(seq 1 "$rounds"); do
    for cells in 1 16; do
      echo "== round $r: lease, $cells cell(s)"
      "$A" bench --addr "$(addrs 3800)" --op lease --cells "$cells" --clients "$clients" --duration "$duration" | tail -n +2
    done
  done
  ;;
workitem)
  start_cluster w 3700 3800
  for r in $(seq 1 "$rounds"); do
    echo "== round $r: create (baseline), $clients clients"
    "$A" bench --addr "$(addrs 3800)" --op create --clients "$clients" --duration "$duration" | tail -n +2
    for c in 1 "$clients"; do
      echo "== round $r: submit, $c client(s)"
      "$A" bench --addr "$(addrs 3800)" --op submit --clients "$c" --duration "$duration" | tail -n +2
    done
    echo "== round $r: batch of 128, 1 client"
    "$A" bench --addr "$(addrs 3800)" --op batch --batch 128 --clients 1 --duration "$duration" | tail -n +2
  done
  ;;
auth)
  token=$("$A" principal new-token)
  tok=$(echo "$token" | awk '/^token:/{print $2}')
  hash=$(echo "$token" | awk '/token_sha256/{print $2}')
  echo "[{\"id\":\"bench\",\"tenants\":[\"*\"],\"roles\":[\"admin\"],\"token_sha256\":[\"$hash\"]}]" >"$work/principals.json"
  head -c 32 /dev/urandom | base64 >"$work/peer.token"
  start_cluster o 3700 3800
  start_cluster s 4700 4800 --principals "$work/principals.json" --peer-token-file "$work/peer.token"
  for r in $(seq 1 "$rounds"); do
    echo "== round $r: open"
    "$A" bench --addr "$(addrs 3800)" --op create --clients "$clients" --duration "$duration" | tail -n +2
    echo "== round $r: bearer token"
    "$A" bench --addr "$(addrs 4800)" --op create --clients "$clients" --duration "$duration" --token "$tok" | tail -n +2
  done
  ;;
domains)
  case $duration in
  *[0-9]s) ;;
  *) echo "duration must be whole seconds, such as 10s" >&2; exit 2 ;;
  esac
  warmup_s=2
  duration_s=${duration%s}
  : >"$work/results"
  servers=()
  # cluster_up and cluster_down: a fresh 3-node cluster for each op.
  cluster_up() {
    rm -rf "$work/d1" "$work/d2" "$work/d3" "$work/proj"
    mkdir -p "$work/proj/d1" "$work/proj/d2" "$work/proj/d3"
    pids=()
    start_cluster d 3700 3800 --projection-root "$work/proj/{node}"
    servers=("${pids[@]}")
  }
  cluster_down() { # SIGTERM, then SIGKILL whatever has not exited after 30 s
    local p i
    for p in "${servers[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${servers[@]}"; do
      for i in $(seq 1 300); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$p" 2>/dev/null || true
      wait "$p" 2>/dev/null || true
    done
    servers=() pids=()
  }
  # measure OP CLIENTS ROUND: one bench run; the servers' CPU is read over
  # its measured window, which starts a warmup after bench announces it
  # (after the op's setup, which is not measured).
  # wait_quiet: until the servers spend less than a quarter of a core
  # (a snapshot of the state an earlier run left, its followers catching
  # up), at most 60 s, so that one run's aftermath does not land in the
  # next one's window.
  wait_quiet() {
    local a b hz
    hz=$(getconf CLK_TCK)
    for _ in $(seq 1 60); do
      a=$(cpu_ticks "${servers[@]}")
      sleep 1
      b=$(cpu_ticks "${servers[@]}")
      [ $((b - a)) -lt $((hz / 4)) ] && return 0
    done
    echo "  (the servers were still busy after 60 s)"
  }
  measure() {
    local op=$1 c=$2 round=$3 pool=${4:-0} t0 t1 s0 s1 g0 g1 line nodes drained
    IFS=, read -r -a nodes <<<"$(addrs 3800)"
    wait_quiet
    "$A" bench --addr "$(addrs 3800)" --op "$op" --clients "$c" --duration "$duration" --warmup "${warmup_s}s" \
      --prefix "ops-$round-$c-$op-$pool" --pool "$pool" --announce >"$work/out" 2>"$work/err" &
    local load=$!
    # The setup is bounded by bench's own (it ends bench when it fails).
    until grep -q '^bench: measuring' "$work/err"; do
      kill -0 "$load" 2>/dev/null || break
      sleep 0.05
    done
    sleep "$warmup_s"
    t0=$(cpu_ticks "${servers[@]}")
    s0=$(snapshots "${nodes[@]}")
    g0=$(gc_cycles "${nodes[@]}")
    sleep "$duration_s"
    t1=$(cpu_ticks "${servers[@]}")
    s1=$(snapshots "${nodes[@]}")
    g1=$(gc_cycles "${nodes[@]}")
    if ! wait "$load"; then
      cat "$work/out" "$work/err" >&2
      return 1
    fi
    grep -v '^bench: measuring' "$work/err" >&2 || true
    tail -n +2 "$work/out"
    # A pool the calibration sized too small (a stall in it) drained: once
    # more, with twice that pool.
    drained=$(sed -n 's/.*first error: the \([0-9]*\) entries the setup made ran out.*/\1/p' "$work/out")
    if [ -n "$drained" ] && [ "$pool" = 0 ]; then
      echo "  (the pool drained: again with --pool $((2 * drained)))"
      measure "$op" "$c" "$round" $((2 * drained))
      return
    fi
    line=$(grep 'ops/s=' "$work/out" | tail -1)
    awk -v line="$line" -v op="$op" -v round="$round" -v results="$work/results" -v snaps=$((s1 - s0)) -v gcs=$((g1 - g0)) -v ticks=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" -v secs="$duration_s" '
      function ms(v) { if (v ~ /µs$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
      BEGIN {
        n = split(line, f, /[ =]+/)
        for (i = 1; i < n; i++) v[f[i]] = f[i + 1]
        cpu = v["ops"] > 0 ? ticks / hz / v["ops"] * 1e6 : 0
        printf "  server CPU: %.0f us per operation (%.1f s over the window, three members; %d snapshot(s) and %d garbage collection(s) in it)\n", cpu, ticks / hz, snaps, gcs
        printf "%s %s %s %s %.3f %.3f %.0f %s %d\n", round, op, v["clients"], v["ops/s"], ms(v["p50"]), ms(v["p99"]), cpu, v["errors"], snaps >> results
      }'
  }
  for r in $(seq 1 "$rounds"); do
    for op in create ${OPS_DOMAINS:-submit claim complete hold-reserve hold-release task acquire release channel-submit publish}; do
      cluster_up
      for c in 1 "$clients"; do
        echo "== round $r: $op, $c client(s)"
        measure "$op" "$c" "$r"
      done
      echo "  the servers' RSS after $op (MiB): $(for p in "${servers[@]}"; do awk '/^VmRSS/ { printf "%d ", $2 / 1024 }' "/proc/$p/status"; done)"
      cluster_down
    done
  done
  echo "== medians of $rounds round(s); vs create: the op's ops/s over create's with as many clients"
  awk '
    function median(list,   a, n, i, j, t) {
      n = split(list, a, " ")
      for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    {
      k = $2 SUBSEP $3
      if (!(k in seen)) { seen[k] = 1; order[++m] = k }
      ops[k] = ops[k] " " $4; p50[k] = p50[k] " " $5; p99[k] = p99[k] " " $6; cpu[k] = cpu[k] " " $7; errs[k] += $8; snaps[k] += $9
    }
    END {
      printf "| op | clients | ops/s | p50 ms | p99 ms | server CPU us/op | vs create | errors | snapshots in the windows |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
      for (i = 1; i <= m; i++) {
        split(order[i], kc, SUBSEP)
        base = median(ops["create" SUBSEP kc[2]])
        printf "| %s | %s | %.0f | %.2f | %.2f | %.0f | %.2f | %d | %d |\n", kc[1], kc[2], median(ops[order[i]]), median(p50[order[i]]),
          median(p99[order[i]]), median(cpu[order[i]]), (base > 0 ? median(ops[order[i]]) / base : 0), errs[order[i]], snaps[order[i]]
      }
    }' "$work/results"
  ;;
*)
  echo "mode must be protocol, lease, workitem, auth or domains" >&2; exit 2 ;;
esac
