package fsm_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/google/go-cmp/cmp"
)

func changes(t *testing.T, r fsm.Reader, after uint64, limit int) (*fsm.ChangesPage, error) {
	t.Helper()
	var page fsm.ChangesPage
	if err := fsm.Ask(bg, r, fsm.QueryChanges, true, fsm.ChangesRequest{After: after, Limit: limit}, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

func mustChanges(t *testing.T, r fsm.Reader, after uint64, limit int) *fsm.ChangesPage {
	t.Helper()
	page, err := changes(t, r, after, limit)
	if err != nil {
		t.Fatalf("changes after %d, limit %d: %v", after, limit, err)
	}
	return page
}

// createMany creates n nodes with ids prefix0..; n change events.
func createMany(t *testing.T, l *fsmtest.Local, prefix string, n int) {
	t.Helper()
	for i := range n {
		createNode(t, l, "", fmt.Sprintf("%s%04d", prefix, i), nil, nil)
	}
}

// TestChangesFeedOrderAndPaging: only committed mutations append events,
// numbered 1, 2, ... with the index and FSM time of their command; paging
// with any limit returns each event exactly once, in order.
func TestChangesFeedOrderAndPaging(t *testing.T) {
	l := newLocal(t)
	var want []fsm.Event
	// step proposes one command one millisecond after the previous one and
	// expects the events it names.
	step := func(typ log.Type, key string, payload any, events ...string) {
		t.Helper()
		l.Advance(time.Millisecond)
		res := propose(t, l, typ, key, payload)
		for i := 0; i+1 < len(events); i += 2 {
			want = append(want, fsm.Event{Seq: uint64(len(want) + 1), Index: res.Index, Time: res.Time, Kind: events[i], Key: events[i+1]})
		}
	}
	create := func(id string) nodes.CreateCommand { return nodes.CreateCommand{NodeID: id} }
	step(nodes.CmdCreate, "", create("a"), "node_create", "a")
	step(nodes.CmdCreate, "", create("a"))                                                           // exists: no event
	step(nodes.CmdCAS, "", nodes.CASCommand{NodeID: "a", Updates: props("f", "1")}, "node_cas", "a") // swapped
	step(nodes.CmdCAS, "", nodes.CASCommand{NodeID: "a", Conditions: props("f", "2"), Updates: props("f", "3")})
	step(nodes.CmdCAS, "", nodes.CASCommand{NodeID: "zz", Updates: props("f", "1")}) // not found
	step(nodes.CmdCreate, "k", create("b"), "node_create", "b")
	step(nodes.CmdCreate, "k", create("b")) // replayed
	step(nodes.CmdCreate, "k", create("c")) // idempotency conflict
	step(fsm.CmdMemberUpsert, "", fsm.Member{ID: "n1", RaftAddr: "r", APIAddr: "h"}, "member_upsert", "n1")
	step(fsm.CmdMemberRemove, "", fsm.Member{ID: "n1"}, "member_remove", "n1")
	step(fsm.CmdTick, "", tick(1000, 16, 10)) // ticks prune; they emit nothing
	l.ApplyRaw([]byte{0xA1, 0xff})            // refused entry
	for _, id := range []string{"d", "e", "f", "g", "h", "i", "j"} {
		step(nodes.CmdCreate, "", create(id), "node_create", id)
	}
	n := uint64(len(want))

	all := mustChanges(t, l, 0, 0)
	if diff := cmp.Diff(want, all.Events); diff != "" {
		t.Fatalf("feed (-want +got):\n%s", diff)
	}
	if all.Next != n || all.LastSeq != n {
		t.Fatalf("next %d, last %d; want %d and %d", all.Next, all.LastSeq, n, n)
	}

	for _, limit := range []int{1, 2, 3, int(n) - 1, int(n), int(n) + 1} {
		var got []fsm.Event
		after := uint64(0)
		for pages := 1; ; pages++ {
			if pages > int(n)+1 {
				t.Fatalf("limit %d: paging does not end", limit)
			}
			page := mustChanges(t, l, after, limit)
			if len(page.Events) > limit {
				t.Fatalf("limit %d: page of %d", limit, len(page.Events))
			}
			if page.LastSeq != n {
				t.Fatalf("limit %d: last seq %d, want %d", limit, page.LastSeq, n)
			}
			if len(page.Events) == 0 {
				if page.Next != after {
					t.Fatalf("empty page moved the cursor from %d to %d", after, page.Next)
				}
				break
			}
			if page.Next != page.Events[len(page.Events)-1].Seq || page.Next <= after {
				t.Fatalf("limit %d: cursor %d after a page ending at %d (from %d)", limit, page.Next, page.Events[len(page.Events)-1].Seq, after)
			}
			got = append(got, page.Events...)
			after = page.Next
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("limit %d: paged feed (-want +got):\n%s", limit, diff)
		}
	}
}

func TestChangesLimitBounds(t *testing.T) {
	l := newLocal(t)
	total := fsm.MaxChangesPage + 6
	createMany(t, l, "n", total)
	last := uint64(total)
	cases := []struct {
		name  string
		after uint64
		limit int
		want  int // events, or -1 for invalid
	}{
		{"negative limit", 0, -1, -1},
		{"over the bound", 0, fsm.MaxChangesPage + 1, -1},
		{"far over the bound", 0, 1 << 30, -1},
		{"zero means the bound", 0, 0, fsm.MaxChangesPage},
		{"the bound", 0, fsm.MaxChangesPage, fsm.MaxChangesPage},
		{"one", 0, 1, 1},
		{"tail", last - 3, 0, 3},
		{"at the end", last, 0, 0},
		{"cursor ahead of the feed", last + 1, 0, -1},
		{"cursor at the top of uint64", 1<<64 - 1, 0, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			page, err := changes(t, l, tc.after, tc.limit)
			if tc.want < 0 {
				if !errors.Is(err, errs.Invalid) {
					t.Fatalf("after %d limit %d: %v, want invalid", tc.after, tc.limit, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Events) != tc.want {
				t.Fatalf("%d events, want %d", len(page.Events), tc.want)
			}
			for i, e := range page.Events {
				if e.Seq != tc.after+1+uint64(i) {
					t.Fatalf("event %d has seq %d, want %d", i, e.Seq, tc.after+1+uint64(i))
				}
			}
		})
	}
}

// TestChangesPruning: a tick keeps the newest FeedRetain events, deleting at
// most Budget per tick; a cursor before the oldest retained event is
// cursor_expired, never a silent gap; sequences are never reused, across a
// snapshot and restore too.
func TestChangesPruning(t *testing.T) {
	l := newLocal(t)
	createMany(t, l, "n", 40)
	pruneTick := func(retain uint64, budget int) fsm.TickResult {
		t.Helper()
		var tr fsm.TickResult
		decode(t, proposeOK(t, l, fsm.CmdTick, "", tick(1000, retain, budget)).Result, &tr)
		return tr
	}

	if res := propose(t, l, fsm.CmdTick, "", tick(1000, fsm.MinFeedRetain-1, 100)); !errors.Is(errOf(res), errs.Invalid) {
		t.Fatalf("feed_retain under the minimum: %+v", res)
	}
	if page := mustChanges(t, l, 0, 0); len(page.Events) != 40 {
		t.Fatalf("a refused tick pruned: %d events left", len(page.Events))
	}

	if tr := pruneTick(16, 5); tr.FeedPruned != 5 {
		t.Fatalf("budget 5 pruned %d", tr.FeedPruned)
	}
	// Events 1..5 are gone: a cursor at 5 still reads on from 6.
	if page := mustChanges(t, l, 5, 1); page.Events[0].Seq != 6 {
		t.Fatalf("after 5: first event %d", page.Events[0].Seq)
	}
	for _, after := range []uint64{0, 4} {
		if _, err := changes(t, l, after, 0); !errors.Is(err, errs.CursorExpired) {
			t.Fatalf("cursor %d after pruning 1..5: %v, want cursor_expired", after, err)
		}
	}

	if tr := pruneTick(16, fsm.MaxTickBudget); tr.FeedPruned != 40-16-5 {
		t.Fatalf("second tick pruned %d, want %d", tr.FeedPruned, 40-16-5)
	}
	if tr := pruneTick(16, fsm.MaxTickBudget); tr.FeedPruned != 0 {
		t.Fatalf("a tick with nothing over retention pruned %d", tr.FeedPruned)
	}
	if _, err := changes(t, l, 23, 0); !errors.Is(err, errs.CursorExpired) {
		t.Fatalf("cursor 23, oldest 25: %v, want cursor_expired", err)
	}
	page := mustChanges(t, l, 24, 0)
	if len(page.Events) != 16 || page.Events[0].Seq != 25 || page.LastSeq != 40 {
		t.Fatalf("retained feed: %d events from %d, last %d", len(page.Events), page.Events[0].Seq, page.LastSeq)
	}

	// Sequences continue after pruning, and after a restore.
	restored := fsmReader{restoreFresh(t, fsmtest.Snapshot(t, l.FSM))}
	if diff := cmp.Diff(page, mustChanges(t, restored, 24, 0)); diff != "" {
		t.Fatalf("restored feed differs:\n%s", diff)
	}
	if _, err := changes(t, restored, 23, 0); !errors.Is(err, errs.CursorExpired) {
		t.Fatalf("restored feed: cursor 23: %v, want cursor_expired", err)
	}
	l.FSM = restored.f
	createNode(t, l, "", "after-restore", nil, nil)
	if page := mustChanges(t, l, 40, 0); len(page.Events) != 1 || page.Events[0].Seq != 41 || page.Events[0].Key != "after-restore" {
		t.Fatalf("event after pruning and restore: %+v", page.Events)
	}
}

// TestLedgerRetention: a keyed result replays until a tick finds its row at
// least IdemRetentionMs old; then the same key runs as a new command
// (created=false the second time, not replayed) and another request may
// use it. Ticks prune at most Budget rows, oldest first.
func TestLedgerRetention(t *testing.T) {
	l := newLocal(t)
	nc := nodes.On(l)
	const retention = 1000
	req := nodes.CreateRequest{NodeID: "n", IdempotencyKey: "key"}
	pruneTick := func() int {
		t.Helper()
		var tr fsm.TickResult
		decode(t, proposeOK(t, l, fsm.CmdTick, "", tick(retention, 1000, fsm.MaxTickBudget)).Result, &tr)
		return tr.IdemPruned
	}

	first, err := nc.CreateIfAbsent(bg, req)
	if err != nil || !first.Created || first.Replayed {
		t.Fatalf("first: %+v, %v", first, err)
	}
	l.Advance((retention - 1) * time.Millisecond)
	if n := pruneTick(); n != 0 {
		t.Fatalf("a row %d ms old was pruned with retention %d", retention-1, retention)
	}
	replay, err := nc.CreateIfAbsent(bg, req)
	if err != nil || !replay.Created || !replay.Replayed {
		t.Fatalf("replay within retention: %+v, %v", replay, err)
	}
	if _, err := nc.CreateIfAbsent(bg, nodes.CreateRequest{NodeID: "other", IdempotencyKey: "key"}); !errors.Is(err, errs.IdempotencyConflict) {
		t.Fatalf("other request within retention: %v", err)
	}

	l.Advance(time.Millisecond)
	if n := pruneTick(); n != 1 {
		t.Fatalf("tick at retention pruned %d rows, want 1", n)
	}
	again, err := nc.CreateIfAbsent(bg, req)
	if err != nil || again.Created || again.Replayed {
		t.Fatalf("same key after retention: %+v, %v; want a fresh run (created=false, not replayed)", again, err)
	}
	if again.Node.CreatedIndex != first.Node.CreatedIndex {
		t.Fatalf("the fresh run saw node created at %d, want %d", again.Node.CreatedIndex, first.Node.CreatedIndex)
	}
	// The fresh run recorded its own row: the key now replays it.
	if replay, err := nc.CreateIfAbsent(bg, req); err != nil || replay.Created || !replay.Replayed {
		t.Fatalf("replay of the fresh run: %+v, %v", replay, err)
	}

	// Budget: three rows of increasing age; a budget of 2 takes the two
	// oldest, so only the newest still replays.
	l2 := newLocal(t)
	keyed := nodes.On(l2)
	for _, k := range []string{"k1", "k2", "k3"} {
		if _, err := keyed.CreateIfAbsent(bg, nodes.CreateRequest{NodeID: k, IdempotencyKey: k}); err != nil {
			t.Fatal(err)
		}
		l2.Advance(10 * time.Millisecond)
	}
	l2.Advance(retention * time.Millisecond)
	var tr fsm.TickResult
	decode(t, proposeOK(t, l2, fsm.CmdTick, "", tick(retention, 1000, 2)).Result, &tr)
	if tr.IdemPruned != 2 {
		t.Fatalf("budget 2 pruned %d", tr.IdemPruned)
	}
	for k, replayed := range map[string]bool{"k1": false, "k2": false, "k3": true} {
		res, err := keyed.CreateIfAbsent(bg, nodes.CreateRequest{NodeID: k, IdempotencyKey: k})
		if err != nil || res.Replayed != replayed {
			t.Fatalf("%s after a budget-2 tick: %+v, %v; want replayed=%v", k, res, err, replayed)
		}
	}
}
