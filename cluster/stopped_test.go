package cluster_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/arbiterhq/arbiter/retry"
	"github.com/hashicorp/raft"
)

// Every call on a stopped node fails at once with unavailable, says that
// this node is stopped, and is never an unknown outcome (issue 43): it
// used to wait out the caller's deadline and blame the cluster ("no known
// leader"). A call that is waiting for a leader when the node stops ends
// then, too.
func TestStoppedNodeFailsFast(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	leader := c.WaitLeader(10 * time.Second)
	follower := (leader + 1) % c.Size()
	old := c.Node(follower)
	client := nodes.On(old)
	c.Stop(follower)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, createErr := client.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "x"})
	_, readErr := client.Get(ctx, "x", fsm.Linearizable)
	_, staleErr := client.Get(ctx, "x", fsm.Stale)
	for what, err := range map[string]error{"create": createErr, "linearizable read": readErr, "stale read": staleErr} {
		checkStopped(t, what, err)
	}
	if ctx.Err() != nil {
		t.Fatal("the calls waited for the deadline")
	}

	// A call waiting for a leader (its node is cut off) ends when the
	// node stops.
	c.Restart(follower)
	c.WaitLeader(10 * time.Second)
	n := c.Node(follower)
	c.Isolate(follower)
	c.Eventually(10*time.Second, func() bool { return n.Status().LeaderID == "" })
	done := make(chan error, 1)
	go func() {
		_, err := nodes.On(n).CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "y"})
		done <- err
	}()
	time.Sleep(200 * time.Millisecond) // let the call start waiting; it is correct either way
	c.Stop(follower)
	select {
	case err := <-done:
		checkStopped(t, "a create waiting for a leader", err)
	case <-ctx.Done():
		t.Fatal("a create waiting for a leader did not end when its node stopped")
	}
}

func checkStopped(t *testing.T, what string, err error) {
	t.Helper()
	if errs.CodeOf(err) != errs.CodeUnavailable || errs.IsOutcomeUnknown(err) || !strings.Contains(err.Error(), "is stopped") {
		t.Errorf("%s on a stopped node: %v (outcome unknown %v), want unavailable saying the node is stopped", what, err, errs.IsOutcomeUnknown(err))
	}
}

// WaitReady returns once a joiner is a voter, not merely started or
// caught up (issue 43: closing the leader right after a joiner's Start
// left a cluster without a leader for good); it says why while it waits,
// and ends at once on a stopped node.
func TestWaitReadyWaitsForTheVote(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := c.WaitLeader(10 * time.Second)
	j := (a + 1) % 3
	id := c.Node(j).ID()
	if err := c.Node(a).Remove(ctx, cluster.RemoveRequest{ID: id}); err != nil {
		t.Fatal(err)
	}
	c.Stop(j)
	if err := os.RemoveAll(c.DataDir(j)); err != nil {
		t.Fatal(err)
	}
	c.Restart(j)
	n := c.Node(j)
	short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
	err := n.WaitReady(short)
	cancelShort()
	if errs.CodeOf(err) != errs.CodeUnavailable || !strings.Contains(err.Error(), "not ready before the deadline") {
		t.Fatalf("a node not yet joined: %v, want unavailable saying why", err)
	}
	if err := c.Node(a).Join(ctx, cluster.JoinRequest{ID: id, RaftAddr: n.RaftAddr(), APIAddr: n.APIAddr()}); err != nil {
		t.Fatal(err)
	}
	if err := n.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	if s := suffrage(t, c, j, id); s != raft.Voter {
		t.Fatalf("WaitReady returned while the joiner is %v in its own configuration", s)
	}
	c.Stop(j)
	checkStopped(t, "WaitReady", n.WaitReady(ctx))
}

// A write whose outcome is unknown says which idempotency key learns it
// (issue 43), and retry.Unknown learns it once the cluster can answer.
func TestUnknownOutcomeNamesItsKey(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	leader := c.WaitLeader(10 * time.Second)
	n := c.Node(leader)
	c.Isolate(leader) // it still thinks it leads for a moment: the write reaches its log, not a quorum
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := nodes.On(n).CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "k", IdempotencyKey: "req-42"})
	if !errs.IsOutcomeUnknown(err) {
		t.Skipf("the isolated leader answered before the deadline (%v): nothing to check", err)
	}
	if e := errs.From(err); e.Detail["idempotency_key"] != "req-42" || !strings.Contains(e.Message, `same idempotency key "req-42"`) {
		t.Fatalf("outcome unknown without its key: %#v", e)
	}
	c.Heal()
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := retry.Unknown(ctx, func(ctx context.Context) (*nodes.CreateResult, error) {
		m := c.Node(c.WaitLeader(10 * time.Second))
		return nodes.On(m).CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "k", IdempotencyKey: "req-42"})
	})
	if err != nil || res.Node.NodeID != "k" {
		t.Fatalf("retry with the key: %+v %v", res, err)
	}
}
