package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/nodes"
)

// newestSnapshotOnDisk is the size of the state file of the newest
// snapshot in node i's data directory (by term, then index, as raft
// orders them), read from the files themselves; 0 for none.
func newestSnapshotOnDisk(t *testing.T, c *clustertest.Cluster, i int) int64 {
	t.Helper()
	dir := filepath.Join(c.DataDir(i), "snapshots")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("n%d's snapshots: %v", i+1, err)
	}
	var term, index uint64
	var size int64
	for _, e := range entries {
		if !e.IsDir() || strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, e.Name(), "meta.json"))
		if err != nil {
			continue // being written or reaped
		}
		var meta struct{ Term, Index uint64 }
		if err := json.Unmarshal(raw, &meta); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		info, err := os.Stat(filepath.Join(dir, e.Name(), "state.bin"))
		if err != nil {
			continue
		}
		if meta.Term > term || (meta.Term == term && meta.Index > index) {
			term, index, size = meta.Term, meta.Index, info.Size()
		}
	}
	return size
}

// The snapshot size a node exports (arbiter_snapshot_last_size_bytes,
// which `endpoint status` shows) is that of the newest snapshot on its
// disk however it got there: installed from the leader, found at a
// restart, or stored by a restore of a backup; not only one it wrote
// itself since it started.
func TestSnapshotSizeIsTheNewestOnDisk(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Configure: func(i int, cfg *cluster.Config) {
		steadyTimings(i, cfg)
		cfg.SnapshotThreshold = 32
		cfg.TrailingLogs = 8
		cfg.SnapshotInterval = time.Hour // only the snapshots the test asks for
	}})
	ctx := context.Background()
	leader := c.WaitLeader(10 * time.Second)
	lagging := (leader + 1) % 3
	c.Stop(lagging)
	for k := range 100 {
		if _, err := nodesOf(c, leader).CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: fmt.Sprintf("s-%03d", k), Labels: []string{"some", "labels"}}); err != nil {
			t.Fatalf("write %d: %v", k, err)
		}
	}
	c.Snapshot(leader)

	// wantSize polls node i's gauge until it is the size on its disk.
	wantSize := func(i int, when string) {
		t.Helper()
		var got float64
		var disk int64
		ok := c.Eventually(10*time.Second, func() bool {
			disk = newestSnapshotOnDisk(t, c, i)
			got, _ = sample(string(apiGet(t, apiBase(c, i)+"/metrics").body), "arbiter_snapshot_last_size_bytes")
			return disk > 0 && got == float64(disk)
		})
		if !ok {
			t.Fatalf("%s: n%d exports arbiter_snapshot_last_size_bytes %v; the newest snapshot on its disk is %d bytes", when, i+1, got, disk)
		}
	}

	c.Restart(lagging)
	c.WaitConverged(20 * time.Second)
	if c.RaftStat(lagging, "last_snapshot_index") == 0 {
		t.Fatal("the lagging follower caught up without a snapshot; the test did not test installation")
	}
	wantSize(lagging, "after installing the leader's snapshot")

	c.Stop(leader)
	c.Restart(leader)
	wantSize(leader, "after a restart on a data directory holding a snapshot")

	leader = c.WaitLeader(10 * time.Second)
	var backup bytes.Buffer
	if err := c.Node(leader).Backup(ctx, &backup); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Node(leader).Restore(ctx, bytes.NewReader(backup.Bytes())); err != nil {
		t.Fatalf("restore: %v", err)
	}
	c.WaitConverged(20 * time.Second)
	for i := range 3 {
		wantSize(i, "after a restore")
	}
}
