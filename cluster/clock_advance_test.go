package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/nodes"
)

// The test clock (nodehooks.Hooks.Clock, through clustertest's Advance
// and MoveClock) moves FSM time on every node at once: an hour passes in
// well under a second of real time, under whichever node leads, across a
// restart, and a cluster that does not tick takes the moved time with
// its next command. Expiry tests rely on it instead of sleeping.
func TestAdvanceMovesFSMTimeOnEveryNode(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	fsmNow := func(i int) int64 { return c.Node(i).FSM().Now() }
	highest := func() int64 {
		var h int64
		for _, i := range c.Running() {
			h = max(h, fsmNow(i))
		}
		return h
	}
	check := func(what string, before int64, d time.Duration) {
		t.Helper()
		for _, i := range c.Running() {
			// At least d later; and not much more, or real time alone
			// did it (it passes too, a few seconds at most here).
			if got := fsmNow(i) - before; got < d.Milliseconds() || got > d.Milliseconds()+10_000 {
				t.Fatalf("%s: n%d's FSM time moved %d ms, want %d ms and a few seconds at most", what, i+1, got, d.Milliseconds())
			}
		}
	}
	before, began := highest(), time.Now()
	c.Advance(time.Hour)
	check("an hour", before, time.Hour)
	t.Logf("an hour of FSM time passed in %v", time.Since(began))

	// A new leader stamps from the moved clock too.
	c.TransferLeadership(20 * time.Second)
	before = highest()
	c.Advance(time.Minute)
	check("a minute under the new leader", before, time.Minute)

	// A restarted node reads the moved clock, and leads with it.
	old := c.Leader()
	c.Stop(old)
	c.WaitLeader(10 * time.Second)
	c.Restart(old)
	c.TransferLeadershipTo(old, 20*time.Second)
	before = highest()
	c.Advance(time.Minute)
	check("a minute under the restarted node", before, time.Minute)
}

// MoveClock moves the clock of a cluster that does not tick: the next
// command carries the new time.
func TestMoveClockMovesTheNextCommand(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Configure: func(_ int, cfg *cluster.Config) { cfg.TickInterval = time.Hour }})
	l := c.WaitLeader(10 * time.Second)
	before := c.Node(l).FSM().Now()
	c.MoveClock(time.Hour)
	if _, err := nodes.On(c.Node((l+1)%3)).CreateIfAbsent(context.Background(), nodes.CreateRequest{NodeID: "later"}); err != nil {
		t.Fatal(err)
	}
	if got := c.Node(l).FSM().Now() - before; got < time.Hour.Milliseconds() || got > time.Hour.Milliseconds()+10_000 {
		t.Fatalf("the command after MoveClock(1h) moved FSM time %d ms", got)
	}
}
