package allocation_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"testing"

	"github.com/arbiterhq/arbiter/allocation"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/google/go-cmp/cmp"
)

// testdata/state-before-issue-40.stream is the snapshot of a state the
// binary before issue 40 wrote (tasks open, claimed, withdrawn under a
// steward hold and superseded, a note, reservations live, committed and
// expired, Idempotency-Keys): this binary restores it, writes it back
// byte for byte (rows gained only fields left out when empty, and a
// table left out when empty), and once the cluster enables version 2 the
// new behaviour applies to it.
func TestStateBeforeIssue40Loads(t *testing.T) {
	ctx := context.Background()
	old, err := os.ReadFile("testdata/state-before-issue-40.stream")
	if err != nil {
		t.Fatal(err)
	}
	l, err := fsmtest.New(allocation.Module())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.FSM.Restore(io.NopCloser(bytes.NewReader(old))); err != nil {
		t.Fatal(err)
	}
	if again := fsmtest.Snapshot(t, l.FSM); !bytes.Equal(again, old) {
		t.Fatal("the restored state does not write back the same snapshot")
	}
	l.SetClock(l.FSM.Now())
	s := allocation.NewService(l, l)
	f := fixture{Space: "s"}
	// At version 1 nothing changed: a put rebinds nothing.
	res, err := s.PutSpace(ctx, "s", allocation.PutSpaceRequest{DeliveryModes: []string{"result", "draft"}, WindowMs: 1000, Catalog: []allocation.CatalogRow{
		{WorkItemID: "T1", CanonicalTitle: "Comparative survey of orchestration harnesses", Aliases: []string{"literature review", "zeta"}},
		{WorkItemID: "T3", CanonicalTitle: "Stopping and re-entry of looping agents"}, {WorkItemID: "T7", CanonicalTitle: "other"}}})
	if err != nil || res.Rebound != 0 || res.Duplicates != nil {
		t.Fatalf("version 1 put: %+v %v", res, err)
	}
	if err := l.Enable(fsm.ServedBy(allocation.Module())); err != nil {
		t.Fatal(err)
	}
	res, err = s.PutSpace(ctx, "s", allocation.PutSpaceRequest{DeliveryModes: []string{"result", "draft"}, WindowMs: 1000, Catalog: res.Space.Catalog})
	if err != nil || res.Rebound != 1 || len(res.Duplicates.Duplicates) != 1 || res.Duplicates.Duplicates[0].TaskID != 5 ||
		res.Duplicates.Duplicates[0].HeldBy.ID.Num != 1 {
		t.Fatalf("version 2 put: %+v %v", res, err)
	}
	// The hold set before takes the key when set again.
	hold(t, s, f, 3, true)
	_, err = s.CreateTask(ctx, "s", allocation.CreateTaskRequest{Title: "unrelated", DeliveryMode: "draft"})
	if c := asConflict(t, "create on the held key", err); c.Winner.ID.Num != 3 || c.Winner.Status != "withdrawn" {
		t.Fatalf("409 names %+v", c.Winner)
	}
	// A retry of a create recorded before answers its original body.
	first, err := s.GetTask(ctx, "s", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.CreateTask(ctx, "s", allocation.CreateTaskRequest{Title: "survey orchestration harnesses", DeliveryMode: "result", IdempotencyKey: "k1"})
	if err != nil || !again.Replayed || again.Task.ID != 1 || again.Task.ConflictKey != first.Task.ConflictKey || again.Task.CreatedAtMs != first.Task.CreatedAtMs {
		t.Fatalf("retry: %+v %v", again, err)
	}
	if !cmp.Equal(first.Task.InheritedKeys, []allocation.ConflictKey(nil)) {
		t.Fatalf("task 1 inherited %v from a supersession at version 1", first.Task.InheritedKeys)
	}
}
