package allocation_test

import (
	"context"
	"errors"
	"testing"

	"github.com/arbiterhq/arbiter/allocation"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
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
