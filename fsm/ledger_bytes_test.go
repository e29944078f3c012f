package fsm_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
)

func tickV3(t testing.TB, l *fsmtest.Local, r fsm.Retention, budget int) fsm.TickResult {
	t.Helper()
	res := mustApply(t, l, log.Command{Type: fsm.CmdTick, Version: 3, Payload: log.MustMarshal(fsm.Tick{
		IdemRetentionMs: r.IdemRetentionMs, FeedRetain: r.FeedRetain, LedgerMaxRows: r.LedgerMaxRows,
		LedgerMaxBytes: r.LedgerMaxBytes, Budget: budget})})
	var out fsm.TickResult
	if err := log.Unmarshal(res.Result, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// bigCreate is a keyed create whose result (the node, with a 4 KB
// property) makes a ledger row of about 4 KB.
func bigCreate(t testing.TB, l *fsmtest.Local, i int) {
	t.Helper()
	value, _ := json.Marshal(strings.Repeat("v", 4000))
	mustApply(t, l, log.Command{Type: nodes.CmdCreate, Version: 1, IdemScope: "s", IdemKey: fmt.Sprintf("k%d", i),
		Payload: log.MustMarshal(nodes.CreateCommand{NodeID: fmt.Sprintf("n%d", i), Properties: map[string]json.RawMessage{"v": value}})})
}

// A ledger whose rows hold large results stays within its byte cap (a
// tick of version 3) by evicting its oldest rows, though far below its
// row cap; the count of its bytes is the one a restore makes from the
// rows, and the same log replays to the same state.
func TestLedgerByteCapBoundsLargeResults(t *testing.T) {
	r := fsm.Retention{IdemRetentionMs: 3_600_000, FeedRetain: 100, LedgerMaxRows: 100_000, LedgerMaxBytes: fsm.MinLedgerBytes}
	l := retentionLocal(t, r)
	tickV3(t, l, r, 1)
	const writes = 1000 // about 4 MB of results, four times the cap
	for i := range writes {
		bigCreate(t, l, i)
	}
	s := l.FSM.RetentionStats()
	if s.LedgerBytes > r.LedgerMaxBytes || s.LedgerBytes < r.LedgerMaxBytes*3/4 {
		t.Fatalf("ledger of %d bytes, want just under the cap of %d", s.LedgerBytes, r.LedgerMaxBytes)
	}
	if s.LedgerRows >= writes/2 || s.LedgerEvicted != writes-s.LedgerRows {
		t.Fatalf("%d rows, %d evicted after %d writes: want most evicted, every one counted", s.LedgerRows, s.LedgerEvicted, writes)
	}
	restored := fsmtest.RestoreFresh(t, fsmtest.Snapshot(t, l.FSM), nodes.Module())
	if got := restored.RetentionStats(); got.LedgerBytes != s.LedgerBytes || got.LedgerRows != s.LedgerRows {
		t.Fatalf("restored: %d bytes in %d rows, want %d in %d (the count kept as rows came and went)", got.LedgerBytes, got.LedgerRows, s.LedgerBytes, s.LedgerRows)
	}
	replica := newFSM(t)
	replica.ApplyBatch(l.Log())
	fsmtest.AssertSameState(t, l.FSM, replica)
}

// Below version 3 nothing counts bytes (the state is the one an older
// version makes); the first tick with a byte cap counts the rows there
// are, and evicts the oldest down to it within its budget, saying so
// while it could not finish.
func TestFirstByteCapCountsTheLedgerThere(t *testing.T) {
	r := fsm.Retention{IdemRetentionMs: 3_600_000, FeedRetain: 100, LedgerMaxRows: 100_000}
	l := retentionLocal(t, r)
	for i := range 600 { // about 2.4 MB
		bigCreate(t, l, i)
	}
	if s := l.FSM.RetentionStats(); s.LedgerBytes != 0 || s.LedgerRows != 600 {
		t.Fatalf("before a byte cap: %+v, want 600 rows and no bytes counted", s)
	}
	r.LedgerMaxBytes = fsm.MinLedgerBytes
	res := tickV3(t, l, r, 64)
	if !res.Backlog || res.LedgerEvicted != 64 {
		t.Fatalf("first capped tick: %+v, want 64 evicted and a backlog", res)
	}
	for res.Backlog {
		res = tickV3(t, l, r, 64)
	}
	s := l.FSM.RetentionStats()
	if s.LedgerBytes > r.LedgerMaxBytes || s.LedgerRows+s.LedgerEvicted != 600 {
		t.Fatalf("after the backlog: %+v, want at most %d bytes and every row kept or evicted", s, r.LedgerMaxBytes)
	}
	if got := fsmtest.RestoreFresh(t, fsmtest.Snapshot(t, l.FSM), nodes.Module()).RetentionStats(); got.LedgerBytes != s.LedgerBytes {
		t.Fatalf("restored count %d, want %d", got.LedgerBytes, s.LedgerBytes)
	}
	// Back to version 2 (a voter without it rejoined): bytes are not
	// counted, and the count is dropped rather than left to go stale.
	r.LedgerMaxBytes = 0
	retick(t, l, r, 1)
	if s := l.FSM.RetentionStats(); s.LedgerBytes != 0 {
		t.Fatalf("after a tick of version 2: %d bytes counted, want none", s.LedgerBytes)
	}
}

// A byte cap needs version 3 and lies within its bounds.
func TestTickByteCapBounds(t *testing.T) {
	l := retentionLocal(t, fsm.Retention{IdemRetentionMs: 60_000, FeedRetain: 100, LedgerMaxRows: 2000})
	for _, c := range []struct {
		version uint16
		bytes   uint64
	}{{2, fsm.MinLedgerBytes}, {3, 0}, {3, fsm.MinLedgerBytes - 1}, {3, fsm.MaxLedgerBytes + 1}} {
		res, err := l.Propose(bg, log.Command{Type: fsm.CmdTick, Version: c.version, Payload: log.MustMarshal(fsm.Tick{
			IdemRetentionMs: 60_000, FeedRetain: 100, LedgerMaxRows: 2000, LedgerMaxBytes: c.bytes, Budget: 1})})
		if err != nil || errs.CodeOf(res.Err) != errs.CodeInvalid {
			t.Errorf("tick v%d with ledger_max_bytes %d: %v %v, want invalid", c.version, c.bytes, err, res.Err)
		}
	}
}

// When large answers follow small ones, each keyed write evicts as many
// of the oldest small rows as its own row needs: the ledger stays within
// its cap plus one row at every step, not above it until ticks catch up.
func TestLedgerByteCapHoldsWhenLargeFollowSmall(t *testing.T) {
	r := fsm.Retention{IdemRetentionMs: 3_600_000, FeedRetain: 100, LedgerMaxRows: 100_000, LedgerMaxBytes: fsm.MinLedgerBytes}
	l := retentionLocal(t, r)
	tickV3(t, l, r, 1)
	for i := range 6000 { // small rows, over the cap by the end
		keyedCreate(t, l, i)
	}
	if s := l.FSM.RetentionStats(); s.LedgerBytes > r.LedgerMaxBytes || s.LedgerBytes < r.LedgerMaxBytes*9/10 {
		t.Fatalf("after the small writes: %d bytes, want just under %d", s.LedgerBytes, r.LedgerMaxBytes)
	}
	for i := range 100 {
		bigCreate(t, l, 10_000+i)
		if s := l.FSM.RetentionStats(); s.LedgerBytes > r.LedgerMaxBytes+5000 {
			t.Fatalf("after large write %d: %d bytes, over the cap of %d by more than a row", i, s.LedgerBytes, r.LedgerMaxBytes)
		}
	}
}
