package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/internal/nodehooks"
	"github.com/arbiterhq/arbiter/nodes"
)

// The catch-up loop of issue 39, at small scale: a follower restarts
// under full write load and must install a snapshot, while the leader
// snapshots and compacts far more often than the follower can move and
// restore a snapshot (a snapshot every 32 entries, 16 trailing entries,
// some 8 MB of state, every restore made a second slower by a test hook
// so that an idle machine restores as slowly as a loaded one). With the
// trailing logs fixed, the follower asks
// for the entries after each snapshot it installs, finds them compacted,
// and installs another, for ever (the control). With the trailing logs
// sized from the write rate and the snapshot's size (catchup.go), it
// installs once or twice and then follows the log.
func TestFollowerCatchesUpUnderWriteLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("writes some 8 MB of state under load; skipped with -short")
	}
	t.Run("sized", func(t *testing.T) {
		converged, restores := catchUpUnderLoad(t, 1_000_000, 2*time.Minute)
		if !converged {
			t.Fatalf("the follower did not catch up (%d snapshot restores)", restores)
		}
		t.Logf("caught up after %d snapshot restores", restores)
	})
	t.Run("control: fixed trailing logs", func(t *testing.T) {
		// The loop needs writes faster than a restore: a loaded machine
		// may slow the writers enough for the follower to slip through
		// once, so the control is tried twice before it fails.
		var converged bool
		var restores uint64
		for attempt := 1; attempt <= 2; attempt++ {
			if converged, restores = catchUpUnderLoad(t, 16, 2*time.Minute); !converged && restores >= 3 {
				t.Logf("looped: %d snapshot restores without catching up", restores)
				return
			}
			t.Logf("attempt %d: converged %v after %d restores", attempt, converged, restores)
		}
		t.Fatalf("with 16 trailing logs the follower converged %v after %d restores: the loop was not reproduced, so the test above proves nothing", converged, restores)
	})
}

// catchUpUnderLoad builds some 8 MB of state under continuous small
// writes with a follower stopped, waits until the leader's log no longer
// holds what the follower needs, restarts it, and reports whether it
// caught up within wait and how many snapshots it restored.
func catchUpUnderLoad(t *testing.T, maxTrailing uint64, wait time.Duration) (converged bool, restores uint64) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Configure: func(i int, cfg *cluster.Config) {
		cfg.SnapshotThreshold = 32
		cfg.SnapshotInterval = 20 * time.Millisecond
		cfg.TrailingLogs = 16
		cfg.MaxTrailingLogs = maxTrailing
		// Restores as slow as a large state's whatever the machine: on
		// an idle one an 8 MB restore outran the leader's compaction,
		// and the control's loop did not happen (a red CI, 2026-12-05).
		nodehooks.Edit(cfg, func(h *nodehooks.Hooks) { h.RestoreDelay = time.Second })
	}})
	leader := c.WaitLeader(10 * time.Second)
	follower := (leader + 1) % c.Size()
	c.Stop(follower)

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var big, small atomic.Int64
	write := func(id string, v json.RawMessage) error {
		n := c.Node(leader)
		if n == nil {
			return context.Canceled
		}
		_, err := nodes.On(n).CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: id, Properties: map[string]any{"v": v}})
		return err
	}
	large, _ := json.Marshal(strings.Repeat("x", 32<<10))
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() { // the state: 256 values of 32 KB, then small writes for ever
			defer wg.Done()
			for k := 0; ctx.Err() == nil; k++ {
				if big.Load() < 256 {
					if write(fmt.Sprintf("big%d-%d", w, k), large) == nil {
						big.Add(1)
					}
				} else if write(fmt.Sprintf("small%d-%d", w, k), json.RawMessage(`1`)) == nil {
					small.Add(1)
				}
			}
		}()
	}
	defer func() { stop(); wg.Wait() }()

	// The follower needs a snapshot: the leader's log starts past the
	// follower's last entry (trailing logs behind its newest snapshot).
	// With the sizing on, the leader has also raised its trailing logs
	// from the write rate it measured (it samples every 2 s).
	needsSnapshot := func() bool {
		snap := c.RaftStat(leader, "last_snapshot_index")
		return big.Load() >= 256 && small.Load() > 0 && snap > c.Node(leader).TrailingLogs()+100 &&
			(maxTrailing == 16 || c.Node(leader).TrailingLogs() > 64)
	}
	if !c.Eventually(90*time.Second, needsSnapshot) {
		t.Fatalf("the follower would not need a snapshot: %d large and %d small writes, snapshot at %d, %d trailing logs",
			big.Load(), small.Load(), c.RaftStat(leader, "last_snapshot_index"), c.Node(leader).TrailingLogs())
	}
	c.Restart(follower)

	// Caught up: a 2 s window with no new snapshot restore, in which the
	// follower applied entries from the log and ended within 5,000
	// entries of the leader. Looping: a third restore without that.
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) && restores < 3 {
		n := c.Node(follower)
		before, applied := n.Status().Storage.SnapshotRestores, n.Raft().AppliedIndex()
		time.Sleep(2 * time.Second)
		restores = n.Status().Storage.SnapshotRestores
		lag := int64(c.Node(leader).Raft().AppliedIndex()) - int64(n.Raft().AppliedIndex())
		t.Logf("follower: %d restores, applied %d -> %d, %d behind; leader keeps %d trailing logs, snapshot at %d",
			restores, applied, n.Raft().AppliedIndex(), lag, c.Node(leader).TrailingLogs(), c.RaftStat(leader, "last_snapshot_index"))
		if restores >= 1 && restores == before && n.Raft().AppliedIndex() > applied+50 && lag < 5000 {
			return true, restores
		}
	}
	return false, restores
}
