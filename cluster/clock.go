package cluster

import (
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/hashicorp/raft"
)

// FSM time advances by the leader's monotonic clock, never by its wall
// clock. Every node remembers the FSM time of the last entry it applied
// and the moment, on its monotonic clock, it applied it; a leader stamps a
// new command with that FSM time plus the time elapsed since, or with its
// own previous stamp plus the time elapsed since it issued it, whichever
// is later. (The second term matters under load: counting only from the
// last applied entry would lose each entry's commit latency, and FSM time
// would crawl while a client writes back to back.) A wall clock that is
// hours ahead or behind therefore cannot move FSM time: a leader with such
// a clock expires nothing early and keeps nothing alive late.
//
// After an election the new leader counts from when it last applied an
// entry as a follower, so the time without a leader counts toward every
// TTL, as it should. The one gap: while every node is down, no monotonic
// clock runs, and FSM time resumes where it stopped, so a whole-cluster
// outage extends every TTL by its length. Only the very first entry of a
// new cluster, with FSM time still 0, takes the wall clock, once.
type fsmClock struct {
	applied atomic.Pointer[clockReading] // the last entry this node applied
	wall    func() time.Time             // the wall clock, for the first entry only
	mono    func() time.Time             // the monotonic clock (time.Now; nodehooks.Hooks.Clock replaces it)
	// wallStamps stamps every command from the wall clock (the testing
	// hook nodehooks.Hooks.StampsFromWallClock: the old, skew-prone rule).
	wallStamps bool

	mu     sync.Mutex
	issued clockReading // the last stamp this node issued
}

type clockReading struct {
	now int64     // FSM time of the last applied entry, unix ms
	at  time.Time // when this node applied it (monotonic reading)
}

// observe records FSM time now, as applied at this moment, unless the
// reading it has counts further. The entries a new leader commits first
// include its predecessor's tail, stamped before the election; taking
// their FSM time as of now would drop the time without a leader from
// every TTL (TestStampCountsTheElectionWhenTheOldTailCommitsLate).
// Only the apply and restore paths call it, one at a time.
func (c *fsmClock) observe(now int64) {
	at := c.mono()
	if prev := c.applied.Load(); prev != nil && prev.now+at.Sub(prev.at).Milliseconds() > now {
		return
	}
	c.applied.Store(&clockReading{now: now, at: at})
}

// read reports whether this node has applied an entry, or restored a
// snapshot, since it started: until then it knows no FSM time to count
// from, and stamp would fall back on the wall clock.
func (c *fsmClock) read() bool { return c.applied.Load() != nil }

// stamp is the FSM time a leader proposes for a new command.
func (c *fsmClock) stamp() int64 {
	applied := c.applied.Load()
	if applied == nil || applied.now == 0 || c.wallStamps {
		return c.wall().UnixMilli()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	at := c.mono()
	s := applied.now + at.Sub(applied.at).Milliseconds()
	if c.issued.now != 0 {
		s = max(s, c.issued.now+at.Sub(c.issued.at).Milliseconds())
	}
	c.issued = clockReading{now: s, at: at}
	return s
}

// clockedFSM is the FSM as raft sees it: every apply and restore also
// updates the node's clock reading.
type clockedFSM struct {
	*fsm.FSM
	clock   *fsmClock
	metrics *metrics // nil: not measured
	// slowestRestore, if set, records the slowest restore's speed (see
	// restoreMeter).
	slowestRestore *atomic.Uint64
	restores       *atomic.Uint64 // successful restores, if set
	holdApply      func()         // nodehooks.Hooks.HoldApply: tests only
	restoreDelay   time.Duration  // nodehooks.Hooks.RestoreDelay: tests only
}

var (
	_ raft.FSM         = clockedFSM{}
	_ raft.BatchingFSM = clockedFSM{}
)

func (c clockedFSM) Apply(l *raft.Log) any {
	return c.ApplyBatch([]*raft.Log{l})[0]
}

func (c clockedFSM) ApplyBatch(logs []*raft.Log) []any {
	if c.holdApply != nil {
		c.holdApply()
	}
	start := time.Now()
	out := c.FSM.ApplyBatch(logs)
	c.clock.observe(c.FSM.Now())
	if c.metrics != nil {
		c.metrics.fsmApply.Observe(time.Since(start).Seconds())
		c.metrics.appliedEntries.Add(float64(len(logs)))
	}
	return out
}

func (c clockedFSM) Restore(rc io.ReadCloser) error {
	start := time.Now()
	time.Sleep(c.restoreDelay)
	meter := &restoreMeter{ReadCloser: rc, began: start, slowest: c.slowestRestore, count: c.restores}
	err := c.FSM.Restore(meter)
	meter.done(err)
	c.clock.observe(c.FSM.Now())
	if c.metrics != nil {
		c.metrics.snapshotRestore.Observe(time.Since(start).Seconds())
	}
	return err
}

// raftFSM is the node's FSM as raft sees it: clocked, and measured (apply
// time on every node, snapshot time and size, restore time).
func (h *raftHost) raftFSM() clockedFSM {
	return clockedFSM{FSM: h.fsm, clock: &h.clock, metrics: h.metrics, slowestRestore: &h.slowestRestore, restores: &h.snapshotRestores,
		holdApply: h.cfg.hooks.HoldApply, restoreDelay: h.cfg.hooks.RestoreDelay}
}

func (c clockedFSM) Snapshot() (raft.FSMSnapshot, error) {
	s, err := c.FSM.Snapshot()
	if err != nil || c.metrics == nil {
		return s, err
	}
	return measuredSnapshot{FSMSnapshot: s, metrics: c.metrics}, nil
}

// measuredSnapshot times a snapshot's Persist.
type measuredSnapshot struct {
	raft.FSMSnapshot
	metrics *metrics
}

func (s measuredSnapshot) Persist(sink raft.SnapshotSink) error {
	start := time.Now()
	err := s.FSMSnapshot.Persist(sink)
	s.metrics.snapshotPersisted(time.Since(start), err)
	return err
}
