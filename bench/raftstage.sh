#!/usr/bin/env bash
# Builds arbiter with hashicorp/raft v1.7.3 patched so that the leader
# sends new entries to its followers while it writes and fsyncs them
# (bench/raftstage.patch: dispatchLogs stages the entries in the log
# cache, where the replicators read them, before StoreLogs; the leader
# still counts itself only once StoreLogs has returned). A prototype to
# measure what the raft thesis's order (10.2.1) buys against today's,
# in which one client waits for the leader's fsync and then a
# follower's (docs/commit-path.md; issue 42). The project takes raft
# unchanged: nothing here is built by default, and the patch has passed
# the fault harness once (one run of each fault test, 2026-12-05), not
# the 200 seeds of each that anything landing needs.
#
#   bench/raftstage.sh /tmp/arb-staged
#   go build -o /tmp/arb-base ./cmd/arbiter
#   then compare the two builds, e.g. bench/leaderfsync.sh's clusters
#   with each binary in turn, or bench/cpuab.sh /tmp/arb-base /tmp/arb-staged 5 1 8
set -euo pipefail
out=$1
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d /tmp/arbiter-raftstage-XXXXXX)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
git clone -q "$root" "$tmp/arbiter"
cd "$tmp/arbiter"
go mod download github.com/hashicorp/raft@v1.7.3
cp -r "$(go env GOMODCACHE)/github.com/hashicorp/raft@v1.7.3" raftstaged
chmod -R u+w raftstaged
(cd raftstaged && patch -s -p1 <"$root/bench/raftstage.patch")
go mod edit -replace github.com/hashicorp/raft=./raftstaged
# raft reaches the log cache through cluster's truncation watch: forward.
cat >>cluster/truncation_watch.go <<'GO'

func (w *truncationWatch) StageLogs(logs []*raft.Log) {
	if s, ok := w.LogStore.(interface{ StageLogs([]*raft.Log) }); ok {
		s.StageLogs(logs)
	}
}

func (w *truncationWatch) UnstageLogs(logs []*raft.Log) {
	if s, ok := w.LogStore.(interface{ UnstageLogs([]*raft.Log) }); ok {
		s.UnstageLogs(logs)
	}
}
GO
go build -o "$out" ./cmd/arbiter
echo "built $out with the staged dispatch"
