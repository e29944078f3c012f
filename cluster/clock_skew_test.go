package cluster_test

import (
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/internal/clustertest"
)

// Leaders whose wall clocks are hours ahead and behind take turns: FSM
// time keeps the pace of real time all along. (Stamped from the wall
// clock, it jumped five hours forward at the first transfer: every lease
// and reservation expired at once, for good.)
func TestSkewedLeadersCannotMoveFSMTime(t *testing.T) {
	skew := []time.Duration{0, 5 * time.Hour, -5 * time.Hour}
	c := clustertest.New(t, clustertest.Options{Configure: func(i int, cfg *cluster.Config) {
		cfg.WallClock = func() time.Time { return time.Now().Add(skew[i]) }
	}})
	fsmNow := func() int64 { return c.Node(c.WaitLeader(10 * time.Second)).FSM().Now() }
	start, startReal := fsmNow(), time.Now()
	led := map[int]bool{c.Leader(): true}
	for len(led) < 3 {
		led[c.TransferLeadership(20*time.Second)] = true
		time.Sleep(300 * time.Millisecond) // a few ticks under the new leader
		gained, real := fsmNow()-start, time.Since(startReal).Milliseconds()
		t.Logf("leader n%d gained %d real %d", c.Leader()+1, gained, real)
		if gained < real-3000 || gained > real+1000 {
			t.Fatalf("leader n%d: FSM time moved %d ms in %d ms of real time", c.Leader()+1, gained, real)
		}
	}
}
