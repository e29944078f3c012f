package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/nodes"
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
	client := nodes.NewClient(old, old)
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
		_, err := nodes.NewClient(n, n).CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "y"})
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
