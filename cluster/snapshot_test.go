package cluster_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	logstore "github.com/arbiterhq/arbiter/log/store"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/nodes"
)

// A follower that was down while the leader compacted its log catches up
// by installing the leader's snapshot, then restarts from its own snapshot
// plus the log after it; every replica ends with the same state.
//
// It runs on each log store: raft-wal, which cannot hold a gap, must be
// emptied by raft when a snapshot is installed (Consul's known raft-wal
// trouble was a follower catching up after a long disconnect).
func TestLaggingFollowerInstallsSnapshot(t *testing.T) {
	for _, store := range []string{logstore.WAL, logstore.Bolt} {
		t.Run(store, func(t *testing.T) { laggingFollowerInstallsSnapshot(t, store) })
	}
}

func laggingFollowerInstallsSnapshot(t *testing.T, store string) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Configure: func(i int, cfg *cluster.Config) {
		cfg.SnapshotThreshold = 32
		cfg.TrailingLogs = 8
		cfg.LogStore = store
		cfg.WALSegmentBytes = 4 << 10 // small segments: the compaction reaches the missing entries
	}})
	ctx := context.Background()
	leader := c.WaitLeader(10 * time.Second)
	lagging := (leader + 1) % c.Size()
	c.Stop(lagging)

	const writes = 200
	nc := nodesOf(c, leader)
	for k := 0; k < writes; k++ {
		if _, err := nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: fmt.Sprintf("w-%03d", k), Labels: []string{"w"}}); err != nil {
			t.Fatalf("write %d: %v", k, err)
		}
	}
	if err := c.Node(leader).Raft().Snapshot().Error(); err != nil {
		t.Fatalf("leader snapshot: %v", err)
	}
	// With TrailingLogs 8, a snapshot this far ahead has compacted away
	// the entries the stopped follower is missing.
	if snap, _ := strconv.ParseUint(c.Node(leader).Raft().Stats()["last_snapshot_index"], 10, 64); snap < writes {
		t.Fatalf("leader's last snapshot is at index %d, want at least %d", snap, writes)
	}

	c.Restart(lagging)
	c.WaitConverged(20 * time.Second)
	installed := func() uint64 {
		v, _ := strconv.ParseUint(c.Node(lagging).Raft().Stats()["last_snapshot_index"], 10, 64)
		return v
	}
	if installed() == 0 {
		t.Fatal("the lagging follower caught up without a snapshot; the test did not test installation")
	}
	checkAll := func() {
		t.Helper()
		page, err := nodesOf(c, lagging).ByLabel(ctx, nodes.LabelQuery{Label: "w", Limit: 128}, fsm.Stale)
		if err != nil || len(page.Nodes) != 128 || page.NextCursor == "" {
			t.Fatalf("lagging follower's first page: %d nodes, cursor %q, %v", len(page.Nodes), page.NextCursor, err)
		}
		for k := 0; k < writes; k++ {
			if _, err := nodesOf(c, lagging).Get(ctx, fmt.Sprintf("w-%03d", k), fsm.Stale); err != nil {
				t.Fatalf("lagging follower lacks w-%03d: %v", k, err)
			}
		}
	}
	checkAll()

	// Restart from its own snapshot and the log after it.
	c.Stop(lagging)
	if _, err := nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "after"}); err != nil {
		t.Fatal(err)
	}
	c.Restart(lagging)
	c.WaitConverged(20 * time.Second)
	checkAll()
	if _, err := nodesOf(c, lagging).Get(ctx, "after", fsm.Stale); err != nil {
		t.Fatalf("write made while it was down: %v", err)
	}
}

// A graceful Shutdown snapshots a log tail of at least SnapshotThreshold
// entries, so the next start restores it rather than replaying it; a stop
// that is not graceful (Close, like a crash) leaves the tail to replay.
// Either way every write is there after the restart.
func TestGracefulShutdownSnapshotsTheLogTail(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 1, Configure: func(i int, cfg *cluster.Config) {
		cfg.SnapshotThreshold = 64
		cfg.SnapshotInterval = time.Hour // raft never snapshots on its own here
	}})
	ctx := context.Background()
	snapshotIndex := func() uint64 {
		v, _ := strconv.ParseUint(c.Node(0).Raft().Stats()["last_snapshot_index"], 10, 64)
		return v
	}
	write := func(from, to int) {
		t.Helper()
		c.WaitLeader(10 * time.Second)
		for k := from; k < to; k++ {
			if _, err := nodesOf(c, 0).CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: fmt.Sprintf("g-%03d", k)}); err != nil {
				t.Fatalf("write %d: %v", k, err)
			}
		}
	}
	readAll := func(to int) {
		t.Helper()
		c.WaitLeader(10 * time.Second)
		for k := 0; k < to; k++ {
			// Linearizable: a restarted node applies its log tail only
			// once it leads again, after WaitLeader may have returned.
			if _, err := nodesOf(c, 0).Get(ctx, fmt.Sprintf("g-%03d", k), fsm.Linearizable); err != nil {
				t.Fatalf("after the restart, g-%03d: %v", k, err)
			}
		}
	}

	write(0, 100)
	c.Stop(0) // Close: not graceful
	c.Restart(0)
	if got := snapshotIndex(); got != 0 {
		t.Fatalf("after a stop that was not graceful the node restored a snapshot at %d; want none (the control failed)", got)
	}
	readAll(100)

	write(100, 200)
	applied := c.Node(0).Raft().AppliedIndex()
	if err := c.Node(0).Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	c.Stop(0)
	c.Restart(0)
	if got := snapshotIndex(); got < applied {
		t.Fatalf("after a graceful shutdown at applied index %d the node restored a snapshot at %d; want one covering the whole log", applied, got)
	}
	readAll(200)
}
