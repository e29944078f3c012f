package clustertest

import (
	"context"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/hashicorp/raft"
)

// The faults beyond partitions and stops. They act on raft traffic
// (in-memory, or TCP without TLS) and on the HTTP links nodes use to
// forward to the leader; calls a test makes directly on a *cluster.Node are not subject
// to them (a client of a paused node is served, but nothing it asks of
// the cluster gets through until the node resumes).

// CutOneWay cuts the directed link from -> to: nothing from sends reaches
// to. On HTTP that is exact: from's requests to to fail, and to's requests
// to from arrive but their replies are lost, and so on raft over TCP.
// Raft's in-memory transport cannot lose only a reply, so there from's
// RPCs to to fail while to's RPCs to from still complete. It adds to any
// partition in force; Heal restores it.
func (c *Cluster) CutOneWay(from, to int) {
	c.net.cutOneWay(from, to)
	c.rewire()
}

// Delay makes every raft message and every HTTP read and write between
// nodes wait a random time up to d before it goes; 0 ends the delay.
// Messages of one link are not reordered (each waits on its sender).
func (c *Cluster) Delay(d time.Duration) { c.net.setDelay(d) }

// Pause freezes node i's traffic, as a SIGSTOP or a long GC pause would:
// every message to or from it waits until Resume, then is delivered late.
// Its timers keep running, so on Resume it may act on a stale view (a
// leader that has been replaced, an election it started while paused).
func (c *Cluster) Pause(i int) { c.net.pause(i) }

// Resume ends Pause(i).
func (c *Cluster) Resume(i int) { c.net.resume(i) }

// Paused reports whether node i is paused.
func (c *Cluster) Paused(i int) bool { return c.net.isPaused(i) }

// TransferLeadership asks the current leader to hand leadership to another
// voter and returns the new leader's index once every reachable node
// agrees on it. A transfer can end with the old leader elected again (its
// target lost the election it was told to start: raft reports the
// transfer done all the same), so it is asked again, until timeout.
func (c *Cluster) TransferLeadership(timeout time.Duration) int {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	old := c.WaitLeader(timeout)
	for attempt := 1; ; attempt++ {
		if l := c.Leader(); l == old {
			if err := c.Node(old).Raft().LeadershipTransfer().Error(); err != nil && time.Now().After(deadline) {
				c.t.Fatalf("clustertest: leadership transfer from n%d: %v", old+1, err)
			}
		}
		wait := min(3*time.Second, time.Until(deadline))
		if c.Eventually(wait, func() bool { now := c.Leader(); return now >= 0 && now != old }) {
			return c.WaitLeader(timeout)
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("clustertest: n%d still leads %v and %d leadership transfers later", old+1, timeout, attempt)
		}
	}
}

// Replace is a membership change: it removes member i through the
// leader, deletes its data, and adds a fresh node with the same id, which
// joins as a non-voter, catches up from the leader's log or snapshot, and
// is promoted; Replace returns once it is a voter. If i leads when
// Replace begins (a follower chosen a moment before may have won an
// election since: the faults before it depose leaders), leadership moves
// first, as remove does when i comes to lead meanwhile.
func (c *Cluster) Replace(i int, timeout time.Duration) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	m := c.members[i]
	leader := c.WaitLeader(timeout)
	if leader == i {
		deadline, _ := ctx.Deadline()
		leader = c.TransferLeadership(time.Until(deadline))
	}
	leader = c.remove(ctx, i, leader)
	c.Stop(i)
	if err := os.RemoveAll(m.dataDir); err != nil {
		c.t.Fatalf("clustertest: wipe %s: %v", m.id, err)
	}
	c.start(i, false)
	if !c.opts.TCP { // in TCP mode a node without data joins through a running one (see config)
		// Through the old leader, which forwards if it no longer leads (not
		// WaitLeader: the fresh node knows no leader until it has joined).
		req := cluster.JoinRequest{ID: m.id, RaftAddr: m.raftAddr, APIAddr: c.Node(i).APIAddr()}
		if err := c.Node(leader).Join(ctx, req); err != nil {
			c.t.Fatalf("clustertest: join %s again: %v", m.id, err)
		}
	}
	// It joined as a non-voter; the fault is over once it votes again.
	c.WaitVoters(timeout)
}

// remove removes member i through the leader and returns the leader that
// removed it. A removal whose leader lost leadership while committing it
// has an unknown outcome (the faults before it can leave a leader that
// is about to be deposed): it is asked again of the next leader, unless
// the configuration shows it committed after all. Removing the leader
// itself is never asked: if i became leader meanwhile, leadership moves
// first.
func (c *Cluster) remove(ctx context.Context, i, leader int) int {
	c.t.Helper()
	id := c.members[i].id
	for {
		err := c.Node(leader).Remove(ctx, cluster.RemoveRequest{ID: id})
		if err == nil {
			return leader
		}
		if ctx.Err() != nil {
			c.t.Fatalf("clustertest: remove %s: %v", id, err)
		}
		c.t.Logf("clustertest: remove %s through n%d: %v; asking again", id, leader+1, err)
		time.Sleep(100 * time.Millisecond)
		deadline, _ := ctx.Deadline()
		leader = c.WaitLeader(time.Until(deadline))
		if leader == i {
			leader = c.TransferLeadership(time.Until(deadline))
		}
		if !c.isMember(leader, id) {
			return leader
		}
	}
}

// isMember says whether node i's latest raft configuration names id.
func (c *Cluster) isMember(i int, id string) bool {
	n := c.Node(i)
	if n == nil {
		return true // unknown: treat it as a member, as below
	}
	f := n.Raft().GetConfiguration()
	if f.Error() != nil {
		return true // unknown: asking again is safe, the leader refuses a non-member
	}
	for _, s := range f.Configuration().Servers {
		if string(s.ID) == id {
			return true
		}
	}
	return false
}

// Snapshot makes node i take a snapshot now and returns the index it
// covers. A node with nothing new since its last snapshot keeps that one.
func (c *Cluster) Snapshot(i int) uint64 {
	c.t.Helper()
	if err := c.Node(i).Raft().Snapshot().Error(); err != nil && err != raft.ErrNothingNewToSnapshot {
		c.t.Fatalf("clustertest: snapshot of n%d: %v", i+1, err)
	}
	return c.RaftStat(i, "last_snapshot_index")
}

// RaftStat is a numeric entry of node i's raft stats (0 if absent).
func (c *Cluster) RaftStat(i int, key string) uint64 {
	n := c.Node(i)
	if n == nil {
		return 0
	}
	v, _ := strconv.ParseUint(n.Raft().Stats()[key], 10, 64)
	return v
}

// SkewClock sets node i's wall clock to d ahead of the real one (behind
// for a negative d); 0 ends the skew. It takes effect at once, on a
// running node, and survives restarts. Options.Configure may replace the
// wall clock, and then SkewClock does nothing.
func (c *Cluster) SkewClock(i int, d time.Duration) { c.members[i].skew.Store(int64(d)) }

// TransferLeadershipTo hands leadership to node i and returns once every
// reachable node agrees that i leads. Like TransferLeadership it asks
// again after a transfer that ended with another leader; it fails the
// test if i does not lead within timeout.
func (c *Cluster) TransferLeadershipTo(i int, timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	target := c.members[i]
	for attempt := 1; ; attempt++ {
		l := c.WaitLeader(time.Until(deadline))
		if l == i {
			return
		}
		c.mu.Lock()
		addr := target.raftAddr
		c.mu.Unlock()
		err := c.Node(l).Raft().LeadershipTransferToServer(raft.ServerID(target.id), raft.ServerAddress(addr)).Error()
		if err == nil && c.Eventually(min(3*time.Second, time.Until(deadline)), func() bool { return c.Leader() == i }) {
			continue // the loop's WaitLeader confirms every node agrees
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("clustertest: n%d does not lead after %d leadership transfers to it in %v (last: %v)", i+1, attempt, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// HoldApply makes node i stop applying committed entries until release
// is called: it lags behind the log as a slow or overloaded node does,
// while it stays in contact with the leader, knows it, and forwards what
// it is asked to write. Its raft keeps storing entries until raft's apply
// queue (128 batches) fills: hold it for a few seconds at most.
func (c *Cluster) HoldApply(i int) (release func()) {
	gate := make(chan struct{})
	m := c.members[i]
	m.held.Store(&gate)
	var once sync.Once
	return func() {
		once.Do(func() {
			m.held.Store(nil)
			close(gate)
		})
	}
}
