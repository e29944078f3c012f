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
set -euo pipefail
mode=${1:?protocol, lease, workitem or auth}
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
source "$root/bench/lib.sh" # refuse_taken; its wait_http is replaced below

wait_http() { # url [token]
  for _ in $(seq 1 200); do curl -sf ${2:+-H "Authorization: Bearer $2"} "$1" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "timed out waiting for $1" >&2; return 1
}

start_cluster() { # name raft-base http-base [extra flags...]
  local name=$1 raft=$2 http=$3; shift 3
  refuse_taken "http://127.0.0.1:${http}1" "http://127.0.0.1:${http}2" "http://127.0.0.1:${http}3"
  "$A" serve --id "${name}1" --data-dir "$work/${name}1" --raft-addr "127.0.0.1:${raft}1" --http-addr "127.0.0.1:${http}1" --bootstrap --log-level warn "$@" >"$work/${name}1.log" 2>&1 &
  pids+=($!)
  wait_http "http://127.0.0.1:${http}1/readyz"
  for i in 2 3; do
    "$A" serve --id "${name}$i" --data-dir "$work/${name}$i" --raft-addr "127.0.0.1:${raft}$i" --http-addr "127.0.0.1:${http}$i" \
      --join "http://127.0.0.1:${http}1" --log-level warn "$@" >"$work/${name}$i.log" 2>&1 &
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
*)
  echo "mode must be protocol, lease, workitem or auth" >&2; exit 2 ;;
esac
