package client_test

import (
	"errors"
	"testing"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/errs"
)

var catalog = []client.CatalogRow{
	{WorkItemID: "T1", CanonicalTitle: "Comparative survey of multi-agent orchestration patterns and harnesses",
		Aliases: []string{"literature review of agent frameworks"}},
	{WorkItemID: "T3", CanonicalTitle: "Stopping and re-entry patterns for looping agents",
		Aliases: []string{"halting conditions and termination", "checkpoints and resumption of loops"}},
}

const t1Title = "Survey multi-agent orchestration patterns, harnesses and frameworks (loops, checkpoints)"

func TestAllocation(t *testing.T) {
	ctx, a := ctxOf(t), newClient(t, "ops").Allocation()
	slug := unique(t)
	put, err := a.PutSpace(ctx, slug, client.PutSpaceRequest{TenantRef: "t", Catalog: catalog})
	must(t, err)
	if put.Space.Slug != slug || len(put.Space.DeliveryModes) != 1 || put.Space.DeliveryModes[0] != "result" {
		t.Fatalf("put space: %+v", put.Space)
	}
	space, err := a.GetSpace(ctx, slug, client.Linearizable)
	must(t, err)
	if space.Space.Version != put.Space.Version {
		t.Fatalf("get space: %+v", space.Space)
	}
	_, err = a.GetSpace(ctx, unique(t), client.Linearizable)
	wantCode(t, err, errs.CodeNotFound)

	bound, err := a.Bind(ctx, slug, client.BindRequest{Title: t1Title})
	must(t, err)
	if bound.WorkItemID == nil || *bound.WorkItemID != "T1" {
		t.Fatalf("bind: %+v", bound)
	}
	won, err := a.CreateTask(ctx, slug, client.CreateTaskRequest{Title: t1Title, DeliveryMode: "result"}, "create-1")
	must(t, err)
	task := won.Task
	if task.Status != "open" || task.WorkItemID == nil || *task.WorkItemID != "T1" {
		t.Fatalf("create: %+v", task)
	}
	again, err := a.CreateTask(ctx, slug, client.CreateTaskRequest{Title: t1Title, DeliveryMode: "result"}, "create-1")
	must(t, err)
	if again.Task.ID != task.ID {
		t.Fatalf("a retry under the same key answers the original: %d, want %d", again.Task.ID, task.ID)
	}
	// A loser learns the winner from the flat 409.
	_, err = a.CreateTask(ctx, slug, client.CreateTaskRequest{Title: catalog[0].CanonicalTitle, DeliveryMode: "result"}, "")
	var lost *client.AllocationConflictError
	if !errors.As(err, &lost) || !errors.Is(err, errs.Conflict) || errs.CodeOf(err) != errs.CodeConflict {
		t.Fatalf("second writer: %v", err)
	}
	if lost.Code != "conflict_key_occupied" || lost.Winner == nil || lost.Winner.ID.Num != task.ID || lost.WriteOccurred || lost.Status != 409 {
		t.Fatalf("conflict body: %+v", lost.AllocationConflict)
	}
	_, err = a.CreateTask(ctx, slug, client.CreateTaskRequest{Title: t1Title, DeliveryMode: "carrier-pigeon"}, "")
	wantCode(t, err, errs.CodeInvalid)

	moved, err := a.Transition(ctx, slug, task.ID, client.TaskTransitionRequest{Action: "claim", ExpectedVersion: &task.Version})
	must(t, err)
	if moved.Task.Status != "claimed" {
		t.Fatalf("transition: %+v", moved.Task)
	}
	_, err = a.Transition(ctx, slug, task.ID, client.TaskTransitionRequest{Action: "submit", ExpectedVersion: &task.Version})
	if err == nil {
		t.Fatal("a transition on a stale version went through")
	}
	got, err := a.GetTask(ctx, slug, task.ID, client.Linearizable)
	must(t, err)
	if got.Task.Status != "claimed" {
		t.Fatalf("get task: %+v", got.Task)
	}
	tasks, err := a.ListTasks(ctx, slug, client.TaskQuery{})
	must(t, err)
	if len(tasks.Tasks) != 1 || tasks.Tasks[0].ID != task.ID {
		t.Fatalf("list tasks: %+v", tasks)
	}
	held, err := a.Hold(ctx, slug, task.ID, client.HoldRequest{Hold: true})
	must(t, err)
	if !held.Task.StewardHold {
		t.Fatalf("hold: %+v", held.Task)
	}
	occ, err := a.Occupancy(ctx, slug, client.PageQuery{})
	must(t, err)
	if len(occ.Occupancy) != 1 || occ.Occupancy[0].Winner.ID.Num != task.ID {
		t.Fatalf("occupancy: %+v", occ)
	}
	spaces, err := a.ListSpaces(ctx, client.PageQuery{Limit: 128})
	must(t, err)
	found := false
	for _, s := range spaces.Spaces {
		found = found || s.Slug == slug
	}
	if !found {
		t.Fatalf("list spaces misses %s", slug)
	}

	zero := int64(0)
	note, err := a.PostNote(ctx, slug, task.ID, client.NoteRequest{Kind: "post_review_note", CriterionIndex: &zero, Body: "looks fine", DeliveryMode: "result"}, "note-1")
	must(t, err)
	if note.Note.TaskID != task.ID || note.Note.Body != "looks fine" {
		t.Fatalf("note: %+v", note.Note)
	}
	notes, err := a.ListNotes(ctx, slug, task.ID, client.PageQuery{})
	must(t, err)
	if len(notes.Notes) != 1 || notes.Notes[0].ID != note.Note.ID {
		t.Fatalf("list notes: %+v", notes)
	}
	dups, err := a.Duplicates(ctx, slug, client.PageQuery{})
	must(t, err)
	if len(dups.Duplicates) != 0 {
		t.Fatalf("duplicates: %+v", dups)
	}
}

func TestAllocationWindowsAndReservations(t *testing.T) {
	ctx, a := ctxOf(t), newClient(t, "ops").Allocation()
	slug := unique(t)
	_, err := a.PutSpace(ctx, slug, client.PutSpaceRequest{TenantRef: "t", Catalog: catalog})
	must(t, err)

	res, err := a.Reserve(ctx, slug, client.KeyReserveRequest{ProposalID: "p-1", Title: catalog[1].CanonicalTitle, DeliveryMode: "result"})
	must(t, err)
	if res.Reservation.ProposalID != "p-1" || res.Reservation.State != "reserved" {
		t.Fatalf("reserve: %+v", res.Reservation)
	}
	_, err = a.Reserve(ctx, slug, client.KeyReserveRequest{ProposalID: "p-2", Title: catalog[1].CanonicalTitle, DeliveryMode: "result"})
	var held *client.AllocationConflictError
	if !errors.As(err, &held) {
		t.Fatalf("a second reservation of the key: %v", err)
	}
	occ, err := a.Commit(ctx, slug, "p-1", client.CommitRequest{Winner: &client.Winner{Type: "external", ID: client.WinnerID{Str: "pr-7"}}})
	must(t, err)
	if occ.Winner.ID.Str != "pr-7" {
		t.Fatalf("commit: %+v", occ)
	}
	list, err := a.ListReservations(ctx, slug, client.PageQuery{})
	must(t, err)
	if len(list.Reservations) != 1 || list.Reservations[0].State != "committed" {
		t.Fatalf("reservations: %+v", list)
	}
	dropped, err := a.Release(ctx, slug, "p-1")
	must(t, err)
	if !dropped.Dropped {
		t.Fatalf("release: %+v", dropped)
	}
	_, err = a.Abort(ctx, slug, "p-nope")
	wantCode(t, err, errs.CodeNotFound)

	win, err := a.Window(ctx, slug, client.WindowRequest{Proposals: []client.Proposal{
		{ProposalID: "w-1", Title: t1Title, DeliveryMode: "result"},
		{ProposalID: "w-2", Title: catalog[0].CanonicalTitle, DeliveryMode: "result"},
	}}, "")
	must(t, err)
	if len(win.Results) != 2 {
		t.Fatalf("window: %+v", win)
	}
	var created, conflicts int
	for _, e := range win.Results {
		switch {
		case e.Task() != nil && e.Err() == nil:
			created++
		case errors.Is(e.Err(), errs.Conflict):
			conflicts++
		}
	}
	if created != 1 || conflicts != 1 {
		t.Fatalf("window: %d created, %d conflicts: %+v", created, conflicts, win.Results)
	}
}
