package cluster

import (
	"testing"
	"time"
)

// fakeClocks drives an fsmClock by hand: a wall clock hours off and a
// monotonic clock the test advances.
type fakeClocks struct{ mono time.Time }

func newTestClock(wallSkew time.Duration) (*fsmClock, *fakeClocks) {
	f := &fakeClocks{mono: time.Unix(1_000_000, 0)}
	c := &fsmClock{
		wall: func() time.Time { return time.Now().Add(wallSkew) },
		mono: func() time.Time { return f.mono },
	}
	return c, f
}

func (f *fakeClocks) advance(d time.Duration) { f.mono = f.mono.Add(d) }

// A new cluster takes the wall clock once; after that only elapsed
// monotonic time moves FSM time, however far off the wall clock is.
func TestStampIgnoresTheWallClockOnceStarted(t *testing.T) {
	c, f := newTestClock(5 * time.Hour)
	first := c.stamp()
	if want := time.Now().Add(5 * time.Hour).UnixMilli(); first < want-1000 || first > want+1000 {
		t.Fatalf("first stamp %d, want the wall clock %d", first, want)
	}
	c.observe(first)
	f.advance(250 * time.Millisecond)
	if got := c.stamp(); got != first+250 {
		t.Fatalf("stamp %d, want %d (250 ms after the first)", got, first+250)
	}
	// A leader whose wall clock is hours behind (a fresh clock, the same
	// applied state) still stamps from the applied entry.
	behind, g := newTestClock(-5 * time.Hour)
	behind.observe(first)
	g.advance(time.Second)
	if got := behind.stamp(); got != first+1000 {
		t.Fatalf("leader with a clock 5 h behind stamps %d, want %d", got, first+1000)
	}
}

// Under back-to-back writes FSM time keeps pace with real time: each
// stamp counts from the previous stamp, not only from the last applied
// entry, so commit latency is not lost at every write.
func TestStampKeepsPaceUnderLoad(t *testing.T) {
	c, f := newTestClock(0)
	c.observe(1_000)
	var last int64
	for range 1000 {
		s := c.stamp()
		f.advance(time.Millisecond) // commit latency
		c.observe(max(last, s))     // the FSM takes max(previous, stamp)
		last = max(last, s)
	}
	// 1000 writes of 1 ms each: FSM time advanced by about a second.
	if last < 1_000+999 {
		t.Fatalf("FSM time %d after 1 s of writes, want about %d", last, 2_000)
	}
}

// After an election the new leader counts the time without a leader:
// from the last entry it applied as a follower.
func TestStampCountsTheElection(t *testing.T) {
	c, f := newTestClock(0)
	c.observe(50_000)
	f.advance(3 * time.Second) // no leader for 3 s
	if got := c.stamp(); got != 53_000 {
		t.Fatalf("first stamp after the election %d, want 53000", got)
	}
}

// The first entries a new leader commits include its predecessor's
// tail, stamped before the election. Applying them must not set the
// clock back to their stamps: the time without a leader still counts.
func TestStampCountsTheElectionWhenTheOldTailCommitsLate(t *testing.T) {
	c, f := newTestClock(0)
	c.observe(50_000)
	f.advance(900 * time.Millisecond) // no leader; then the new one commits the old tail
	c.observe(50_000)                 // FSM time is still the old leader's last stamp
	f.advance(100 * time.Millisecond)
	if got := c.stamp(); got != 51_000 {
		t.Fatalf("first stamp after the election %d, want 51000 (the 900 ms without a leader counted)", got)
	}
}
