package fsm_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
)

// retentionLocal is a bare FSM with the node primitives whose retention a
// tick of version 2 has set.
func retentionLocal(t testing.TB, r fsm.Retention) *fsmtest.Local {
	t.Helper()
	l, err := fsmtest.New(nodes.Module())
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, l, log.Command{Type: fsm.CmdEnable, Version: 1, Payload: log.MustMarshal(fsm.ServedBy(nodes.Module()))})
	retick(t, l, r, 1)
	return l
}

func retick(t testing.TB, l *fsmtest.Local, r fsm.Retention, budget int) fsm.TickResult {
	t.Helper()
	res := mustApply(t, l, log.Command{Type: fsm.CmdTick, Version: 2, Payload: log.MustMarshal(fsm.Tick{
		IdemRetentionMs: r.IdemRetentionMs, FeedRetain: r.FeedRetain, LedgerMaxRows: r.LedgerMaxRows, Budget: budget})})
	var out fsm.TickResult
	if err := log.Unmarshal(res.Result, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustApply(t testing.TB, l *fsmtest.Local, c log.Command) *fsm.Response {
	t.Helper()
	res, err := l.Propose(bg, c)
	if err != nil || res.Err != nil {
		t.Fatalf("command type %d: %v %v", c.Type, err, res.Err)
	}
	return res
}

func keyedCreate(t testing.TB, l *fsmtest.Local, i int) {
	t.Helper()
	mustApply(t, l, log.Command{Type: nodes.CmdCreate, Version: 1, IdemScope: "s", IdemKey: fmt.Sprintf("k%d", i),
		Payload: log.MustMarshal(nodes.CreateCommand{NodeID: fmt.Sprintf("n%d", i)})})
}

// Without a single tick, writes keep the feed at its retention and the
// ledger within its cap and its retention; the state stays the one a
// replay of the same log gives.
func TestRetentionKeepsUpWithAnyWriteRate(t *testing.T) {
	capped := fsm.Retention{IdemRetentionMs: 60_000, FeedRetain: 100, LedgerMaxRows: 2000}
	l := retentionLocal(t, capped)
	for i := range 5000 {
		l.Advance(10 * time.Millisecond) // 100 writes/s: 6,000 a minute, above the cap
		keyedCreate(t, l, i)
	}
	s := l.FSM.RetentionStats()
	if s.FeedRows != capped.FeedRetain || s.LedgerRows != capped.LedgerMaxRows || s.LedgerEvicted != 5000-capped.LedgerMaxRows {
		t.Fatalf("capped: %+v, want %d events, %d ledger rows, %d evicted", s, capped.FeedRetain, capped.LedgerMaxRows, 5000-capped.LedgerMaxRows)
	}

	// A shorter retention than the cap: the window is what binds. The
	// first tick with it is backlogged and says so.
	timed := fsm.Retention{IdemRetentionMs: 5_000, FeedRetain: 100, LedgerMaxRows: 100_000}
	if res := retick(t, l, timed, 128); !res.Backlog || res.IdemPruned != 128 {
		t.Fatalf("tick into a backlog: %+v", res)
	}
	for res := retick(t, l, timed, 4096); res.Backlog; res = retick(t, l, timed, 4096) {
	}
	for i := 5000; i < 8000; i++ {
		l.Advance(10 * time.Millisecond)
		keyedCreate(t, l, i)
	}
	s = l.FSM.RetentionStats()
	if window := uint64(timed.IdemRetentionMs / 10); s.LedgerRows < window-2 || s.LedgerRows > window+2 {
		t.Fatalf("ledger of %d rows, want about %d (5 s of writes)", s.LedgerRows, window)
	}
	if age := s.FSMNow - s.LedgerOldestMs; age > timed.IdemRetentionMs+20 {
		t.Fatalf("oldest ledger row is %d ms old, retention is %d", age, timed.IdemRetentionMs)
	}

	// The same log, replayed in batches, gives the same state; so does a
	// snapshot of it.
	replica := newFSM(t)
	entries := l.Log()
	for len(entries) > 0 {
		n := min(len(entries), 97)
		replica.ApplyBatch(entries[:n])
		entries = entries[n:]
	}
	fsmtest.AssertSameState(t, l.FSM, replica)
	fsmtest.AssertSameState(t, l.FSM, fsmtest.RestoreFresh(t, fsmtest.Snapshot(t, l.FSM), nodes.Module()))
}

// A tick of version 1 leaves commands as they were: no pruning but the
// tick's own page (the behaviour a log from before version 2 replays
// with).
func TestTickV1LeavesRetentionToTicks(t *testing.T) {
	l := newLocal(t)
	mustApply(t, l, log.Command{Type: fsm.CmdTick, Version: 1, Payload: log.MustMarshal(tick(1000, 16, 1))})
	for i := range 100 {
		keyedCreate(t, l, i)
	}
	if s := l.FSM.RetentionStats(); s.FeedRows != 100 || s.LedgerRows != 100 {
		t.Fatalf("after 100 writes: %+v, want every row kept until a tick", s)
	}
	bad, _ := l.Propose(bg, log.Command{Type: fsm.CmdTick, Version: 1, Payload: log.MustMarshal(fsm.Tick{IdemRetentionMs: 1000, FeedRetain: 16, Budget: 1, LedgerMaxRows: 5000})})
	if bad.Err == nil {
		t.Fatal("a version 1 tick with ledger_max_rows was accepted")
	}
}

// BenchmarkSustainedKeyedWrites applies keyed creates at 1,000 writes per
// second of FSM time with no tick at all, as under a load that outruns
// the ticks, and reports the largest ledger and feed seen: they stay at
// their bounds however many writes run (compare -benchtime 10000x and
// 1000000x).
func BenchmarkSustainedKeyedWrites(b *testing.B) {
	r := fsm.Retention{IdemRetentionMs: 60_000, FeedRetain: 10_000, LedgerMaxRows: 250_000}
	l := retentionLocal(b, r)
	var maxLedger, maxFeed uint64
	b.ResetTimer()
	for i := range b.N {
		l.Advance(time.Millisecond)
		keyedCreate(b, l, i)
		if i%1000 == 0 {
			s := l.FSM.RetentionStats()
			maxLedger, maxFeed = max(maxLedger, s.LedgerRows), max(maxFeed, s.FeedRows)
		}
	}
	b.ReportMetric(float64(maxLedger), "max-ledger-rows")
	b.ReportMetric(float64(maxFeed), "max-feed-rows")
}

// The content hash moves with what commands write, not with the index or
// the clock: a refused command and an idle tick leave it, a create moves
// it. (The state hash moves with each of them.)
func TestContentHashIgnoresIndexAndClock(t *testing.T) {
	l := newLocal(t)
	content := func() [32]byte {
		h, err := l.FSM.ContentHash()
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	keyedCreate(t, l, 1)
	c0 := content()
	_, s0, _ := l.FSM.StateHash()
	l.Advance(time.Second)
	if res, _ := l.Propose(bg, log.Command{Type: nodes.CmdCreate, Version: 1, Payload: log.MustMarshal(nodes.CreateCommand{NodeID: ""})}); res.Err == nil {
		t.Fatal("a create without an id was accepted")
	}
	mustApply(t, l, log.Command{Type: fsm.CmdTick, Version: 1, Payload: log.MustMarshal(tick(86_400_000, 1000, 16))})
	if _, s1, _ := l.FSM.StateHash(); s1 == s0 {
		t.Fatal("the state hash did not move with the index and the clock")
	}
	if content() != c0 {
		t.Fatal("a refused command and an idle tick changed the content hash")
	}
	keyedCreate(t, l, 2)
	if content() == c0 {
		t.Fatal("a create did not change the content hash")
	}
}
