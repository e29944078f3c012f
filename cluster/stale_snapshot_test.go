package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/internal/nodehooks"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/hashicorp/raft"
)

// staleSnapshot builds a 3-node cluster, takes the InstallSnapshot request
// the leader would have sent to a follower early on, lets the follower
// apply far past it and compact its log, and returns the request with its
// snapshot bytes, ready to be delivered late. configure adjusts every node.
func staleSnapshot(t *testing.T, configure func(*cluster.Config)) (c *clustertest.Cluster, leader, follower int, write func(string, int), req *raft.InstallSnapshotRequest, snap []byte, before uint64) {
	c = clustertest.New(t, clustertest.Options{Nodes: 3, Configure: func(_ int, cfg *cluster.Config) {
		cfg.TrailingLogs = 4
		cfg.SnapshotThreshold = 1 << 20 // snapshots only when the test asks
		cfg.SnapshotInterval = time.Hour
		if configure != nil {
			configure(cfg)
		}
	}})
	ctx := context.Background()
	leader = c.WaitLeader(10 * time.Second)
	follower = (leader + 1) % 3
	write = func(prefix string, n int) {
		t.Helper()
		for k := 0; k < n; k++ {
			if _, err := nodesOf(c, leader).CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: fmt.Sprintf("%s-%d", prefix, k)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("early", 10)

	// The snapshot the leader would have sent at this point.
	lr := c.Node(leader).Raft()
	var old bytes.Buffer
	if err := c.Node(leader).FSM().WriteSnapshot(&old); err != nil {
		t.Fatal(err)
	}
	info, err := c.Node(leader).FSM().InspectSnapshot(bytes.NewReader(old.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	term := lr.CurrentTerm()
	future := lr.GetConfiguration()
	if err := future.Error(); err != nil {
		t.Fatal(err)
	}
	configIndex, _ := strconv.ParseUint(lr.Stats()["latest_configuration_index"], 10, 64)

	// The follower moves on and compacts its log past that point.
	write("late", 40)
	if !c.Eventually(10*time.Second, func() bool { return c.Node(follower).Raft().AppliedIndex() >= lr.AppliedIndex() }) {
		t.Fatal("the follower did not catch up")
	}
	c.Snapshot(follower)
	before = c.Node(follower).Raft().AppliedIndex()
	if before <= info.Index+8 {
		t.Fatalf("the follower applied only to %d; the stale snapshot is at %d", before, info.Index)
	}
	req = &raft.InstallSnapshotRequest{
		RPCHeader:          raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(c.Node(leader).ID()), Addr: []byte(c.Node(leader).RaftAddr())},
		SnapshotVersion:    raft.SnapshotVersionMax,
		Term:               term,
		Leader:             []byte(c.Node(leader).RaftAddr()),
		LastLogIndex:       info.Index,
		LastLogTerm:        term,
		Configuration:      raft.EncodeConfiguration(future.Configuration()),
		ConfigurationIndex: configIndex,
		Size:               int64(old.Len()),
	}
	return c, leader, follower, write, req, old.Bytes(), before
}

// A leader's InstallSnapshot that reaches a follower late, after the
// follower has applied past it and compacted its own log, is refused.
// hashicorp/raft v1.7.3 would install it: the follower's state and
// applied index move back, and at the next commit raft replays from the
// old index, finds the entry compacted away and panics ("log not found"
// in processLogs), taking the test binary down. The request here is the
// one the leader would have sent earlier (its state, index, term and
// configuration at that point), delivered now.
func TestStaleInstallSnapshotIsRefused(t *testing.T) {
	ctx := context.Background()
	c, leader, follower, write, req, snap, before := staleSnapshot(t, nil)
	info := req.LastLogIndex
	var resp raft.InstallSnapshotResponse
	err := c.InmemTransport(leader).InstallSnapshot(raft.ServerID(c.Node(follower).ID()), raft.ServerAddress(c.Node(follower).RaftAddr()), req, &resp, bytes.NewReader(snap))
	if err == nil || resp.Success {
		t.Fatalf("the follower accepted a snapshot at %d after applying %d (err %v)", info, before, err)
	}
	if got := c.Node(follower).Raft().AppliedIndex(); got < before {
		t.Fatalf("the follower's applied index went back from %d to %d", before, got)
	}
	if n := c.Node(follower).FSM().Rewinds(); n != 0 {
		t.Fatalf("the follower's state was rewound %d times", n)
	}

	// Commits go on, the replicas agree, and nothing written is lost.
	write("after", 10)
	c.WaitConverged(10 * time.Second)
	for _, id := range []string{"early-0", "late-39", "after-9"} {
		if _, err := nodesOf(c, follower).Get(ctx, id, fsm.Stale); err != nil {
			t.Fatalf("follower lacks %s: %v", id, err)
		}
	}
}

// The control: with the guard off, the same late request rewinds the
// follower, and the check the fault harness relies on (FSM.Rewinds, summed
// by clustertest) reports it. Ticks are off so that nothing commits after
// the rewind: raft would then replay entries its compaction deleted and
// panic, taking the test binary down.
func TestRewindCheckFiresWithoutTheGuard(t *testing.T) {
	c, leader, follower, _, req, snap, before := staleSnapshot(t, func(cfg *cluster.Config) {
		nodehooks.Edit(cfg, func(h *nodehooks.Hooks) { h.StaleSnapshotGuardOff = true })
		cfg.TickInterval = time.Hour
	})
	var resp raft.InstallSnapshotResponse
	if err := c.InmemTransport(leader).InstallSnapshot(raft.ServerID(c.Node(follower).ID()), raft.ServerAddress(c.Node(follower).RaftAddr()), req, &resp, bytes.NewReader(snap)); err != nil || !resp.Success {
		t.Fatalf("without the guard the late snapshot should install: %v %+v", err, resp)
	}
	if got := c.Node(follower).FSM().AppliedIndex(); got >= before {
		t.Fatalf("the follower's applied index %d did not go back from %d", got, before)
	}
	if c.Node(follower).FSM().Rewinds() != 1 || c.Rewinds() != 1 {
		t.Fatalf("rewinds: follower %d, cluster %d, want 1", c.Node(follower).FSM().Rewinds(), c.Rewinds())
	}
}
