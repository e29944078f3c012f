package allocation_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/allocation"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/google/go-cmp/cmp"
)

// The tests of issue 40, items 14-19. Each runs at the versions this
// binary serves (newCurrent: the cluster has enabled them) and, where the
// behaviour changed, shows that a state still at version 1 (a log
// written before) keeps the old answer.

// newCurrent is a bare FSM whose enabled set is this binary's, with the
// fixture's space put with modes result and draft.
func newCurrent(t *testing.T) (*fsmtest.Local, *allocation.Service, fixture) {
	t.Helper()
	l, s, f := newFixtureService(t)
	if err := l.Enable(fsm.ServedBy(allocation.Module())); err != nil {
		t.Fatal(err)
	}
	putModes(t, s, f, "result", "draft")
	return l, s, f
}

// newV1 is the same space in a state still at version 1 (ungated).
func newV1(t *testing.T) (*fsmtest.Local, *allocation.Service, fixture) {
	t.Helper()
	l, s, f := newFixtureService(t)
	putModes(t, s, f, "result", "draft")
	return l, s, f
}

func putModes(t *testing.T, s *allocation.Service, f fixture, modes ...string) {
	t.Helper()
	if _, err := s.PutSpace(context.Background(), f.Space, allocation.PutSpaceRequest{Catalog: f.Catalog, DeliveryModes: modes}); err != nil {
		t.Fatal(err)
	}
}

// Item 15: an Idempotency-Key retry of a successful create is its
// original 201 body even after the space dropped the delivery mode the
// create used (the key is looked up before the key is formed); likewise
// a window proposal's idempotency_key, a reservation's proposal_id and a
// note's Idempotency-Key. At version 1 the retry stays the 422 it was.
func TestRetryAfterModeDropped(t *testing.T) {
	ctx := context.Background()
	l, s, f := newCurrent(t)
	req := allocation.CreateTaskRequest{Title: f.Titles[0].Title, DeliveryMode: "draft", IdempotencyKey: "k1"}
	first, err := s.CreateTask(ctx, f.Space, req)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Reserve(ctx, f.Space, allocation.ReserveRequest{ProposalID: "p1", Title: f.Titles[4].Title, DeliveryMode: "draft"})
	if err != nil {
		t.Fatal(err)
	}
	nreq := allocation.NoteRequest{Kind: allocation.KindPostReviewNote, Body: "b", DeliveryMode: "draft", IdempotencyKey: "n1"}
	note, err := s.PostNote(ctx, f.Space, first.Task.ID, nreq)
	if err != nil {
		t.Fatal(err)
	}
	putModes(t, s, f, "result")
	before := readDigest(t, l)
	again, err := s.CreateTask(ctx, f.Space, req)
	if err != nil || !again.Replayed || !cmp.Equal(again.Task, first.Task) {
		t.Fatalf("create retry after the mode was dropped: %+v %v; want the original %+v", again, err, first.Task)
	}
	res, err := s.Window(ctx, f.Space, allocation.WindowRequest{Proposals: []allocation.Proposal{
		{ProposalID: "x", Title: req.Title, DeliveryMode: "draft", IdempotencyKey: "k1"}}})
	if err != nil || res.Results[0].Status != 201 || !res.Results[0].Replayed || !cmp.Equal(*res.Results[0].Task, first.Task) {
		t.Fatalf("window retry: %+v %v", res, err)
	}
	r2, err := s.Reserve(ctx, f.Space, allocation.ReserveRequest{ProposalID: "p1", Title: f.Titles[4].Title, DeliveryMode: "draft"})
	if err != nil || !r2.Replayed || !cmp.Equal(r2.Reservation, r.Reservation) {
		t.Fatalf("reserve retry: %+v %v", r2, err)
	}
	n2, err := s.PostNote(ctx, f.Space, first.Task.ID, nreq)
	if err != nil || !n2.Replayed || !cmp.Equal(n2.Note, note.Note) {
		t.Fatalf("note retry: %+v %v", n2, err)
	}
	if readDigest(t, l) != before {
		t.Fatal("a replay changed the allocation tables")
	}
	// Another request under the key is still idempotency_conflict, and a
	// new request in the dropped mode still 422.
	other := req
	other.Title = f.Titles[1].Title
	if _, err := s.CreateTask(ctx, f.Space, other); !errors.Is(err, errs.IdempotencyConflict) {
		t.Fatalf("another request under the key: %v", err)
	}
	fresh := req
	fresh.IdempotencyKey = "k2"
	if _, err := s.CreateTask(ctx, f.Space, fresh); !errors.Is(err, errs.Invalid) {
		t.Fatalf("a new create in a dropped mode: %v, want 422", err)
	}

	// Version 1 (a log written before): the retry is the 422 it was.
	_, s1, _ := newV1(t)
	if _, err := s1.CreateTask(ctx, f.Space, req); err != nil {
		t.Fatal(err)
	}
	putModes(t, s1, f, "result")
	if _, err := s1.CreateTask(ctx, f.Space, req); !errors.Is(err, errs.Invalid) {
		t.Fatalf("version 1 retry: %v, want the old 422", err)
	}
}

// readDigest hashes the allocation tables of l's state.
func readDigest(t *testing.T, l *fsmtest.Local) [32]byte {
	t.Helper()
	s := fsmtest.ReadStored(t, l.FSM)
	return s.Digest(func(n string) bool { return len(n) > 11 && n[:11] == "allocation_" })
}

// Item 19: control characters separate words of a title as white space
// does (U+001C-U+001F too), a title without a visible character forms
// no key (422), and at version 1 both stay as they were.
func TestTitleControlCharacters(t *testing.T) {
	ctx := context.Background()
	_, s, f := newCurrent(t)
	bind := func(s *allocation.Service, title string) (string, error) {
		res, err := s.Bind(ctx, f.Space, allocation.BindRequest{Title: title}, 0)
		if err != nil {
			return "", err
		}
		return res.Target, nil
	}
	for _, title := range []string{"a\x1fb", "a\x1cb", "A\x1d\x1eB", "a\x00b", "\x7fa b\u0085", "a\tb"} {
		if got, err := bind(s, title); err != nil || got != "task:"+f.Space+":a b" {
			t.Errorf("%q: target %q %v, want task:%s:a b", title, got, err, f.Space)
		}
	}
	first, err := s.CreateTask(ctx, f.Space, allocation.CreateTaskRequest{Title: "a b", DeliveryMode: "result"})
	if err != nil {
		t.Fatal(err)
	}
	c := asConflict(t, "a\\x1fb after a b", func() error {
		_, err := s.CreateTask(ctx, f.Space, allocation.CreateTaskRequest{Title: "a\x1fb", DeliveryMode: "result"})
		return err
	}())
	if c.Winner.ID.Num != first.Task.ID {
		t.Fatalf("409 names %+v", c.Winner)
	}
	for _, title := range []string{"\u0000", "\x1f", " \x1c\t", "\u200b", "\u00ad\u200d", "\ufeff"} {
		if _, err := bind(s, title); !errors.Is(err, errs.Invalid) {
			t.Errorf("bind %q: %v, want 422", title, err)
		}
		res, err := s.Window(ctx, f.Space, allocation.WindowRequest{Proposals: []allocation.Proposal{{ProposalID: "p", Title: title, DeliveryMode: "result"}}})
		if err != nil || res.Results[0].Status != 422 {
			t.Errorf("window proposal %q: %+v %v, want its 422", title, res, err)
		}
	}
	// Version 1: "a\x1fb" is one token of the title fallback, and a NUL
	// title forms a key.
	_, s1, _ := newV1(t)
	if got, err := bind(s1, "a\x1fb"); err != nil || got != "task:"+f.Space+":a\x1fb" {
		t.Fatalf("version 1 target %q %v", got, err)
	}
	res, err := s1.Window(ctx, f.Space, allocation.WindowRequest{Proposals: []allocation.Proposal{{ProposalID: "p", Title: "\u0000", DeliveryMode: "result"}}})
	if err != nil || res.Results[0].Status != 201 {
		t.Fatalf("version 1 NUL title: %+v %v", res, err)
	}
}

// Item 19: a work_item_id the catalog does not list is 422 with reason
// unknown_work_item (create, window proposal, reserve, bind), unless the
// space takes ad-hoc slots; version 1 made a slot of it.
func TestUnknownWorkItem(t *testing.T) {
	ctx := context.Background()
	_, s, f := newCurrent(t)
	unknown := func(what string, err error) {
		t.Helper()
		var e *errs.Error
		if !errors.As(err, &e) || e.Code != errs.CodeInvalid || e.Detail["reason"] != allocation.ReasonUnknownWorkItem || e.Detail["work_item_id"] != "T9" {
			t.Fatalf("%s: %#v, want 422 reason unknown_work_item", what, err)
		}
	}
	_, err := s.CreateTask(ctx, f.Space, allocation.CreateTaskRequest{Title: "typo", DeliveryMode: "result", WorkItemID: ptr("t09")})
	unknown("create", err)
	_, err = s.Reserve(ctx, f.Space, allocation.ReserveRequest{ProposalID: "p", Title: "typo", DeliveryMode: "result", WorkItemID: ptr("T9")})
	unknown("reserve", err)
	_, err = s.Bind(ctx, f.Space, allocation.BindRequest{Title: "typo", WorkItemID: ptr("T9")}, 0)
	unknown("bind", err)
	res, err := s.Window(ctx, f.Space, allocation.WindowRequest{Proposals: []allocation.Proposal{{ProposalID: "p", Title: "typo", DeliveryMode: "result", WorkItemID: ptr("T9")}}})
	if err != nil || res.Results[0].Status != 422 {
		t.Fatalf("window: %+v %v", res, err)
	}
	unknown("window proposal", res.Results[0].Error)
	if got, err := s.CreateTask(ctx, f.Space, allocation.CreateTaskRequest{Title: "listed", DeliveryMode: "result", WorkItemID: ptr("T3")}); err != nil || got.Task.ConflictKey.Target != "task:"+f.Space+":slot:T3" {
		t.Fatalf("a listed work item: %+v %v", got, err)
	}
	// A space that takes ad-hoc slots makes a slot of it.
	if _, err := s.PutSpace(ctx, f.Space, allocation.PutSpaceRequest{Catalog: f.Catalog, AdHocSlots: true}); err != nil {
		t.Fatal(err)
	}
	if sp, err := s.GetSpace(ctx, f.Space, 0); err != nil || !sp.Space.AdHocSlots {
		t.Fatalf("space: %+v %v", sp, err)
	}
	if got, err := s.CreateTask(ctx, f.Space, allocation.CreateTaskRequest{Title: "typo", DeliveryMode: "result", WorkItemID: ptr("T9")}); err != nil || got.Task.ConflictKey.Target != "task:"+f.Space+":slot:T9" {
		t.Fatalf("ad-hoc slot: %+v %v", got, err)
	}
	// Version 1: the slot is made; ad-hoc slots are not a version 1 field.
	_, s1, _ := newV1(t)
	if _, err := s1.CreateTask(ctx, f.Space, allocation.CreateTaskRequest{Title: "typo", DeliveryMode: "result", WorkItemID: ptr("T9")}); err != nil {
		t.Fatalf("version 1: %v", err)
	}
	if _, err := s1.PutSpace(ctx, f.Space, allocation.PutSpaceRequest{Catalog: f.Catalog, AdHocSlots: true}); !errors.Is(err, errs.Invalid) {
		t.Fatalf("version 1 put of adhoc_slots: %v, want 422", err)
	}
}

// Item 17: in a window, a later proposal on a key an earlier proposal of
// the same window took loses with 409 conflict_key_reserved naming that
// proposal (reserved_proposal_id, retry_after_ms 200); a key a task held
// before the window is conflict_key_occupied naming it. Version 1 named
// the task the window had just made.
func TestWindowReservedLosers(t *testing.T) {
	ctx := context.Background()
	_, s, f := newCurrent(t)
	before, err := s.CreateTask(ctx, f.Space, allocation.CreateTaskRequest{Title: "held before", DeliveryMode: "result"})
	if err != nil {
		t.Fatal(err)
	}
	ps := append(windowOf(f, 91, 92, 93, 94, 95, 96, 97), allocation.Proposal{ProposalID: "old", Title: "Held  BEFORE", DeliveryMode: "result"})
	res, err := s.Window(ctx, f.Space, allocation.WindowRequest{Proposals: ps})
	if err != nil {
		t.Fatal(err)
	}
	winners := map[string]string{} // target -> proposal id
	losers := 0
	for _, e := range res.Results {
		switch {
		case e.ProposalID == "old":
			want := allocation.Conflict{Err: "allocation_conflict", Code: "conflict_key_occupied", ConflictKey: &before.Task.ConflictKey,
				Outcome: "redirect", Winner: &allocation.Winner{Type: "task", ID: allocation.NumID(before.Task.ID), Status: "open"}}
			if e.Status != 409 || !cmp.Equal(*e.Conflict, want) {
				t.Fatalf("a proposal on a key held before the window: %d %+v", e.Status, e.Conflict)
			}
		case e.Status == 201:
			if _, dup := winners[e.Task.ConflictKey.Target]; dup {
				t.Fatalf("two creates on %s", e.Task.ConflictKey.Target)
			}
			winners[e.Task.ConflictKey.Target] = e.ProposalID
		case e.Status == 409:
			k := *e.Conflict.ConflictKey
			w, ok := winners[k.Target]
			want := allocation.Conflict{Err: "allocation_conflict", Code: "conflict_key_reserved", ConflictKey: &k, Outcome: "idle",
				Winner: &allocation.Winner{Type: "reserved_intent", ID: allocation.StrID(w)}, ReservedProposalID: w, RetryAfterMs: 200}
			if !ok || !cmp.Equal(*e.Conflict, want) {
				t.Fatalf("in-window loser %s: %+v, want %+v", e.ProposalID, e.Conflict, want)
			}
			losers++
		default:
			t.Fatalf("%s: %d %v", e.ProposalID, e.Status, e.Error)
		}
	}
	if len(winners) != 2 || losers != 5 {
		t.Fatalf("winners %v, %d losers; want one per slot and 5", winners, losers)
	}
	// Version 1 named the task.
	_, s1, _ := newV1(t)
	res, err = s1.Window(ctx, f.Space, allocation.WindowRequest{Proposals: windowOf(f, 91, 92)})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := summarize(res); err != nil {
		t.Fatalf("version 1: %v", err)
	}
}

// create is a create in delivery mode result that must succeed.
func create(t *testing.T, s *allocation.Service, f fixture, title string) allocation.Task {
	t.Helper()
	res, err := s.CreateTask(context.Background(), f.Space, allocation.CreateTaskRequest{Title: title, DeliveryMode: "result"})
	if err != nil {
		t.Fatalf("create %q: %v", title, err)
	}
	return res.Task
}

// loses requires a create of title to be the 409 naming task id in
// status.
func loses(t *testing.T, s *allocation.Service, f fixture, title string, id uint64, status string) {
	t.Helper()
	_, err := s.CreateTask(context.Background(), f.Space, allocation.CreateTaskRequest{Title: title, DeliveryMode: "result"})
	c := asConflict(t, "create "+title, err)
	if c.Code != allocation.CodeKeyOccupied || c.Winner.Type != allocation.WinnerTask || c.Winner.ID.Num != id || c.Winner.Status != status {
		t.Fatalf("create %q: 409 names %+v, want task %d (%s)", title, c.Winner, id, status)
	}
}

func act(t *testing.T, s *allocation.Service, f fixture, id uint64, actions ...string) {
	t.Helper()
	for _, a := range actions {
		if _, err := s.Transition(context.Background(), f.Space, id, allocation.TransitionRequest{Action: a}); err != nil {
			t.Fatalf("%s task %d: %v", a, id, err)
		}
	}
}

func hold(t *testing.T, s *allocation.Service, f fixture, id uint64, on bool) {
	t.Helper()
	if _, err := s.Hold(context.Background(), f.Space, id, allocation.HoldRequest{Hold: on}); err != nil {
		t.Fatalf("hold %d %t: %v", id, on, err)
	}
}

// Item 18: a steward hold keeps a task's key: a create on it is 409
// naming the held task (also once it is done), as its reopen is refused;
// releasing the hold frees the key. Version 1 blocked only the reopen.
func TestHoldBlocksCreate(t *testing.T) {
	ctx := context.Background()
	_, s, f := newCurrent(t)
	a := create(t, s, f, "held work")
	act(t, s, f, a.ID, "claim", "done")
	hold(t, s, f, a.ID, true)
	loses(t, s, f, "Held  work", a.ID, "done")
	if _, err := s.Transition(ctx, f.Space, a.ID, allocation.TransitionRequest{Action: "reopen"}); !errors.Is(err, errs.Conflict) {
		t.Fatalf("reopen under hold: %v", err)
	}
	hold(t, s, f, a.ID, false)
	b := create(t, s, f, "held work")
	// A hold set while the task is live keeps the key through done.
	hold(t, s, f, b.ID, true)
	act(t, s, f, b.ID, "withdraw")
	loses(t, s, f, "held work", b.ID, "withdrawn")
	hold(t, s, f, b.ID, false)
	create(t, s, f, "held work")

	_, s1, _ := newV1(t)
	a = create(t, s1, f, "held work")
	act(t, s1, f, a.ID, "claim", "done")
	hold(t, s1, f, a.ID, true)
	create(t, s1, f, "held work") // version 1: the old 201
}

// Item 16: supersession leaves the superseded task's key occupied by the
// survivor: a create on it is 409 naming the survivor while the survivor
// is live (also when the superseded task had finished); once the
// survivor finishes, the key is free. Version 1 freed it at once.
func TestSupersedeKeepsKeyOnSurvivor(t *testing.T) {
	ctx := context.Background()
	_, s, f := newCurrent(t)
	one := create(t, s, f, "first title")
	two := create(t, s, f, "second title")
	if _, err := s.Supersede(ctx, f.Space, one.ID, allocation.SupersedeRequest{SurvivingTask: two.ID, Reason: "allocation_duplicate"}); err != nil {
		t.Fatal(err)
	}
	loses(t, s, f, "first title", two.ID, "open")
	loses(t, s, f, "second title", two.ID, "open")
	got, err := s.GetTask(ctx, f.Space, two.ID, 0)
	if err != nil || len(got.Task.InheritedKeys) != 1 || got.Task.InheritedKeys[0] != one.ConflictKey {
		t.Fatalf("survivor: %+v %v, want it to inherit %+v", got, err, one.ConflictKey)
	}
	act(t, s, f, two.ID, "claim", "done")
	three := create(t, s, f, "first title")
	create(t, s, f, "second title")
	// A finished task's key passes to a live survivor as well.
	act(t, s, f, three.ID, "withdraw")
	five := create(t, s, f, "fifth")
	if _, err := s.Supersede(ctx, f.Space, three.ID, allocation.SupersedeRequest{SurvivingTask: five.ID, Reason: "allocation_duplicate"}); err != nil {
		t.Fatal(err)
	}
	loses(t, s, f, "first title", five.ID, "open")

	_, s1, _ := newV1(t)
	one = create(t, s1, f, "first title")
	two = create(t, s1, f, "second title")
	if _, err := s1.Supersede(ctx, f.Space, one.ID, allocation.SupersedeRequest{SurvivingTask: two.ID, Reason: "allocation_duplicate"}); err != nil {
		t.Fatal(err)
	}
	create(t, s1, f, "first title") // version 1: the old 201
}

// putCatalog puts the space with catalog and returns the answer.
func putCatalog(t *testing.T, s *allocation.Service, f fixture, catalog []allocation.CatalogRow) *allocation.SpaceResult {
	t.Helper()
	res, err := s.PutSpace(context.Background(), f.Space, allocation.PutSpaceRequest{Catalog: catalog, DeliveryModes: []string{"result", "draft"}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func slot(f fixture, id string) string { return "task:" + f.Space + ":slot:" + id }

// Item 14: a catalog change rebinds the space's live tasks in the same
// command. A task created before the catalog listed its slot takes the
// slot, so a later create of the same title (or a title that binds the
// slot) is 409 naming it; two live tasks that then share a key leave it
// to the earliest, the others are listed as duplicates (in the answer and
// by ListDuplicates) for a steward to supersede, and one takes the key
// when it frees. Renaming the slot moves them all. A retry of the first
// create still answers its original body. Version 1 rebinds nothing.
func TestCatalogChangeRebinds(t *testing.T) {
	ctx := context.Background()
	_, s, f := newCurrent(t)
	putCatalog(t, s, f, nil)
	first, err := s.CreateTask(ctx, f.Space, allocation.CreateTaskRequest{Title: f.Titles[0].Title, DeliveryMode: "result", IdempotencyKey: "k91"})
	if err != nil {
		t.Fatal(err)
	}
	second := create(t, s, f, f.Titles[2].Title) // 93: another title key
	other := create(t, s, f, "unrelated")
	if first.Task.ConflictKey.Target == slot(f, "T1") || second.ConflictKey.Target == first.Task.ConflictKey.Target {
		t.Fatalf("before the catalog: %+v %+v", first.Task, second)
	}
	res := putCatalog(t, s, f, f.Catalog)
	if res.Rebound != 2 || res.Duplicates == nil || len(res.Duplicates.Duplicates) != 1 {
		t.Fatalf("put answer: %+v", res)
	}
	d := res.Duplicates.Duplicates[0]
	want := allocation.Duplicate{TaskID: second.ID, Title: second.Title, Status: "open",
		ConflictKey: allocation.ConflictKey{Kind: "create_task", Target: slot(f, "T1"), DeliveryMode: "result"},
		HeldBy:      allocation.Winner{Type: "task", ID: allocation.NumID(first.Task.ID), Status: "open"}}
	if !cmp.Equal(d, want) {
		t.Fatalf("duplicate %+v, want %+v", d, want)
	}
	page, err := s.ListDuplicates(ctx, f.Space, "", 0, 0)
	if err != nil || len(page.Duplicates) != 1 || !cmp.Equal(page.Duplicates[0], want) {
		t.Fatalf("ListDuplicates: %+v %v", page, err)
	}
	got, err := s.GetTask(ctx, f.Space, first.Task.ID, 0)
	if err != nil || got.Task.ConflictKey.Target != slot(f, "T1") || *got.Task.WorkItemID != "T1" || got.Task.Version != 2 {
		t.Fatalf("rebound task: %+v %v", got, err)
	}
	if o, err := s.GetTask(ctx, f.Space, other.ID, 0); err != nil || o.Task.ConflictKey != other.ConflictKey || o.Task.Version != 1 {
		t.Fatalf("a task the catalog does not bind changed: %+v %v", o, err)
	}
	for _, title := range []string{f.Titles[0].Title, f.Titles[1].Title, f.Titles[3].Title} {
		loses(t, s, f, title, first.Task.ID, "open")
	}
	again, err := s.CreateTask(ctx, f.Space, allocation.CreateTaskRequest{Title: f.Titles[0].Title, DeliveryMode: "result", IdempotencyKey: "k91"})
	if err != nil || !again.Replayed || !cmp.Equal(again.Task, first.Task) {
		t.Fatalf("retry after the rebind: %+v %v, want the original %+v", again, err, first.Task)
	}
	// Renaming the slot moves both; the earliest keeps the key.
	renamed := []allocation.CatalogRow{f.Catalog[1], f.Catalog[0]}
	renamed[1].WorkItemID = "T5"
	res = putCatalog(t, s, f, renamed)
	if res.Rebound != 2 || len(res.Duplicates.Duplicates) != 1 || res.Duplicates.Duplicates[0].ConflictKey.Target != slot(f, "T5") {
		t.Fatalf("rename answer: %+v", res)
	}
	loses(t, s, f, f.Titles[1].Title, first.Task.ID, "open")
	// The holder finishes: the duplicate takes the key.
	act(t, s, f, first.Task.ID, "withdraw")
	loses(t, s, f, f.Titles[1].Title, second.ID, "open")
	if page, err := s.ListDuplicates(ctx, f.Space, "", 0, 0); err != nil || len(page.Duplicates) != 0 {
		t.Fatalf("duplicates after the promotion: %+v %v", page, err)
	}
	// A reopen rebinds too, and finds the key held.
	c := asConflict(t, "reopen", func() error {
		_, err := s.Transition(ctx, f.Space, first.Task.ID, allocation.TransitionRequest{Action: "reopen"})
		return err
	}())
	if c.Winner.ID.Num != second.ID || c.ConflictKey.Target != slot(f, "T5") {
		t.Fatalf("reopen: %+v", c)
	}

	// Version 1: the put rebinds nothing, and the create wins a second
	// task on the slot.
	_, s1, _ := newV1(t)
	putCatalog(t, s1, f, nil)
	create(t, s1, f, f.Titles[0].Title)
	putCatalog(t, s1, f, f.Catalog)
	create(t, s1, f, f.Titles[0].Title)
}

// Item 14 with the earliest rule across keys: a task rebinding onto a
// key a later task holds takes it, and the later one is the duplicate.
func TestRebindEarliestKeepsKey(t *testing.T) {
	ctx := context.Background()
	_, s, f := newCurrent(t)
	putCatalog(t, s, f, f.Catalog[1:]) // T3 only
	early := create(t, s, f, f.Titles[0].Title)
	late, err := s.CreateTask(ctx, f.Space, allocation.CreateTaskRequest{Title: "named", DeliveryMode: "result", WorkItemID: ptr("T3")})
	if err != nil {
		t.Fatal(err)
	}
	cat := []allocation.CatalogRow{f.Catalog[1]}
	cat[0].Aliases = append(cat[0].Aliases, f.Titles[0].Title) // the early title now binds T3
	res := putCatalog(t, s, f, cat)
	if res.Rebound != 1 || len(res.Duplicates.Duplicates) != 1 || res.Duplicates.Duplicates[0].TaskID != late.Task.ID ||
		res.Duplicates.Duplicates[0].HeldBy.ID.Num != early.ID {
		t.Fatalf("put answer: %+v", res)
	}
	_, err = s.CreateTask(ctx, f.Space, allocation.CreateTaskRequest{Title: "again", DeliveryMode: "result", WorkItemID: ptr("T3")})
	if c := asConflict(t, "create on T3", err); c.Winner.ID.Num != early.ID {
		t.Fatalf("create on T3: 409 names %+v, want the earliest task %d", c.Winner, early.ID)
	}
}

// Item 19, reads: ListSpaces pages the spaces a principal may read, by
// slug; another tenant's spaces are not listed.
func TestListSpaces(t *testing.T) {
	ctx := context.Background()
	_, s, f := newCurrent(t)
	for _, sl := range []string{"b-two", "a-one", "c-three"} {
		if _, err := s.PutSpace(ctx, sl, allocation.PutSpaceRequest{Catalog: f.Catalog, TenantRef: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	var all []string
	after := ""
	for pages := 0; ; pages++ {
		page, err := s.ListSpaces(ctx, after, 2, 0)
		if err != nil || pages > 3 {
			t.Fatalf("page %d: %+v %v", pages, page, err)
		}
		for _, sp := range page.Spaces {
			all = append(all, sp.Slug)
		}
		if after = page.NextCursor; after == "" {
			break
		}
	}
	if want := []string{"a-one", "b-two", "c-three", f.Space}; !cmp.Equal(all, want) {
		t.Fatalf("spaces %v, want %v", all, want)
	}
	reader := fsm.WithPrincipal(ctx, identity.Principal{ID: "r", Tenants: []string{"a"}, Roles: []string{identity.RoleReader}})
	page, err := s.ListSpaces(reader, "", 0, 0)
	if err != nil || len(page.Spaces) != 3 || page.NextCursor != "" {
		t.Fatalf("tenant a's reader: %+v %v", page, err)
	}
	other := fsm.WithPrincipal(ctx, identity.Principal{ID: "o", Tenants: []string{"b"}, Roles: []string{identity.RoleReader}})
	if page, err := s.ListSpaces(other, "", 0, 0); err != nil || len(page.Spaces) != 0 {
		t.Fatalf("tenant b's reader: %+v %v", page, err)
	}
	if _, err := s.ListSpaces(ctx, "spaces.bogus", 0, 0); !errors.Is(err, errs.Invalid) {
		t.Fatalf("a cursor never issued: %v", err)
	}
}

// Item 19, reads: the live reservations of a space (reserved and not
// expired, or committed) and its occupancy (every key held now and what
// holds it), paged.
func TestListReservationsAndOccupancy(t *testing.T) {
	ctx := context.Background()
	l, s, f := newCurrent(t)
	task := create(t, s, f, f.Titles[0].Title)
	if _, err := s.PostNote(ctx, f.Space, task.ID, allocation.NoteRequest{Kind: allocation.KindPostReviewNote, Body: "n", DeliveryMode: "result"}); err != nil {
		t.Fatal(err)
	}
	reserve := func(id, title string) allocation.Reservation {
		r, err := s.Reserve(ctx, f.Space, allocation.ReserveRequest{ProposalID: id, Title: title, DeliveryMode: "result"})
		if err != nil {
			t.Fatal(err)
		}
		return r.Reservation
	}
	reserve("old", "expires")
	l.Advance(20 * time.Second) // past the 15 s window
	live := reserve("p-live", "pending")
	reserve("ext", "external")
	if _, err := s.Commit(ctx, f.Space, "ext", allocation.CommitRequest{Winner: &allocation.Winner{Type: "issue", ID: allocation.StrID("GH-1")}}); err != nil {
		t.Fatal(err)
	}
	var res []string
	after := ""
	for pages := 0; ; pages++ {
		page, err := s.ListReservations(ctx, f.Space, after, 1, 0)
		if err != nil || pages > 3 {
			t.Fatalf("page %d: %+v %v", pages, page, err)
		}
		for _, r := range page.Reservations {
			res = append(res, r.ProposalID+"/"+r.State)
		}
		if after = page.NextCursor; after == "" {
			break
		}
	}
	if want := []string{"ext/committed", "p-live/reserved"}; !cmp.Equal(res, want) {
		t.Fatalf("reservations %v, want %v", res, want)
	}
	var occ []allocation.Occupancy
	after = ""
	for pages := 0; ; pages++ {
		page, err := s.ListOccupancy(ctx, f.Space, after, 1, 0)
		if err != nil || pages > 5 {
			t.Fatalf("page %d: %+v %v", pages, page, err)
		}
		occ = append(occ, page.Occupancy...)
		if after = page.NextCursor; after == "" {
			break
		}
	}
	got := map[string]string{}
	for _, o := range occ {
		got[o.ConflictKey.Kind+" "+o.ConflictKey.Target] = o.Winner.Type + ":" + o.Winner.ID.String() + ":" + o.Winner.Status
	}
	want := map[string]string{
		"create_task " + slot(f, "T1"):                           "task:1:open",
		"create_task task:" + f.Space + ":pending":               "reserved_intent:p-live:",
		"create_task task:" + f.Space + ":external":              "issue:GH-1:",
		"post_review_note " + occ[len(occ)-1].ConflictKey.Target: "note:1:",
	}
	if !cmp.Equal(got, want) || len(occ) != 4 {
		t.Fatalf("occupancy %v, want %v", got, want)
	}
	for _, o := range occ {
		if o.Winner.Type == allocation.WinnerReservedIntent && (o.ProposalID != "p-live" || o.ExpiresAtMs != live.ExpiresAtMs) {
			t.Fatalf("the reservation's row: %+v", o)
		}
	}
}

// Item 14: a reopen rebinds its task against the catalog of now, so a
// task finished before the catalog listed its slot comes back on the
// slot (and loses it to a task holding it).
func TestReopenRebinds(t *testing.T) {
	ctx := context.Background()
	_, s, f := newCurrent(t)
	putCatalog(t, s, f, nil)
	old := create(t, s, f, f.Titles[0].Title)
	act(t, s, f, old.ID, "withdraw")
	putCatalog(t, s, f, f.Catalog)
	got, err := s.Transition(ctx, f.Space, old.ID, allocation.TransitionRequest{Action: "reopen"})
	if err != nil || got.Task.ConflictKey.Target != slot(f, "T1") || got.Task.WorkItemID == nil || *got.Task.WorkItemID != "T1" {
		t.Fatalf("reopen: %+v %v", got, err)
	}
	loses(t, s, f, f.Titles[1].Title, old.ID, "open")
	act(t, s, f, old.ID, "withdraw")
	putCatalog(t, s, f, nil)
	holder := create(t, s, f, f.Titles[0].Title)
	putCatalog(t, s, f, f.Catalog) // the holder moves to T1
	putCatalog(t, s, f, nil)       // and back
	c := asConflict(t, "reopen onto a held key", func() error {
		_, err := s.Transition(ctx, f.Space, old.ID, allocation.TransitionRequest{Action: "reopen"})
		return err
	}())
	if c.Winner.ID.Num != holder.ID {
		t.Fatalf("reopen: 409 names %+v, want task %d", c.Winner, holder.ID)
	}
}
