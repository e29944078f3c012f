package chaos

import (
	"fmt"
	"time"

	"github.com/arbiterhq/arbiter/internal/clustertest"
)

// Every lease, claim and reservation expires when FSM time passes its
// deadline, so "nothing expires early" is one check for every domain:
// FSM time never gains on real time. The clock watch compares the two
// after every heal and at the end of a run; a leader whose wall clock
// moved FSM time (the clock-skew fault with stamps from the wall clock:
// TestHarnessCatchesAWallClockLeader) fails it by hours.

// clockSlack is how far FSM time may seem to gain on real time without a
// fault of its own: the first reading is the highest FSM time a replica
// has applied, which trails the leader's latest stamp by a commit (and a
// tick of 100 ms when nothing else is written), so a later reading can
// gain that much back. Under -race on a loaded machine a commit can take
// a few hundred milliseconds.
const clockSlack = 1500 * time.Millisecond

// clockWatch holds the first reading of FSM time and real time.
type clockWatch struct {
	c       *clustertest.Cluster
	fsmMs   int64
	real    time.Time
	maxGain time.Duration // the largest gain on real time seen (negative: FSM time trailed)
	failed  bool          // reported once: a gain stays
}

// watchClock takes the first reading; c must have applied entries.
func watchClock(c *clustertest.Cluster) *clockWatch {
	return &clockWatch{c: c, fsmMs: fsmTime(c), real: time.Now(), maxGain: -time.Hour}
}

// check fails the run (through errorf) if FSM time has gained more than
// clockSlack on real time since the first reading; after names the step.
func (w *clockWatch) check(after string, errorf func(string, ...any)) {
	real := time.Since(w.real)
	fsm := time.Duration(fsmTime(w.c)-w.fsmMs) * time.Millisecond
	w.maxGain = max(w.maxGain, fsm-real)
	if fsm > real+clockSlack && !w.failed {
		w.failed = true
		errorf("chaos: FSM time ran ahead of real time after %s: it advanced %v in %v of real time, so leases, claims and reservations expired early",
			after, fsm.Round(time.Millisecond), real.Round(time.Millisecond))
	}
}

func (w *clockWatch) String() string {
	return fmt.Sprintf("FSM time gained at most %v on real time", w.maxGain.Round(time.Millisecond))
}

// fsmTime is the highest FSM time (unix ms) any running replica has
// applied.
func fsmTime(c *clustertest.Cluster) int64 {
	var now int64
	for _, i := range c.Running() {
		if n := c.Node(i); n != nil {
			now = max(now, n.FSM().Now())
		}
	}
	return now
}

// SkewedLeader is the clock-skew fault with a fixed skew: a follower's
// wall clock is set d off (ahead for d > 0), and leadership is handed to
// it; heal sets the clock right. Faults draws d from the run's seed.
func SkewedLeader(d time.Duration) Fault {
	return Fault{"clock-skew-leader", func(e *Env) func() { return skewLeader(e, d) }}
}

func skewLeader(e *Env, d time.Duration) func() {
	f := e.follower()
	e.Mark("n%d's wall clock %v off; leadership to n%d", f+1, d, f+1)
	e.C.SkewClock(f, d)
	e.C.TransferLeadershipTo(f, timeout)
	return func() { e.C.SkewClock(f, 0) }
}

// drawSkew is a skew of 1 to 6 hours, ahead or behind.
func drawSkew(e *Env) time.Duration {
	d := time.Duration(1+e.Rng.IntN(6)) * time.Hour
	if e.Rng.IntN(2) == 0 {
		return -d
	}
	return d
}
