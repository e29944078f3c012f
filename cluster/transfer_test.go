package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/clustertest"
)

// An operator hands the leadership over, asking any node: to a named
// voter, or to the best other one; asking for the leader there is does
// nothing; an unknown id is not_found and the leader stays.
func TestTransferLeadership(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Configure: steadyTimings})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	leader := c.WaitLeader(10 * time.Second)
	c.WaitVoters(10 * time.Second)
	follower := (leader + 1) % 3
	target := (leader + 2) % 3

	// Asked of a follower, to the third node.
	res, err := c.Node(follower).TransferLeadership(ctx, cluster.TransferRequest{To: c.Node(target).ID()})
	if err != nil {
		t.Fatalf("transfer to %s: %v", c.Node(target).ID(), err)
	}
	if res.LeaderID != c.Node(target).ID() {
		t.Fatalf("leader after the transfer: %q, want %q", res.LeaderID, c.Node(target).ID())
	}
	if got := c.WaitLeader(10 * time.Second); got != target {
		t.Fatalf("the cluster's leader is n%d, want n%d", got+1, target+1)
	}

	// To whoever raft picks: another node than the leader.
	res, err = c.Node(target).TransferLeadership(ctx, cluster.TransferRequest{})
	if err != nil || res.LeaderID == "" || res.LeaderID == c.Node(target).ID() {
		t.Fatalf("transfer to any voter: %+v %v", res, err)
	}
	now := c.WaitLeader(10 * time.Second)

	// To the leader itself: nothing to do.
	res, err = c.Node(now).TransferLeadership(ctx, cluster.TransferRequest{To: c.Node(now).ID()})
	if err != nil || res.LeaderID != c.Node(now).ID() {
		t.Fatalf("transfer to the leader itself: %+v %v", res, err)
	}
	// To no member: refused, and the leader stays.
	if _, err := c.Node(now).TransferLeadership(ctx, cluster.TransferRequest{To: "n9"}); errs.CodeOf(err) != errs.CodeNotFound {
		t.Fatalf("transfer to a stranger: %v, want not_found", err)
	}
	if got := c.WaitLeader(10 * time.Second); got != now {
		t.Fatalf("a refused transfer moved the leadership to n%d", got+1)
	}
}

// A cluster of one voter has nobody to hand its leadership to.
func TestTransferLeadershipWithoutAnotherVoter(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 1})
	c.WaitLeader(10 * time.Second)
	_, err := c.Node(0).TransferLeadership(context.Background(), cluster.TransferRequest{})
	if errs.CodeOf(err) != errs.CodeInvalid {
		t.Fatalf("transfer in a one-voter cluster: %v, want invalid", err)
	}
}
