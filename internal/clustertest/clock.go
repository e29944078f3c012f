package clustertest

import (
	"fmt"
	"time"
)

// Time in a test cluster. Every node reads its clocks (the monotonic one
// FSM time follows, and the wall clock) through the cluster, which adds
// how far the test moved them: MoveClock and Advance move every node's
// clocks alike, and never back. FSM time follows on the next command a
// leader stamps (see cluster/clock.go), so an expiry test reaches a
// deadline without sleeping until it, and without racing the wall clock
// on a loaded machine. Real time still passes too.

// now is time.Now moved forward by what the test advanced: the clock of
// every node of the cluster (nodehooks.Hooks.Clock and, with the node's
// skew added, WallClock).
func (c *Cluster) now() time.Time { return time.Now().Add(time.Duration(c.advanced.Load())) }

// MoveClock moves every node's clock d forward and returns at once: the
// next command a leader stamps, whatever it is, carries FSM time at least
// d later than it would have. It is Advance for a cluster that does not
// tick while the test runs (a TickInterval of an hour), where the test's
// own next command moves FSM time. d must be positive.
func (c *Cluster) MoveClock(d time.Duration) {
	c.t.Helper()
	if d <= 0 {
		c.t.Fatalf("clustertest: MoveClock(%v): the clock moves only forward", d)
	}
	c.advanced.Add(int64(d))
}

// advanceTicks bounds how many tick intervals Advance waits, beyond a
// fixed allowance, for every running node to apply the new time: a tick
// that fails (an election) is proposed again an interval later.
const (
	advanceTicks = 20
	advanceWait  = 10 * time.Second
)

// Advance moves every node's clock d forward and returns once every
// running node has applied FSM time d later than the latest any of them
// had applied before: the leader's next tick carries it, so a deadline d
// away has passed on every running node when Advance returns (and the
// tick has expired what it expires). It fails the test if that takes
// longer than advanceWait plus advanceTicks tick intervals (a node cut
// off from the leader never applies it), and at once if the cluster
// ticks less than once a second: use MoveClock there.
func (c *Cluster) Advance(d time.Duration) {
	c.t.Helper()
	var tick time.Duration
	c.mu.Lock()
	for _, m := range c.members {
		tick = max(tick, m.tick)
	}
	c.mu.Unlock()
	if tick > time.Second {
		c.t.Fatalf("clustertest: Advance on a cluster that ticks every %v: use MoveClock, and the test's next command", tick)
	}
	target := int64(0)
	for _, i := range c.Running() {
		target = max(target, c.Node(i).FSM().Now())
	}
	target += d.Milliseconds()
	c.MoveClock(d)
	behind := func() string {
		for _, i := range c.Running() {
			if now := c.Node(i).FSM().Now(); now < target {
				return fmt.Sprintf("n%d is at FSM time %d, %d ms short", i+1, now, target-now)
			}
		}
		return ""
	}
	if !c.Eventually(advanceWait+advanceTicks*tick, func() bool { return behind() == "" }) {
		c.t.Fatalf("clustertest: Advance(%v): not every running node applied FSM time %d: %s", d, target, behind())
	}
}
